"""What pages show: figures and tables built from runs (no widgets, no jobs).

``charts`` (shared plotly builders, bounded marks), ``display`` (how a figure or table is
shown, large text), and one module per page: ``home``, ``data``, ``agglomeration``, ``xmlc``,
``graph_features``, ``vocabulary``, ``rare_labels``, ``compare``, ``export``, ``triage``.
"""
