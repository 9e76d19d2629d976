"""Statistics and figures of the Data page (no streamlit here: unit-testable).

Everything is computed from the sparse structure with vectorised numpy (``indptr`` diffs,
``bincount`` of ``indices``), never by densifying, so it stays fast on large uploads.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from featagg_app.views import charts

TAIL_MAX_POINTS = 5   # a label in at most this many training points counts as a tail label


# ---------------------------------------------------------------------------
# multi-label
# ---------------------------------------------------------------------------

def row_counts(M: sp.csr_matrix) -> np.ndarray:
    """Stored entries per row of a csr matrix (labels or features per point)."""
    M = sp.csr_matrix(M)
    return np.diff(M.indptr).astype(np.int64)


def column_counts(M: sp.csr_matrix) -> np.ndarray:
    """Rows in which each column is non-zero (label frequency, document frequency)."""
    M = sp.csr_matrix(M)
    return np.bincount(M.indices[M.data != 0], minlength=M.shape[1]).astype(np.int64)


def column_counts_of_rows(M: sp.csr_matrix, rows) -> np.ndarray:
    """:func:`column_counts` of ``M[rows]`` (e.g. the training rows of a split) without
    copying those rows: a row mask expanded over the stored entries."""
    M = sp.csr_matrix(M)
    keep = np.zeros(M.shape[0], dtype=bool)
    keep[np.asarray(rows, dtype=np.int64)] = True
    per_entry = np.repeat(keep, np.diff(M.indptr)) & (M.data != 0)
    return np.bincount(M.indices[per_entry], minlength=M.shape[1]).astype(np.int64)


def multilabel_summary(data) -> dict:
    """Headline numbers of a MultiLabelData (training split; test split counted apart)."""
    X, Y = data.X, data.Y
    n, d = X.shape
    L = Y.shape[1]
    n_test = 0 if data.X_test is None else int(data.X_test.shape[0])
    lpp = row_counts(Y)
    fpp = row_counts(X)
    freq = column_counts(Y)
    return {
        "n": int(n), "n_test": n_test, "d": int(d), "L": int(L),
        "nnz": int(X.nnz), "label_nnz": int(Y.nnz),
        "labels_per_point": float(lpp.mean()) if n else 0.0,
        "features_per_point": float(fpp.mean()) if n else 0.0,
        "density": float(X.nnz) / (n * d) if n and d else 0.0,
        "label_density": float(Y.nnz) / (n * L) if n and L else 0.0,
        "points_without_labels": int(np.count_nonzero(lpp == 0)),
        "unused_labels": int(np.count_nonzero(freq == 0)),
        "tail_labels": int(np.count_nonzero((freq > 0) & (freq <= TAIL_MAX_POINTS))),
        "max_label_points": int(freq.max()) if L else 0,
        "median_label_points": float(np.median(freq)) if L else 0.0,
        "min_label_points": int(freq.min()) if L else 0,
    }


def head_size(freq: np.ndarray, share: float = 0.5) -> int:
    """Smallest number of most-frequent labels that together hold ``share`` of all label
    assignments (0 when there are none)."""
    f = np.sort(np.asarray(freq, dtype=np.int64))[::-1]
    total = f.sum()
    if total == 0:
        return 0
    return int(np.searchsorted(np.cumsum(f), share * total, side="left") + 1)


def top_items(counts: np.ndarray, names: Optional[Sequence[str]], k: Optional[int] = 15,
              what: str = "label", total: Optional[int] = None,
              unit: str = "point") -> pd.DataFrame:
    """The ``k`` items with the largest counts (ties: lower index first; ``k=None``: all of
    them, for a paginated table) as a table with columns "rank", ``what``, "<unit>s" and
    "share of <unit>s" (count / ``total``)."""
    counts = np.asarray(counts)
    k = counts.size if k is None else min(k, counts.size)
    order = np.lexsort((np.arange(counts.size), -counts))[:k]
    labels = [str(names[i]) if names is not None else f"#{i}" for i in order]
    df = pd.DataFrame({"rank": np.arange(1, k + 1), what: labels,
                       f"{unit}s": counts[order].astype(np.int64)})
    if total:
        df[f"share of {unit}s"] = df[f"{unit}s"] / float(total)
    return df


def label_frequency_figure(Y: sp.csr_matrix, names=None, title: str = "Label frequency "
                           "(log–log): a few head labels, a long tail"):
    freq = column_counts(Y)
    return charts.rank_frequency(freq, title=title, what="label", names=names,
                                 head_size=head_size(freq))


def feature_frequency_figure(X: sp.csr_matrix, names=None,
                             title: str = "Feature frequency (log–log)"):
    return charts.rank_frequency(column_counts(X), title=title, what="feature", names=names)


def per_point_figure(M: sp.csr_matrix, what: str, unit: str = "point"):
    """Histogram of ``what``s per ``unit`` (``what``: "label" or "feature"; ``unit``:
    "point" or "node")."""
    return charts.count_histogram(row_counts(M), title=f"{what.capitalize()}s per {unit}",
                                  xlabel=f"{what}s of a {unit}", ylabel=f"number of {unit}s")


# ---------------------------------------------------------------------------
# graphs
# ---------------------------------------------------------------------------

def degrees(A: sp.csr_matrix) -> np.ndarray:
    """Neighbours of each node (a self-loop counts once)."""
    return row_counts(A)


def graph_summary(g) -> dict:
    A = sp.csr_matrix(g.A)
    n = A.shape[0]
    deg = degrees(A)
    loops = int(np.count_nonzero(A.diagonal()))
    edges = (A.nnz - loops) // 2 + loops
    X = g.X
    n_classes = None
    labelled = None
    if g.y is not None:
        y = np.asarray(g.y)
        labelled = int(np.count_nonzero(y >= 0))
        n_classes = int(np.unique(y[y >= 0]).size)
    return {
        "nodes": int(n), "edges": int(edges), "self_loops": loops,
        "mean_degree": float(deg.mean()) if n else 0.0,
        "max_degree": int(deg.max()) if n else 0,
        "isolated": int(np.count_nonzero(deg == 0)),
        "features": int(X.shape[1]) if X is not None else 0,
        "feature_nnz": int(X.nnz) if X is not None else 0,
        "feature_density": (float(X.nnz) / (X.shape[0] * X.shape[1])
                            if X is not None and X.shape[0] and X.shape[1] else 0.0),
        "classes": n_classes, "labelled": labelled,
    }


def degree_figure(A: sp.csr_matrix):
    return charts.loglog_distribution(degrees(A), title="Degree distribution (log–log)",
                                      xlabel="degree", ylabel="number of nodes")


def class_sizes(y: np.ndarray, class_names=None) -> pd.DataFrame:
    """Nodes per class (unlabelled nodes, y = -1, left out), largest first."""
    y = np.asarray(y)
    y = y[y >= 0]
    cnt = np.bincount(y) if y.size else np.zeros(0, np.int64)
    idx = np.flatnonzero(cnt)
    names = [str(class_names[i]) if class_names is not None and i < len(class_names)
             else f"class {i}" for i in idx]
    df = pd.DataFrame({"class": names, "nodes": cnt[idx].astype(np.int64)})
    return df.sort_values("nodes", ascending=False, kind="stable").reset_index(drop=True)


def class_size_figure(y, class_names=None):
    df = class_sizes(y, class_names)
    return charts.bar(df["class"], df["nodes"], title="Class sizes", xlabel="class",
                      ylabel="nodes", show_values=True)


# ---------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------

def table_summary(t) -> dict:
    labels = np.asarray(t.labels)
    n = int(labels.size)
    pos = int(np.count_nonzero(labels == 1))
    vocab = vocabulary_sizes(t)
    return {"rows": n, "columns": len(t.table.columns), "positives": pos,
            "positive_rate": pos / n if n else 0.0,
            "largest_vocabulary": int(vocab["values"].max()) if len(vocab) else 0,
            "total_vocabulary": int(vocab["values"].sum()) if len(vocab) else 0}


def vocabulary_sizes(t) -> pd.DataFrame:
    """Distinct values per column (missing values count as one value), largest first.

    One factorisation of the whole table and a row-wise sort of the codes, not one
    ``nunique`` per column (~50 us of pandas overhead each: minutes for a wide upload)."""
    arr = t.table.to_numpy(dtype=object)
    n, c = arr.shape
    if n and c:
        codes, _ = pd.factorize(arr.ravel(order="F"), use_na_sentinel=False)
        per_col = np.sort(codes.reshape(c, n), axis=1)
        counts = 1 + np.count_nonzero(np.diff(per_col, axis=1), axis=1)
    else:
        counts = np.zeros(c, np.int64)
    df = pd.DataFrame({"column": [str(x) for x in t.table.columns],
                       "values": counts.astype(np.int64)})
    return df.sort_values("values", ascending=False, kind="stable").reset_index(drop=True)


def vocabulary_figure(t):
    df = vocabulary_sizes(t)
    return charts.bar(df["column"], df["values"], title="Vocabulary size per column (log)",
                      xlabel="column", ylabel="distinct values", log_value=True,
                      show_values=True)


def top_values(t, column: str, k: int = 15) -> pd.DataFrame:
    """The ``k`` most frequent values of ``column`` with their count and positive rate."""
    s = t.table[column].astype(object).where(t.table[column].notna(), "<missing>").astype(str)
    df = pd.DataFrame({"value": s.to_numpy(), "y": np.asarray(t.labels, dtype=np.int64)})
    g = df.groupby("value", sort=False)["y"].agg(["size", "mean"]).reset_index()
    g.columns = ["value", "rows", "positive rate"]
    g = g.sort_values(["rows", "value"], ascending=[False, True], kind="stable").head(k)
    return g.reset_index(drop=True)
