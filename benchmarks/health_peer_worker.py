"""One peer run of the data-health benchmark, in the peers' own virtual environment.

Run by ``benchmarks/health_bench.py`` with the interpreter of ``.bench-venv-health/``
(cleanlab, datasketch, scikit-learn, scipy, numpy from PyPI). Imports only numpy, scipy
and the peer library, never featagg_core::

    python health_peer_worker.py cleanlab IN.npz OUT.json
    python health_peer_worker.py datasketch IN.npz OUT.json --threshold 0.95 --num-perm 128

``cleanlab``: ``IN.npz`` holds the noisy training labels as csr parts (``Y_data``,
``Y_indices``, ``Y_indptr``, ``Y_shape``) and the out-of-fold scores ``P`` (n x L, the
same scores featagg's rule gets, clipped to [0, 1]). Runs
``cleanlab.filter.find_label_issues(labels, pred_probs, multi_label=True)`` with its
defaults (the flags) and ``cleanlab.multilabel_classification.get_label_quality_scores``
with its defaults (the ranking: lower = more likely an issue); writes both.

``datasketch``: ``IN.npz`` holds the training and test features (``Xtr_*``, ``Xte_*`` csr
parts). One ``MinHash(num_perm)`` per row over its set of feature ids (built with
``MinHash.bulk``), the training rows inserted into ``MinHashLSH(threshold, num_perm)``,
every test row queried; each candidate pair is then verified by its exact cosine (as
featagg verifies its own), so both report only true pairs and differ in recall and time.
Writes the verified (test, train) pairs and the seconds of each phase.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import scipy.sparse as sp


def _csr(z, name):
    return sp.csr_matrix((z[name + "_data"], z[name + "_indices"], z[name + "_indptr"]),
                         shape=tuple(int(v) for v in z[name + "_shape"]))


def run_cleanlab(inp, out):
    from cleanlab.filter import find_label_issues
    from cleanlab.multilabel_classification.rank import get_label_quality_scores
    z = np.load(inp)
    Y = _csr(z, "Y")
    P = np.clip(z["P"].astype(np.float64), 0.0, 1.0)
    labels = [Y.indices[Y.indptr[i]:Y.indptr[i + 1]].tolist() for i in range(Y.shape[0])]
    t = time.perf_counter()
    issues = find_label_issues(labels, P, multi_label=True)
    t_find = time.perf_counter() - t
    t = time.perf_counter()
    quality = get_label_quality_scores(labels, P)
    t_rank = time.perf_counter() - t
    with open(out, "w") as f:
        json.dump({"issues": np.flatnonzero(issues).tolist(), "quality": quality.tolist(),
                   "seconds_find": t_find, "seconds_rank": t_rank}, f)


def run_datasketch(inp, out, threshold, num_perm):
    from datasketch import MinHash, MinHashLSH
    z = np.load(inp)
    Xtr, Xte = _csr(z, "Xtr"), _csr(z, "Xte")
    t0, c0 = time.perf_counter(), time.process_time()

    def sets(X):
        return [[str(j).encode() for j in X.indices[X.indptr[i]:X.indptr[i + 1]]]
                for i in range(X.shape[0])]

    s_tr, s_te = sets(Xtr), sets(Xte)
    m_tr = MinHash.bulk(s_tr, num_perm=num_perm)
    m_te = MinHash.bulk(s_te, num_perm=num_perm)
    t_hash = time.perf_counter() - t0
    t = time.perf_counter()
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    with lsh.insertion_session() as sess:
        for i, m in enumerate(m_tr):
            if s_tr[i]:
                sess.insert(i, m, check_duplication=False)
    t_index = time.perf_counter() - t
    t = time.perf_counter()
    cand_t, cand_r = [], []
    for i, m in enumerate(m_te):
        if not s_te[i]:
            continue
        for r in lsh.query(m):
            cand_t.append(i)
            cand_r.append(r)
    t_query = time.perf_counter() - t
    t = time.perf_counter()
    ct, cr = np.asarray(cand_t, np.int64), np.asarray(cand_r, np.int64)
    keep_t, keep_r = [], []
    if ct.size:
        def unit(X):
            nrm = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
            return sp.diags(1.0 / np.where(nrm > 0, nrm, 1.0)) @ X
        A, B = unit(Xte.astype(np.float64)).tocsr(), unit(Xtr.astype(np.float64)).tocsr()
        cos = np.asarray(A[ct].multiply(B[cr]).sum(axis=1)).ravel()
        ok = cos >= threshold - 1e-9
        keep_t, keep_r = ct[ok].tolist(), cr[ok].tolist()
    t_verify = time.perf_counter() - t
    with open(out, "w") as f:
        json.dump({"test": keep_t, "train": keep_r, "candidates": int(ct.size),
                   "seconds_hash": t_hash, "seconds_index": t_index, "seconds_query": t_query,
                   "seconds_verify": t_verify,
                   "seconds": t_hash + t_index + t_query + t_verify,
                   "cpu": time.process_time() - c0}, f)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["cleanlab", "datasketch"])
    p.add_argument("inp")
    p.add_argument("out")
    p.add_argument("--threshold", type=float, default=0.95)
    p.add_argument("--num-perm", type=int, default=128)
    a = p.parse_args(argv)
    if a.mode == "cleanlab":
        run_cleanlab(a.inp, a.out)
    else:
        run_datasketch(a.inp, a.out, a.threshold, a.num_perm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
