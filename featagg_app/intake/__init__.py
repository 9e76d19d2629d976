"""How data gets into a session: the sidebar's dataset picker, uploads, the server's data folder.

``sidebar``, ``uploads`` (parsed by featagg's readers within the load budget),
``data_folder`` (``FEATAGG_DATA_DIR``), ``guidance`` (reader messages in the user's terms).
"""
