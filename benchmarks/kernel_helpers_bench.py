"""The shared kernel helpers (``featagg_core/_kernels/_common.py``) against the private
copies they replaced.

The kernels of this checkout and the same kernels of a peer revision (by default the
commit before ``_common.py`` was added: every kernel with its own binary search, RNG and
line scanner) run on the same inputs in the same process, interleaved, best of N. Every
output must be equal bit for bit (same streams, same order of summation); the ratio is
ours / peer CPU time (< 1: the shared helper is faster). CPU time, not wall time: on a
machine shared by many jobs (load 10-18 on 2 cores when this was written) the best wall
time of a 50 ms call still varies by +-40 % between reruns, its CPU time by ~1 %. A
kernel keeps a private copy where its ratio stays clearly above 1 over reruns.

Usage: ``python benchmarks/kernel_helpers_bench.py [--quick] [--peer-rev REV] [--only
parse,metrics] [--out NAME.md]``. Writes ``benchmarks/results/kernel_helpers.md``.
"""
import argparse
import importlib
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

MODULES = ["parse", "metrics", "defrag", "exact", "bmgufs", "fiat_refrag", "linear", "vocab",
           "ktxmlc_cluster"]


def _git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def default_peer_rev():
    """The parent of the commit that added ``_kernels/_common.py`` (HEAD if not committed)."""
    added = _git("log", "--diff-filter=A", "--format=%H", "-1", "--",
                 "featagg_core/_kernels/_common.py")
    return added + "^" if added else "HEAD"


def load_peer(rev):
    """Import ``featagg_core/_kernels`` of ``rev`` as the package ``_peer_kernels`` (kept in
    a temp folder per commit, so its numba cache survives reruns)."""
    sha = _git("rev-parse", rev)
    where = os.path.join(tempfile.gettempdir(), f"featagg_kernels_peer_{sha[:12]}")
    pkg = os.path.join(where, "featagg_core", "_kernels")
    if not os.path.isdir(pkg):
        os.makedirs(where, exist_ok=True)
        archive = subprocess.run(["git", "-C", ROOT, "archive", sha, "featagg_core/_kernels"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", where], input=archive, check=True)
    spec = importlib.util.spec_from_file_location(
        "_peer_kernels", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_peer_kernels"] = mod
    spec.loader.exec_module(mod)
    return sha, {m: importlib.import_module(f"_peer_kernels.{m}") for m in MODULES}


def load_ours():
    return {m: importlib.import_module(f"featagg_core._kernels.{m}") for m in MODULES}


# ------------------------------------------------------------------------------ inputs
def _csr(rng, n, d, per_row, dtype=np.float64, sorted_idx=True):
    nnz = rng.poisson(per_row, n).clip(1, d)
    rows = [np.sort(rng.choice(d, k, replace=False)) for k in nnz]
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = np.cumsum(nnz)
    ind = np.concatenate(rows).astype(np.int64)
    dat = rng.random(indptr[-1]).astype(dtype) + dtype(0.01)
    return sp.csr_matrix((dat, ind, indptr), shape=(n, d))


def _xc_text(rng, n, d, per_row, svmlight):
    lines = []
    for i in range(n):
        k = max(1, rng.poisson(per_row))
        idx = np.sort(rng.choice(d, min(k, d), replace=False))
        vals = rng.random(idx.shape[0])
        labs = ",".join(str(x) for x in np.sort(rng.choice(500, 3, replace=False)))
        toks = " ".join(f"{a}:{v:.6g}" for a, v in zip(idx, vals))
        line = f"{labs} {toks}"
        if svmlight and i % 7 == 0:
            line += "  # a comment"
        lines.append(line)
        if svmlight and i % 11 == 0:
            lines.append("   ")
    return np.frombuffer(("\n".join(lines) + "\n").encode(), np.uint8).copy()


def _arff_text(rng, n, d, per_row):
    lines = []
    for i in range(n):
        if i % 13 == 0:
            lines.append("% comment")
        if i % 2:
            idx = np.sort(rng.choice(d, per_row, replace=False))
            lines.append("{" + ", ".join(f"{a} {rng.random():.5g}" for a in idx) + "}")
        else:
            lines.append(",".join("?" if rng.random() < 0.05 else f"{rng.random():.4g}"
                                  for _ in range(12)))
    return np.frombuffer(("\n".join(lines) + "\n").encode(), np.uint8).copy()


def _edge_text(rng, n_edges, n_nodes):
    u = rng.integers(0, n_nodes, n_edges)
    v = rng.integers(0, n_nodes, n_edges)
    w = rng.random(n_edges)
    lines = ["# edge list"]
    lines += [f"n{a}\tn{b} {c:.5g}" if i % 3 else f"{a},{b}" for i, (a, b, c) in
              enumerate(zip(u, v, w))]
    return np.frombuffer(("\n".join(lines) + "\n").encode(), np.uint8).copy()


def cases(rng, scale):
    """(name, module, function, args) for every kernel that calls a shared helper."""
    out = []
    n = int(20000 * scale)
    stop = np.zeros(1, np.uint8)
    buf = _xc_text(rng, n, 5000, 20, False)
    out.append(("XC text, lower/scan helpers", "parse", "parse_sparse_lines", (buf, 0, 1, True, False)))
    buf = _xc_text(rng, n, 5000, 20, True)
    out.append(("svmlight text", "parse", "parse_sparse_lines", (buf, 0, 1, True, True)))
    out.append(("ARFF data", "parse", "parse_arff_data", (_arff_text(rng, n // 2, 400, 15), 0, 1)))
    ebuf = _edge_text(rng, 5 * n, n)
    out.append(("edge list", "parse", "parse_edge_lines", (ebuf, 0, 1)))
    # tokens of the edge list for intern_tokens (the peer's own parse gives the same spans)
    from featagg_core._kernels import parse as _p
    r = _p.parse_edge_lines(ebuf, 0, 1)
    out.append(("intern tokens (mix64)", "parse", "intern_tokens",
                (ebuf, r[4][:2 * r[3]], r[5][:2 * r[3]], 12345)))
    # metrics: binary search of the predicted labels in the true ones
    Y = _csr(rng, n, 3000, 8)
    top = rng.integers(-1, 3000, (n, 5)).astype(np.int64)
    out.append(("rank_gains (lower_bound)", "metrics", "rank_gains",
                (Y.indptr, Y.indices.astype(np.int64), top, rng.random(3000))))
    out.append(("covered_labels (lower_bound)", "metrics", "covered_labels",
                (Y.indptr, Y.indices.astype(np.int64), top, 3000)))
    # X^T Y (DEFRAG, exact products)
    X = _csr(rng, n, 4000, 25, np.float32)
    Yl = _csr(rng, n, 1000, 4, np.float32)
    Xt = X.T.tocsr()
    xt = (Xt.indptr.astype(np.int64), Xt.indices.astype(np.int32), Xt.data)
    yy = (Yl.indptr.astype(np.int64), Yl.indices.astype(np.int32), Yl.data)
    out.append(("DEFRAG X^T Y (count_row_cols, scatter_add_row)", "defrag", "xt_y",
                (*xt, *yy, 1000, 8, stop)))
    out.append(("exact X^T Y rounded", "exact", "xt_y_rounded", (*xt, *yy, 1000, 8, stop)))
    out.append(("exact X^T Y partial", "exact", "xt_y_partial", (*xt, *yy, 1000, 8, stop)))
    # BMGUFS Gram rows
    G = _csr(rng, n // 4, 1500, 6)
    Gt = G.T.tocsr()
    g = (Gt.indptr.astype(np.int64), Gt.indices.astype(np.int64), Gt.data,
         G.indptr.astype(np.int64), G.indices.astype(np.int64), G.data, 1500)
    out.append(("BMGUFS (Y^T Y)^2 counts (scatter_add_row)", "bmgufs", "gram_squared_counts", g))
    from featagg_core._kernels import bmgufs as _b
    cnt = _b.gram_squared_counts(*g)
    iptr = np.zeros(1501, np.int64)
    iptr[1:] = np.cumsum(cnt)
    out.append(("BMGUFS (Y^T Y)^2 fill", "bmgufs", "gram_squared_fill", (*g, iptr)))
    # FIAT block Gram (lower_bound) and REFRAG re-ranking (scatter_add_row)
    F = _csr(rng, n // 2, 2000, 30)
    labels = rng.integers(0, 64, 2000)
    sizes = np.bincount(labels, minlength=64).astype(np.int64)
    bhi = np.cumsum(sizes)
    blo = bhi - sizes
    order = np.argsort(labels, kind="stable").astype(np.int64)
    new_id = np.empty(2000, np.int64)
    new_id[order] = np.arange(2000)
    R = sp.csr_matrix((F.data, new_id[F.indices], F.indptr), shape=F.shape)
    R.sort_indices()
    C = R.tocsc()
    C.sort_indices()
    out.append(("FIAT block Gram (lower_bound)", "fiat_refrag", "block_gram",
                (R.indptr.astype(np.int64), R.indices.astype(np.int64), R.data,
                 C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data, blo, bhi,
                 order, int(sizes.max()))))
    Q = _csr(rng, n // 2, 2000, 20)
    PT = _csr(rng, 2000, 800, 40)
    S = _csr(rng, n // 2, 800, 10)
    out.append(("REFRAG rerank_rows (scatter_add_row)", "fiat_refrag", "rerank_rows",
                (Q.indptr, Q.indices.astype(np.int64), Q.data, PT.indptr,
                 PT.indices.astype(np.int64), PT.data, rng.random(800), S.indptr,
                 S.indices.astype(np.int64), S.data, 0.4, 1.0, 10, 5, 800)))
    # linear solvers (xorshift64*, MINSTD seeding, _decision)
    L = _csr(rng, n // 4, 3000, 30)
    y = np.where(rng.random(n // 4) < 0.3, 1.0, -1.0)
    lin = (L.indptr, L.indices.astype(np.int64), L.data, y, 3000, 1.0, 0.01, 50, 1.0, 7)
    out.append(("squared-hinge SVM dual CD (xorshift64*)", "linear", "l2svc_dual_cd", lin))
    out.append(("logistic dual CD", "linear", "lr_dual_cd", (*lin, stop)))
    # vocabulary compression (splitmix64)
    c = np.sort(rng.random(int(40000 * scale)))
    P0 = np.concatenate([[0.0], np.cumsum(rng.random(c.shape[0]))])
    P1 = np.concatenate([[0.0], np.cumsum(rng.random(c.shape[0]) * c)])
    out.append(("stochastic greedy (splitmix64)", "vocab", "stochastic_greedy",
                (P0, P1, 200, 0.1, 3)))
    p0s, p1s = P0[:401].copy(), P1[:401].copy()
    out.append(("bucket DP (exact)", "vocab", "dp_optimal", (p0s, p1s, 16, stop)))
    out.append(("bucket DP (monotone)", "vocab", "dp_monotone", (P0[:4001].copy(),
                                                                 P1[:4001].copy(), 64, stop)))
    # label-tree clustering (MINSTD, scatter_add_row for the centroids)
    V = _csr(rng, n // 4, 2000, 15)
    V = sp.csr_matrix(V.multiply(1.0 / np.sqrt(V.multiply(V).sum(1))))
    v = (V.indptr.astype(np.int64), V.indices.astype(np.int64), V.data, 2000)
    out.append(("k-means|| K=16 (MINSTD)", "ktxmlc_cluster", "cluster_rows",
                (*v, 16, True, 5, 2.0, 3, 10, 1e-4, 1, stop)))
    out.append(("balanced 2-means tree", "ktxmlc_cluster", "bisect_rows",
                (*v, 8, 5, 10, 1e-4, stop)))
    return out


# -------------------------------------------------------------------------- comparing
def _flatten(x):
    if isinstance(x, tuple):
        for e in x:
            yield from _flatten(e)
    else:
        yield np.asarray(x)


def same(a, b):
    """Equal bit for bit (dtype, shape and bytes of every returned array or scalar)."""
    fa, fb = list(_flatten(a)), list(_flatten(b))
    return len(fa) == len(fb) and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(fa, fb))


def _sparse_lines_used(r):
    err, line, p, n, indptr, ind, val, lab_ptr, lab, row_line, hard, n_hard = r
    nnz, nl = indptr[n], lab_ptr[n]
    return (err, line, p, n, indptr[:n + 1], ind[:nnz], val[:nnz], lab_ptr[:n + 1], lab[:nl],
            row_line[:n], hard[:n_hard], n_hard)


def _arff_used(r):
    err, line, p, n, indptr, attr, val, row_line, n_fields, hard, n_hard = r
    nnz = indptr[n]
    return (err, line, p, n, indptr[:n + 1], attr[:nnz], val[:nnz], row_line[:n],
            n_fields[:n], hard[:n_hard], n_hard)


def _edges_used(r):
    err, line, p, ne, ts, te, w, el, all_int, int_id, hard, n_hard = r
    return (err, line, p, ne, ts[:2 * ne], te[:2 * ne], w[:ne], el[:ne], all_int,
            int_id[:2 * ne], hard[:n_hard], n_hard)


# the parsers return buffers sized for the worst case: only their filled parts are output
USED = {"parse_sparse_lines": _sparse_lines_used, "parse_arff_data": _arff_used,
        "parse_edge_lines": _edges_used}


def _copy_args(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _time(fn, args):
    a = _copy_args(args)
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn(*a)
    return out, time.perf_counter() - w0, time.process_time() - c0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller inputs, 3 repeats")
    ap.add_argument("--peer-rev", default=None, help="git revision of the peer kernels")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--only", default=None,
                    help="comma-separated kernel modules to run (e.g. parse,metrics)")
    ap.add_argument("--out", default="kernel_helpers.md", help="file name under results/")
    args = ap.parse_args()
    scale = 0.5 if args.quick else 1.0
    repeats = args.repeats or (3 if args.quick else 7)
    load0 = os.getloadavg()[0]
    rev = args.peer_rev or default_peer_rev()
    t0 = time.perf_counter()
    sha, peer = load_peer(rev)
    ours = load_ours()
    rng = np.random.default_rng(0)
    rows, all_same = [], True
    only = set(args.only.split(",")) if args.only else None
    for name, mod, fn_name, fargs in cases(rng, scale):
        if only and mod not in only:
            continue
        f_ours, f_peer = getattr(ours[mod], fn_name), getattr(peer[mod], fn_name)
        o1, _, _ = _time(f_ours, fargs)          # compile / load from cache
        o2, _, _ = _time(f_peer, fargs)
        used = USED.get(fn_name, lambda r: r)
        ok = same(used(o1), used(o2))
        all_same &= ok
        best = {"ours": (np.inf, np.inf), "peer": (np.inf, np.inf)}
        for r in range(repeats):
            order = (("ours", f_ours), ("peer", f_peer)) if r % 2 == 0 else \
                (("peer", f_peer), ("ours", f_ours))
            for who, f in order:
                _, w, c = _time(f, fargs)
                best[who] = (min(best[who][0], w), min(best[who][1], c))
        ratio = best["ours"][1] / max(best["peer"][1], 1e-9)
        rows.append((name, f"{mod}.{fn_name}", best["ours"][1], best["peer"][1], ratio,
                     best["ours"][0] / best["peer"][0], ok))
        print(f"{name:48s} CPU ours {best['ours'][1]:.4f} s  peer {best['peer'][1]:.4f} s  "
              f"ratio {ratio:.3f} (wall {rows[-1][5]:.3f})  identical {ok}", flush=True)
    ratios = np.array([r[4] for r in rows])
    gmean = float(np.exp(np.log(ratios).mean()))
    load1 = os.getloadavg()[0]
    lines = [
        "# Shared kernel helpers vs the private copies they replaced",
        "",
        f"`python benchmarks/kernel_helpers_bench.py{' --quick' if args.quick else ''}`; "
        f"peer = `featagg_core/_kernels` of {sha[:10]} ({rev}), loaded side by side in one "
        f"process; best of {repeats} interleaved runs; Python {platform.python_version()}, "
        f"{os.cpu_count()} cores shared with other work, load {load0:.1f} -> {load1:.1f}.",
        "",
        "| kernel | function | ours CPU s | peer CPU s | ratio CPU (ours/peer) | ratio wall | "
        "outputs identical |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, fn, w1, w2, ratio, cr, ok in rows:
        lines.append(f"| {name.replace('|', chr(92) + '|')} | `{fn}` | {w1:.4f} | {w2:.4f} | {ratio:.3f} | {cr:.3f} | "
                     f"{'yes' if ok else '**NO**'} |")
    lines += ["", f"Geometric mean of the CPU ratios: {gmean:.3f}; every output identical: "
              f"{'yes' if all_same else 'NO'}. Total {time.perf_counter() - t0:.0f} s.", ""]
    path = os.path.join(HERE, "results", args.out)
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines))
    os.replace(path + ".tmp", path)
    print(f"geometric mean ratio {gmean:.3f}; identical {all_same}; wrote {path}")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
