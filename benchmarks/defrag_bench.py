"""DEFRAG against MiniBatchKMeans, random balanced partitions and Ward agglomeration.

Usage::

    nice .venv/bin/python benchmarks/defrag_bench.py [--quick] [--threads 2]
        [--datasets bibtex,delicious,s1e4,s1e5,s1e6] [--no-growth] [--no-group]
        [--cap 120] [--cap-max 900]

For every data set and both representations (X: a feature is its column of X; XY: its
row of XᵀY, both L2-normalised) it times ``Defrag`` (d0 = 8, default options, and the
original code's sampling: 20 % densest points, 5 % most frequent labels) and compares the
clustering error (mean squared distance of the normalised representations to their
cluster mean, always measured on the *full* representation) with

* scikit-learn ``MiniBatchKMeans`` with the same K as DEFRAG on the same normalised
  representation (run in a subprocess with a wall-clock cap of max(--cap, 25 x DEFRAG's
  time), at most --cap-max, so a killed run still proves a 25x ratio; sklearn defaults where the
  problem is small, otherwise ``init="random", n_init=1, max_iter=1`` = one pass over the
  data; skipped when its dense K x m centres would need more than 2 GB),
* a random balanced partition with the same K (mean of 3 draws),
* scikit-learn ``FeatureAgglomeration`` (Ward) with the same K, where the dense data and
  the d x d linkage fit (d <= 5000).

It also measures how DEFRAG's time grows per doubling of nnz (synthetic, 10^5 features,
10^5 points, nnz from ~1.2M to ~9M) and compares with the original code's Bibtex groups
(``../shared/data/bibtex/defrag_sandbox/group.txt``, X representation, d0 = 8).

Bibtex and Delicious are read from ``../shared/data`` (XC text files; Bibtex in the
XC-repo/DEFRAG split, Delicious in the MULAN split) and fall back to the bundled
``sample_data`` copies, with a message. Synthetic sets: 10^5 points, ~10^7 non-zeros,
1000 labels, from :func:`featagg_core.data.synthetic.make_powerlaw_multilabel`.

The machine may be shared: every timing row carries the 1-minute load average at its
start and the process CPU seconds next to the wall-clock seconds. Writes
``benchmarks/results/defrag.md``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from _common import cpu_seconds as _cpu, load_average as _load, shared_data  # noqa: E402
from featagg_core.agglomeration.clustering import random_balanced_labels  # noqa: E402

DATA = shared_data()
REAL = {
    "bibtex": os.path.join(DATA, "bibtex", "xc_repo_split", "train.txt"),
    "delicious": os.path.join(DATA, "delicious", "xc_format", "train.txt"),
}
GROUP_TXT = os.path.join(DATA, "bibtex", "defrag_sandbox", "group.txt")
SYNTH = {"s1e4": 10 ** 4, "s1e5": 10 ** 5, "s1e6": 10 ** 6}
D0 = 8


def log(*a):
    print(*a, flush=True)


# ------------------------------------------------------------------ data
def load_data(name, quick):
    from featagg_core.data import load_xc
    from featagg_core.data.samples import load_sample
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    if name in REAL:
        if os.path.exists(REAL[name]):
            D = load_xc(REAL[name])
            src = os.path.relpath(REAL[name], ROOT)
        else:
            log(f"[{name}] {REAL[name]} is missing: using sample_data/{name}.npz instead")
            D = load_sample(name)
            src = f"sample_data/{name}.npz"
        return D.X, D.Y, src
    d = SYNTH[name]
    n = 10 ** 4 if quick else 10 ** 5
    avg = 100.0
    D = make_powerlaw_multilabel(n, d, 1000, avg_features=avg, random_state=0)
    return D.X, D.Y, f"make_powerlaw_multilabel(n={n}, d={d}, L=1000, avg_features={avg:g})"


# ------------------------------------------------------------------ MiniBatchKMeans child
def mbkm_child(path_in, K, config, path_out, threads):
    """Runs in a subprocess: fit MiniBatchKMeans on the saved representation."""
    from sklearn.cluster import MiniBatchKMeans
    z = np.load(path_in)
    R = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    kw = dict(n_clusters=int(K), random_state=0)
    if config == "one-pass":
        kw.update(init="random", n_init=1, max_iter=1)
    t0, c0 = time.perf_counter(), _cpu()
    km = MiniBatchKMeans(**kw).fit(R)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    np.save(path_out + ".npy", km.labels_.astype(np.int64))
    with open(path_out + ".json", "w") as f:
        json.dump({"wall": wall, "cpu": cpu, "n_iter": int(km.n_iter_),
                   "n_steps": int(km.n_steps_)}, f)


def run_mbkm(R, K, cap_s, threads, mbkm_config="auto"):
    m = R.shape[1]
    gb = K * m * 4 / 2 ** 30
    if gb > 2.0:
        return {"status": f"skipped: dense centres K x m = {K} x {m} need {gb:.1f} GB"}
    config = "defaults" if K * m <= 5 * 10 ** 6 and K <= 2048 else "one-pass"
    if mbkm_config != "auto":
        config = mbkm_config
    tmp = tempfile.mkdtemp(prefix="defrag_bench_")
    pin, pout = os.path.join(tmp, "R.npz"), os.path.join(tmp, "out")
    np.savez(pin, data=R.data, indices=R.indices, indptr=R.indptr, shape=np.array(R.shape))
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads))
    cmd = [sys.executable, os.path.abspath(__file__), "--_mbkm", pin, str(K), config, pout,
           str(threads)]
    load = _load()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env)
    try:
        proc.wait(timeout=cap_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return {"status": f"not finished in {cap_s:.0f} s (killed)", "config": config,
                "wall": float(cap_s), "capped": True, "load": load}
    finally:
        try:
            os.remove(pin)
        except OSError:
            pass
    if proc.returncode != 0:
        return {"status": f"failed (exit {proc.returncode})", "config": config}
    with open(pout + ".json") as f:
        res = json.load(f)
    res["labels"] = np.load(pout + ".npy")
    res.update(status="ok", config=config, load=load,
               wall_total=time.perf_counter() - t0)
    return res


# ------------------------------------------------------------------ helpers
def time_defrag(X, Y, rep, repeats, **kw):
    from featagg_core.agglomeration.defrag import Defrag
    best = None
    for _ in range(repeats):
        load = _load()
        t0, c0 = time.perf_counter(), _cpu()
        m = Defrag(d0=D0, representation=rep, **kw).fit(X, Y)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        if best is None or wall < best[0]:
            best = (wall, cpu, load, m)
    return best


def ward(R, K):
    from sklearn.cluster import FeatureAgglomeration
    t0, c0 = time.perf_counter(), _cpu()
    lab = FeatureAgglomeration(n_clusters=K, linkage="ward").fit(R.T.toarray()).labels_
    return time.perf_counter() - t0, _cpu() - c0, lab


def fmt_t(x):
    return "—" if x is None else (f"{x:.2f}" if x < 100 else f"{x:.0f}")


def fmt_e(x):
    return "—" if x is None else f"{x:.4f}"


# ------------------------------------------------------------------ main parts
def compare(name, X, Y, src, args, rows, notes):
    from featagg_core.agglomeration.defrag import clustering_error, feature_representation
    d = X.shape[1]
    big = d >= 10 ** 5
    repeats = 1 if big else 3
    log(f"[{name}] X {X.shape} nnz={X.nnz}, Y {Y.shape}; source: {src}")
    for rep in ("X", "XY"):
        R, _ = feature_representation(X, Y, rep)
        wall, cpu, load, m = time_defrag(X, Y, rep, repeats)
        K = m.n_clusters_
        err = m.clustering_error_
        sp_kw = dict(sample_points=0.2) if rep == "X" else dict(sample_points=0.2,
                                                               sample_labels=0.05)
        swall, scpu, sload, sm = time_defrag(X, Y, rep, repeats, **sp_kw)
        serr = clustering_error(R, sm.labels_)
        rnd = float(np.mean([clustering_error(R, random_balanced_labels(d, K, s))
                             for s in range(3)]))
        log(f"  DEFRAG-{rep}: {wall:.2f}s (cpu {cpu:.1f}, load {load:.1f}) K={K} err={err:.4f};"
            f" sampled {swall:.2f}s err={serr:.4f}; random err={rnd:.4f}")
        # cap: enough to show a 25x ratio, at least the base cap, at most --cap-max
        cap = min(max(args.cap, 25.0 * wall), args.cap_max)
        km = run_mbkm(R, K, cap, args.threads, args.mbkm_config)
        kerr = clustering_error(R, km["labels"]) if km.get("status") == "ok" else None
        log(f"  MiniBatchKMeans: {km.get('status')} {km.get('wall')} err={kerr}")
        werr = wt = None
        if d <= 5000:
            wt, wcpu, wl = ward(R, K)
            werr = clustering_error(R, wl)
            log(f"  Ward: {wt:.2f}s err={werr:.4f}")
        rows.append(dict(data=name, d=d, nnz=X.nnz, rep=rep, K=K, m=R.shape[1], rnnz=R.nnz,
                         t=wall, cpu=cpu, load=load, err=err,
                         ts=swall, errs=serr, rnd=rnd,
                         km_t=km.get("wall"), km_cpu=km.get("cpu"), km_err=kerr,
                         km_status=km.get("status"), km_config=km.get("config"),
                         km_capped=km.get("capped", False), km_load=km.get("load"),
                         ward_t=wt, ward_err=werr))


def growth(args, out):
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    n, d = (10 ** 4, 10 ** 4) if args.quick else (10 ** 5, 10 ** 5)
    avgs = [12.5, 25.0, 50.0, 100.0]
    for avg in avgs:
        D = make_powerlaw_multilabel(n, d, 1000, avg_features=avg, random_state=0)
        res = {"avg": avg, "nnz": D.X.nnz}
        for rep in ("X", "XY"):
            wall, cpu, load, m = time_defrag(D.X, D.Y, rep, 2)
            res[rep] = (wall, cpu, load)
        log(f"[growth] nnz={D.X.nnz}: X {res['X'][0]:.2f}s XY {res['XY'][0]:.2f}s")
        out.append(res)


def group_comparison(args):
    from featagg_core.data import load_xc
    from featagg_core.agglomeration.defrag import Defrag, clustering_error, feature_representation
    if not (os.path.exists(GROUP_TXT) and os.path.exists(REAL["bibtex"])):
        log(f"[group.txt] {GROUP_TXT} or the Bibtex train file is missing: comparison skipped")
        return None
    D = load_xc(REAL["bibtex"])
    lines = open(GROUP_TXT).read().split("\n")
    theirs = np.full(D.X.shape[1], -1, np.int64)
    for c, ln in enumerate(lines[1:1 + int(lines[0])]):
        t = [int(v) for v in ln.split()]
        theirs[t[1:1 + t[0]]] = c
    RX, _ = feature_representation(D.X, representation="X")
    RXY, _ = feature_representation(D.X, D.Y, "XY")
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
    out = {"theirs": {"sizes": np.bincount(np.bincount(theirs)).tolist(),
                      "K": int(theirs.max() + 1), "errX": clustering_error(RX, theirs),
                      "errXY": clustering_error(RXY, theirs)}}
    for label, kw in [("ours X (no sampling)", {}),
                      ("ours X (20 % densest points, as the original)", {"sample_points": 0.2})]:
        errs, nmis, aris = [], [], []
        for seed in range(5):
            m = Defrag(d0=D0, representation="X", random_state=seed, **kw).fit(D.X)
            errs.append(clustering_error(RX, m.labels_))
            nmis.append(normalized_mutual_info_score(theirs, m.labels_))
            aris.append(adjusted_rand_score(theirs, m.labels_))
        out[label] = {"sizes": np.bincount(m.cluster_sizes_).tolist(), "K": m.n_clusters_,
                      "errX": float(np.mean(errs)), "errX_sd": float(np.std(errs)),
                      "errXY": clustering_error(RXY, m.labels_),
                      "nmi": float(np.mean(nmis)), "ari": float(np.mean(aris))}
    rnd = [clustering_error(RX, random_balanced_labels(D.X.shape[1], 256, s)) for s in range(5)]
    out["random"] = {"errX": float(np.mean(rnd))}
    log(f"[group.txt] {json.dumps(out)}")
    return out


def write_md(rows, grow, group, args, total):
    lines = ["# DEFRAG benchmark", "",
             f"Run: `{' '.join(sys.argv)}` on {platform.node()} ({os.cpu_count()} CPUs, "
             f"{args.threads} threads for numba and sklearn)"
             + (f"; total {total / 60:.1f} min. " if total == total else ". ") +
             "The machine is shared: `load` is the 1-minute load average when the run "
             "started (on 2 cores, load 10 means our process got roughly a fifth of the "
             "CPU), `cpu` the process CPU seconds.", "",
             "d0 = 8; K = DEFRAG's number of leaves, used for every method. Errors are "
             "the mean squared distance of the L2-normalised feature representations "
             "to their cluster mean, on the full representation (no sampling). "
             "`DEFRAG-s` = the original code's sampling (20 % densest points; for XY also "
             "5 % most frequent labels). MiniBatchKMeans: sklearn defaults where "
             "K <= 2048 and K x m <= 5e6 (`defaults`), otherwise `init='random', n_init=1, "
             "max_iter=1` (one pass over the data, `one-pass`); wall-clock cap "
             f"max({args.cap:.0f} s, 25 x DEFRAG's time), at most {args.cap_max:.0f} s; a killed "
             "run gives a lower bound on the time ratio.", "",
             "| data | rep | d | nnz(X) | K | DEFRAG s (cpu s, load) | err | DEFRAG-s s | err | "
             "MBKM s (cpu s, config) | MBKM err | MBKM/DEFRAG wall (cpu) | Ward s | Ward err "
             "| random err |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["km_t"] is not None:
            ratio = r["km_t"] / r["t"]
            if r["km_capped"]:
                ratio_s = f"> {ratio:.0f}× (—)"
                km_s = f"> {r['km_t']:.0f} (—, {r['km_config']}, killed)"
            else:
                cr = r["km_cpu"] / max(r["cpu"], 1e-9)
                ratio_s = f"{ratio:.1f}× ({cr:.1f}×)"
                km_s = f"{fmt_t(r['km_t'])} ({fmt_t(r['km_cpu'])}, {r['km_config']})"
        else:
            ratio_s, km_s = "—", r["km_status"]
        lines.append(
            f"| {r['data']} | {r['rep']} | {r['d']:,} | {r['nnz']:,} | {r['K']:,} | "
            f"{fmt_t(r['t'])} ({fmt_t(r['cpu'])}, {r['load']:.1f}) | {fmt_e(r['err'])} | "
            f"{fmt_t(r['ts'])} | {fmt_e(r['errs'])} | {km_s} | {fmt_e(r['km_err'])} | "
            f"{ratio_s} | {fmt_t(r['ward_t'])} | {fmt_e(r['ward_err'])} | {fmt_e(r['rnd'])} |")
    if grow:
        lines += ["", "## Growth per doubling of nnz", "",
                  "Synthetic, " + ("10^4 x 10^4" if args.quick else "10^5 points x 10^5 "
                                   "features") + ", 1000 labels; best of 2 fits.", "",
                  "| nnz | X s (load) | XY s (load) |", "|---|---|---|"]
        for g in grow:
            lines.append(f"| {g['nnz']:,} | {g['X'][0]:.2f} ({g['X'][2]:.1f}) | "
                         f"{g['XY'][0]:.2f} ({g['XY'][2]:.1f}) |")
        for rep in ("X", "XY"):
            fac = []
            for a, b in zip(grow[:-1], grow[1:]):
                fac.append((b[rep][0] / a[rep][0]) ** (1.0 / math.log2(b["nnz"] / a["nnz"])))
            lines.append("")
            lines.append(f"{rep}: time factor per doubling of nnz: "
                         + ", ".join(f"{f:.2f}" for f in fac)
                         + f" (geometric mean {float(np.exp(np.mean(np.log(fac)))):.2f}; "
                         "same on CPU seconds: "
                         + ", ".join(f"{(b[rep][1] / a[rep][1]) ** (1 / math.log2(b['nnz'] / a['nnz'])):.2f}"
                                     for a, b in zip(grow[:-1], grow[1:])) + ")")
    if group:
        lines += ["", "## Bibtex: the original code's groups (group.txt) vs ours", "",
                  "Representation X of the Bibtex training set (XC-repo split, 4880 x 1836), "
                  "d0 = 8. Ours: mean of 5 seeds. Sizes: count of clusters of each size "
                  "(index = size).", "",
                  "| clustering | K | cluster sizes | error (X) | error (XY) | NMI / ARI vs group.txt |",
                  "|---|---|---|---|---|---|"]
        th = group["theirs"]
        sizes = lambda s: ", ".join(f"{c}×{i}" for i, c in enumerate(s) if c)
        lines.append(f"| original (group.txt) | {th['K']} | {sizes(th['sizes'])} | "
                     f"{th['errX']:.4f} | {th['errXY']:.4f} | — |")
        for k, v in group.items():
            if k in ("theirs", "random"):
                continue
            lines.append(f"| {k} | {v['K']} | {sizes(v['sizes'])} | {v['errX']:.4f} ± "
                         f"{v['errX_sd']:.4f} | {v['errXY']:.4f} | {v['nmi']:.3f} / "
                         f"{v['ari']:.3f} |")
        lines.append(f"| random balanced, K = 256 | 256 | — | {group['random']['errX']:.4f} "
                     "| — | — |")
    text = "\n".join(lines) + "\n"
    out = args.out or os.path.join(ROOT, "benchmarks", "results", "defrag.md")
    if args.quick and not args.out:
        out = out.replace(".md", ".quick.md.tmp")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(os.path.splitext(out)[0] + ".json.tmp", "w") as f:  # raw numbers (not committed)
        json.dump({"rows": rows, "growth": grow, "group": group}, f, default=float, indent=1)
    with open(out, "w") as f:
        f.write(text)
    print(text)
    log(f"written to {out}")


def merge(args):
    order = ["bibtex", "delicious", "s1e4", "s1e5", "s1e6"]
    rows, grow, group = {}, [], None
    for path in args.merge.split(","):
        with open(path) as f:
            dump = json.load(f)
        for r in dump["rows"]:
            rows[(r["data"], r["rep"], r.get("km_config") or r["km_status"])] = r
        grow = dump["growth"] or grow
        group = dump["group"] or group
    rows = sorted(rows.values(), key=lambda r: (order.index(r["data"]) if r["data"] in order
                                                else 99, r["rep"], str(r.get("km_config"))))
    sys.argv = ["benchmarks/defrag_bench.py (merged: " + ", ".join(
        os.path.basename(p) for p in args.merge.split(",")) + ")"]
    write_md(rows, grow, group, args, float("nan"))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--_mbkm":
        mbkm_child(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small smoke run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--cap", type=float, default=None, help="MiniBatchKMeans cap (s)")
    ap.add_argument("--cap-max", type=float, default=None, dest="cap_max")
    ap.add_argument("--mbkm-config", choices=["auto", "defaults", "one-pass"], default="auto",
                    dest="mbkm_config")
    ap.add_argument("--out", default=None, help="markdown file (default "
                    "benchmarks/results/defrag.md)")
    ap.add_argument("--merge", default=None,
                    help="comma-separated .json.tmp dumps of earlier runs: rewrite the table "
                         "from them (later files replace rows with the same data set, "
                         "representation and MiniBatchKMeans config) without running anything")
    ap.add_argument("--no-growth", action="store_true")
    ap.add_argument("--no-group", action="store_true")
    args = ap.parse_args()
    args.cap = args.cap or (60.0 if args.quick else 120.0)
    args.cap_max = args.cap_max or (60.0 if args.quick else 900.0)
    if args.merge:
        merge(args)
        return
    import numba
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    from featagg_core.agglomeration.defrag import warmup
    warmup()
    names = (args.datasets.split(",") if args.datasets
             else (["bibtex", "s1e4"] if args.quick else
                   ["bibtex", "delicious", "s1e4", "s1e5", "s1e6"]))
    t0 = time.perf_counter()
    rows, grow = [], []
    group = None if args.no_group else group_comparison(args)
    for name in names:
        X, Y, src = load_data(name, args.quick)
        compare(name, X, Y, src, args, rows, [])
        del X, Y
        write_md(rows, grow, group, args, time.perf_counter() - t0)  # partial results
    if not args.no_growth:
        growth(args, grow)
    write_md(rows, grow, group, args, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
