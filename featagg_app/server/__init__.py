"""The server side of the dashboard: what runs once per server process, not per page.

``jobs`` (the one bounded job runner, no streamlit), ``context`` (the server's runner,
kernel warm-up and speed, created once with ``st.cache_resource``, and its data folder
setting), ``warmup`` (kernels compiled in the background), ``reaper`` (freeing sessions
that went away), ``memory`` (sizes and the shared-fits cache), ``serve`` (the
``featagg-dashboard`` entry point), ``layout`` (where app.py and pages/ are).
"""
