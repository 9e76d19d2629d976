"""How data gets into a session: the sidebar's dataset picker, uploads, the server's data folder.

``sidebar`` (the picker and the split), ``uploads`` (parsed by featagg's readers within the
load budget), ``data_folder`` (``FEATAGG_DATA_DIR``: files opened as jobs), ``guidance``
(reader messages in the user's terms).
"""
