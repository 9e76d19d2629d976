"""Dask twins vs the single-machine fits on one synthetic data set, 1 vs 2 workers.

    nice -n 10 .venv/bin/python benchmarks/distributed_bench.py            # 1e6 x 1e5 x 1e4
    .venv/bin/python benchmarks/distributed_bench.py --quick                # 2e4 x 1e4 x 1e3

Data: ``make_powerlaw_multilabel(n, d, L, random_state=0)``, written once as XC shards to
``--data-dir`` (default /tmp/featagg_dist_bench) and reused. Every configuration runs in
a fresh process (so peak memory is its own):

* ``single``: the single-machine fit, numba on 1 and on 2 threads (the peer);
* ``dask-W``: ``LocalCluster(n_workers=W, threads_per_worker=1, processes=True)``, data
  read on the workers by ``load_xc_shards``, then the twin.

Measured: wall and CPU seconds (driver + workers), bytes driver -> cluster and back
(serialized sizes, the executor's accounting), bytes between workers (the workers'
transfer logs), peak RSS of every worker process, per-phase and per-level time and
traffic, and whether the model equals the single-machine one (labels/tree; KTXMLC
predictions on 2000 rows). Writes ``benchmarks/results/distributed.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


# ---------------------------------------------------------------------------- data
def data_dir(args) -> str:
    return os.path.join(args.data_dir, f"n{args.n}_d{args.d}_L{args.L}_s{args.shards}")


def ensure_data(args) -> str:
    from featagg_core.data import save_xc
    from featagg_core.data.synthetic import make_powerlaw_multilabel

    path = data_dir(args)
    done = os.path.join(path, "DONE.json")
    if os.path.exists(done):
        return path
    os.makedirs(path, exist_ok=True)
    t0 = time.perf_counter()
    data = make_powerlaw_multilabel(args.n, args.d, args.L, random_state=0)
    cuts = np.round(np.linspace(0, args.n, args.shards + 1)).astype(int)
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        save_xc((data.X[a:b], data.Y[a:b]), os.path.join(path, f"part-{k:03d}.txt"))
    with open(done, "w") as fh:
        json.dump({"n": args.n, "d": args.d, "L": args.L, "nnz_X": int(data.X.nnz),
                   "nnz_Y": int(data.Y.nnz), "seconds": time.perf_counter() - t0}, fh)
    return path


def shard_files(path, use_shards=0):
    """The shard files (the first ``use_shards`` of them when > 0)."""
    files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.startswith("part-"))
    return files[:use_shards] if use_shards else files


def load_whole(path, use_shards=0):
    """The shards through featagg's reader, stacked (what a single machine would hold)."""
    import scipy.sparse as sp

    from featagg_core.data import load_xc

    parts = [load_xc(f) for f in shard_files(path, use_shards)]
    return (sp.vstack([p.X for p in parts], format="csr"),
            sp.vstack([p.Y for p in parts], format="csr"))


# ---------------------------------------------------------------------------- one run
def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _fingerprint_model(method, model, X):
    if method == "defrag":
        return {"labels_sha": _sha(model.labels_), "order_sha": _sha(model.tree_.order),
                "n_iter_sha": _sha(model.tree_.n_iter),
                "clustering_error": model.clustering_error_}
    S = model.predict_scores(X[:2000], k=5)
    return {"W_sha": _sha(model.W_.data), "pred_sha": _sha(S.data) + _sha(S.indices),
            "calibration_sha": _sha(model.calibration_a_) + _sha(model.calibration_b_)}


def _sha(a) -> str:
    import hashlib

    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]


def _warmup():
    """Load every kernel from numba's cache (or compile it) before anything is timed."""
    from featagg_core.utils import products as _products
    from featagg_core.agglomeration import defrag
    from featagg_core.xmlc import ktxmlc

    defrag.warmup()
    ktxmlc.warmup()
    _products.warmup()


def run_one(args) -> dict:
    """One configuration in this (fresh) process; returns its measurements."""
    method, config = args.method, args.config
    path = data_dir(args)
    params = json.loads(args.params)
    out = {"method": method, "config": config, "load": os.getloadavg()[0]}
    if config.startswith("single"):
        import numba

        threads = int(config.split("-")[1])
        numba.set_num_threads(threads)
        t = time.perf_counter()
        X, Y = load_whole(path, args.use_shards)
        out["read_s"] = time.perf_counter() - t
        out["n_rows"] = int(X.shape[0])
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        from featagg_core.agglomeration.defrag import Defrag
        from featagg_core.xmlc.ktxmlc import KTXMLC

        _warmup()
        est = Defrag(**params) if method == "defrag" else KTXMLC(n_jobs=threads, **params)
        c0, t0 = _cpu(), time.perf_counter()
        est.fit(X, Y)
        out["fit_s"] = time.perf_counter() - t0
        out["cpu_s"] = _cpu() - c0
        out["peak_rss_mb"] = [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]
        out["rss_before_fit_mb"] = rss0 / 1024
        out["model"] = _fingerprint_model(method, est, X)
        return out
    import dask
    from distributed import Client, LocalCluster

    from featagg_core.distributed import defrag_distributed, ktxmlc_distributed, load_xc_shards

    W = int(config.split("-")[1])
    dask.config.set({"distributed.admin.low-level-log-length": 1_000_000,
                     "distributed.worker.memory.target": False,
                     "distributed.worker.memory.spill": False,
                     "distributed.worker.memory.pause": False,
                     "distributed.worker.memory.terminate": False,
                     "featagg.task-events": True})
    with LocalCluster(n_workers=W, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit=0) as lc, Client(lc) as c:
        c.run(_warmup)  # imports and kernel loading outside the timings (as for single)
        t = time.perf_counter()
        h = load_xc_shards(c, shard_files(path, args.use_shards))
        out["read_s"] = time.perf_counter() - t
        out["n_rows"] = int(h.n_samples)

        def wcpu():
            return sum(c.run(_cpu).values())

        def incoming():
            return c.run(lambda dask_worker: [(e["start"], e["stop"], e["total"])
                                              for e in dask_worker.transfer_incoming_log])

        before = sum(t for log in incoming().values() for (_, _, t) in log)
        c0, w0, t0, e0 = _cpu(), wcpu(), time.perf_counter(), time.time()
        twin = defrag_distributed if method == "defrag" else ktxmlc_distributed
        est = twin(c, h, **params)
        out["fit_s"] = time.perf_counter() - t0
        e1 = time.time()
        out["cpu_s"] = _cpu() - c0 + wcpu() - w0
        logs = incoming()
        entries = [e for log in logs.values() for e in log if e0 - 1 <= e[0] <= e1 + 1]
        out["worker_to_worker_bytes"] = int(sum(e[2] for e in entries))
        out["worker_to_worker_bytes_all"] = int(sum(t for log in logs.values()
                                                    for (_, _, t) in log) - before)
        out["transfers"] = len(entries)
        out["phases"] = est.distributed_info_.get("phases", [])
        out["phase_transfer_bytes"] = {
            name: int(sum(e[2] for e in entries if a <= e[0] < b))
            for name, a, b in out["phases"]}
        events = [m for _, m in c.get_events("featagg") if e0 - 1 <= m["start"] <= e1 + 1]
        out["task_cpu_s"] = float(sum(m["cpu"] for m in events))
        crit, by_fn, biggest = {}, {}, {}
        for name, a, b in out["phases"]:
            per_worker, fns, top = {}, {}, 0.0
            for m in events:
                mid = (m["start"] + m["stop"]) / 2
                if a <= mid < b:
                    per_worker[m["worker"]] = per_worker.get(m["worker"], 0.0) + m["cpu"]
                    fns[m["fn"]] = fns.get(m["fn"], 0.0) + m["cpu"]
                    top = max(top, m["cpu"])
            crit[name] = max(per_worker.values()) if per_worker else 0.0
            by_fn[name], biggest[name] = fns, top
        out["phase_cpu_by_fn"] = by_fn
        out["phase_biggest_task_cpu_s"] = biggest
        out["phase_critical_cpu_s"] = crit
        out["critical_cpu_s"] = float(sum(crit.values()))
        out["peak_rss_mb"] = sorted(v / 1024 for v in c.run(
            lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).values())
        out["driver_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        info = {k: v for k, v in est.distributed_info_.items() if k != "phases"}
        out["info"] = info
        X, _ = load_whole(path, args.use_shards) if method == "ktxmlc" else (None, None)
        out["model"] = _fingerprint_model(method, est, X)
    return out


# ---------------------------------------------------------------------------- driver
def spawn(args, method, config, params) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--run", "--method", method,
           "--config", config, "--params", json.dumps(params), "--n", str(args.n),
           "--d", str(args.d), "--L", str(args.L), "--shards", str(args.shards),
           "--data-dir", args.data_dir, "--use-shards",
           str(args.ktxmlc_shards if method == "ktxmlc" else 0)]
    print(f"[bench] {method} {config} ...", file=sys.stderr, flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        print(res.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"{method} {config} failed")
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("{")][-1]
    out = json.loads(line)
    print(f"[bench]   fit {out['fit_s']:.1f} s, cpu {out['cpu_s']:.1f} s, load "
          f"{out['load']:.1f}", file=sys.stderr, flush=True)
    return out


def mb(b) -> str:
    return f"{b / 2**20:,.1f}"


def write_report(args, meta, results, out_path):
    lines = [f"# Dask twins vs single machine (`benchmarks/distributed_bench.py"
             f"{' --quick' if args.quick else ''}`)", ""]
    lines.append(f"Report of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
                 f"{platform.node()} ({os.cpu_count()} cores, shared with other people's "
                 "jobs, every run under `nice -n 10`; `load` = 1-minute load average when the "
                 "run started; CPU seconds are the robust comparison). Data: "
                 f"`make_powerlaw_multilabel({args.n}, {args.d}, {args.L}, random_state=0)`, "
                 f"nnz(X) = {meta['nnz_X']:,}, nnz(Y) = {meta['nnz_Y']:,}, written as "
                 f"{args.shards} XC shards to {data_dir(args)} and read by featagg's reader "
                 "(single: in the driver; dask: on the workers by `load_xc_shards`).")
    lines.append("")
    lines.append("`dask-W` = `LocalCluster(n_workers=W, threads_per_worker=1, processes=True)` "
                 "on this machine; `single-T` = the single-machine fit with T numba threads. "
                 "Bytes: `to/from cluster` = serialized sizes the driver sent / gathered; "
                 "`between workers` = the workers' transfer logs during the fit. `peak RSS` = "
                 "max resident memory of each worker process (dask) or of the process "
                 "(single), data included.")
    for method in dict.fromkeys(r["method"] for r in results):
        rows = [r for r in results if r["method"] == method]
        base = {r["config"]: r for r in rows}
        ref = rows[0]["model"]
        lines += ["", f"## {method.upper()} {json.dumps(rows[0]['params'])}, "
                  f"{rows[0].get('n_rows', args.n):,} rows", "",
                  "| config | load | fit s | CPU s (all processes) | task CPU s | critical-path "
                  "CPU s | single-1 CPU / critical | read s | to cluster MB |"
                  " from cluster MB | between workers MB | peak RSS MB (per process) |"
                  " equal to single |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        s1 = base.get("single-1")
        for r in rows:
            info = r.get("info", {})
            crit = r.get("critical_cpu_s", r["cpu_s"] if r["config"] == "single-1" else None)
            ratio = f"{s1['cpu_s'] / crit:.2f}x" if (s1 and crit) else "-"
            lines.append(
                f"| {r['config']} | {r['load']:.1f} | {r['fit_s']:.1f} | {r['cpu_s']:.1f} | "
                f"{r.get('task_cpu_s', r['cpu_s'] if not info else 0):.1f} | "
                f"{'-' if crit is None else round(crit, 1)} | {ratio} | "
                f"{r.get('read_s', 0):.1f} | "
                f"{mb(info.get('bytes_to_cluster', 0)) if info else '-'} | "
                f"{mb(info.get('bytes_from_cluster', 0)) if info else '-'} | "
                f"{mb(r.get('worker_to_worker_bytes', 0)) if info else '-'} | "
                f"{', '.join(f'{m:,.0f}' for m in r['peak_rss_mb'])} | "
                f"{'yes' if r['model'] == ref else 'NO'} |")
        for r in rows:
            if "info" not in r:
                continue
            info = r["info"]
            crit = r.get("phase_critical_cpu_s", {})
            lines += ["", f"{r['config']}: phases (wall s / critical-path CPU s / MB between "
                      "workers): " + ", ".join(
                          f"{name} {b - a:.1f} / {crit.get(name, 0):.1f} / "
                          f"{mb(r['phase_transfer_bytes'].get(name, 0))}"
                          for name, a, b in r["phases"]) + f"; {info.get('tasks', 0)} tasks, "
                f"{info.get('groups', '-')} groups, n_inexact = {info.get('n_inexact')}."]
            if info.get("level_seconds"):
                lines.append("")
                lines.append(f"{r['config']} per level (s / driver<->cluster KB): " + ", ".join(
                    f"{s:.2f}/{b / 1024:.0f}" for s, b in zip(info["level_seconds"],
                                                                 info["level_bytes"])))
    lines += scaling_lines(results)
    lines += ["", "## Notes", "", args.notes or "(none)"]
    with open(out_path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


# ---------------------------------------------------------------------------- model
SPLIT_FNS = ("_split_group", "_cluster_group", "_partition_group")


def scaling_estimate(rows, bandwidth=1.25e9, rtt=0.002, workers=(1, 2, 8, 32, 100),
                     root_children=16):
    """Predicted fit seconds on W dedicated single-core workers, from the dask-1 run's
    per-phase task CPU (the work) and the dask-2 run's measured reduce-scatter costs.

    Model (per phase; the assumptions are printed with the table):
    * blocks (normalisation) and the per-worker partial products: work / W;
    * reduce-scatter into S = min(W, 16) row ranges: ceil(log2 W) merge rounds per range,
      each costing at most one of dask-2's range merges scaled by 2/S (dask-2's pieces
      hold half the data each, an upper bound for a worker's 1/W share) plus sending one
      piece (12 bytes per entry of R, / S) over one link; finishing (rounding and
      normalising) the ranges in parallel: dask-2's finishing CPU x 2/S; putting the ranges
      together on one worker: dask-2's concat CPU plus |R| bytes over one link;
    * tree level l with m_l nodes of equal size: work_l / min(m_l, W), plus one round
      trip and the level's driver<->cluster assignment bytes; while groups double (the
      first ceil(log2 W) levels) the half-blocks handed to new workers, |R| / 2^l bytes;
    * leaf SSE: work / W; KTXMLC classifiers: max(work / W, the biggest task), plus the
      node row blocks: dask-2's between-worker bytes x 2 x (W-1)/W spread over W links.
      The biggest task is a root batch (``root_children`` classifiers over every row,
      dask-1's biggest task); with W > 1 the twin cuts it into min(root_children, 2W)
      pieces (``_split_root_batches``), so it is charged ceil(root_children / pieces) /
      root_children of it.
    Not modelled: Dask's scheduling overhead (~1 ms per task) and work stealing.
    """
    import math

    one = {r["method"]: r for r in rows if r["config"] == "dask-1" and "phase_cpu_by_fn" in r}
    two = {r["method"]: r for r in rows if r["config"] == "dask-2" and "phase_cpu_by_fn" in r}

    def fns(phase, names):
        return sum(v for k, v in phase.items() if k in names)

    out = {}
    for method, r1 in one.items():
        r2 = two.get(method)
        fn1, info1 = r1["phase_cpu_by_fn"], r1["info"]
        rep1 = fn1.get("representation", {})
        rep2 = r2["phase_cpu_by_fn"].get("representation", {}) if r2 else rep1
        partial = fns(rep1, ("_partial_xy", "_partials", "_partial_x"))
        blocks = sum(fn1.get("blocks", {}).values()) + fns(rep1, ("_normalized", "label_counts",
                                                                  "add_counts"))
        merge2 = fns(rep2, ("merge", "_merge_pair", "_add_disjoint"))
        finish1 = fns(rep1, ("_finish_range", "_label_vectors", "_finish"))
        finish2 = fns(rep2, ("_finish_range", "_label_vectors", "_finish"))
        concat2 = fns(rep2, ("_concat_finished", "_concat_vectors", "_finished_matrix",
                             "_first"))
        r_bytes = 12.0 * info1.get("nnz_R", 0)
        levels = [(name, sum(v for k, v in fn1.get(name, {}).items() if k in SPLIT_FNS))
                  for name, _, _ in r1["phases"] if name.startswith("level ")]
        nodes = info1.get("level_nodes", [1] * len(levels))
        lbytes = info1.get("level_bytes", [0] * len(levels))
        sse = sum(fn1.get("leaf SSE", {}).values())
        train = sum(fn1.get("classifiers", {}).values())
        biggest = r1.get("phase_biggest_task_cpu_s", {}).get("classifiers", 0.0)
        moved = 2.0 * r2.get("phase_transfer_bytes", {}).get("classifiers", 0) if r2 else 0.0
        table = []
        for W in workers:
            rounds = math.ceil(math.log2(W)) if W > 1 else 0
            S = min(W, 16)
            if W == 1:
                t_rep = blocks + partial + finish1
            else:
                per_range_merge = merge2 / 2 * 2 / S  # dask-2 ran 2 range merges
                t_rep = ((blocks + partial) / W + rounds * (per_range_merge + r_bytes / S / bandwidth)
                         + finish2 * 2 / S / 2 + concat2 + r_bytes / bandwidth)
            t_tree = 0.0
            for i, ((_, work), m, b) in enumerate(zip(levels, nodes, lbytes)):
                t_tree += work / max(1, min(m, W)) + rtt + b / bandwidth
                if W > 1 and i < rounds:
                    t_tree += r_bytes / 2 ** (i + 1) / bandwidth
            t_rest = sse / W
            if train:
                pieces = min(root_children, 2 * W) if W > 1 else 1
                top = biggest * math.ceil(root_children / pieces) / root_children \
                    if W > 1 else biggest
                t_rest += max(train / W, top) + moved * (W - 1) / W / W / bandwidth
            table.append((W, t_rep, t_tree, t_rest, t_rep + t_tree + t_rest))
        out[method] = table
    return out


def scaling_lines(rows):
    est = scaling_estimate(rows)
    if not est:
        return []
    lines = ["", "## Scaling estimate to 100 workers", "",
             "From the measured work of every phase (dask-1 task CPU seconds), the measured "
             "merge cost and traffic (dask-2), and assumed dedicated single-core workers on "
             "a 10 Gb/s network (1.25 GB/s per link, 2 ms per round trip); see "
             "`scaling_estimate` in the script for the model. Seconds:", "",
             "| method | W | representation | tree levels | rest (SSE / classifiers) | total |"
             " speed-up vs W=1 |", "|---|---|---|---|---|---|---|"]
    for method, table in est.items():
        t1 = table[0][4]
        for W, a, b, c, t in table:
            lines.append(f"| {method} | {W} | {a:.1f} | {b:.1f} | {c:.1f} | {t:.1f} | "
                         f"{t1 / t:.1f}x |")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2e4 x 1e4 x 1e3 smoke run")
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=100_000)
    p.add_argument("--L", type=int, default=10_000)
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--data-dir", default="/tmp/featagg_dist_bench")
    p.add_argument("--methods", default="defrag,ktxmlc")
    p.add_argument("--configs", default="single-1,single-2,dask-1,dask-2")
    p.add_argument("--defrag-params", default='{"d0": 8, "representation": "XY"}')
    p.add_argument("--ktxmlc-params", default='{"n_trees": 3, "max_leaf_labels": 100}')
    p.add_argument("--ktxmlc-shards", type=int, default=0,
                   help="KTXMLC runs use only the first K shards (0: all)")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "distributed.md"))
    p.add_argument("--json", help="also write every measurement here")
    p.add_argument("--merge", nargs="*", default=[], help="JSON files of earlier runs to include")
    p.add_argument("--notes-file", help="markdown appended under Notes")
    p.add_argument("--report-only", action="store_true",
                   help="write the report from --merge files without running anything")
    # internal: one configuration in a fresh process
    p.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--config", help=argparse.SUPPRESS)
    p.add_argument("--params", help=argparse.SUPPRESS)
    p.add_argument("--use-shards", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.d, args.L, args.shards = 20_000, 10_000, 1_000, 4
    if args.run:
        print(json.dumps(run_one(args)))
        return 0
    path = ensure_data(args)
    with open(os.path.join(path, "DONE.json")) as fh:
        meta = json.load(fh)
    results = []
    for f in args.merge:
        with open(f) as fh:
            results += json.load(fh)
    for method in ([] if args.report_only else args.methods.split(",")):
        params = json.loads(args.defrag_params if method == "defrag" else args.ktxmlc_params)
        for config in args.configs.split(","):
            r = spawn(args, method, config, params)
            r["params"] = params
            results.append(r)
            if args.json:
                with open(args.json, "w") as fh:
                    json.dump(results, fh)
    args.notes = open(args.notes_file).read() if args.notes_file else ""
    write_report(args, meta, results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
