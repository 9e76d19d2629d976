"""Pieces every graph format shares: the undirected adjacency rule (:func:`_undirected`),
what the file's edge list held before that rule (:func:`_file_edges`), class values to codes, and node features / classes given separately (an array or a file).
"""
from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from featagg_core.utils.bounded import read_npy_bytes
from featagg_core.data._containers import DatasetError
from featagg_core.data._input import _blank, _budget, _fail_for, _read_bytes, _suffix
from featagg_core.data._checks import _check_csr_parts, _check_declared
from featagg_core.data._text import (
    _finish_matrix,
    _header_line,
    _int_header,
    _tokenise,
    _trim_rows,
)
from featagg_core.data.npz import _npz_to_container, _open_npz
from featagg_core.data.xc import _xc_header


def _undirected(rows, cols, w, n: int, *, self_loops: bool, name: str,
                lines=None) -> sp.csr_matrix:
    """Symmetric csr float32 from (possibly directed, repeated) weighted edges.

    Rule: an edge given in either direction, once or several times, becomes one
    undirected edge whose weight is the largest one given (so ``u v`` + ``v u`` is not
    doubled). Self-loops are dropped unless ``self_loops``. Weights must be finite and
    non-negative; zero weights mean no edge.
    """
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    w = np.asarray(w, np.float64)
    if w.size:
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            q = int(np.flatnonzero(bad)[0])
            raise DatasetError(f"edge weight {float(w[q])!r} is not a finite non-negative number",
                               path=name, line=None if lines is None else int(lines[q]))
    if not self_loops:
        keep = rows != cols
        rows, cols, w = rows[keep], cols[keep], w[keep]
    r = np.concatenate([rows, cols])
    c = np.concatenate([cols, rows])
    ww = np.concatenate([w, w])
    if r.size:
        key = r * n + c
        order = np.argsort(key, kind="stable")
        key, ww = key[order], ww[order]
        first = np.concatenate([[True], key[1:] != key[:-1]])
        starts = np.flatnonzero(first)
        wmax = np.maximum.reduceat(ww, starts)
        key = key[starts]
        r, c, ww = key // n, key % n, wmax
    with np.errstate(over="ignore"):
        data = ww.astype(np.float32)
    if data.size and not np.isfinite(data).all():
        raise DatasetError("an edge weight does not fit in float32", path=name)
    A = sp.csr_matrix((data, (r, c)), shape=(n, n), dtype=np.float32)
    A.eliminate_zeros()
    A.sort_indices()
    return A


#: how many example edges :func:`_file_edges` keeps for each count
_EDGE_EXAMPLES = 5


def _file_edges(rows, cols, n: int, *, directed: bool, w=None, names=None) -> dict:
    """What the file's edge list held before :func:`_undirected` tidied it.

    Counted on the listed edges, vectorised (one sort of an int64 key): ``self_loops``
    (edges u-u), ``duplicate_edges`` (listings that repeat an earlier one: the same
    ``(u, v)`` pair for a directed file, the same pair in either order for an undirected
    one), ``one_way_edges`` (distinct pairs u != v whose reverse is not listed; None for an
    undirected file, where the question does not arise) and ``two_way_edges`` (those whose
    reverse is; None likewise), ``listed_edges`` and ``directed``,
    plus up to :data:`_EDGE_EXAMPLES` examples of each as ``"a -> b"`` (``"a -- b"``
    undirected) in node names (``names[i]``, else the node number). Zero-weight edges are
    not edges (as in :func:`_undirected`) and are not counted.
    """
    r = np.asarray(rows, np.int64)
    c = np.asarray(cols, np.int64)
    if w is not None:
        keep = np.asarray(w) != 0
        if not keep.all():
            r, c = r[keep], c[keep]
    m = int(r.size)

    def node(i):
        return str(names[int(i)]) if names is not None else str(int(i))

    arrow = " -> " if directed else " -- "

    def show(keys):
        return [node(k // n) + arrow + node(k % n) for k in keys[:_EDGE_EXAMPLES].tolist()]

    loops = r == c
    if directed:
        key = r * n + c
    else:
        key = np.minimum(r, c) * n + np.maximum(r, c)
    uniq, counts = np.unique(key, return_counts=True)
    one_way = one_way_ex = both = None
    if directed:
        pair = uniq[(uniq // n) != (uniq % n)]
        rev = (pair % n) * n + pair // n
        pos = np.searchsorted(uniq, rev)
        found = pos < uniq.size
        found[found] = uniq[pos[found]] == rev[found]
        lone = pair[~found]
        one_way, one_way_ex = int(lone.size), show(lone)
        both = int(pair.size - lone.size)
    return {"listed_edges": m, "directed": bool(directed),
            "self_loops": int(loops.sum()),
            "duplicate_edges": int(m - uniq.size),
            "one_way_edges": one_way, "two_way_edges": both,
            "examples": {"self_loops": show(key[loops]),
                         "duplicate_edges": show(uniq[counts > 1]),
                         "one_way_edges": one_way_ex}}


def _classes_from_values(values, name: str, what: str):
    """Map class values to 0..k-1 in sorted order (numeric sort when all are numbers);
    returns (y int64, class_names)."""
    vals = np.asarray(values)
    if vals.dtype.kind in "fc" and not np.isfinite(vals).all():
        raise DatasetError(f"{what}: NaN/inf class value", path=name, field=what)
    if vals.dtype.kind == "f" and (vals == np.round(vals)).all():
        vals = vals.astype(np.int64)
    uniq, y = np.unique(vals, return_inverse=True)
    return y.ravel().astype(np.int64), [str(u) for u in uniq.tolist()]


def _matrix_from_any(obj, n: int, name: str, what: str) -> sp.csr_matrix:
    """Node features given as an array/sparse matrix, or a file: .npz (scipy.sparse
    ``save_npz`` layout), .npy (dense, no pickles), or text (XC split ``N D`` features file
    or svmlight lines without labels), one row per node in node order."""
    if sp.issparse(obj) or isinstance(obj, np.ndarray):
        M = sp.csr_matrix(obj)
        M = _check_csr_parts(M.data, M.indices, M.indptr, M.shape, name=name, what=what)
    else:
        raw, fname = _read_bytes(obj)
        ext = _suffix(fname)
        if ext == ".npz" or raw[:4] == b"PK\x03\x04":
            parts = _open_npz(raw, fname)
            with parts.zf:
                if "kind" in parts:
                    g = _npz_to_container(parts, fname)
                    M = g.X
                else:
                    need = ("data", "indices", "indptr", "shape")
                    if not all(k in parts for k in need):
                        raise DatasetError("npz features need data/indices/indptr/shape "
                                           "(scipy.sparse.save_npz)", path=fname)
                    fmt = parts["format"].item() if "format" in parts else "csr"
                    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else str(fmt)
                    if fmt != "csr":
                        raise DatasetError(f"npz features must be csr, got {fmt}", path=fname)
                    M = _check_csr_parts(parts["data"], parts["indices"], parts["indptr"],
                                         parts["shape"], name=fname, what=what)
        elif ext == ".npy" or raw[:6] == b"\x93NUMPY":
            arr = read_npy_bytes(raw, _budget(), _fail_for(fname), kinds="biuf")
            if arr.ndim != 2:
                raise DatasetError(f"features must be a 2-D numeric array, got {arr.dtype} "
                                   f"{arr.shape}", path=fname)
            _check_declared({"rows": arr.shape[0], "features": arr.shape[1]}, name=fname)
            M = sp.csr_matrix(arr)
            M = _check_csr_parts(M.data, M.indices, M.indptr, M.shape, name=fname, what=what)
        else:
            h = _int_header(_header_line(raw, fname)[0]) if not _blank(raw) else None
            if h is not None and len(h) == 2:
                (nn, d), start = _xc_header(raw, fname, (2,))
                p = _tokenise(raw, fname, start, 2, False, False)
                _trim_rows(p, nn)
                M = _finish_matrix(p, p.indptr, p.indices, p.values, d, what="feature")
            else:
                if _blank(raw):
                    raise DatasetError("empty file", path=fname)
                p = _tokenise(raw, fname, 0, 1, False, True)
                d = int(p.indices.max()) + 1 if p.indices.size else 0
                M = _finish_matrix(p, p.indptr, p.indices, p.values, d, what="feature")
        name = fname
    if M.shape[0] != n:
        raise DatasetError(f"{what} has {M.shape[0]} rows but the graph has {n} nodes",
                           path=name, field=what)
    return M


def _labels_from_any(obj, n: int, node_names, name: str):
    """Node classes given as a sequence, or a text file of one class per line (node order)
    or ``node class`` lines (node names as in the edge list; unlisted nodes get -1)."""
    if not isinstance(obj, (str, os.PathLike)) and not hasattr(obj, "read"):
        vals = np.asarray(obj)
        if vals.ndim != 1 or vals.shape[0] != n:
            raise DatasetError(f"labels must have one entry per node ({n}), got shape "
                               f"{vals.shape}", path=name, field="labels")
        return _classes_from_values(vals, name, "labels")
    raw, fname = _read_bytes(obj)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not valid UTF-8 ({exc.reason})", path=fname,
                           line=raw[:exc.start].count(b"\n") + 1) from None
    rows = [(i + 1, ln.replace(",", " ").split()) for i, ln in enumerate(text.split("\n"))]
    rows = [(i, t) for i, t in rows if t and not t[0].startswith(("#", "%"))]
    if not rows:
        raise DatasetError("empty labels file", path=fname)
    widths = {len(t) for _, t in rows}
    if widths == {1}:
        if len(rows) != n:
            raise DatasetError(f"{len(rows)} classes for {n} nodes", path=fname,
                               line=rows[-1][0])
        vals = np.array([t[0] for _, t in rows])
        try:
            vals = vals.astype(np.int64)
        except ValueError:
            pass
        return _classes_from_values(vals, fname, "labels")
    if widths != {2}:
        i, t = next((i, t) for i, t in rows if len(t) != 2)
        raise DatasetError(f"expected 'node class' (2 fields), found {len(t)}", path=fname,
                           line=i)
    if node_names is not None:
        index = {s: k for k, s in enumerate(node_names)}
    else:
        index = None
    nodes = np.empty(len(rows), np.int64)
    for k, (i, t) in enumerate(rows):
        if index is not None:
            if t[0] not in index:
                raise DatasetError(f"node {t[0]!r} is not in the graph", path=fname, line=i)
            nodes[k] = index[t[0]]
        else:
            if not t[0].isdigit() or int(t[0]) >= n:
                raise DatasetError(f"node {t[0]!r} is not a node id in [0, {n})", path=fname,
                                   line=i)
            nodes[k] = int(t[0])
    if np.unique(nodes).size != nodes.size:
        raise DatasetError("a node is given two classes", path=fname)
    vals = np.array([t[1] for _, t in rows])
    try:
        vals = vals.astype(np.int64)
    except ValueError:
        pass
    codes, names = _classes_from_values(vals, fname, "labels")
    y = np.full(n, -1, np.int64)
    y[nodes] = codes
    return y, names
