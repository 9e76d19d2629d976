"""``featagg info DATA``: what a dataset, graph or table holds (no model is fitted)."""
from __future__ import annotations

import os
from typing import Any, Dict

import numpy as np

from featagg_core.cli.command import _load


def cmd_info(args) -> Dict[str, Any]:
    """``featagg info DATA``: what a dataset holds (no model is fitted).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``info``: DATA, ``--kind`` and the reader options.

    Returns
    -------
    dict
        Name, kind, fingerprint and the sizes of the data (rows, features, labels and
        non-zeros; nodes, edges and classes of a graph; rows, positives and vocabulary sizes
        of a table).

    Raises
    ------
    CliError
        For a file that is not a dataset (one line, in the user's terms).
    """
    data = _load(args.data, args.kind, test=args.test, label=args.label,
                 features=args.features, classes=args.classes)
    out: Dict[str, Any] = {"name": data.name or os.path.basename(args.data), "kind": data.kind,
                           "fingerprint": data.fingerprint}
    if data.kind == "multilabel":
        X, Y = data.X, data.Y
        out.update(n=X.shape[0], d=X.shape[1], L=Y.shape[1], nnz_X=int(X.nnz), nnz_Y=int(Y.nnz),
                   labels_per_point=float(Y.nnz / max(X.shape[0], 1)),
                   features_per_point=float(X.nnz / max(X.shape[0], 1)),
                   density=float(X.nnz / max(X.shape[0] * X.shape[1], 1)),
                   n_test=None if data.X_test is None else int(data.X_test.shape[0]))
    elif data.kind == "graph":
        A = data.A
        out.update(nodes=int(A.shape[0]), edges=int((A.nnz - A.diagonal().astype(bool).sum()) // 2
                                                    + A.diagonal().astype(bool).sum()),
                   features=int(data.X.shape[1]), nnz_features=int(data.X.nnz),
                   classes=None if data.y is None else int(len(np.unique(data.y[data.y >= 0]))))
    else:
        out.update(rows=data.n_rows, positives=int(np.sum(data.labels)), label=data.label_name,
                   vocabulary={c: int(data.table[c].nunique()) for c in data.table.columns})
    return out
