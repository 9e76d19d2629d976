"""One peer run of the XMLC benchmark, in the peers' own virtual environment.

Run by ``benchmarks/xmlc_bench.py`` with the interpreter of ``.bench-venv-peers/`` (PECOS
needs numpy < 2 and scipy < 1.14, which the project's venv does not have). Imports only
numpy, scipy and the peer library, never featagg_core::

    python xmlc_peer_worker.py METHOD DATA.npz OUT.npz --threads 2 --seed 0 --k 5

``DATA.npz`` holds the train/test csr parts (``Xtr_data``, ``Xtr_indices``, ``Xtr_indptr``,
``Xtr_shape``, same for ``Ytr``, ``Xte``); for omikuji also an XC text file beside it
(``DATA.npz`` + ``.train.txt``, written by the parent), because omikuji's Python API trains
from a file. Writes the top-k predictions (``idx``, ``val``: n x k, -1 where absent) to
``OUT.npz`` and prints one ``RESULT {json}`` line: train/predict wall and CPU seconds, the
model's size on disk and the peak resident memory of this process (``VmHWM``, data
included) and the resident memory after loading the data (``base_mb``).

Settings (each peer's documented defaults unless said):

* ``omikuji_parabel``: ``Model.default_hyper_param()`` with 3 trees (Parabel's ensemble).
* ``omikuji_bonsai``: 3 trees, ``cluster_k=100``, unbalanced, ``max_depth=3`` (the omikuji
  README's Bonsai-like settings).
* ``napkinxc_plt``: ``PLT`` defaults (binary balanced k-means tree, logistic loss, C=10).
* ``pecos_xrlinear``: PIFA label embedding from L2-normalised rows, hierarchical k-means
  indexer with its defaults (``nr_splits=16``, ``max_leaf_size=100``), ``XLinearModel.train``
  defaults (squared hinge, tfn negatives, threshold 0.1), prediction with beam 10 and the
  default ``l3-hinge`` post-processor. Rows are L2-normalised for training and prediction,
  as PECOS's own tf-idf pipeline does (without it PECOS loses 8-10 P@1 on Bibtex and
  Delicious).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

from _common import cpu_seconds as _cpu_s, wall_and_cpu


def _peak_mb():
    """VmHWM of this process: unlike ``ru_maxrss`` it starts afresh at exec (a child's
    ``ru_maxrss`` starts at its parent's resident size at fork)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _current_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _dir_mb(path):
    return sum(os.path.getsize(os.path.join(dp, f))
               for dp, _, fs in os.walk(path) for f in fs) / 2 ** 20


def _csr(z, name):
    return sp.csr_matrix((z[name + "_data"], z[name + "_indices"], z[name + "_indptr"]),
                         shape=tuple(int(v) for v in z[name + "_shape"]))


def _l2_rows(X):
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    inv = np.zeros_like(sq)
    inv[sq > 0] = 1.0 / np.sqrt(sq[sq > 0])
    out = sp.csr_matrix(sp.diags(inv.astype(np.float32)) @ X, dtype=np.float32)
    out.sort_indices()
    return out


def _pairs_to_topk(preds, n, k):
    idx = np.full((n, k), -1, np.int32)
    val = np.zeros((n, k), np.float32)
    for i, p in enumerate(preds):
        for r, (lab, s) in enumerate(p[:k]):
            idx[i, r] = lab
            val[i, r] = s
    return idx, val


def run(method, data_path, threads, seed, k, workdir):
    z = np.load(data_path)
    Xte = _csr(z, "Xte")
    n_labels = int(z["Ytr_shape"][1])
    if method != "omikuji_parabel" and method != "omikuji_bonsai":
        Xtr, Ytr = _csr(z, "Xtr"), _csr(z, "Ytr")
    del z
    base = _current_mb()
    if method.startswith("omikuji"):
        import omikuji

        hp = omikuji.Model.default_hyper_param()
        hp.n_trees = 3
        if method == "omikuji_bonsai":
            hp.cluster_balanced = False
            hp.cluster_k = 100
            hp.max_depth = 3
        model, train = wall_and_cpu(lambda: omikuji.Model.train_on_data(
            data_path + ".train.txt", hp, n_threads=threads))
        X = Xte.tocsr()
        queries = [list(zip(X.indices[X.indptr[i]:X.indptr[i + 1]].tolist(),
                            X.data[X.indptr[i]:X.indptr[i + 1]].tolist()))
                   for i in range(X.shape[0])]
        model.init_prediction_thread_pool(1)
        preds, pred = wall_and_cpu(lambda: [model.predict(q, top_k=k) for q in queries])
        idx, val = _pairs_to_topk(preds, X.shape[0], k)
        d = tempfile.mkdtemp(dir=workdir)
        model.save(d)
        size_mb = _dir_mb(d)
    elif method == "napkinxc_plt":
        from napkinxc.models import PLT

        d = tempfile.mkdtemp(dir=workdir)
        model = PLT(d, threads=threads, seed=seed)
        Yl = [r.tolist() for r in np.split(Ytr.indices, Ytr.indptr[1:-1])]
        _, train = wall_and_cpu(lambda: model.fit(Xtr, Yl))
        preds, pred = wall_and_cpu(lambda: model.predict_proba(Xte, top_k=k))
        idx, val = _pairs_to_topk(preds, Xte.shape[0], k)
        size_mb = _dir_mb(d)
    elif method == "pecos_xrlinear":
        from pecos.xmc import Indexer, LabelEmbeddingFactory
        from pecos.xmc.xlinear.model import XLinearModel

        Ytr = sp.csr_matrix(Ytr, dtype=np.float32)
        t0, c0 = time.perf_counter(), _cpu_s()
        Xn = _l2_rows(Xtr)  # PECOS's tf-idf pipeline L2-normalises rows: timed as training
        label_feat = LabelEmbeddingFactory.create(Ytr, Xn, method="pifa")
        chain = Indexer.gen(label_feat, indexer_type="hierarchicalkmeans", seed=seed,
                            threads=threads)
        model = XLinearModel.train(Xn, Ytr, C=chain, threads=threads)
        train = (time.perf_counter() - t0, _cpu_s() - c0)
        P, pred = wall_and_cpu(lambda: model.predict(_l2_rows(Xte), beam_size=10, only_topk=k,
                                                     threads=threads))
        P = sp.csr_matrix(P)
        idx = np.full((Xte.shape[0], k), -1, np.int32)
        val = np.zeros((Xte.shape[0], k), np.float32)
        for i in range(P.shape[0]):
            a, b = P.indptr[i], P.indptr[i + 1]
            o = np.lexsort((P.indices[a:b], -P.data[a:b]))[:k]
            idx[i, :o.size] = P.indices[a:b][o]
            val[i, :o.size] = P.data[a:b][o]
        d = tempfile.mkdtemp(dir=workdir)
        model.save(d)
        size_mb = _dir_mb(d)
    else:
        raise SystemExit(f"unknown peer method {method!r}")
    return idx, val, dict(train_s=train[0], train_cpu_s=train[1],
                          predict_s=pred[0], predict_cpu_s=pred[1], model_mb=size_mb,
                          base_mb=base, n_test=int(Xte.shape[0]), n_labels=n_labels)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("method")
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="xmlc_peer_")
    try:
        idx, val, res = run(args.method, args.data, args.threads, args.seed, args.k, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    np.savez(args.out, idx=idx, val=val)
    res["peak_mb"] = _peak_mb()
    print("RESULT " + json.dumps(res), flush=True)


if __name__ == "__main__":
    sys.exit(main())
