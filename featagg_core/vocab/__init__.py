"""Vocabulary compression of a categorical feature for a binary label (Bateni et al., ICML 2019).

``compressor`` (VocabularyCompressor and the per-column compression of a table),
``counts`` (label counts of a column, their mutual information, the sorted order).
"""
