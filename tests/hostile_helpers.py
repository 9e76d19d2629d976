"""Shared helpers of the hostile-input tests: run a script in a fresh Python (the fork
server's parent, numba's fork-safe workqueue layer, one OpenMP thread)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
RSS_LIMIT = 500 << 20
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() \
    else sys.executable


def child_env():
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", PYTHONPATH=f"{ROOT}{os.pathsep}{TESTS}")
    env.pop("FEATAGG_MAX_LOAD_MB", None)
    return env


def run_script(body: str, timeout: float = 600) -> list:
    """Run ``body`` in a fresh Python; it prints JSON lines, returned parsed."""
    out = subprocess.run([PY, "-c", textwrap.dedent(body)], env=child_env(), cwd=str(ROOT),
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"runner failed (exit {out.returncode}):\n{out.stderr[-4000:]}"
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
