"""Checks of a categorical table with a binary label: ID-like columns, values seen only in
test, missing values, near-constant columns, numeric columns, label imbalance, and a
numeric label column (with thresholds to offer).

Each column is factorised once (``pandas.factorize``: codes and distinct values), so every
check is linear in the cells. A column is ID-like when its distinct values number at least
:data:`ID_FRACTION` of the rows (ydata-profiling's "unique" alert fires at 100 %; 95 %
catches IDs with a few repeats). Near-constant: the commonest value covers at least
:data:`CONSTANT_SHARE` of the rows. Missing: the readers store a missing cell as
``"<NA>"``; an empty string counts too. Imbalance: the rarer label class below
:data:`IMBALANCE` of the rows.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from featagg_core.health.alerts import Alert

__all__ = ["table_alerts", "numeric_label_alert", "ID_FRACTION", "CONSTANT_SHARE",
           "IMBALANCE"]

ID_FRACTION = 0.95
CONSTANT_SHARE = 0.99
IMBALANCE = 0.1
_MISSING = ("<NA>", "", "nan", "NaN", "None", "NULL", "null", "?")


def _numeric(values) -> Optional[np.ndarray]:
    """The values as floats when every one parses as a finite number, else None."""
    import pandas as pd
    v = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
    if v.size == 0 or not np.all(np.isfinite(v)):
        return None
    return v


def table_alerts(data, test_rows=None) -> List[Alert]:
    """The table checks of the module docstring.

    Parameters
    ----------
    data : featagg_core.data.CategoricalData
        The table.
    test_rows : numpy.ndarray, optional
        Rows held out for testing (the values-only-in-test check needs them).

    Returns
    -------
    list of Alert
        The alerts found (unsorted).
    """
    import pandas as pd
    df = data.table
    n = len(df)
    out: List[Alert] = []
    is_test = np.zeros(n, bool)
    if test_rows is not None and len(test_rows):
        is_test[np.asarray(test_rows)] = True
    id_cols, const_cols, missing, num_cols = [], [], {}, []
    unseen_cols, unseen_rows = {}, np.zeros(n, bool)
    any_missing = np.zeros(n, bool)
    for col in df.columns:
        codes, uniques = pd.factorize(df[col], use_na_sentinel=True)
        n_uni = len(uniques)
        if n >= 20 and n_uni >= ID_FRACTION * n:
            id_cols.append((col, n_uni))
        cnt = np.bincount(codes[codes >= 0], minlength=n_uni)
        if n and cnt.size and cnt.max() >= CONSTANT_SHARE * n:
            top = uniques[int(cnt.argmax())]
            const_cols.append((col, str(top), cnt.max() / n))
        miss_u = np.array([str(u) in _MISSING for u in uniques], bool)
        miss = (codes < 0) | (miss_u[np.maximum(codes, 0)] & (codes >= 0))
        if miss.any():
            missing[col] = int(miss.sum())
            any_missing |= miss
        if 20 <= n_uni and n_uni > 0.05 * n and (col, n_uni) not in id_cols:
            if _numeric(np.asarray(uniques, dtype=object)[~miss_u]) is not None:
                num_cols.append((col, n_uni))
        if is_test.any():
            seen = np.zeros(n_uni + 1, bool)
            seen[codes[~is_test] + 1] = True
            bad = is_test & ~seen[codes + 1]
            if bad.any():
                unseen_cols[col] = int(bad.sum())
                unseen_rows |= bad
    if id_cols:
        out.append(Alert("id_columns", "warning", len(id_cols),
                         f"{len(id_cols)} column(s) hold a different value on nearly every row "
                         f"(ID-like): " + ", ".join(f"'{c}' ({u:,} values in {n:,} rows)"
                                                     for c, u in id_cols[:5]) + ".",
                         "Leave them out (--columns, or untick them): an ID cannot generalise "
                         "to new rows and lets a model memorise the training set.",
                         examples=[str(c) for c, _ in id_cols],
                         extra={"columns": [str(c) for c, _ in id_cols]}))
    if unseen_cols:
        r = np.flatnonzero(unseen_rows)
        n_test = int(is_test.sum())
        out.append(Alert("values_only_in_test", "warning" if r.size > 0.05 * n_test else "info",
                         int(r.size),
                         f"{r.size:,} of {n_test:,} test rows hold a value no training row has "
                         f"(in {len(unseen_cols)} column(s)).",
                         "Unseen values fall into a default bucket; give rare values a shared "
                         "'other' value, or check the columns with many of them.",
                         test_rows=r,
                         examples=[f"'{c}': {k:,} rows" for c, k in
                                   sorted(unseen_cols.items(), key=lambda t: -t[1])[:5]],
                         extra={"columns": {str(c): k for c, k in unseen_cols.items()}}))
    if missing:
        r = np.flatnonzero(any_missing)
        out.append(Alert("missing_values", "warning" if r.size > 0.05 * n else "info",
                         int(r.size),
                         f"{r.size:,} rows{_pct(r.size, n)} have a missing value (in "
                         f"{len(missing)} column(s)).",
                         "A missing value is kept as its own category; fill it if it means "
                         "something else (e.g. 'none'), or drop columns that are mostly empty.",
                         rows=r, examples=[f"'{c}': {k:,} rows" for c, k in
                                           sorted(missing.items(), key=lambda t: -t[1])[:5]],
                         extra={"columns": {str(c): k for c, k in missing.items()}}))
    if const_cols:
        out.append(Alert("near_constant_columns", "info", len(const_cols),
                         f"{len(const_cols)} column(s) take one value on at least "
                         f"{100 * CONSTANT_SHARE:.0f} % of the rows.",
                         "They carry almost no information: drop them to save work.",
                         examples=[f"'{c}' = {v!r} ({100 * s:.1f} %)" for c, v, s in const_cols[:5]],
                         extra={"columns": [str(c) for c, _, _ in const_cols]}))
    if num_cols:
        out.append(Alert("numeric_columns", "info", len(num_cols),
                         f"{len(num_cols)} column(s) hold numbers with many distinct values, "
                         f"treated here as categories.",
                         "Bin them (quantiles) before compressing, or the vocabulary grows "
                         "with every distinct number.",
                         examples=[f"'{c}' ({u:,} values)" for c, u in num_cols[:5]],
                         extra={"columns": [str(c) for c, _ in num_cols]}))
    labels = np.asarray(data.labels)
    if labels.size:
        pos = float(np.mean(labels == 1))
        minority = min(pos, 1 - pos)
        if minority < IMBALANCE:
            which = "positive" if pos < 0.5 else "negative"
            out.append(Alert("label_imbalance", "warning", int(round(minority * labels.size)),
                             f"Only {100 * minority:.1f} % of the rows are {which} for "
                             f"'{data.label_name}' ({int(round(minority * labels.size)):,} of "
                             f"{labels.size:,}).",
                             "Judge models by AUC or by precision/recall of the rare class, not "
                             "accuracy; consider class weights.",
                             extra={"positive_share": pos}))
    return out


def numeric_label_alert(values, label_name: str = "label") -> Optional[Alert]:
    """``numeric_label``: a label column of numbers (more than two values) and the
    thresholds to offer for making it binary.

    Parameters
    ----------
    values : array-like
        The label column's values (text or numbers).
    label_name : str
        The column's name.

    Returns
    -------
    Alert or None
        The alert with ``thresholds`` (the median first, then the quartiles) or None when
        the column is not numeric with more than two values.
    """
    v = _numeric(np.asarray(values, dtype=object))
    if v is None or np.unique(v).size <= 2:
        return None
    med = float(np.median(v))
    q1, q3 = (float(q) for q in np.quantile(v, [0.25, 0.75]))
    ths = []
    for t in (med, q3, q1):
        if t not in ths and np.any(v >= t) and np.any(v < t):
            ths.append(t)
    shares = {f"{t:g}": float(np.mean(v >= t)) for t in ths}
    return Alert("numeric_label", "info", int(np.unique(v).size),
                 f"The label column '{label_name}' holds {np.unique(v).size:,} numeric values, "
                 f"not two classes.",
                 f"Choose a threshold to make it binary, e.g. '{label_name}' >= {med:g} (the "
                 f"median: {100 * shares.get(f'{med:g}', 0.5):.0f} % positive)"
                 + (f", or >= {q3:g} (upper quartile)" if q3 != med else "") + ".",
                 examples=[f">= {t:g}: {100 * s:.0f} % positive" for t, s in
                           zip(ths, shares.values())],
                 extra={"thresholds": ths, "positive_share": list(shares.values())})


def _pct(k: int, n: int) -> str:
    return f" ({100.0 * k / max(n, 1):.1f} % of {n:,})"
