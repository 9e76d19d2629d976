"""Hostile-input sweep: thousands of reader inputs and tampered artifacts, each loaded and
used in its own forked child with a memory limit and a timeout.

    .venv/bin/python benchmarks/fuzz_bench.py                 # 10,000 readers + 5,000 artifacts
    .venv/bin/python benchmarks/fuzz_bench.py --quick         # 600 + 300, small attacks
    .venv/bin/python benchmarks/fuzz_bench.py --before 16c9b8f  # + the attacks on an older tree
    .venv/bin/python benchmarks/fuzz_bench.py --round2        # issue 33's families R1-R11

What runs (generators in ``tests/hostile_corpus.py``):

* **readers** -- valid seeds of 16 formats (XC, XC split, svmlight, ARFF sparse/dense,
  MULAN XML, npz multilabel/graph/table, edge list, GraphML, GML, .mat plain/compressed,
  CSV, TSV, parquet, node-class and node-feature files) mutated at random (bytes, lines,
  hostile tokens, header counts, npz members replaced/dropped/re-typed), read with the
  dashboard's limits (256 MiB budget, 5,000,000 dimensions) and used as an upload is
  (fingerprint + Data page statistics). Accepted: loaded, or ``DatasetError``.
* **artifacts** -- one small fitted object of every artifact class, tampered with
  (bytes, manifest edits, consistent forgeries with every SHA-256 recomputed, zip-level
  tricks), loaded and used (every method a page or the CLI calls, on inputs of the
  object's own dimensions, and the Export page's view functions). Accepted:
  ``ArtifactError``, or a model equal to the original -- for consistent forgeries, a model
  whose every use runs without an exception.
* **attacks** -- the crafted cases of the hostile-input issue at the issue's sizes (zip and
  .mat bombs, huge declared dimensions, long node names, quadratic-time inputs, XML
  entities, tampered artifacts), with time and peak RSS, and with ``--before REV`` the
  same inputs on an older checkout (``git archive REV``) as the peer.

* **round 2** (``--round2``) -- issue 33's families: R1 parquet of 0 rows x 10^6 columns,
  R2 bundle of 45,517 tiny artifacts, R3 manifest declaring 550,000 arrays, R4 manifest of
  60 MB whitespace, R5 CSV of 2-letter cells, R6 GraphML / GML of 10^6 nodes, R8 npz whose
  kind.npy inflates to 3 GiB (each at several sizes, on the dashboard's path and the
  command line, R8 also in the data-folder listing), R7 a non-UTF-8 name in the data
  folder, R9 ``--out`` a FIFO / device node, R10 ``--out`` an input, R11 a mapped cache
  truncated under the store. Printed per family: inputs tried, refusals, worst seconds,
  worst peak MB; none may take 5 s of CPU or 512 MB.

Isolation: a fork server (this process imports everything and compiles every kernel with
numba's fork-safe ``workqueue`` threading layer, then forks one child per input); the child
sets ``RLIMIT_AS`` to 2 GiB above the parent and ``RLIMIT_CPU`` to 5 s of CPU (a hang is
over 5 CPU seconds, or 60 s of wall time without them: on a shared 2-core machine wall time
alone would count the other users' work), and reports its peak RSS. Counted: exceptions other than DatasetError/ArtifactError, crashes (signals),
hangs (timeouts), peak RSS growth over 500 MB, and artifact loads that differ from the
original. Results: ``benchmarks/results/fuzz.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ["NUMBA_THREADING_LAYER"] = "workqueue"   # fork-safe; set before numba is imported
# scikit-learn's k-means runs on GNU OpenMP, whose thread pool deadlocks a forked child:
# one thread, no pool (also for OpenBLAS), before any of them is loaded
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402  (numpy does not import numba)

ROOT = Path(__file__).resolve().parents[1]
RSS_BUDGET = 500 << 20
TIMEOUT_S = 5.0
MEM_LIMIT = 2 << 30
READER_BUDGET = 256 << 20


def _paths(tree: Path) -> None:
    sys.path[:0] = [str(tree), str(ROOT / "tests")]


def _bad(res: dict) -> str:
    o = res["outcome"]
    if o.startswith("crash"):
        return "crash"
    if o == "hang":
        return "hang"
    if o.startswith("exception"):
        return "exception"
    if res.get("peak_rss_growth", 0) > RSS_BUDGET:
        return "rss"
    return ""


def _fmt_mib(b) -> str:
    return f"{b / 2**20:,.0f}" if b >= 10 << 20 else f"{b / 2**20:,.1f}"


def run_attacks(fs, hc, quick: bool):
    rows = []
    for a in hc.reader_attacks(big=not quick):
        r = fs.run(hc.read_and_use, a["fmt"], a["data"])
        rows.append(dict(kind="reader", name=a["name"], size=len(a["data"]), expect=a["expect"], **r))
        print(f"  attack {a['name'][:56]:56s} {r['outcome']:16s} {r['seconds']:6.2f} s "
              f"{_fmt_mib(r['peak_rss_growth']):>7s} MiB", flush=True)
    for a in hc.artifact_attacks(big=not quick):
        r = fs.run(hc.load_and_use, a["data"])
        rows.append(dict(kind="artifact", name=a["name"], size=len(a["data"]),
                         expect=a["expect"], **r))
        print(f"  attack {a['name'][:56]:56s} {r['outcome']:16s} {r['seconds']:6.2f} s "
              f"{_fmt_mib(r['peak_rss_growth']):>7s} MiB", flush=True)
    return rows


def attacks_on_tree(tree: Path, quick: bool, timeout: float):
    """The attack inputs (made here) run by a child Python importing featagg from ``tree``
    (results kept in ``tree/.fuzz_attacks[_quick].json``: the old tree does not change)."""
    import hostile_corpus as hc
    cache = tree / (".fuzz_attacks_quick.json" if quick else ".fuzz_attacks.json")
    if cache.exists():
        return json.loads(cache.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        index = []
        for i, a in enumerate(hc.reader_attacks(big=not quick)):
            p = Path(tmp) / f"r{i}.bin"
            p.write_bytes(a["data"])
            index.append(dict(kind="reader", name=a["name"], fmt=a["fmt"], path=str(p)))
        for i, a in enumerate(hc.artifact_attacks(big=not quick)):
            p = Path(tmp) / f"a{i}.bin"
            p.write_bytes(a["data"])
            index.append(dict(kind="artifact", name=a["name"], path=str(p)))
        (Path(tmp) / "index.json").write_text(json.dumps(index))
        env = dict(os.environ, PYTHONPATH=str(tree))
        out = subprocess.run([sys.executable, __file__, "--run-index", str(Path(tmp) / "index.json"),
                              "--tree", str(tree), "--timeout", str(timeout)],
                             env=env, capture_output=True, text=True, timeout=3600)
        if out.returncode != 0:
            print(out.stderr[-3000:], file=sys.stderr)
            raise SystemExit("the before-tree run failed")
        print(out.stderr, file=sys.stderr)
        rows = json.loads(out.stdout.strip().splitlines()[-1])
        cache.write_text(json.dumps(rows))
        return rows


def _run_index(index_path: str, tree: str, timeout: float) -> None:
    _paths(Path(tree))
    import hostile_corpus as hc
    hc.prepare_parent()
    fs = hc.ForkServer(timeout=timeout, mem_limit=6 << 30, wall_timeout=timeout)
    rows = []
    for e in json.loads(Path(index_path).read_text()):
        data = Path(e["path"]).read_bytes()
        if e["kind"] == "reader":
            r = fs.run(hc.read_and_use, e["fmt"], data)
        else:
            r = fs.run(hc.load_and_use, data)
        print(f"  before {e['name'][:56]:56s} {r['outcome']:16s} {r['seconds']:6.2f} s "
              f"{_fmt_mib(r['peak_rss_growth']):>7s} MiB", file=sys.stderr, flush=True)
        rows.append(dict(name=e["name"], **r))
    print(json.dumps(rows))


#: what counts as handled for each path of a round-2 case
_R2_OK = {"refused", "listed", "reopened"}
R2_CPU_S = 5.0
R2_RSS = 512 << 20
_R2_START = "## Round 2: issue 33 families"


def run_round2(out_path: str, quick: bool) -> int:
    """Issue 33's families (R1-R11), each at several sizes up to and including the
    issue's, each input on every path it reaches (dashboard upload / Export import, CLI,
    data-folder listing), one forked child per input. Prints per family: inputs tried,
    refusals (or listed / reopened where that is the right outcome), worst seconds and
    worst peak MB; writes the table into ``out_path`` (replacing an earlier round-2
    section). Exit status 1 when a family is over 5 s of CPU or 512 MB, or mishandled."""
    _paths(ROOT)
    import hostile_corpus as hc
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    hc.prepare_parent()
    fs = hc.ForkServer(timeout=R2_CPU_S, mem_limit=MEM_LIMIT)
    # at and around the sizes: well below them these files are legitimate loads
    # for the command line (1 GiB budget), costing what its budget allows, not attacks
    scales = (1.0,) if quick else (0.75, 1.0, 1.25)
    bombs = (1 << 30,) if quick else (1 << 30, 3 << 30)
    rows = []
    for case in hc.round2_cases(scales=scales, bombs=bombs):
        raw = case["make"]()
        with tempfile.TemporaryDirectory() as folder:
            hc.round2_write(case, raw, folder)
            for path in case["paths"]:
                r = fs.run(hc.round2_run, case, path, raw, folder)
                r.update(family=case["family"], name=case["name"], path=path, size=len(raw))
                rows.append(r)
                print(f"  {case['family'][:34]:34s} {case['name'][:28]:28s} {path:8s} "
                      f"{r['outcome']:10s} {r['seconds']:6.2f} s {r['cpu_s']:6.2f} CPU s "
                      f"{_fmt_mib(r['peak_rss_growth']):>7s} MiB  {r['detail'][:90]}",
                      flush=True)
        del raw
    wall = time.perf_counter() - t0
    fams = []
    bad = 0
    for fam in dict.fromkeys(r["family"] for r in rows):
        rs = [r for r in rows if r["family"] == fam]
        handled = sum(r["outcome"] in _R2_OK for r in rs)
        worst_s = max(r["seconds"] for r in rs)
        worst_cpu = max(r["cpu_s"] for r in rs)
        worst_mb = max(r["peak_rss_growth"] for r in rs)
        ok = handled == len(rs) and worst_cpu < R2_CPU_S and worst_mb < R2_RSS
        bad += not ok
        fams.append((fam, len(rs), handled, worst_s, worst_cpu, worst_mb, ok))
    print(f"\n{'family':40s} {'tried':>5s} {'refused':>7s} {'worst s':>8s} {'worst CPU s':>11s} "
          f"{'worst MB':>8s}")
    for fam, n, h, s_, c, mb, ok in fams:
        print(f"{fam:40s} {n:5d} {h:7d} {s_:8.2f} {c:11.2f} {mb / 1e6:8.1f}"
              f"{'' if ok else '  OVER / MISHANDLED'}")
    lines = [_R2_START, "",
             f"`benchmarks/fuzz_bench.py --round2{' --quick' if quick else ''}`: on a loaded "
             f"2-core machine shared with other jobs (load average {load0[0]:.2f} at start, "
             f"{os.getloadavg()[0]:.2f} at the end), wall {wall:,.0f} s. Each family at "
             f"{', '.join(f'{x:g}' for x in scales)} x the issue's size (npz bomb "
             f"{', '.join(f'{b / 2**30:g} GiB' for b in bombs)}), each input on every path "
             "it reaches, in its own forked child (RLIMIT_CPU 5 s); upload = the sidebar's "
             "label proposal for a table, then the dashboard's readers (256 MiB, 5,000,000 "
             "dimensions), import = the Export page's artifact "
             "import (its default 1 GiB budget), cli = `featagg info` / `predict` / "
             "`agglomerate` in-process (1 GiB), listing = the data-folder listing. "
             "\"Refused\" counts the right outcome of each path (refused; listed without "
             "inflating for the listing and R7; dropped and reopened for R11). MB = peak RSS "
             "growth of the child over the fork server (10^6 bytes). Well below the issue's "
             "sizes (e.g. a quarter) the command line loads these files: they are then legitimate "
             "loads within its 1 GiB budget, not refusals.", "",
             "| family | inputs tried | refused / handled | worst s (wall) | worst CPU s | "
             "worst peak MB |", "|---|---:|---:|---:|---:|---:|"]
    for fam, n, h, s_, c, mb, ok in fams:
        lines.append(f"| {fam} | {n} | {h} | {s_:.2f} | {c:.2f} | {mb / 1e6:,.1f} |")
    lines += ["", "Per input:", "", "| family | input | path | outcome | s | CPU s | MB | message |",
              "|---|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        msg = r["detail"].replace("|", "/").replace("\n", " ")[:160]
        lines.append(f"| {r['family'][:3].strip()} | {r['name']} | {r['path']} | {r['outcome']} | "
                     f"{r['seconds']:.2f} | {r['cpu_s']:.2f} | "
                     f"{r['peak_rss_growth'] / 1e6:,.1f} | {msg} |")
    section = "\n".join(lines) + "\n"
    path = Path(out_path)
    text = path.read_text() if path.exists() else ""
    if _R2_START in text:
        head, _, rest = text.partition(_R2_START)
        nxt = rest.find("\n## ", 1)
        tail = rest[nxt + 1:] if nxt >= 0 else ""
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="600 readers + 300 artifacts, small attacks")
    ap.add_argument("--readers", type=int, default=None)
    ap.add_argument("--artifacts", type=int, default=None)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--before", default=None,
                    help="git revision (or folder) of an older featagg to run the attacks on")
    ap.add_argument("--before-timeout", type=float, default=30.0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fuzz.md"))
    ap.add_argument("--round2", action="store_true",
                    help="only issue 33's families (R1-R11), at several sizes, on every "
                         "path; writes its section of the results file")
    ap.add_argument("--run-index", help=argparse.SUPPRESS)
    ap.add_argument("--tree", help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.run_index:
        _run_index(args.run_index, args.tree, args.timeout)
        return 0
    if args.round2:
        return run_round2(args.out, args.quick)
    n_readers = args.readers if args.readers is not None else (600 if args.quick else 10_000)
    n_artifacts = args.artifacts if args.artifacts is not None else (300 if args.quick else 5_000)
    _paths(ROOT)
    import hostile_corpus as hc
    load0 = os.getloadavg()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    hc.prepare_parent()
    fs = hc.ForkServer(timeout=TIMEOUT_S, mem_limit=MEM_LIMIT)
    child_cpu = 0.0

    print("attacks (this tree):", flush=True)
    attacks = run_attacks(fs, hc, args.quick)
    before = {}
    if args.before:
        tree = Path(args.before)
        if not tree.is_dir():
            tree = Path(tempfile.gettempdir()) / f"featagg_before_{args.before}"
            if not tree.exists():
                tree.mkdir(parents=True)
                arch = subprocess.run(["git", "-C", str(ROOT), "archive", args.before],
                                      capture_output=True, check=True).stdout
                subprocess.run(["tar", "-x", "-C", str(tree)], input=arch, check=True)
        print(f"attacks on {args.before} (peer):", flush=True)
        before = {r["name"]: r for r in attacks_on_tree(tree, args.quick, args.before_timeout)}

    rng = np.random.default_rng(args.seed)
    print(f"readers: {n_readers:,} inputs", flush=True)
    reader_rows = []
    for i, (fmt, what, data) in enumerate(hc.reader_cases(rng, n_readers)):
        r = fs.run(hc.read_and_use, fmt, data)
        r.update(fmt=fmt, what=what, size=len(data))
        reader_rows.append(r)
        child_cpu += r["cpu_s"]
        if (i + 1) % 1000 == 0:
            print(f"  {i + 1:,} done ({time.perf_counter() - t0:,.0f} s)", flush=True)

    print(f"artifacts: {n_artifacts:,} tampered files", flush=True)
    from featagg_core.artifacts.store import artifact_bytes
    models = hc.fit_models()
    blobs = {k: artifact_bytes(m) for k, m in models.items()}
    original = {k: fs.run(hc.load_and_use, b)["detail"] for k, b in blobs.items()}
    art_rows = []
    per = max(1, -(-n_artifacts // len(blobs)))   # rounded up: at least n_artifacts in all
    for name, blob in blobs.items():
        for cat, what, data in hc.tampered_artifacts(blob, rng, per):
            r = fs.run(hc.load_and_use, data)
            verdict = hc.judge_artifact(cat, r["outcome"], r.get("detail", ""), original[name])
            r.update(model=name, category=cat, what=what, size=len(data), verdict=verdict)
            art_rows.append(r)
            child_cpu += r["cpu_s"]
        print(f"  {name}: {per} done ({time.perf_counter() - t0:,.0f} s)", flush=True)
    wall = time.perf_counter() - t0
    report = _report(args, attacks, before, reader_rows, art_rows, load0, os.getloadavg(),
                     wall, time.process_time() - cpu0, child_cpu)
    print(report)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report)
    bad = sum(1 for r in reader_rows + art_rows if _bad(r)) + \
        sum(1 for r in art_rows if r["verdict"] != "ok" and not _bad(r))
    return 1 if bad else 0


def _report(args, attacks, before, reader_rows, art_rows, load0, load1, wall, cpu, child_cpu):
    lines = ["# Hostile-input sweep (benchmarks/fuzz_bench.py)", ""]
    lines.append(f"Machine: 2 cores shared; load average {load0[0]:.2f} at start, "
                 f"{load1[0]:.2f} at the end. Wall {wall:,.0f} s; CPU: parent {cpu:,.0f} s, "
                 f"children {child_cpu:,.0f} s. Seed {args.seed}.")
    lines.append(f"Each input in its own forked child: RLIMIT_AS = parent + {MEM_LIMIT >> 30} GiB, "
                 f"timeout {TIMEOUT_S:g} s of CPU (and {12 * TIMEOUT_S:g} s of wall time), RSS "
                 f"budget {RSS_BUDGET >> 20} MB of growth; readers with "
                 f"the dashboard's limits (max_bytes {READER_BUDGET >> 20} MiB, max_dim 5,000,000).")
    lines.append("")

    def counts(rows):
        return Counter(_bad(r) for r in rows), Counter(r["outcome"] for r in rows)
    rc, ro = counts(reader_rows)
    ac, ao = counts(art_rows)
    unequal = sum(1 for r in art_rows if r["verdict"] != "ok" and not _bad(r))
    lines += ["## Totals", "",
              "| | inputs | loaded | refused | other exceptions | crashes | hangs | peak RSS over budget | loaded but not equal |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
              f"| readers | {len(reader_rows):,} | {ro['loaded']:,} | {ro['DatasetError']:,} | "
              f"{rc['exception']} | {rc['crash']} | {rc['hang']} | {rc['rss']} | – |",
              f"| artifacts | {len(art_rows):,} | {ao['loaded']:,} | {ao['ArtifactError']:,} | "
              f"{ac['exception']} | {ac['crash']} | {ac['hang']} | {ac['rss']} | {unequal} |", ""]
    secs = np.array([r["seconds"] for r in reader_rows + art_rows])
    rss = np.array([r.get("peak_rss_growth", 0) for r in reader_rows + art_rows])
    lines.append(f"Per input: median {np.median(secs) * 1e3:.0f} ms, 99th percentile "
                 f"{np.percentile(secs, 99) * 1e3:.0f} ms, max {secs.max():.2f} s (fork included); "
                 f"peak RSS growth median {_fmt_mib(np.median(rss))} MiB, max {_fmt_mib(rss.max())} MiB.")
    lines.append("")
    lines += ["## Readers by format", "", "| format | inputs | loaded | DatasetError | bad | max s | max MiB |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for fmt in sorted({r["fmt"] for r in reader_rows}):
        rs = [r for r in reader_rows if r["fmt"] == fmt]
        lines.append(f"| {fmt} | {len(rs)} | {sum(r['outcome'] == 'loaded' for r in rs)} | "
                     f"{sum(r['outcome'] == 'DatasetError' for r in rs)} | "
                     f"{sum(1 for r in rs if _bad(r))} | {max(r['seconds'] for r in rs):.2f} | "
                     f"{_fmt_mib(max(r.get('peak_rss_growth', 0) for r in rs))} |")
    lines += ["", "## Artifacts by class and tampering", "",
              "| class | bytes | manifest | forged | zip | ArtifactError | loaded equal | loaded (forged, ran clean) | bad |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in sorted({r["model"] for r in art_rows}):
        rs = [r for r in art_rows if r["model"] == m]
        cat = Counter(r["category"] for r in rs)
        eq = sum(1 for r in rs if r["outcome"] == "loaded" and r["verdict"] == "ok"
                 and r["category"] != "forged")
        forged_loaded = sum(1 for r in rs if r["outcome"] == "loaded" and r["category"] == "forged")
        lines.append(f"| {m} | {cat['bytes']} | {cat['manifest']} | {cat['forged']} | {cat['zip']} | "
                     f"{sum(r['outcome'] == 'ArtifactError' for r in rs)} | {eq} | {forged_loaded} | "
                     f"{sum(1 for r in rs if _bad(r) or r['verdict'] != 'ok')} |")
    lines += ["", "## The issue's attacks, before and after", "",
              ("| attack | file | expected | after: outcome | s | CPU s | MiB | before: outcome | s | CPU s | MiB | CPU ratio |"
               if before else "| attack | file | expected | outcome | s | CPU s | MiB |"),
              ("|---|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|" if before
               else "|---|---:|---|---|---:|---:|---:|")]
    for a in attacks:
        size = f"{a['size'] / 1e6:.2f} MB" if a["size"] >= 100_000 else f"{a['size']:,} B"
        row = (f"| {a['name']} | {size} | {a['expect']} | {a['outcome']} | {a['seconds']:.2f} | "
               f"{a['cpu_s']:.2f} | {_fmt_mib(a['peak_rss_growth'])} |")
        if before:
            b = before.get(a["name"])
            if b:
                ratio = b["cpu_s"] / max(a["cpu_s"], 1e-2)
                row += (f" {b['outcome']} | {b['seconds']:.2f} | {b['cpu_s']:.2f} | "
                        f"{_fmt_mib(b['peak_rss_growth'])} | {ratio:.1f}x |")
            else:
                row += " – | – | – | – | – |"
        lines.append(row)
    lines += ["", "Outcomes: `loaded`, `DatasetError`/`ArtifactError` (refused with a message), "
              "`exception:<type>` (any other exception), `crash:<signal>`, `hang` (killed at the "
              "CPU limit or the wall-clock limit; a hang's MiB is not known). s = wall seconds (fork included), CPU s = "
              "the child's user+system time (the fairer figure on a loaded machine), MiB = peak "
              "RSS growth of the child over the fork server. The before "
              "column ran with a longer timeout and a 6 GiB address-space limit (a MemoryError "
              "there means it tried to allocate beyond)."]
    bad_rows = [r for r in reader_rows + art_rows if _bad(r) or r.get("verdict", "ok") != "ok"]
    if bad_rows:
        lines += ["", "## Failures", ""]
        for r in bad_rows[:50]:
            lines.append(f"- {r.get('fmt') or r.get('model')} / {r.get('category', '')} {r['what']}: "
                         f"{r['outcome']} {r.get('verdict', '')} {str(r.get('detail', ''))[:150]}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
