"""Row blocks of a multi-label data set on the workers, and the reductions over them.

A *row block* is a ``(X, Y)`` pair of csr matrices holding consecutive rows (Y may be
None). The twins take either in-memory matrices, which are validated here, cut into
blocks and scattered once, or a :class:`ShardedMultiLabel` whose blocks were read on the
workers by :func:`load_xc_shards` (nothing of the data passes through this process).
Block order is row order: block ``k`` holds global rows ``starts[k] : starts[k + 1]``.
"""
from __future__ import annotations

import glob
import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from featagg_core.distributed.executor import Done, Executor
from featagg_core.utils.docstrings import fill_doc

__all__ = ["ShardedMultiLabel", "load_xc_shards", "row_blocks", "tree_reduce",
           "local_groups"]


# ---------------------------------------------------------------------------- handle
@dataclass
class ShardedMultiLabel:
    """A multi-label data set held on Dask workers, one row block per shard file.

    Attributes
    ----------
    paths : list of str, the shard files in row order (sorted by name).
    blocks : list of futures (``"serial"``: finished values) of ``(X, Y)`` row blocks.
    starts : int64 array (n_blocks + 1,), first global row of every block and ``n``.
    n_samples, n_features, n_labels, nnz_X, nnz_Y : int
    fingerprint : str, 16 hex digits hashing the shards' own fingerprints (in order) and
        the shape. Not the fingerprint of the same rows loaded as one matrix (computing
        that would stream every byte through one process).
    client : the client the blocks live on (``"serial"`` for in-process blocks).
    """
    paths: List[str]
    blocks: list
    starts: np.ndarray
    n_samples: int
    n_features: int
    n_labels: int
    nnz_X: int
    nnz_Y: int
    fingerprint: str
    client: Any = field(repr=False, default="serial")
    kind: str = field(default="multilabel", init=False)

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    def gather(self):
        """All rows in one :class:`featagg_core.data.MultiLabelData` (small data only).

        Returns
        -------
        MultiLabelData
            The shards' rows, in order.
        """
        from featagg_core.data import MultiLabelData

        ex = Executor(self.client)
        with ex:
            parts = ex.gather(self.blocks)
        X = sp.vstack([p[0] for p in parts], format="csr")
        Y = sp.vstack([p[1] for p in parts], format="csr")
        return MultiLabelData(X=X.astype(np.float32), Y=Y.astype(np.float32),
                              name=f"{len(self.paths)} shards",
                              source="shards: " + ", ".join(os.path.basename(p)
                                                            for p in self.paths[:3])
                              + (" ..." if len(self.paths) > 3 else ""))


    def take_rows(self, rows):
        """Some rows gathered from the workers: each block selects its own rows there
        (:func:`select_rows`) and only those travel to this process.

        Parameters
        ----------
        rows : array-like of int
            Global row numbers, sorted and without repeats, in ``[0, n_samples)``.

        Returns
        -------
        tuple (X, Y)
            Those rows, in order (csr, as the blocks hold them).

        Raises
        ------
        ValueError
            For rows out of range, unsorted or repeated.
        """
        rows = np.asarray(rows, dtype=np.int64).ravel()
        if rows.size and (rows[0] < 0 or rows[-1] >= self.n_samples
                          or np.any(np.diff(rows) <= 0)):
            raise ValueError(f"rows must be sorted, distinct and in [0, {self.n_samples})")
        which = np.searchsorted(self.starts, rows, side="right") - 1
        ex = Executor(self.client)
        with ex:
            wanted = [k for k in range(self.n_blocks) if np.any(which == k)]
            parts = ex.gather([ex.submit(select_rows, self.blocks[k],
                                         rows[which == k] - self.starts[k])
                               for k in wanted])
        if not parts:
            return (sp.csr_matrix((0, self.n_features), dtype=np.float32),
                    sp.csr_matrix((0, self.n_labels), dtype=np.float32))
        return (sp.vstack([p[0] for p in parts], format="csr"),
                sp.vstack([p[1] for p in parts], format="csr"))


def _shard_paths(pattern) -> List[str]:
    from featagg_core.data import DatasetError

    if isinstance(pattern, (list, tuple)):
        paths = [str(p) for p in pattern]
    else:
        pattern = os.fspath(pattern)
        if os.path.isdir(pattern):
            paths = [os.path.join(pattern, f) for f in os.listdir(pattern)
                     if not f.startswith(".") and os.path.isfile(os.path.join(pattern, f))]
        else:
            paths = glob.glob(pattern)
    paths = sorted(paths)
    if not paths:
        raise DatasetError(f"{pattern}: no shard files found (give a directory, a glob "
                           "pattern such as 'shards/part-*.txt', or a list of files)")
    return paths


class _ShardBlock(tuple):
    """An ``(X, Y)`` row block read from a file, remembering the file's format and
    fingerprint (a tuple, so ``X, Y = block`` works as for any block)."""

    def __new__(cls, X, Y, fmt, fingerprint):
        obj = super().__new__(cls, (X, Y))
        obj.fmt, obj.fingerprint = fmt, fingerprint
        return obj

    def __reduce__(self):
        return _ShardBlock, (self[0], self[1], self.fmt, self.fingerprint)


def _read_shard(path, reader_kwargs):
    """Read one shard on a worker with featagg's own reader (nothing else escapes it).
    The task depends on nothing, so a block lost with its worker is simply read again."""
    from featagg_core.data import load_dataset

    data = load_dataset(path, **reader_kwargs)
    return _ShardBlock(sp.csr_matrix(data.X, dtype=np.float32),
                       sp.csr_matrix(data.Y, dtype=np.float32),
                       data.source.split(":", 1)[0], data.fingerprint)


def _shard_meta(block):
    X, Y = block
    return (int(X.shape[0]), int(X.shape[1]), int(Y.shape[1]), int(X.nnz), int(Y.nnz),
            block.fmt, block.fingerprint)


def load_xc_shards(client, pattern, **reader_kwargs) -> ShardedMultiLabel:
    """Read a directory (or glob pattern, or list) of XC / svmlight shard files on the workers.

    One row block per file, with featagg's readers (:func:`featagg_core.data.load_dataset`).
    Shards are taken in sorted file-name order; their rows follow one another. Every
    worker must see the files at the same path (shared or copied file system). Reading is
    a task, so a shard lost with its worker is read again. All shards must agree on the
    number of features and labels (XC headers ``N D L``); svmlight shards need explicit
    ``zero_based=`` (per-shard auto-detection could shift one shard's indices) and
    ``n_features=``/``n_labels=``.

    Parameters
    ----------
    client : "serial", dask.distributed.Client or str
        Where to read.
    pattern : str or list of str
        A directory, a glob pattern or a list of files.
    **reader_kwargs
        Passed to :func:`featagg_core.data.load_dataset`.

    Returns
    -------
    ShardedMultiLabel
        The handle every twin accepts in place of ``X`` (with ``Y=None``).

    Raises
    ------
    ValueError
        For svmlight shards without ``zero_based`` or the sizes, or shards that disagree.
    """
    from featagg_core.data import DatasetError

    paths = _shard_paths(pattern)
    ex = Executor(client)
    owned = ex._owned
    if owned:  # the handle keeps the client: the blocks live as long as it does
        ex._owned = False
    with ex:
        workers = ex.workers()  # spread the reads: block k starts on worker k mod W
        blocks = [ex.submit(_read_shard, p, dict(reader_kwargs),
                            workers=None if ex.serial else [workers[k % len(workers)]])
                  for k, p in enumerate(paths)]
        meta = ex.gather([ex.submit(_shard_meta, b) for b in blocks])
        fmts = {m[5] for m in meta}
        if "svmlight" in fmts:
            if reader_kwargs.get("zero_based", "auto") == "auto":
                raise ValueError("zero_based must be True or False for svmlight shards "
                                 "(auto-detection per shard could shift one shard's indices), "
                                 f"got {reader_kwargs.get('zero_based', 'auto')!r}")
            if len(meta) > 1 and ("n_features" not in reader_kwargs
                                  or "n_labels" not in reader_kwargs):
                raise ValueError("n_features/n_labels: svmlight shards need both (a shard "
                                 "without the highest index would be narrower)")
        d, L = meta[0][1], meta[0][2]
        for p, m in zip(paths, meta):
            if (m[1], m[2]) != (d, L):
                raise DatasetError(f"this shard has {m[1]} features and {m[2]} labels, the "
                                   f"first one ({os.path.basename(paths[0])}) {d} and {L}; "
                                   "all shards must share the header's D and L", path=p)
        counts = np.array([m[0] for m in meta], np.int64)
        starts = np.r_[0, np.cumsum(counts)].astype(np.int64)
        h = hashlib.sha1(repr((int(starts[-1]), d, L)).encode())
        for m in meta:
            h.update(m[6].encode())
        handle = ShardedMultiLabel(
            paths=paths, blocks=blocks, starts=starts, n_samples=int(starts[-1]),
            n_features=int(d), n_labels=int(L), nnz_X=int(sum(m[3] for m in meta)),
            nnz_Y=int(sum(m[4] for m in meta)), fingerprint=h.hexdigest()[:16],
            client=ex.client if ex.client is not None else "serial")
    return handle


# ---------------------------------------------------------------------------- blocks
@dataclass
class Blocks:
    """Row blocks ready for a twin: futures, row offsets and the data's shape."""
    futures: list
    starts: np.ndarray
    n_features: int
    n_labels: Optional[int]

    @property
    def n_samples(self) -> int:
        return int(self.starts[-1])


@fill_doc
def row_blocks(ex: Executor, X, Y, n_parts: Optional[int],
               validate: Callable[[Any, Any], tuple], name: str = "X") -> Blocks:
    """Blocks of ``(X, Y)`` on the cluster.

    A :class:`ShardedMultiLabel` as it is, or in-memory matrices validated by
    ``validate(X, Y) -> (X, Y)`` (the estimator's own checks), cut into ``n_parts`` row
    blocks (default: one per worker thread, at least 2 when there are 2 rows) and
    scattered once.

    Parameters
    ----------
    {executor}
    X : sparse matrix or ShardedMultiLabel
        The features (or the shards).
    Y : sparse matrix or None
        The labels (None with shards).
    n_parts : int or None
        The number of row blocks.
    validate : callable
        ``validate(X, Y) -> (X, Y)``.
    name : str, default="X"
        The argument's name in messages.

    Returns
    -------
    Blocks
        The block futures and their sizes.

    Raises
    ------
    ValueError
        For labels given with shards, shards of another client, or a bad ``n_parts``.
    """
    if isinstance(X, ShardedMultiLabel):
        if Y is not None:
            raise ValueError("Y: a ShardedMultiLabel carries its own labels; pass Y=None")
        same = (X.client == "serial" and ex.serial) or (X.client is ex.client)
        if not same:
            raise ValueError(f"{name}: these shards were read through another Dask client; "
                             "pass the client given to load_xc_shards")
        if not ex.serial and any(f.status in ("cancelled", "error") for f in X.blocks):
            from featagg_core.distributed.executor import ClusterError

            raise ClusterError(f"{name}: some shard blocks are gone from the cluster; read "
                               "them again with load_xc_shards")
        return Blocks(list(X.blocks), X.starts.copy(), X.n_features, X.n_labels)
    X, Y = validate(X, Y)
    n = X.shape[0]
    if n_parts is None:
        n_parts = max(2, ex.total_threads())
    if isinstance(n_parts, bool) or not isinstance(n_parts, (int, np.integer)) or n_parts < 1:
        raise ValueError(f"n_parts must be an integer >= 1, got {n_parts!r}")
    n_parts = int(max(1, min(n_parts, n)))
    starts = np.round(np.linspace(0, n, n_parts + 1)).astype(np.int64)
    parts = [(X[a:b], None if Y is None else Y[a:b]) for a, b in zip(starts[:-1], starts[1:])]
    futures = ex.scatter(parts)
    return Blocks(futures, starts, int(X.shape[1]), None if Y is None else int(Y.shape[1]))


# ---------------------------------------------------------------------------- reductions
@fill_doc
def tree_reduce(ex: Executor, futures: Sequence[Any], merge: Callable[[Any, Any], Any]):
    """Pairwise reduction of ``futures`` by ``merge(left, right)``.

    Adjacent pairs, left before right, level by level: log2(n) rounds of tasks, no gather.

    Parameters
    ----------
    {executor}
    futures : sequence
        The values to reduce (at least one).
    merge : callable
        ``merge(left, right)``.

    Returns
    -------
    future
        The future of the reduced value.

    Raises
    ------
    ValueError
        When ``futures`` is empty.
    """
    futures = list(futures)
    if not futures:
        raise ValueError("nothing to reduce")
    while len(futures) > 1:
        nxt = [ex.submit(merge, futures[i], futures[i + 1])
               for i in range(0, len(futures) - 1, 2)]
        if len(futures) % 2:
            nxt.append(futures[-1])
        futures = nxt
    return futures[0]


def _pick(pieces, r):
    return pieces[r]


@fill_doc
def reduce_scatter(ex: Executor, partials: Sequence[Any], n_rows: int,
                   slice_rows: Callable[[Any, int, int], Any], merge: Callable[[Any, Any], Any],
                   finish: Callable[..., Any], concat: Callable[..., Any],
                   max_ranges: int = 16, finish_args: tuple = ()):
    """Sum partial results (one per worker) exactly, by row ranges.

    Each partial is cut into ``S = min(len(partials), max_ranges)`` ranges of rows; range
    ``r`` of every partial is merged (pairwise, any order: the sums are exact) and finished
    (``finish(merged, lo, *finish_args)``: rounding and row-local normalising) where the
    first of them lives, and ``concat(*finished)`` puts the ranges together. Every worker
    merges about ``1/S`` of the entries, instead of one worker merging them all at the top
    of a reduction tree.

    Parameters
    ----------
    {executor}
    partials : sequence
        Futures of the partial results.
    n_rows : int
        Their number of rows.
    slice_rows : callable
        ``slice_rows(partial, lo, hi)``.
    merge : callable
        ``merge(a, b)``, exact.
    finish : callable
        ``finish(merged, lo, *finish_args)``.
    concat : callable
        ``concat(*finished)``.
    max_ranges : int, default=16
        The most row ranges.
    finish_args : tuple, default=()
        Extra arguments of ``finish``.

    Returns
    -------
    future
        The future of ``concat``'s result.
    """
    partials = list(partials)
    S = max(1, min(len(partials), int(max_ranges), int(n_rows)))
    bounds = np.round(np.linspace(0, n_rows, S + 1)).astype(np.int64)
    if S == 1:
        return ex.submit(concat, ex.submit(finish, tree_reduce(ex, partials, merge), 0,
                                           *finish_args))
    pieces = [ex.submit(_slice_all, p, bounds, slice_rows) for p in partials]
    finished = []
    for r in range(S):
        col = [ex.submit(_pick, pc, r) for pc in pieces]
        # rotate which partial's worker merges range r, so the ranges spread out
        col = col[r % len(col):] + col[:r % len(col)]
        finished.append(ex.submit(finish, tree_reduce(ex, col, merge), int(bounds[r]),
                                  *finish_args))
    return ex.submit(concat, *finished)


def _slice_all(partial, bounds, slice_rows):
    return [slice_rows(partial, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


@fill_doc
def local_groups(ex: Executor, futures: Sequence[Any]):
    """``(worker, futures)`` pairs: the blocks each worker holds, in row order.

    Serial: one group. An order-free (exact) reduction computes one partial per group
    there, then merges across workers: log2(workers) rounds instead of log2(blocks).

    Parameters
    ----------
    {executor}
    futures : sequence
        The block futures.

    Returns
    -------
    list of (str or None, list)
        The worker's address (None when unknown or serial) and its futures.
    """
    futures = list(futures)
    if ex.serial:
        return [(None, futures)]
    from distributed import wait

    wait(futures)
    who = ex.client.who_has(futures)
    groups = {}
    for f in futures:
        w = min(who.get(f.key, ()) or ("~",))
        groups.setdefault(w, []).append(f)
    return [(None if w == "~" else w, fs) for w, fs in sorted(groups.items())]


def is_future(obj) -> bool:
    """Whether ``obj`` is a future (a Dask one or the serial executor's ``Done``).

    Parameters
    ----------
    obj : object
        Anything.

    Returns
    -------
    bool
        True for a future.
    """
    return isinstance(obj, Done) or hasattr(obj, "key")


# ---------------------------------------------------------------------------- block tasks
@fill_doc
def row_nnz(block):
    """The non-zeros of each feature row of a block (a task).

    Parameters
    ----------
    {block}

    Returns
    -------
    ndarray of int64
        One count per row.
    """
    return np.diff(block[0].indptr).astype(np.int64)


@fill_doc
def select_rows(block, rows):
    """Rows ``rows`` of a block (a task).

    Parameters
    ----------
    {block}
    rows : array-like of int
        Row positions in the block.

    Returns
    -------
    tuple (X, Y)
        Those rows (Y None when the block has none).
    """
    X, Y = block
    return X[rows], (None if Y is None else Y[rows])


@fill_doc
def label_counts(block, n_labels):
    """How many rows of a block carry each label (a task).

    Parameters
    ----------
    {block}
    n_labels : int
        The number of labels.

    Returns
    -------
    ndarray of int64, shape (n_labels,)
        The counts.
    """
    Y = block[1]
    return np.bincount(Y.indices, minlength=n_labels).astype(np.int64)


def add_counts(a, b):
    """The sum of two count vectors (the merge of :func:`label_counts`).

    Parameters
    ----------
    a, b : ndarray
        Count vectors of the same length.

    Returns
    -------
    ndarray
        ``a + b``.
    """
    return a + b


@fill_doc
def select_labels(block, cols):
    """A block with only the label columns ``cols`` (a task).

    Parameters
    ----------
    {block}
    cols : array-like of int
        The label columns to keep.

    Returns
    -------
    tuple (X, Y)
        The features and the kept label columns (csr).
    """
    X, Y = block
    return X, sp.csr_matrix(Y[:, cols])
