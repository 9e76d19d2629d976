"""The papers' experiments as sets of runs on one split.

``multilabel`` (DEFRAG's trade-off, KTXMLC's sweeps), ``graph`` (BMGUFS's protocol),
``table`` (vocabulary compression).
"""
