"""End-to-end (issue 33): three browser sessions upload R1 (a parquet of 0 rows x 999,990
columns), R5 (45 MB of 2-letter CSV cells) and R8 (an npz whose kind.npy inflates to
3 GiB) to one server at once. Each is refused with the real figure ("would need 1.42 GiB",
never "0.0 MiB"); the server's resident memory (VmRSS of its process group, libraries and
mapped files included, sampled every 0.1 s from when its kernel warm-up is over) stays under
1 GB, the uploads add under 256 MB to it, and its health check answers throughout
(every 0.5 s, 5 s timeout). The peak is printed and written to ``/tmp/featagg_hostile_server.json``
(recorded in benchmarks/results/fuzz.md)."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import serving
from e2e_util import server_log_tail, sidebar, wait_for_app, wait_for_kernels

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import hostile_corpus as hc  # noqa: E402

PEAK_LIMIT = 1 << 30
GROWTH_LIMIT = 256 << 20


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    """A server of its own: this test measures its memory from its start."""
    yield from serving(tmp_path_factory.mktemp("hostile_server") / "streamlit.log")


def _group_rss(pgid: int, field: str = "VmRSS") -> int:
    """Resident bytes of every process in the process group ``pgid`` (``field``: VmRSS, or
    RssAnon for the memory that is not a mapped file or library)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:             # field 5: pgrp
                continue
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith(field + ":"):
                        total += int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue
    return total


def _group_size(pgid: int) -> int:
    n = 0
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                n += int(fh.read().rsplit(")", 1)[1].split()[2]) == pgid
        except (OSError, ValueError, IndexError):
            continue
    return n


class Watch(threading.Thread):
    """Samples the server group's RSS every 0.1 s and its health check every 0.5 s."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.stop = server, threading.Event()
        self.peak, self.checks, self.failures, self.slowest = 0, 0, [], 0.0
        self.peak_anon = 0

    def run(self):
        last = 0.0
        while not self.stop.is_set():
            self.peak = max(self.peak, _group_rss(self.server.proc.pid))
            self.peak_anon = max(self.peak_anon, _group_rss(self.server.proc.pid, "RssAnon"))
            if time.monotonic() - last >= 0.5:
                last = time.monotonic()
                t0 = time.monotonic()
                try:
                    with urllib.request.urlopen(self.server + "/_stcore/health", timeout=5) as r:
                        ok = r.read().strip() == b"ok"
                except OSError as exc:
                    ok = False
                    self.failures.append(str(exc))
                self.slowest = max(self.slowest, time.monotonic() - t0)
                self.checks += 1
                if not ok and not self.failures:
                    self.failures.append("not ok")
            time.sleep(0.1)


def _open_upload(page, server, kind):
    page.goto(server)
    wait_for_app(page)
    sidebar(page).get_by_text("Upload a file", exact=True).click()
    wait_for_app(page)
    sidebar(page).locator('[data-testid="stRadio"]').filter(has_text="Kind of data") \
        .get_by_text(kind, exact=True).click()
    wait_for_app(page)
    uploader = sidebar(page).locator('[data-testid="stFileUploader"]').filter(
        has_text="Data file").first
    uploader.wait_for(state="visible")
    return uploader


@pytest.mark.e2e
def test_three_sessions_upload_hostile_files_at_once(hostile_server, browser, tmp_path):
    files = {"wide.parquet": hc.wide_parquet(999_990),
             "cells.csv": hc.two_letter_csv(45_000_000),
             "bomb.npz": hc.kind_bomb_npz(3 << 30)}
    for name, raw in files.items():
        (tmp_path / name).write_bytes(raw)
    figures = {"wide.parquet": "would need 1.42 GiB", "cells.csv": "would need 1.35 GiB",
               "bomb.npz": "would need 3.00 GiB"}
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000})
                for _ in files]
    try:
        pages = [c.new_page() for c in contexts]
        kinds = {"wide.parquet": "Table", "cells.csv": "Table", "bomb.npz": "Multi-label"}
        uploaders = [_open_upload(p, hostile_server, kinds[n]) for p, n in zip(pages, files)]
        # the server's kernel warm-up runs in helper processes for a while after start:
        # measured once they are done, the group is the server alone
        assert wait_for_kernels(hostile_server.log, timeout_s=900,
                                alive=lambda: hostile_server.proc.poll() is None) is not None, \
            server_log_tail(hostile_server)
        time.sleep(2)
        idle = _group_rss(hostile_server.proc.pid)
        idle_anon = _group_rss(hostile_server.proc.pid, "RssAnon")
        watch = Watch(hostile_server)
        watch.start()
        t0 = time.monotonic()
        for up, name in zip(uploaders, files):          # all three at once
            up.locator('input[type="file"]').first.set_input_files(str(tmp_path / name))
        messages = {}
        for page, name in zip(pages, files):
            alert = sidebar(page).locator('[data-testid="stAlert"]').filter(
                has_text="Could not load this file")
            try:
                alert.wait_for(state="visible", timeout=180_000)
            finally:
                page.screenshot(path=f"/tmp/featagg_hostile_server_{name}.png")
            messages[name] = alert.inner_text()
        seconds = time.monotonic() - t0
        time.sleep(3)                                    # after the refusals: still serving
        watch.stop.set()
        watch.join(10)
        result = {"peak_group_rss_mb": round(watch.peak / 1e6, 1),
                  "idle_group_rss_mb": round(idle / 1e6, 1),
                  "peak_anon_mb": round(watch.peak_anon / 1e6, 1),
                  "idle_anon_mb": round(idle_anon / 1e6, 1),
                  "growth_mb": round((watch.peak - idle) / 1e6, 1),
                  "processes": _group_size(hostile_server.proc.pid),
                  "health_checks": watch.checks, "health_failures": len(watch.failures),
                  "slowest_health_s": round(watch.slowest, 2),
                  "seconds_to_three_refusals": round(seconds, 1),
                  "load_average": os.getloadavg()[0]}
        print("hostile server:", json.dumps(result))
        Path("/tmp/featagg_hostile_server.json").write_text(json.dumps(result))
        for name, msg in messages.items():
            assert name in msg and figures[name] in msg, (name, msg)
            assert "0.0 MiB" not in msg and "Traceback" not in msg
        assert hostile_server.proc.poll() is None, server_log_tail(hostile_server)
        assert not watch.failures and watch.checks >= 3, (watch.failures, watch.checks)
        # the whole server, libraries and mapped files included, stays under 1 GB
        # (issue 33; about 0.6 GB measured: benchmarks/results/fuzz.md) and the three
        # hostile uploads add less than GROWTH_LIMIT to it
        assert watch.peak < PEAK_LIMIT, result
        assert watch.peak_anon < PEAK_LIMIT, result
        assert watch.peak - idle < GROWTH_LIMIT, result
    finally:
        for c in contexts:
            c.close()
