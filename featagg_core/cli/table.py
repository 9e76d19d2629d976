"""``featagg compress TABLE``: vocabulary compression of categorical columns to a budget of
buckets (counts from the training rows), here or, ``--scheduler``, Bateni et al.'s
distributed thresholding on a Dask cluster.
"""
from __future__ import annotations

import json
from typing import Any, Dict

from featagg_core.cli.command import CliError, _load, _progress, _require, _run, _split


#: the loader's keyword arguments as the command's options (a CLI user never sees the
#: library's ``positive=``)
_BINARISE_TERMS = [(r"\bpositive=(?=\S)", "--positive "), (r"\bpositive=", "--positive VALUE"),
                   (r"\bthreshold=(?=\S)", "--threshold "), (r"\bthreshold=", "--threshold T"),
                   (r"\blabel=\.\.\.", "--label COLUMN")]


def binarise_terms(message: str) -> str:
    """A loader's message about the label column in ``compress``'s options: ``positive=``
    is ``--positive VALUE``, ``threshold=`` is ``--threshold T``.

    Parameters
    ----------
    message : str
        The loader's message.

    Returns
    -------
    str
        The message naming the command's options.
    """
    import re
    for pat, rep in _BINARISE_TERMS:
        message = re.sub(pat, rep, message)
    return message


def cmd_compress(args) -> Dict[str, Any]:
    """``featagg compress TABLE``: vocabulary compression of categorical columns.

    Fitted here, or on a Dask scheduler with ``--scheduler``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``compress``: TABLE, ``--label`` (with ``--positive VALUE``
        or ``--threshold T`` for a label column that is not binary), ``--columns``,
        budget, method, split and output options.

    Returns
    -------
    dict
        Per column its vocabulary size, I(X;C), I(Z;C) and seconds, the total information
        loss, the split and the run's metrics; ``mapping`` when the value -> bucket map was
        written.

    Raises
    ------
    CliError
        For a table without the columns asked for (one line, in the user's terms).
    """
    from featagg_core.data import DatasetError
    try:
        data = _require(_load(args.table, "table", label=args.label,
                              positive=getattr(args, "positive", None),
                              threshold=getattr(args, "threshold", None)), "table", args.table)
    except DatasetError as exc:
        raise CliError(binarise_terms(str(exc))) from None
    columns = args.columns.split(",") if args.columns else list(data.table.columns)
    missing = [c for c in columns if c not in data.table.columns]
    if missing:
        raise CliError(f"{args.table}: no column(s) {', '.join(missing)}; "
                       f"columns are {', '.join(map(str, data.table.columns))}")
    split = _split(args, data)
    if args.scheduler:
        return _compress_distributed(args, data, split, columns)
    _progress(f"compressing {len(columns)} column(s) to {args.budget} buckets each, fitted "
              f"on {split.train.size} training rows")
    run = _run(args, data, split, {"vocabulary": {
        "method": args.method, "budget": args.budget, "columns": columns,
        "allocation": "per_column", "random_state": args.seed}})
    cc = run.pipeline.vocabulary
    results, mappings, loss = _column_results(cc.compressors, columns)
    out = {"method": args.method, "budget": args.budget, "columns": results, "mi_loss": loss,
           "fitted_on": "train", "name": run.name, "split": run.split.to_record(),
           "metrics": run.metrics}
    if args.out:
        from featagg_core.data import _atomic_write
        text = json.dumps({"budget": args.budget, "method": args.method, "mappings": mappings})
        _atomic_write(args.out, lambda fh: fh.write(text.encode()))
        out["mapping"] = args.out
    return out


def _column_results(compressors, columns) -> tuple:
    """Per column (vocabulary size, I(X;C), I(Z;C), seconds), the value -> bucket maps, and
    the total information loss, of fitted per-column compressors."""
    results, mappings = [], {}
    for col in columns:
        vc = compressors[col]
        results.append({"column": col, "vocabulary": int(len(vc.vocabulary_)),
                        "I(X;C)": float(vc.mutual_information_full_),
                        "I(Z;C)": float(vc.mutual_information_),
                        "seconds": round(float(vc.fit_time_), 4)})
        mappings[col] = {str(k): int(v) for k, v in vc.mapping_.items()}
    total_x = sum(r["I(X;C)"] for r in results)
    loss = (total_x - sum(r["I(Z;C)"] for r in results)) / total_x if total_x > 0 else 0.0
    return results, mappings, loss


def _compress_distributed(args, data, split, columns) -> Dict[str, Any]:
    """``compress --scheduler``: Bateni et al.'s distributed thresholding (values counted on
    the workers) on the training rows, scored by ``experiment.evaluate`` on the test rows.
    Not a run of ``run_pipeline``: its result differs from ``method="threshold"`` on one
    machine (forced split points), so it must not share that spec's runs."""
    import time

    from featagg_core.distributed.vocab import vocabulary_distributed
    from featagg_core.runs.evaluation import evaluate
    from featagg_core.runs.split import take_rows
    from featagg_core.runs.pipeline import Pipeline
    from featagg_core.vocab.compressor import ColumnCompression
    if args.method != "threshold":
        raise CliError("--scheduler: only --method threshold has a distributed twin "
                       "(Bateni et al.'s distributed thresholding); pass --method threshold")
    _progress(f"compressing {len(columns)} column(s) to {args.budget} buckets each on the "
              f"Dask scheduler {args.scheduler}, fitted on {split.train.size} training rows")
    train = take_rows(data, split, "train")
    t0 = time.perf_counter()
    comps = {col: vocabulary_distributed(args.scheduler, train.table[col].to_numpy(),
                                         train.labels, args.budget, epsilon=0.05)
             for col in columns}
    cc = ColumnCompression(comps, {c: comps[c].n_buckets_ for c in columns},
                           "threshold (distributed)", int(args.budget) * len(columns),
                           time.perf_counter() - t0)
    pipe = Pipeline(spec={"vocabulary": {"method": "threshold", "budget": args.budget,
                                         "columns": columns, "distributed": True}},
                    split_id=split.split_id, dataset_fingerprint=data.fingerprint,
                    vocabulary=cc)
    pipe.columns_ = list(columns)
    results, mappings, loss = _column_results(comps, columns)
    out = {"method": "threshold (distributed)", "budget": args.budget, "columns": results,
           "mi_loss": loss, "fitted_on": "train", "scheduler": args.scheduler,
           "name": f"Vocabulary distributed thresholding m={args.budget}",
           "split": split.to_record(), "metrics": {"test": evaluate(pipe, data, split, "test")}}
    if args.out:
        from featagg_core.data import _atomic_write
        text = json.dumps({"budget": args.budget, "method": "threshold", "distributed": True,
                           "mappings": mappings})
        _atomic_write(args.out, lambda fh: fh.write(text.encode()))
        out["mapping"] = args.out
    return out
