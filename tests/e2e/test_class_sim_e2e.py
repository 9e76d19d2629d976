"""End-to-end, CI-sized run of the protocol-level class simulator (benchmarks/class_sim.py,
issue 31) through its command line, as the checks outside the repo call it: N = 3 students
on a real server the simulator starts itself (localhost), one of them on its own upload.
Nothing fails, nobody sees another student's names, each student's DEFRAG run names its own
d0, and the JSON has the contract's keys. No timing is asserted (the bench reports them)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"n", "errors", "cross_talk", "lone_s", "p50_ratio", "p95_ratio",
        "server_cpu_s_per_student", "peak_rss_mb"}


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_three_simulated_students(tmp_path):
    out = tmp_path / "sim.json"
    py = ROOT / ".venv" / "bin" / "python"
    proc = subprocess.run(
        [str(py) if py.exists() else sys.executable, str(ROOT / "benchmarks" / "class_sim.py"),
         "--n", "3", "--arrival-s", "3", "--uploads-every", "3", "--no-close-wait",
         "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=840)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert KEYS <= set(res), sorted(KEYS - set(res))
    assert res["n"] == 3
    assert res["errors"] == 0 and res["cross_talk"] == 0, res["problems"]
    students = res["students"]
    assert [s["name"] == "bibtex" for s in students] == [True, True, False], students
    assert students[2]["name"].startswith("student02_")
    for s in students:
        # its own DEFRAG run, named with its own d0, and no other d0
        assert set(re.findall(r"d0=(\d+)", s["runs"] or "")) == {str(s["d0"])}, s
        assert any(a.startswith("DEFRAG") for a in s["actions"]), s
    assert sorted(s["d0"] for s in students[:2]) == [4, 8]
    assert sum(any(a.startswith("KTXMLC") for a in s["actions"]) for s in students) == 2
    assert res["lone_s"] > 0 and res["server_cpu_s_per_student"] > 0
    assert 0 < res["peak_rss_mb"] < 4096
