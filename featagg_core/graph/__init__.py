"""BMGUFS, block-model-guided feature selection on attributed graphs (Bai et al., KDD 2020).

``bmgufs`` (the selector BMGUFS), ``block_model`` (BlockModel, the ONMtF block model that
guides it, with the block image, the eigengap rule for the number of blocks and the check
of how well block models fit), ``selection_problem`` (the selection objective, its
projected-gradient search and the paper's gamma / beta grids), ``inputs`` (parameter
constraints and the checks of A and X), ``baselines`` (the unsupervised selectors it is
compared with) and ``evaluation`` (the clustering protocol that judges a selection).
"""
