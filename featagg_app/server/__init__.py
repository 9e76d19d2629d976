"""The server side of the dashboard: what runs once per server, not per page.

``jobs`` (the one bounded job runner), ``warmup`` (kernels compiled in the background),
``reaper`` (freeing sessions that went away), ``memory`` (sizes and the shared-fits cache),
``serve`` (the ``featagg-dashboard`` entry point), ``layout`` (where app.py and pages/ are).
"""
