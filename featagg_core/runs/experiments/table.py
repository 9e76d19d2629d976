"""Vocabulary compression as an experiment (part of :mod:`featagg_core.experiment`).

* :func:`default_budget` — a budget that actually compresses: the largest step of
  :data:`BUDGET_STEPS` that is at most half the median number of *atoms* (distinct
  P(C=0|x) levels, the units the optimisers cut between) of the columns with more than two
  of them, on the training rows; at least 2. A budget at or above a column's atom count is
  lossless by construction (Adult at m = 10 keeps every one of its levels but
  native-country's), so a default there shows "0.00 %" and teaches nothing.
* :func:`vocabulary_heldout` — per column, the MI the compression was fitted to (training
  rows, what ``mutual_information_`` reports) next to the held-out MI (the same mapping
  applied to the test rows, values the training rows never had going to the unseen-value
  bucket), both for the raw values I(X;C) and the buckets I(Z;C).
* :func:`vocabulary_experiment` — one run per method at one budget (through
  ``run_pipeline``), the held-out/fitted table of the first method, and the default
  method's MI on the training rows against the exact DP on every column small enough for
  the DP (its ``max_dp_values``).
"""
from __future__ import annotations

import time
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from featagg_core.runs.experiments.base import Experiment, run_specs
from featagg_core.utils.docstrings import fill_doc

__all__ = ["BUDGET_STEPS", "default_budget", "vocabulary_heldout", "vocabulary_experiment",
           "atoms_per_column"]

BUDGET_STEPS = (2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


def atoms_per_column(table, labels, columns: Optional[Sequence] = None,
                     min_count: int = 1) -> dict:
    """Atoms (runs of tied P(C=0|x), the rare pool) of every column: what a budget is compared with.

    Parameters
    ----------
    table : pandas.DataFrame
        The categorical columns.
    labels : array-like of shape (n,)
        The 0/1 labels.
    columns : sequence, optional
        The columns to count (default all).
    min_count : int, default=1
        Values seen fewer times are pooled (VocabularyCompressor's ``min_count``).

    Returns
    -------
    dict
        Column -> number of atoms.
    """
    from featagg_core.vocab.counts import _Prepared, factorize
    y = np.asarray(labels)
    out = {}
    for c in (list(table.columns) if columns is None else columns):
        codes, vocab = factorize(table[c])
        n = len(vocab)
        c1 = np.bincount(codes, weights=y, minlength=n).astype(np.int64)
        c0 = np.bincount(codes, minlength=n).astype(np.int64) - c1
        out[c] = int(_Prepared(c0, c1, int(min_count), True).n_atoms)
    return out


def default_budget(data, split=None, columns: Optional[Sequence] = None,
                   min_count: int = 1) -> Tuple[int, str]:
    """The budget rule of the module docstring, with its reason.

    On ``split``'s training rows when given (else all rows).

    Parameters
    ----------
    data : CategoricalData
        The table.
    split : Split, optional
        Its split.
    columns : sequence, optional
        The columns (default all).
    min_count : int, default=1
        As :func:`atoms_per_column`.

    Returns
    -------
    m : int
        The budget per column.
    why : str
        One sentence saying why.
    """
    from featagg_core.runs.split import take_rows
    part = take_rows(data, split, "train") if split is not None else data
    atoms = atoms_per_column(part.table, part.labels, columns, min_count)
    many = sorted(v for v in atoms.values() if v > 2)
    if not many:
        return 2, ("m = 2: no column has more than two distinct label rates, so two "
                   "buckets already keep everything")
    med = float(np.median(many))
    m = max([s for s in BUDGET_STEPS if s <= med / 2] or [2])
    return int(m), (f"m = {m}: about half the median number of distinct label rates "
                    f"({med:g}) of the {len(many)} columns with more than two, so most "
                    f"columns are really compressed")


@fill_doc
def vocabulary_heldout(pipeline, data, split) -> List[dict]:
    """Fitted and held-out information of a vocabulary pipeline, per column.

    Parameters
    ----------
    pipeline : Pipeline or Run
        A fitted vocabulary pipeline.
    {table_data_split}

    Returns
    -------
    list of dict
        Per column (and a ``total`` row): ``values``, ``buckets``, fitted ``I(X;C)``,
        ``I(Z;C)``, ``MI loss`` on the training rows, the same ``held-out`` on the test
        rows, and the test rows whose value the training rows never had (``unseen rows``).
    """
    from featagg_core.runs.evaluation import vocabulary_report
    fit = vocabulary_report(pipeline, data, split, rows="train")
    held = vocabulary_report(pipeline, data, split, rows="test")
    out = []
    for (_, a), (_, b) in zip(fit.iterrows(), held.iterrows()):
        out.append({"column": str(a["column"]), "values": int(a["values"]),
                    "buckets": int(a["buckets"]),
                    "fitted I(X;C)": float(a["I(X;C)"]), "fitted I(Z;C)": float(a["I(Z;C)"]),
                    "fitted MI loss": float(a["MI loss"]),
                    "held-out I(X;C)": float(b["I(X;C)"]),
                    "held-out I(Z;C)": float(b["I(Z;C)"]),
                    "held-out MI loss": float(b["MI loss"]),
                    "unseen rows": int(b["unseen rows"])})

    def total(prefix):
        ix = sum(r[f"{prefix} I(X;C)"] for r in out)
        iz = sum(r[f"{prefix} I(Z;C)"] for r in out)
        return ix, iz, (max(ix - iz, 0.0) / ix if ix > 0 else 0.0)
    fx, fz, fl = total("fitted")
    hx, hz, hl = total("held-out")
    out.append({"column": "total", "values": int(sum(r["values"] for r in out)),
                "buckets": int(sum(r["buckets"] for r in out)), "fitted I(X;C)": fx,
                "fitted I(Z;C)": fz, "fitted MI loss": fl, "held-out I(X;C)": hx,
                "held-out I(Z;C)": hz, "held-out MI loss": hl,
                "unseen rows": int(sum(r["unseen rows"] for r in out))})
    return out


def _dp_ratio(data, split, budget: int, columns, method: str, cancel=None) -> List[dict]:
    """The default method's I(Z;C) on the training rows against the exact DP's, per
    column small enough for the DP."""
    from featagg_core.utils.cancel import check_cancel
    from featagg_core.runs.split import take_rows
    from featagg_core.vocab.compressor import VocabularyCompressor
    train = take_rows(data, split, "train")
    out = []
    for col in columns:
        check_cancel(cancel)
        values = train.table[col].to_numpy()
        exact = VocabularyCompressor(budget, method="dp")
        if atoms_per_column(train.table, train.labels, [col])[col] > exact.max_dp_values:
            continue
        e = exact.fit(values, train.labels).mutual_information_
        a = VocabularyCompressor(budget, method=method).fit(values, train.labels)
        out.append({"column": str(col), "atoms": int(a.n_atoms_), "m": int(budget),
                    f"{method} I(Z;C)": float(a.mutual_information_), "DP I(Z;C)": float(e),
                    "ratio": float(a.mutual_information_ / e) if e > 0 else 1.0})
    return out


@fill_doc
def vocabulary_experiment(data, split, budget: Optional[int] = None,
                          methods: Sequence[str] = ("submodular", "frequency", "bucketing"),
                          columns: Optional[Sequence] = None, *, dp_check: bool = True,
                          progress: Optional[Callable] = None, cancel=None) -> Experiment:
    """One vocabulary run per method at ``budget`` buckets per column.

    Also the fitted vs held-out MI of the first method's run, and its ratio to the exact DP
    per DP-sized column (module docstring).

    Parameters
    ----------
    {table_data_split}
    budget : int, optional
        Buckets per column (default :func:`default_budget`).
    methods : sequence of str, default=("submodular", "frequency", "bucketing")
        The compression methods.
    columns : sequence, optional
        The columns (default all).
    dp_check : bool, default=True
        Compare with the exact DP on the columns small enough for it.
    {experiment_progress}

    Returns
    -------
    Experiment
        Tables ``"methods"``, ``"columns"``, ``"dp_ratio"``.

    Raises
    ------
    ValueError
        For a dataset that is not a table.
    """
    from featagg_core.utils.cancel import Cancelled, cancelling_progress
    from featagg_core.runs.split import check_split_fits
    check_split_fits(data, split)
    if data.kind != "table":
        raise ValueError(f"vocabulary compression needs a table, got a {data.kind} dataset")
    t0 = time.perf_counter()
    cols = list(data.table.columns) if columns is None else list(columns)
    why = f"m = {budget} (given)"
    if budget is None:
        budget, why = default_budget(data, split, cols)
    methods = list(methods)
    exp = Experiment("vocabulary", f"Vocabulary compression at m = {budget}",
                     {"budget": int(budget), "budget_rule": why, "methods": methods,
                      "columns": [str(c) for c in cols]}, split_id=split.split_id)
    specs = [{"vocabulary": {"method": m, "budget": int(budget), "columns": cols}}
             for m in methods]
    runs, cancelled = run_specs(data, split, specs,
                                progress=cancelling_progress(progress, cancel, 0.0, 0.7),
                                cancel=cancel)
    exp.runs = runs
    exp.tables["methods"] = [
        {"method": m, "run_id": r.run_id, "status": r.status,
         **({k: float(r.metrics["test"][k]) for k in ("I(Z;C)", "I(X;C)", "MI loss")}
            if r.status == "done" else {}),
         "fit_s": float(r.timings.get("vocabulary_s", 0.0))}
        for m, r in zip(methods, runs)]
    first = runs[0] if runs and runs[0].status == "done" else None
    if first is not None:
        exp.tables["columns"] = vocabulary_heldout(first, data, split)
        tot = exp.tables["columns"][-1]
        exp.summary.update({"held-out MI kept": 1 - tot["held-out MI loss"],
                            "fitted MI kept": 1 - tot["fitted MI loss"]})
        exp.verdict.append(
            f"At m = {budget} buckets per column ({why.split(': ', 1)[-1]}), "
            f"{methods[0]} keeps {100 * (1 - tot['fitted MI loss']):.1f} % of I(X;C) on the "
            f"rows it was fitted on and {100 * (1 - tot['held-out MI loss']):.1f} % on the "
            f"held-out rows.")
    if dp_check and not cancelled and methods:
        try:
            ratio = _dp_ratio(data, split, int(budget), cols, methods[0], cancel)
            exp.tables["dp_ratio"] = ratio
            if ratio:
                worst = min(ratio, key=lambda r: r["ratio"])
                exp.summary["worst DP ratio"] = worst["ratio"]
                # "at least 1.0000 of the optimum" read as a riddle: say it matches
                reach = ("matches the optimum on every one of them" if worst["ratio"] >= 0.99995
                         else f"reaches at least {worst['ratio']:.4f} of the optimum "
                              f"(lowest: {worst['column']})")
                exp.verdict.append(f"On the {len(ratio)} columns small enough for the exact "
                                   f"DP, {methods[0]} {reach}.")
        except Cancelled:
            cancelled = True
    if progress is not None and not cancelled:
        progress(1.0, "done")
    exp.status = "cancelled" if cancelled else "done"
    exp.seconds = time.perf_counter() - t0
    return exp
