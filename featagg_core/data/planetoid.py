""":func:`planetoid_to_npz`: converts trusted planetoid pickles (the only place that
unpickles, with a restricted unpickler, never on uploads).
"""
from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from featagg_core.data._containers import DatasetError, GraphData
from featagg_core.utils.bounded import reason
from featagg_core.data.npz import save_npz
from featagg_core.data._graph_parts import _undirected


def _restricted_unpickle(path: str):
    """Unpickle a planetoid file allowing only the numpy / scipy.sparse / collections
    classes those files contain. Only for trusted local files (the sample conversion);
    no reader of user input ever calls this."""
    import collections
    import copyreg
    import pickle
    from importlib import import_module

    mult = import_module("numpy._core.multiarray")
    allowed = {
        ("numpy.core.multiarray", "_reconstruct"): mult._reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): mult._reconstruct,
        ("numpy.core.multiarray", "scalar"): mult.scalar,
        ("numpy._core.multiarray", "scalar"): mult.scalar,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("collections", "defaultdict"): collections.defaultdict,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("builtins", "list"): list, ("builtins", "dict"): dict, ("builtins", "set"): set,
        ("builtins", "object"): object,
        ("copyreg", "_reconstructor"): copyreg._reconstructor,
    }
    renamed = {"__builtin__": "builtins", "copy_reg": "copyreg"}
    sparse_classes = {"csr_matrix", "csc_matrix", "coo_matrix", "lil_matrix"}

    class Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            module = renamed.get(module, module)
            if module.startswith("scipy.sparse") and name in sparse_classes:
                return getattr(sp, name)
            if (module, name) in allowed:
                return allowed[(module, name)]
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a planetoid file")

    with open(path, "rb") as fh:
        return Restricted(fh, encoding="latin1").load()


def planetoid_to_npz(prefix, out_path=None, *, name=None) -> GraphData:
    """Convert planetoid-style node data (``<prefix>.x/.y/.tx/.ty/.allx/.ally/.graph`` and
    ``<prefix>.test.index``, e.g. ``ind.cora``) into a GraphData, saved with
    :func:`save_npz` when ``out_path`` is given.

    Follows the GCN reference loader (Kipf & Welling): X = vstack(allx, tx) with the test
    rows put back at the positions listed in ``test.index``; for Citeseer the test range
    has holes (isolated nodes with no features/labels): they get zero features and
    y = -1. A is built from the adjacency lists directly with node i = index i (symmetric,
    binary, duplicates collapsed, self-loops dropped). Unpickling is restricted to the
    numpy/scipy/collections classes the files hold, and only used on trusted local files.

    Parameters
    ----------
    prefix : str or os.PathLike
        The common prefix of the files, e.g. ``".../ind.cora"``.
    out_path : str or os.PathLike, optional
        Also write the graph there with :func:`save_npz`.
    name : str, optional
        The dataset's name (default: the prefix without ``ind.``).

    Returns
    -------
    GraphData
        A (symmetric, binary), X csr float32, y int64 with -1 for nodes without a class,
        class names "0", "1", ...

    Raises
    ------
    DatasetError
        When a part or the test index cannot be read, or tx does not match the test
        index.
    """
    prefix = os.fspath(prefix)
    parts = {}
    for key in ("x", "y", "tx", "ty", "allx", "ally", "graph"):
        path = f"{prefix}.{key}"
        try:
            parts[key] = _restricted_unpickle(path)
        except Exception as exc:  # noqa: BLE001
            raise DatasetError(f"cannot read planetoid part ({reason(exc)})",
                               path=path) from exc
    idx_path = f"{prefix}.test.index"
    try:
        with open(idx_path, "rb") as fh:
            test_idx = np.array([int(t) for t in fh.read().split()], np.int64)
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read the test index ({exc})", path=idx_path) from exc
    allx = sp.csr_matrix(parts["allx"], dtype=np.float32)
    tx = sp.csr_matrix(parts["tx"], dtype=np.float32)
    ally = np.asarray(parts["ally"])
    ty = np.asarray(parts["ty"])
    if tx.shape[0] != test_idx.size or ty.shape[0] != test_idx.size:
        raise DatasetError(f"tx has {tx.shape[0]} rows for {test_idx.size} test indices",
                           path=f"{prefix}.tx")
    n_train = allx.shape[0]
    n = max(n_train + test_idx.size, int(test_idx.max()) + 1)
    d = allx.shape[1]
    # source row of each node in vstack(allx, tx): node i < n_train is allx row i, node
    # test_idx[k] is tx row k; nodes in neither (Citeseer's holes) get an all-zero row
    stacked = sp.vstack([allx, tx]).tocsr()
    src_row = np.full(n, -1, np.int64)
    src_row[:n_train] = np.arange(n_train)
    src_row[test_idx] = n_train + np.arange(test_idx.size)
    have = np.flatnonzero(src_row >= 0)
    select = sp.csr_matrix((np.ones(have.size, np.float32), (have, src_row[have])),
                           shape=(n, stacked.shape[0]))
    X = sp.csr_matrix(select @ stacked)
    Ymat = np.zeros((n, ally.shape[1]), np.float32)
    Ymat[:n_train] = ally
    Ymat[test_idx] = ty
    y = np.where(Ymat.sum(1) > 0, Ymat.argmax(1), -1).astype(np.int64)
    graph = parts["graph"]
    src, dst = [], []
    for u, nbrs in graph.items():
        for v in nbrs:
            src.append(int(u))
            dst.append(int(v))
    r, c = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    n = max(n, int(r.max()) + 1 if r.size else 0, int(c.max()) + 1 if c.size else 0)
    if X.shape[0] < n:
        X = sp.vstack([X, sp.csr_matrix((n - X.shape[0], d), dtype=np.float32)]).tocsr()
        y = np.concatenate([y, np.full(n - y.size, -1, np.int64)])
    A = _undirected(r, c, np.ones(r.size), n, self_loops=False, name=prefix)
    X.sort_indices()
    X.eliminate_zeros()
    stem = name or os.path.basename(prefix).replace("ind.", "")
    g = GraphData(A=A, X=X.astype(np.float32), y=y,
                  class_names=[str(i) for i in range(ally.shape[1])], name=stem,
                  source=f"planetoid: {os.path.basename(prefix)}.* (Yang et al. 2016)")
    if out_path is not None:
        save_npz(g, out_path)
    return g
