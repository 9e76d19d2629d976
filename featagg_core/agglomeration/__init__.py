"""DEFRAG and the methods built on its feature clusters (Jalan & Kar, IJCAI 2019).

``defrag`` (the estimator), ``tree`` (its hierarchy as flat arrays), ``fiat`` (imputation
from the clusters), ``refrag`` (re-ranking with label prototypes), ``clustering`` (the
baseline feature clusterings DEFRAG is compared with: k-means, Ward, random balanced).
"""
