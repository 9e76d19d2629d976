"""KTXMLC against omikuji (Parabel- and Bonsai-like) and napkinXC PLT, same thread count.

Usage::

    .venv/bin/python benchmarks/xmlc_bench.py [--quick] [--threads 2] [--datasets bibtex,delicious,synthetic]
                                              [--synthetic-size 100000,100000,10000]

Reads the real data from ``../shared/data`` (Bibtex in the XC-repo/DEFRAG split,
Delicious in the MULAN split); a data set that is missing is skipped with a message.
The synthetic set comes from :func:`featagg_core.synthetic.make_powerlaw_multilabel`.
Every (method, data set) runs in its own subprocess, so the peak resident memory
(``ru_maxrss``) is that method's alone (it includes the loaded data, reported as the
baseline). NUMBA_NUM_THREADS, omikuji's ``n_threads`` and napkinXC's ``threads`` are all
set to ``--threads``. omikuji and napkinXC are benchmark-only dependencies
(requirements-bench.txt). Writes the table to ``benchmarks/results/xmlc.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")
REAL = {
    "bibtex": os.path.join(DATA, "bibtex", "xc_repo_split"),
    "delicious": os.path.join(DATA, "delicious", "xc_format"),
}
OURS = ("ktxmlc_k2", "ktxmlc_kbig", "ktxmlc_defrag", "onevsall")
PEERS = ("omikuji_parabel", "omikuji_bonsai", "napkinxc_plt")


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _current_rss_mb():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        return float("nan")


def _dir_mb(path):
    tot = 0
    for dp, _, fs in os.walk(path):
        for f in fs:
            tot += os.path.getsize(os.path.join(dp, f))
    return tot / 2 ** 20


def _load(dataset, workdir):
    """(train, test, train_path) — train_path is an XC text file for omikuji."""
    from featagg_core.data import load_xc

    if dataset in REAL:
        tr = load_xc(os.path.join(REAL[dataset], "train.txt"))
        te = load_xc(os.path.join(REAL[dataset], "test.txt"))
        return tr, te, os.path.join(REAL[dataset], "train.txt")
    path = os.path.join(workdir, "synthetic_train.txt")
    test_path = os.path.join(workdir, "synthetic_test.txt")
    tr, te = load_xc(path), load_xc(test_path)
    return tr, te, path


def _make_synthetic(size, workdir):
    from featagg_core.data import MultiLabelData, save_xc
    from featagg_core.synthetic import make_powerlaw_multilabel

    n, d, L = size
    data = make_powerlaw_multilabel(n, d, L, avg_labels=4.0, avg_features=40.0,
                                    test_size=0.2, random_state=0)
    save_xc(MultiLabelData(data.X, data.Y), os.path.join(workdir, "synthetic_train.txt"))
    save_xc(MultiLabelData(data.X_test, data.Y_test), os.path.join(workdir, "synthetic_test.txt"))
    return data.X.shape, data.X_test.shape, data.Y.shape[1]


def _kbig(dataset, n_labels):
    """The larger K: the elbow of the root WCSS curve (computed in the worker)."""
    return None


def worker(method, dataset, threads, workdir):
    tr, te, train_path = _load(dataset, workdir)
    base_rss = _current_rss_mb()
    k = 5
    info = {}
    if method.startswith("ktxmlc") or method == "onevsall":
        from featagg_core.ktxmlc import KTXMLC, DefragKTXMLC, OneVsAll, elbow_curve

        if method == "ktxmlc_k2":
            model = KTXMLC(n_clusters=2)
        elif method == "ktxmlc_kbig":
            ks = [2, 4, 8, 16, 32, 64]
            el = elbow_curve(tr.X, tr.Y, ks=[q for q in ks if q < tr.Y.shape[1]])
            kb = max(4, el.elbow)
            info["K"] = kb
            model = KTXMLC(n_clusters=kb, balanced=False)
        elif method == "ktxmlc_defrag":
            model = DefragKTXMLC(d0=8)
        else:
            model = OneVsAll()
        # compile outside the timed region (numba JIT cache is warm after the first run)
        from featagg_core import ktxmlc as _m
        _m.warmup()
        if method == "ktxmlc_defrag":
            from featagg_core import defrag as _d
            if hasattr(_d, "warmup"):
                _d.warmup()
        t0, c0 = time.perf_counter(), _cpu_s()
        model.fit(tr.X, tr.Y)
        train_s, train_cpu = time.perf_counter() - t0, _cpu_s() - c0
        t0, c0 = time.perf_counter(), _cpu_s()
        S = model.predict_scores(te.X, k=k)
        pred_s, pred_cpu = time.perf_counter() - t0, _cpu_s() - c0
        size_mb = model.model_size_bytes_ / 2 ** 20
        if method == "ktxmlc_defrag":
            info["d_agg"] = int(model.defrags_[0].n_clusters_)
    elif method.startswith("omikuji"):
        import omikuji
        import scipy.sparse as sp

        hp = omikuji.Model.default_hyper_param()
        hp.n_trees = 3
        if method == "omikuji_bonsai":
            hp.cluster_balanced = False
            hp.cluster_k = 100
            hp.max_depth = 3
        t0, c0 = time.perf_counter(), _cpu_s()
        model = omikuji.Model.train_on_data(train_path, hp, n_threads=threads)
        train_s, train_cpu = time.perf_counter() - t0, _cpu_s() - c0
        X = te.X.tocsr()
        queries = [list(zip(X.indices[X.indptr[i]:X.indptr[i + 1]].tolist(),
                            X.data[X.indptr[i]:X.indptr[i + 1]].tolist()))
                   for i in range(X.shape[0])]
        model.init_prediction_thread_pool(1)
        t0, c0 = time.perf_counter(), _cpu_s()
        preds = [model.predict(q, top_k=k) for q in queries]
        pred_s, pred_cpu = time.perf_counter() - t0, _cpu_s() - c0
        rows, cols, vals = [], [], []
        for i, p in enumerate(preds):
            for lab, s in p:
                rows.append(i)
                cols.append(lab)
                vals.append(s)
        S = sp.csr_matrix((vals, (rows, cols)), shape=te.Y.shape)
        d = tempfile.mkdtemp(dir=workdir)
        model.save(d)
        size_mb = _dir_mb(d)
    elif method == "napkinxc_plt":
        import scipy.sparse as sp
        from napkinxc.models import PLT

        d = tempfile.mkdtemp(dir=workdir)
        model = PLT(d, threads=threads, seed=0)
        Yl = [list(map(int, r)) for r in np.split(tr.Y.indices, tr.Y.indptr[1:-1])]
        t0, c0 = time.perf_counter(), _cpu_s()
        model.fit(tr.X, Yl)
        train_s, train_cpu = time.perf_counter() - t0, _cpu_s() - c0
        t0, c0 = time.perf_counter(), _cpu_s()
        preds = model.predict_proba(te.X, top_k=k)
        pred_s, pred_cpu = time.perf_counter() - t0, _cpu_s() - c0
        rows, cols, vals = [], [], []
        for i, p in enumerate(preds):
            for lab, s in p:
                rows.append(i)
                cols.append(lab)
                vals.append(s)
        S = sp.csr_matrix((vals, (rows, cols)), shape=te.Y.shape)
        size_mb = _dir_mb(d)
    else:
        raise SystemExit(f"unknown method {method}")
    from featagg_core import metrics

    ip = metrics.inverse_propensity(tr.Y)
    res = dict(method=method, dataset=dataset, train_s=train_s, train_cpu_s=train_cpu,
               predict_ms=1000 * pred_s / te.X.shape[0],
               predict_cpu_ms=1000 * pred_cpu / te.X.shape[0], model_mb=size_mb,
               peak_mb=_rss_mb(), base_mb=base_rss, **info)
    for kk in (1, 3, 5):
        res[f"P@{kk}"] = 100 * float(metrics.precision_at_k(te.Y, S, kk))
        res[f"nDCG@{kk}"] = 100 * float(metrics.ndcg_at_k(te.Y, S, kk))
        res[f"PSP@{kk}"] = 100 * float(metrics.psprecision_at_k(te.Y, S, ip, kk))
    res["cov@5"] = 100 * float(metrics.coverage_at_k(te.Y, S, 5))
    print("RESULT " + json.dumps(res))


COLS = ["P@1", "P@3", "P@5", "nDCG@1", "nDCG@3", "nDCG@5", "PSP@1", "PSP@3", "PSP@5",
        "cov@5", "train_s", "train_cpu_s", "predict_ms", "predict_cpu_ms", "model_mb",
        "peak_mb"]
_LOWER = ("train_s", "train_cpu_s", "predict_ms", "predict_cpu_ms", "model_mb", "peak_mb")


def _fmt(v, col):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "—"
    if col in ("train_s", "train_cpu_s"):
        return f"{v:.2f}"
    if col in ("predict_ms", "predict_cpu_ms"):
        return f"{v:.3f}"
    if col in ("model_mb", "peak_mb"):
        return f"{v:.1f}"
    return f"{v:.2f}"


def table(results, datasets, notes):
    lines = []
    for ds in datasets:
        rs = [r for r in results if r["dataset"] == ds]
        if not rs:
            continue
        lines.append(f"\n### {ds}\n")
        lines.append("| method | " + " | ".join(COLS) + " |")
        lines.append("|---" * (len(COLS) + 1) + "|")
        for r in rs:
            name = r["method"] + (f" (K={r['K']})" if "K" in r else "") + \
                (f" (d'={r['d_agg']})" if "d_agg" in r else "")
            lines.append(f"| {name} | " + " | ".join(_fmt(r.get(c), c) for c in COLS) + " |")
        peers = [r for r in rs if r["method"] in PEERS]
        if peers:
            lines.append("\nRatios to the best peer (accuracy: ours / best; time, size, "
                         "memory: ours / best, lower is better):\n")
            lines.append("| method | " + " | ".join(COLS) + " |")
            lines.append("|---" * (len(COLS) + 1) + "|")
            for r in rs:
                if r["method"] not in OURS:
                    continue
                cells = []
                for c in COLS:
                    vals = [p[c] for p in peers if p.get(c) is not None]
                    if not vals:
                        cells.append("—")
                        continue
                    best = min(vals) if c in _LOWER else max(vals)
                    cells.append(f"{r[c] / best:.2f}" if best else "—")
                lines.append(f"| {r['method']} | " + " | ".join(cells) + " |")
    return "\n".join(notes) + "\n" + "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="Bibtex only, K=2 + omikuji")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--datasets", default="bibtex,delicious,synthetic")
    ap.add_argument("--methods", default=",".join(OURS + PEERS))
    ap.add_argument("--synthetic-size", default="100000,100000,10000")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "xmlc.md"))
    ap.add_argument("--worker", nargs=3, metavar=("METHOD", "DATASET", "WORKDIR"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.threads, args.worker[2])
        return
    datasets = args.datasets.split(",")
    methods = args.methods.split(",")
    if args.quick:
        datasets, methods = ["bibtex"], ["ktxmlc_k2", "omikuji_parabel"]
    env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads),
               OMP_NUM_THREADS=str(args.threads), RAYON_NUM_THREADS=str(args.threads),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    notes = ["# XMLC benchmark: KTXMLC vs omikuji / napkinXC\n",
             f"Run: `{' '.join(sys.argv)}` on {os.cpu_count()} CPU(s), "
             f"{args.threads} thread(s) for every method, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
             "Accuracy in %; *_cpu = CPU time (user+sys, all threads) of the process for that step, "
             "less sensitive than wall time to the other jobs sharing the machine; predict_ms = milliseconds per test point (omikuji: one "
             "`predict` call per point from Python, inputs prepared outside the timer); "
             "model_mb = arrays needed to predict (ours) / saved model directory (peers); "
             "peak_mb = peak RSS of the method's own process, data included."]
    workdir = tempfile.mkdtemp(prefix="xmlc_bench_")
    results = []
    try:
        for ds in datasets:
            if ds in REAL and not os.path.exists(os.path.join(REAL[ds], "train.txt")):
                print(f"[skip] {ds}: {REAL[ds]} is missing")
                notes.append(f"\n{ds}: skipped, {REAL[ds]} missing.")
                continue
            if ds == "synthetic":
                size = tuple(int(v) for v in args.synthetic_size.split(","))
                shp, tshp, L = _make_synthetic(size, workdir)
                notes.append(f"\nsynthetic: make_powerlaw_multilabel(n={size[0]}, d={size[1]}, "
                             f"L={size[2]}, avg_labels=4, avg_features=40, test_size=0.2): "
                             f"train {shp[0]} x {shp[1]}, test {tshp[0]}, {L} labels.")
            for m in methods:
                if ds == "synthetic" and m == "onevsall":
                    continue
                t0 = time.time()
                proc = subprocess.run([sys.executable, __file__, "--threads",
                                       str(args.threads), "--worker", m, ds, workdir],
                                      env=env, capture_output=True, text=True)
                line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
                if proc.returncode != 0 or not line:
                    print(f"[fail] {m} on {ds}: rc={proc.returncode}\n{proc.stderr[-2000:]}",
                          flush=True)
                    notes.append(f"\n{m} on {ds}: failed (rc={proc.returncode}).")
                    continue
                r = json.loads(line[-1][7:])
                results.append(r)
                if not args.quick:  # the table so far, in case a later run fails
                    os.makedirs(os.path.dirname(args.out), exist_ok=True)
                    with open(args.out, "w") as f:
                        f.write(table(results, datasets, notes + ["\n(partial: run in progress)"]))
                print(f"{ds:10s} {m:16s} P@1 {r['P@1']:.2f} P@3 {r['P@3']:.2f} P@5 {r['P@5']:.2f}"
                      f" PSP@5 {r['PSP@5']:.2f} train {r['train_s']:.2f}s pred "
                      f"{r['predict_ms']:.3f}ms (cpu {r['train_cpu_s']:.2f}s, {r['predict_cpu_ms']:.3f}ms) model {r['model_mb']:.1f}MB peak "
                      f"{r['peak_mb']:.0f}MB ({time.time() - t0:.0f}s wall)", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    md = table(results, datasets, notes)
    print(md)
    if not args.quick:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
