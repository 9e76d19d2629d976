"""Jobs as the dashboard runs them: the estimate shown before a job against its real time,
how often a job reports progress, and how fast Cancel stops it.

Usage::

    nice -n 10 .venv/bin/python benchmarks/jobs_bench.py [--quick] [--datasets bibtex,synth,...]
                                   [--kinds defrag_xy,ktxmlc,...] [--json out.json]

Every job is ``experiment.run_pipeline(data, split, spec, progress, cancel)`` submitted to a
:class:`featagg_app.server.jobs.JobRunner` configured as the server's (one worker per core, so
each job gets ``cores // workers`` numba/OpenMP threads), one job at a time:

* **estimate / real**: ``featagg_core.runs.estimate.estimate_seconds`` computed just before the
  job (from a fresh ``measure_speed()`` per data set, which folds in the current load as
  its ``wall_factor``) divided by the job's wall time; also the same on CPU seconds
  (estimate / wall_factor against the process CPU seconds of the job), which the machine's
  load disturbs much less. Goal: within 2x either way.
* **max gap**: the longest time between two progress calls seen by the job (including
  start and end). Cancel can only land at a progress call.
* **cancel**: the job is submitted again and cancelled at ~40 % of its measured time (at
  most 20 s in); reported are the seconds from ``job.cancel()`` until the job's thread has
  returned and until the process stopped using CPU (from then on less than 20 ms of CPU in
  the following second; ``time.process_time`` sampled every 20 ms). Goal: <= 2 s. The peer is
  what happened before cooperative cancellation: the job ran to its end, i.e. the
  remaining ~60 % of its time ("uncancelled rest").

Data: Bibtex from ``sample_data`` (``featagg_core.data.samples.load_sample``), the 20k x 50k x 5k
set of ``featagg_core.data.synthetic.make_powerlaw_multilabel(20000, 50000, 5000)`` (the size an
upload hit), Cora and Adult from ``sample_data``, and DEFRAG alone on a 10^6-feature
synthetic set (``make_powerlaw_multilabel(10**5, 10**6, 1000, avg_features=100)``).
Writes ``benchmarks/results/jobs.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
OUT = os.path.join(ROOT, "benchmarks", "results", "jobs.md")

#: job kinds per data kind: name -> spec (a callable gets the data to fill K)
def _k_of(data, d0=8):
    from featagg_core.agglomeration.defrag import balanced_depth_cap
    return 2 ** balanced_depth_cap(data.X.shape[1], d0)


MULTILABEL = {
    "defrag_xy": lambda D: {"defrag": {"representation": "XY"}},
    "defrag_x": lambda D: {"defrag": {"representation": "X"}},
    "ktxmlc": lambda D: {"classifier": {"kind": "ktxmlc"}},
    "ova": lambda D: {"classifier": {"kind": "ova"}},
    "defrag+ktxmlc": lambda D: {"defrag": {}, "classifier": {"kind": "ktxmlc"}},
    "kmeans": lambda D: {"feature_clustering": {
        "kind": "kmeans", "n_clusters": _k_of(D),
        "max_features": None if D.X.shape[1] <= 20000 else 20000}},
    "random_balanced": lambda D: {"feature_clustering": {"kind": "random_balanced",
                                                         "n_clusters": _k_of(D)}},
    "ward": lambda D: {"feature_clustering": {"kind": "ward", "n_clusters": _k_of(D)}}
    if _k_of(D) <= 2000 else None,
}
GRAPH = {"bmgufs": lambda D: {"feature_selection": {"kind": "bmgufs"}},
         "laplacian": lambda D: {"feature_selection": {"kind": "laplacian"}}}
TABLE = {"vocabulary": lambda D: {"vocabulary": {"method": "submodular", "budget": 10}},
         "vocabulary_dp": lambda D: {"vocabulary": {"method": "dp", "budget": 10}}}
BIG = {"defrag_xy": MULTILABEL["defrag_xy"], "defrag_x": MULTILABEL["defrag_x"]}


def log(*a):
    print(*a, flush=True)


def load(name, quick):
    from featagg_core.data.samples import load_sample
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    if name == "synth":
        n, d, L = (5000, 12500, 1250) if quick else (20000, 50000, 5000)
        return (make_powerlaw_multilabel(n, d, L, random_state=0),
                f"make_powerlaw_multilabel({n}, {d}, {L})", MULTILABEL)
    if name == "synth1e6":
        n, d = (10 ** 4, 10 ** 5) if quick else (10 ** 5, 10 ** 6)
        return (make_powerlaw_multilabel(n, d, 1000, avg_features=100, random_state=0),
                f"make_powerlaw_multilabel({n}, {d}, 1000, avg_features=100)", BIG)
    data = load_sample(name)
    kinds = {"multilabel": MULTILABEL, "graph": GRAPH, "table": TABLE}[data.kind]
    return data, f"sample_data ({name})", kinds


def warm_up():
    """Load every kernel once (numba's cache) so no job pays for compiling."""
    from featagg_core.graph import bmgufs
    from featagg_core.agglomeration import defrag, fiat, refrag
    from featagg_core.xmlc import ktxmlc
    from featagg_core.vocab import compressor as vocab
    from featagg_core.runs.estimate import measure_speed
    from featagg_core.experiment import make_split, run_pipeline
    from featagg_core.data.synthetic import (
        make_attributed_sbm,
        make_powerlaw_multilabel,
        make_zipf_categorical,
    )
    for mod in (defrag, bmgufs, vocab, ktxmlc, fiat, refrag):
        mod.warmup()
    ml = make_powerlaw_multilabel(300, 400, 30, random_state=0)
    s = make_split(ml)
    for spec in [f(ml) for f in MULTILABEL.values()]:
        if spec is not None:
            run_pipeline(ml, s, spec)
    g = make_attributed_sbm(150, 3, random_state=0)
    for f in GRAPH.values():
        run_pipeline(g, make_split(g), f(g))
    t = make_zipf_categorical(400, 30, n_columns=2, random_state=0)
    for f in TABLE.values():
        run_pipeline(t, make_split(t), f(t))
    measure_speed()


class CpuSampler:
    """Process CPU seconds sampled every ``dt`` seconds in a thread."""

    def __init__(self, dt=0.02):
        self.dt = dt
        self.samples = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), time.process_time()))
            time.sleep(self.dt)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()

    def idle_after(self, t0, tail=0.02):
        """Seconds after ``t0`` from which the process used less than ``tail`` CPU seconds
        until the end of sampling (robust to a loaded machine starving us for a while,
        which a rate threshold would mistake for idleness)."""
        s = [x for x in self.samples if x[0] >= t0]
        if not s:
            return None
        end_cpu = s[-1][1]
        for t, c in s:
            if end_cpu - c < tail:
                return t - t0
        return None


def _job_fn(data, split, spec, stamps):
    from featagg_core.experiment import run_pipeline

    def fn(progress, cancel):
        def p(fraction, message=""):
            stamps.append(time.perf_counter())
            progress(fraction, message)
        stamps.append(time.perf_counter())
        run = run_pipeline(data, split, spec, progress=p, cancel=cancel)
        stamps.append(time.perf_counter())
        return run
    return fn


def measure(runner, data, split, spec, speed):
    from featagg_core.runs.estimate import estimate_seconds
    est = estimate_seconds(data, split, spec, speed)
    stamps = []
    load0 = os.getloadavg()[0]
    c0 = time.process_time()
    job = runner.submit("bench", "job", _job_fn(data, split, spec, stamps))
    job.wait()
    cpu = time.process_time() - c0
    wall = job.elapsed_s
    run = job.result
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    row = {"estimate_s": est, "wall_s": wall, "cpu_s": cpu, "load": load0,
           "wall_factor": speed["wall_factor"], "status": job.status,
           "run_status": getattr(run, "status", None), "message": getattr(run, "message", ""),
           "max_gap_s": max(gaps) if gaps else None, "n_progress": len(stamps)}
    # cancel at ~40 % of its time, at most 20 s in
    at = min(0.4 * wall, 20.0)
    if at < 0.15:
        row["cancel"] = "too short to cancel"
        return row
    stamps2 = []
    with CpuSampler() as cs:
        job = runner.submit("bench", "job (cancelled)", _job_fn(data, split, spec, stamps2))
        while job.status == "queued":
            time.sleep(0.005)
        while job.status == "running" and job.elapsed_s < at:
            time.sleep(0.01)
        if job.done:
            row["cancel"] = f"finished first ({job.elapsed_s:.2f} s)"
            return row
        t0 = time.perf_counter()
        job.cancel()
        job.wait()
        t_thread = time.perf_counter() - t0
        time.sleep(1.0)
        t_idle = cs.idle_after(t0)
    kernel_threads = [t.name for t in threading.enumerate() if t.name == "featagg-kernel"]
    row.update(cancel_at_s=at, cancel_thread_s=t_thread, cancel_idle_s=t_idle,
               cancel_status=job.status, uncancelled_rest_s=max(0.0, wall - at),
               threads_left=len(kernel_threads))
    return row


def fmt(x, nd=2):
    return "—" if x is None else f"{x:.{nd}f}"


def write_md(rows, meta, path):
    lines = ["# Jobs: estimate vs real time, progress gaps, cancel latency", "",
             f"Run: `benchmarks/jobs_bench.py {meta['args']}` on {meta['machine']}; "
             f"runner: {meta['workers']} workers, {meta['threads']} numba/OpenMP thread(s) "
             "per job (the server's configuration). The machine is shared: `load` is the "
             "1-minute load average when the job started, `wf` the wall/CPU factor the "
             "calibration measured just before (the estimate includes it).", "",
             "| data | job | estimate s | real s (cpu s, load) | est/real wall | est/real cpu "
             "| max gap s | cancel → thread ended s | cancel → CPU idle s | uncancelled rest s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("skipped"):
            lines.append(f"| {r['data']} | {r['job']} | — | skipped: {r['skipped']} | | | | | | |")
            continue
        est, wall, cpu, wf = r["estimate_s"], r["wall_s"], r["cpu_s"], r["wall_factor"]
        ratio_w = est / wall if wall else None
        ratio_c = (est / wf) / cpu if cpu else None
        if "cancel" in r:
            c1, c2, rest = r["cancel"], "", ""
        else:
            c1 = fmt(r["cancel_thread_s"])
            c2 = fmt(r["cancel_idle_s"])
            rest = fmt(r["uncancelled_rest_s"], 1)
        status = "" if r["run_status"] == "done" else f" ({r['run_status']}: {r['message']})"
        lines.append(f"| {r['data']} | {r['job']}{status} | {fmt(est)} | {fmt(wall)} "
                     f"({fmt(cpu)}, {r['load']:.1f}) | {fmt(ratio_w)} | {fmt(ratio_c)} | "
                     f"{fmt(r['max_gap_s'])} | {c1} | {c2} | {rest} |")
    ok = [r for r in rows if not r.get("skipped") and r["wall_s"]]
    within_w = sum(1 for r in ok if 0.5 <= r["estimate_s"] / r["wall_s"] <= 2.0)
    within_c = sum(1 for r in ok if r["cpu_s"] and 0.5 <= r["estimate_s"] / r["wall_factor"]
                   / r["cpu_s"] <= 2.0)
    canc = [r for r in rows if r.get("cancel_thread_s") is not None]
    lines += ["", f"Estimates within 2x of the wall time: {within_w}/{len(ok)}; of the CPU "
              f"time: {within_c}/{len(ok)}. Cancels measured: {len(canc)}; thread ended "
              f"within 2 s: {sum(1 for r in canc if r['cancel_thread_s'] <= 2.0)}; CPU idle "
              f"within 2 s: {sum(1 for r in canc if (r['cancel_idle_s'] or 99) <= 2.0)}.", ""]
    lines += meta.get("notes", [])
    with open(path + ".tmp", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--datasets", default="bibtex,synth,cora,adult,synth1e6")
    ap.add_argument("--kinds", default=None, help="comma-separated job names to run")
    ap.add_argument("--json", default=None, help="also write the rows as JSON")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--from-json", default=None,
                    help="only re-write the table from rows saved with --json")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as fh:
            rows = json.load(fh)
        write_md(rows, {"args": f"--json {args.from_json} (re-rendered)",
                        "machine": f"{os.uname().nodename} ({os.cpu_count()} CPUs)",
                        "workers": os.cpu_count(), "threads": 1, "notes": NOTES}, args.out)
        log(f"wrote {args.out}")
        return
    from featagg_app.server.jobs import JobRunner
    from featagg_core.runs.estimate import measure_speed
    from featagg_core.experiment import make_split
    if args.quick and args.datasets == ap.get_default("datasets"):
        args.datasets = "bibtex,synth,cora,adult"
    log("warming up the kernels …")
    warm_up()
    runner = JobRunner()
    rows = []
    only = None if args.kinds is None else set(args.kinds.split(","))
    try:
        for name in args.datasets.split(","):
            data, source, kinds = load(name, args.quick)
            split = make_split(data)
            log(f"[{name}] {source}: split {split.describe()}")
            for job, make in kinds.items():
                if only is not None and job not in only:
                    continue
                spec = make(data)
                if spec is None:
                    rows.append({"data": name, "job": job, "skipped": "K above Ward's limit"})
                    continue
                speed = measure_speed()
                r = measure(runner, data, split, spec, speed)
                r.update(data=name, job=job, spec=spec)
                rows.append(r)
                log(f"  {job:16s} est {r['estimate_s']:8.2f}  real {r['wall_s']:8.2f} "
                    f"(cpu {r['cpu_s']:.2f}, load {r['load']:.1f}, wf {r['wall_factor']:.2f}) "
                    f"gap {fmt(r['max_gap_s'])}  cancel "
                    f"{r.get('cancel') or fmt(r.get('cancel_thread_s'))} / "
                    f"{fmt(r.get('cancel_idle_s'))}")
                if args.json:
                    with open(args.json, "w") as fh:
                        json.dump(rows, fh, default=str)
    finally:
        runner.shutdown()
    import platform
    meta = {"args": " ".join(sys.argv[1:]) or "(defaults)",
            "machine": f"{platform.node()} ({os.cpu_count()} CPUs)",
            "workers": runner.max_workers, "threads": runner.threads_per_job,
            "notes": NOTES}
    write_md(rows, meta, args.out)
    log(f"wrote {args.out}")


NOTES = [
    "## Notes", "",
    "- `est/real cpu` compares the estimate without its load factor with the CPU seconds the "
    "job's threads used: how good the cost model is, whatever the load. `est/real wall` is "
    "what a user sees; it also depends on how the load changed between the calibration and "
    "the job.",
    "- `max gap` includes the held-out scoring (`run_pipeline` scores in blocks) and, for "
    "KTXMLC / one-vs-all, the classifier's own progress calls (featagg_core/xmlc/ktxmlc.py).",
    "- A cancelled job's status is always `cancelled`; `threads_left` (kernel helper "
    "threads alive after the cancel) was 0 in every row unless noted.",
    "- The committed run had a load of 8-14 on the 2 cores (other engineers' tests and "
    "benchmarks; ours under `nice -n 10`), so wall seconds are 2-7x the CPU seconds and a "
    "starved process makes wall gaps longer than the work between two progress calls: the "
    "k-means batches on the 20k x 50k x 5k set (K = 8192) cost 0.33 s of CPU each (0.55 s "
    "for the first, which also builds the 164 MB of dense centres), measured alone with "
    "`time.thread_time`, against the 5.3 s wall gap in the table.",
    "- Cancel latencies above 2 s are all KTXMLC / one-vs-all (`featagg_core/xmlc/ktxmlc.py`): "
    "when the progress callback raises, the `with ThreadPoolExecutor` block still runs every "
    "task already submitted before the exception leaves it (one-vs-all on the synthetic set: "
    "97 s). DEFRAG, k-means, Ward, BMGUFS and the vocabulary stop in 0.00-0.68 s at this "
    "load, DEFRAG on 10^6 features in 0.10-0.18 s (its kernels poll a stop flag).",
    "- Before this change the k-means baseline on the 20k x 50k x 5k upload was "
    "scikit-learn's `MiniBatchKMeans.fit` with k-means++ seeding of 8192 centres: one "
    "uninterruptible call (over 22 minutes in the incident); now its seeding is random above "
    "K ~ 3000 (k-means++ would cost more than the passes), every batch reports progress, and "
    "the pages run it on a sample when the estimate exceeds their budget.",
]

if __name__ == "__main__":
    main()
