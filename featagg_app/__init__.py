"""featagg_app: the Streamlit side of featagg, what ``app.py`` and ``pages/`` are built on.

``state`` (the session's dataset, split, page namespaces and run registry), ``runs_ui``
(every page's Run: ``run_section``, the job panel, estimates, the run picker), ``text``
(durations, escaping, error messages), ``experiment_sections`` (the papers' experiments as
page sections), and the packages ``server`` (what runs once per server process),
``intake`` (how data gets into a session) and ``views`` (figures and tables).

Layering: this package imports ``featagg_core`` and ``streamlit``; ``featagg_core`` never
imports it. ``views`` build figures without widgets, ``server.jobs`` runs jobs without
streamlit, and no module of the package imports one that imports it back
(tests/test_layering.py).
"""
