"""Reader benchmark: featagg's XC/svmlight reader vs sklearn.datasets.load_svmlight_file.

Both read the same content: our reader the XC file ("N D L" header), sklearn the same lines
without the header (svmlight multilabel, zero-based, float32). Each timing is the best of
3 runs after one warm-up run (which also compiles / loads our numba kernels). Datasets: a
synthetic power-law file with a few million non-zeros (values written as 6-decimal
tf-idf-like numbers, as the XC repository's files), and ../shared/data's Bibtex and
Delicious XC files when present (skipped with a message otherwise).

Usage: nice .venv/bin/python benchmarks/reader_bench.py [--quick] [--nnz N]
Writes benchmarks/results/reader.md. Goal: ours <= 1.5 x sklearn's time.
"""
import argparse
import os
import platform
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from sklearn.datasets import load_svmlight_file  # noqa: E402

from featagg_core.data import load_dataset, load_xc, warmup  # noqa: E402

from _common import copy_without_first_line, shared_data  # noqa: E402

SHARED = shared_data()


def make_synthetic(path_xc, n_rows, nnz_per_row, d, L, seed=0):
    """Power-law feature/label popularity, ~nnz_per_row features and ~3 labels per row,
    values printed with 6 decimals. Written in chunks with numpy (no per-token Python)."""
    rng = np.random.default_rng(seed)
    with open(path_xc, "wb") as fh:
        fh.write(f"{n_rows} {d} {L}\n".encode())
        chunk = 20000
        pf = 1.0 / np.arange(1, d + 1) ** 0.8
        pf /= pf.sum()
        pl = 1.0 / np.arange(1, L + 1) ** 1.0
        pl /= pl.sum()
        for s in range(0, n_rows, chunk):
            m = min(chunk, n_rows - s)
            lines = []
            k = rng.poisson(nnz_per_row, m).clip(1, None)
            kl = rng.poisson(3, m).clip(0, None)
            feats = rng.choice(d, size=int(k.sum()), p=pf)
            labs = rng.choice(L, size=int(kl.sum()), p=pl)
            vals = rng.random(int(k.sum()))
            fo = lo = 0
            for i in range(m):   # per row (not per token): unique sorted indices of the row
                f = np.unique(feats[fo:fo + k[i]])
                v = vals[fo:fo + f.size]
                fo += k[i]
                lab = np.unique(labs[lo:lo + kl[i]])
                lo += kl[i]
                feat_txt = " ".join(f"{a}:{b:.6f}" for a, b in zip(f.tolist(), v.tolist()))
                lines.append(",".join(map(str, lab.tolist())) + " " + feat_txt)
            fh.write(("\n".join(lines) + "\n").encode())


def best_of(fn, repeat=3):
    fn()  # warm-up (numba compile/cache load, OS page cache)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def bench(name, path_xc, rows):
    with tempfile.TemporaryDirectory() as tmp:
        path_svm = os.path.join(tmp, "data.svm")
        copy_without_first_line(path_xc, path_svm)
        with open(path_xc, "rb") as fh:
            n, d, L = map(int, fh.readline().split())
        size_mb = os.path.getsize(path_xc) / 2**20
        t_ours, data = best_of(lambda: load_xc(path_xc))
        t_ours_svm, data2 = best_of(lambda: load_dataset(path_svm, zero_based=True,
                                                         n_features=d, n_labels=L))
        t_sk, (Xs, ys) = best_of(lambda: load_svmlight_file(
            path_svm, multilabel=True, zero_based=True, n_features=d, dtype=np.float32))
        # same content check
        assert data.X.shape == Xs.shape and (data.X != Xs).nnz == 0, "X differs from sklearn"
        assert (data2.X != Xs).nnz == 0
        assert sum(len(t) for t in ys) == data.Y.nnz
    row = dict(name=name, n=n, d=d, L=L, nnz=data.X.nnz, mb=size_mb, ours=t_ours,
               ours_svm=t_ours_svm, sk=t_sk)
    rows.append(row)
    print(f"{name:>28}: {n} rows, {data.X.nnz} nnz, {size_mb:.1f} MB | ours XC {t_ours:.3f} s "
          f"({size_mb / t_ours:.0f} MB/s), ours svmlight {t_ours_svm:.3f} s, sklearn "
          f"{t_sk:.3f} s | ratio ours/sklearn {t_ours / t_sk:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small smoke run")
    ap.add_argument("--nnz", type=float, default=3e6, help="non-zeros of the synthetic file")
    args = ap.parse_args()
    t0 = time.perf_counter()
    warmup()
    print(f"warmup (compile or load cached kernels): {time.perf_counter() - t0:.2f} s")
    rows = []
    nnz = 2e5 if args.quick else args.nnz
    per_row = 20
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "synthetic.txt")
        t = time.perf_counter()
        n_rows = int(nnz / per_row)
        make_synthetic(p, n_rows, per_row, d=100_000, L=20_000)
        print(f"generated synthetic file in {time.perf_counter() - t:.1f} s")
        bench(f"synthetic ({nnz / 1e6:g}M nnz)", p, rows)
    for ds in ("bibtex", "delicious"):
        path = os.path.join(SHARED, ds, "xc_format", "train.txt")
        if args.quick and ds == "delicious":
            continue
        if not os.path.isfile(path):
            print(f"skipping {ds}: {path} not found")
            continue
        bench(f"{ds} train (XC format)", path, rows)
    write_md(rows, quick=args.quick)


def write_md(rows, quick):
    out = os.path.join(HERE, "results", "reader.md" if not quick else "reader_quick.md.tmp")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    lines = [
        "# Reader benchmark: featagg XC/svmlight reader vs sklearn",
        "",
        f"`benchmarks/reader_bench.py{' --quick' if quick else ''}` on {platform.machine()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores shared with other "
        f"jobs (load average {os.getloadavg()[0]:.1f} at the end of the run; run under "
        f"`nice`, so absolute times are inflated, the ratio is what counts). Best of 3 after a warm-up; both readers read the same "
        f"lines (ours with the XC header, sklearn `load_svmlight_file(multilabel=True, "
        f"zero_based=True, dtype=float32)` without it); the resulting X matrices are "
        f"checked equal. Ratio = our time / sklearn's time (goal <= 1.5).",
        "",
        "| dataset | rows | features | labels | nnz | file MB | ours XC (s) | "
        "ours svmlight (s) | sklearn (s) | ratio ours/sklearn | ours MB/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['name']} | {r['n']} | {r['d']} | {r['L']} | {r['nnz']} | "
                     f"{r['mb']:.1f} | {r['ours']:.3f} | {r['ours_svm']:.3f} | {r['sk']:.3f} "
                     f"| {r['ours'] / r['sk']:.2f} | {r['mb'] / r['ours']:.0f} |")
    lines.append("")
    with open(out, "w") as fh:
        fh.write("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
