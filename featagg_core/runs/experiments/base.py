"""What every experiment is made of: :class:`Experiment` (the record one click on a page,
or one step of the triage, produces) and :func:`run_specs` (its runs, fitted in turn through
:func:`~featagg_core.runs.run.run_pipeline`, so every number comes from ``evaluate`` on
held-out rows and every run can go to Compare).

Shared by the multi-label, graph and table experiments of this package.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from featagg_core.runs.run import jsonable, run_pipeline
from featagg_core.utils.cancel import Cancelled, cancelling_progress
from featagg_core.utils.docstrings import fill_doc

__all__ = ["Experiment", "run_specs"]


@dataclass(eq=False)
class Experiment:
    """One experiment: its runs, tables (lists of records), summary and verdict.

    ``status``: "done", "cancelled" (stopped by ``cancel``; the finished runs are kept)
    or "failed" (``message`` says why). ``tables`` hold plain JSON-able records (one dict
    per row, numbers as fractions and seconds); :meth:`frame` gives one as a DataFrame.
    """
    kind: str
    title: str
    params: Dict[str, Any]
    runs: List[Any] = field(default_factory=list)
    tables: Dict[str, List[dict]] = field(default_factory=dict)
    summary: Dict[str, Any] = field(default_factory=dict)
    verdict: List[str] = field(default_factory=list)
    status: str = "done"
    message: str = ""
    seconds: float = 0.0
    split_id: str = ""

    def frame(self, name: str):
        """One of the experiment's tables as a DataFrame.

        Parameters
        ----------
        name : str
            The table's name (a key of ``tables``; an unknown name gives an empty frame).

        Returns
        -------
        pandas.DataFrame
            One row per record.
        """
        import pandas as pd
        return pd.DataFrame(self.tables.get(name, []))

    def to_record(self) -> dict:
        """Everything but the fitted pipelines, JSON-able (the triage JSON).

        Returns
        -------
        dict
            Kind, title, params, status, message, seconds, split id, summary, verdict, tables
            and the runs' records.
        """
        return jsonable({"kind": self.kind, "title": self.title, "params": self.params,
                         "status": self.status, "message": self.message,
                         "seconds": self.seconds, "split_id": self.split_id,
                         "summary": self.summary, "verdict": list(self.verdict),
                         "tables": self.tables,
                         "runs": [r.to_record() for r in self.runs]})


@fill_doc
def run_specs(data, split, specs: Sequence[dict], *, bases: Optional[Sequence] = None,
              progress=None, cancel=None, weights: Optional[Sequence[float]] = None):
    """``run_pipeline`` for each spec in turn; stops at the first cancelled run.

    Parameters
    ----------
    {data_any}
    {split_its}
    specs : sequence of dict
        The run specs.
    bases : sequence, optional
        ``bases[i]``: a base for the i-th run (a Run or Pipeline), or a callable receiving
        the finished runs and returning one.
    {progress}
    {cancel_experiment_status}
    weights : sequence of float, optional
        Share the progress bar between the specs.

    Returns
    -------
    runs : list of Run
        The finished runs, in order.
    cancelled : bool
        Whether a run was cancelled.
    """
    w = np.asarray(weights if weights is not None else [1.0] * len(specs), float)
    w = w / w.sum() if w.sum() > 0 else np.full(len(specs), 1.0 / max(len(specs), 1))
    edges = np.concatenate([[0.0], np.cumsum(w)])
    runs: List[Any] = []
    for i, spec in enumerate(specs):
        base = None if bases is None else bases[i]
        if callable(base):
            base = base(runs)
        cb = cancelling_progress(progress, None, float(edges[i]), float(edges[i + 1]))
        try:
            run = run_pipeline(data, split, spec, progress=cb, cancel=cancel, base=base)
        except Cancelled:
            return runs, True
        runs.append(run)
        if run.status == "cancelled":
            return runs, True
    return runs, False
