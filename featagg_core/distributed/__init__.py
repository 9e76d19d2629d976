"""Dask-distributed twins of the parts of featagg_core that scale out.

The layout follows stumpy (``stump(T, m)`` / ``stumped(client, T, m)``): each twin takes a
Dask client first (setting up the cluster is the caller's business), the same inputs
and parameters as its single-machine counterpart, scatters its inputs once (or reads
them on the workers), submits the same numba kernels per worker over index ranges, and
merges. ``client`` is ``"serial"`` (the same code path in this process), a
``dask.distributed.Client``, or a scheduler address string (a client is opened for the
call and closed after it).

Twins (results equal the single-machine fit with the same seed)
    :func:`defrag_distributed` - ``Defrag(...).fit(X, Y)``: same ``labels_``, ``tree_``.
    :func:`ktxmlc_distributed` - ``KTXMLC(...).fit(X, Y)``: same trees, weights and
    predictions.
    :func:`vocabulary_distributed` - Bateni et al.'s distributed thresholding
    compression, values counted on the workers (:func:`distributed_threshold_compress`
    is the earlier name and signature, kept as a thin wrapper).

Data that does not fit one machine
    :func:`load_xc_shards` reads a directory of XC / svmlight shard files on the workers
    and returns a :class:`ShardedMultiLabel` that the twins accept in place of ``X``.

Why the results are equal: every sum that crosses a row partition (``XᵀY``, ``YᵀX``) is
computed exactly and rounded once (:mod:`featagg_core.utils.products`), and every node of a
tree is split by one task with the single machine's kernel, seed and member order.
Progress callbacks are the single-machine ones (``Defrag``: ``(level, n_levels)``;
``KTXMLC``, vocabulary: ``(fraction, message)``); one raising
:class:`featagg_core.utils.cancel.Cancelled` stops submitting, cancels the outstanding
futures and re-raises. A task lost with its worker is re-run; input scattered from the
driver that is lost with its worker gives :class:`ClusterError` (no model).

Modules: ``defrag``, ``ktxmlc``, ``vocab`` (the twins; ``vocab`` also keeps the first
name, :func:`distributed_threshold_compress`), ``blocks`` (row blocks on the workers, shard
loading, reductions), ``groups`` (where the rows of a tree's nodes live while the tree twins grow it),
``executor`` (one small executor in front of a client or of this process: retries,
cancellation, :class:`ClusterError`) and
``cluster`` (where they run: :func:`scheduler_from_env` and :func:`describe_scheduler` for
``FEATAGG_DASK_SCHEDULER``, :func:`dask_client`, :func:`map_parts`). Deciding whether a
run's step is fitted here or by its twin is the run model's (:mod:`featagg_core.runs.steps`).

This ``__init__`` is the public face (a contract path, ``featagg_core.distributed``): it
defines nothing and lists the names above from the modules that define them.
"""
from featagg_core.distributed.blocks import ShardedMultiLabel, load_xc_shards
from featagg_core.distributed.cluster import (
    SCHEDULER_ENV,
    dask_client,
    describe_scheduler,
    map_parts,
    scheduler_from_env,
)
from featagg_core.distributed.defrag import defrag_distributed
from featagg_core.distributed.executor import ClusterError
from featagg_core.distributed.ktxmlc import ktxmlc_distributed
from featagg_core.distributed.vocab import distributed_threshold_compress, vocabulary_distributed

__all__ = ["defrag_distributed", "ktxmlc_distributed", "vocabulary_distributed",
           "distributed_threshold_compress", "load_xc_shards", "ShardedMultiLabel",
           "ClusterError", "scheduler_from_env", "describe_scheduler", "dask_client",
           "map_parts", "SCHEDULER_ENV"]
