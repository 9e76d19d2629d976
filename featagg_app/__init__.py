"""featagg_app: the Streamlit side of featagg (session API, sidebar, shared charts, views).

Layering: this package imports ``featagg_core`` and ``streamlit``; ``featagg_core`` never
imports it. Modules that only build figures or tables (``charts``, ``data_view``,
``uploads``) do not import streamlit, so they can be unit tested without a script run.
"""
