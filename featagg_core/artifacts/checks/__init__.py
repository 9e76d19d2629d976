"""Every field and array of an artifact's state, declared and checked before an estimator
is rebuilt from it.

``checker`` holds the machinery (:class:`~featagg_core.artifacts.checks.checker.StateChecker`,
``validate_state``) and imports no family; the family modules each declare a ``CHECKS`` table
(class name -> check function) for their classes: ``agglomeration`` (Defrag, Fiat, Refrag),
``xmlc`` (KTXMLC, OneVsAll, DefragKTXMLC), ``graph`` (BlockModel, BMGUFS), ``vocab``
(VocabularyCompressor) and ``pipeline`` (Pipeline and its step-only classes FeatureClusters,
FeatureRanking); ``table`` assembles the families into the one table (``CHECKS``) the
loader validates with.
"""
