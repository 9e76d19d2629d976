"""Triage benchmark: the command line's ``triage`` on real data sets, each within its time
budget, timed from outside the process (wall and CPU seconds, the machine's load).

    nice .venv/bin/python benchmarks/triage_bench.py [--quick] [--out PATH]

For every data set: ``python -m featagg_core triage DATA --budget-s B --out ... --json ...``
in a fresh process (numba's cache warm: the same kernels are compiled before the first
measured run by a warm-up triage of a small synthetic set). Reported: wall seconds of the
whole command (process start to report on disk) against the budget (the goal: at most
the budget), its CPU seconds, the steps that ran / were skipped or stopped, and whether
any message (stdout, stderr, the visible text of the HTML) used a Python keyword argument
(``xml=``, ``n_labels=``, ``label=``) instead of the command's options.

Data: ``sample:bibtex`` (60 s), Delicious from ``../shared/data/delicious`` (MULAN ARFF with
its test part; 180 s) and its bundled sample (180 s), Corel16k (one file, random split;
120 s), Yeast and Scene (dense ARFF with their test parts; 120 s), Cora (graph, 120 s),
Adult (table, 60 s). A missing shared file is skipped with a message.
Writes ``benchmarks/results/triage.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from _common import shared_data  # noqa: E402

DATA = shared_data()
PY = os.path.join(ROOT, ".venv", "bin", "python")
if not os.path.exists(PY):
    PY = sys.executable
PY_TERMS = ("xml=", "n_labels=", "label=")

CASES = [
    ("Bibtex (sample)", ["sample:bibtex"], 60),
    ("Delicious (shared, MULAN split)", [os.path.join(DATA, "delicious", "delicious-train.arff"),
                                         "--test", os.path.join(DATA, "delicious",
                                                                "delicious-test.arff")], 180),
    ("Delicious (sample)", ["sample:delicious"], 180),
    ("Corel16k (one file, random split)", [os.path.join(DATA, "corel16k",
                                                        "Corel16k001-test.arff")], 120),
    ("Yeast (dense ARFF)", [os.path.join(DATA, "yeast", "yeast-train.arff"), "--test",
                            os.path.join(DATA, "yeast", "yeast-test.arff")], 120),
    ("Scene (dense ARFF)", [os.path.join(DATA, "scene", "scene-train.arff"), "--test",
                            os.path.join(DATA, "scene", "scene-test.arff")], 120),
    ("Cora (graph, sample)", ["sample:cora"], 120),
    ("Adult (table, sample)", ["sample:adult"], 60),
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_case(title, data_args, budget, tmp):
    missing = [a for a in data_args if a.startswith(DATA) and not os.path.exists(a)]
    if missing:
        log(f"{title}: {missing[0]} missing, skipped")
        return None
    html = os.path.join(tmp, "r.html")
    js = os.path.join(tmp, "r.json")
    cmd = [PY, "-m", "featagg_core", "triage", *data_args, "--budget-s", str(budget),
           "--out", html, "--json", js]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = {"title": title, "budget": budget, "wall": wall, "cpu": cpu, "load": load,
           "code": proc.returncode, "stderr_tail": proc.stderr.strip().splitlines()[-3:]}
    visible = ""
    if proc.returncode == 0 and os.path.exists(js):
        rec = json.load(open(js, encoding="utf-8"))
        steps = rec["budget"]["steps"]
        out["done"] = sum(s["status"] == "done" for s in steps)
        out["skipped"] = sum(s["status"] == "skipped" for s in steps)
        out["stopped"] = sum(s["status"] == "stopped" for s in steps)
        out["verdict"] = rec["verdict"][:4]
        out["wall_factor"] = rec["budget"]["speed"].get("wall_factor")
        out["size"] = os.path.getsize(html)
        visible = re.sub(r"<script.*?</script>", "", open(html, encoding="utf-8").read(),
                         flags=re.S)
    text = proc.stdout + proc.stderr + visible
    out["python_terms"] = [t for t in PY_TERMS if t in text]
    log(f"{title}: {wall:.1f} s wall (budget {budget} s), {cpu:.1f} s CPU, load {load:.1f}, "
        f"exit {proc.returncode}, steps done {out.get('done')}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="Bibtex only")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "triage.md"))
    args = ap.parse_args(argv)
    cases = CASES[:1] if args.quick else CASES
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        log("warm-up: a small synthetic triage (compiles and caches the kernels)")
        warm = os.path.join(tmp, "warm.npz")
        subprocess.run([PY, "-c", "from featagg_core.data.synthetic import make_powerlaw_multilabel;"
                        "from featagg_core.data import save_npz;"
                        f"save_npz(make_powerlaw_multilabel(300,120,20,test_size=0.25),"
                        f"{warm!r})"], cwd=ROOT, check=True)
        subprocess.run([PY, "-m", "featagg_core", "triage", warm, "--budget-s", "120",
                        "--out", os.path.join(tmp, "w.html")], cwd=ROOT, capture_output=True)
        for title, data_args, budget in cases:
            r = run_case(title, data_args, budget, tmp)
            if r is not None:
                results.append(r)
    lines = ["# Triage benchmark", "",
             f"`benchmarks/triage_bench.py{' --quick' if args.quick else ''}`, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores "
             "(shared: the load is the 1-minute load average when the command started; "
             "'speed factor' is the triage's own measure of how much slower than its "
             "calibration the machine ran, which it plans with).", "",
             "Each row is one `python -m featagg_core triage DATA --budget-s B` in a fresh "
             "process, timed from outside (process start to report on disk). Goal: wall <= "
             "budget, no message in Python terms.", "",
             "| data set | budget s | wall s | wall / budget | CPU s | load | speed factor | "
             "steps done / skipped / stopped | within budget | Python terms | report |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ok = r["code"] == 0 and r["wall"] <= r["budget"]
        lines.append(
            f"| {r['title']} | {r['budget']} | {r['wall']:.1f} | {r['wall'] / r['budget']:.2f} "
            f"| {r['cpu']:.1f} | {r['load']:.1f} | "
            f"{r.get('wall_factor') or 0:.1f} | {r.get('done', '–')} / {r.get('skipped', '–')} "
            f"/ {r.get('stopped', '–')} | "
            f"{'yes' if ok else ('NO' if r['code'] == 0 else 'NO (exit %d)' % r['code'])} "
            f"| {', '.join(r['python_terms']) or 'none'} | "
            f"{r.get('size', 0) / 1e6:.1f} MB |")
    lines += ["", "## Verdicts (first lines)", ""]
    for r in results:
        lines.append(f"**{r['title']}**")
        lines += [f"- {v}" for v in r.get("verdict", [])] or \
            [f"- (failed) {' '.join(r['stderr_tail'])}"]
        lines.append("")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
