"""BMGUFS, block-model-guided feature selection on attributed graphs (Bai et al., KDD 2020).

``bmgufs`` (the estimators), ``baselines`` (the unsupervised selectors it is compared with),
``evaluation`` (the clustering protocol that judges a selection).
"""
