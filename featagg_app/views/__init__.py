"""What pages show: figures and tables built from runs (no jobs, no run registry).

``charts`` (shared plotly builders, bounded marks), ``display`` (how a figure or table is
shown, large text), ``home`` (the Home page), and one module per page: ``data``,
``agglomeration``, ``xmlc``, ``graph_features``, ``vocabulary``, ``rare_labels``,
``compare``, ``export``, ``triage``.
"""
