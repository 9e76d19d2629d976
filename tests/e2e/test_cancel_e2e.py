"""End-to-end: Cancel stops a long job on a big upload, and the server stays usable.

A 20,000 × 50,000 × 5,000 synthetic multi-label file (``make_powerlaw_multilabel``, written
with ``save_xc``, under the 50 MB upload limit) is uploaded in one browser session; DEFRAG
runs on it, then the full k-means baseline — the job that once ran for 22 minutes with a
Stop button that did nothing. While it runs, a second session's Data page renders in under
2 s (or, on a machine other work already slows down, within 1.75x of the same page without
the job, measured in the same run: the bug slowed other sessions 2-3x); after **Cancel**, the server's CPU (sampled from ``/proc/<pid>/stat``) is idle again
within 2 s and the page says "cancelled".
"""
import os
import time

import pytest

from e2e_util import (goto_page, metric_cards, page_text, server_log_tail, upload_file,
                      wait_for_app, wait_for_jobs, wait_for_kernels)
from featagg_core.data import save_xc
from featagg_core.data.synthetic import make_powerlaw_multilabel

SHOTS = "/tmp"
CLK = os.sysconf("SC_CLK_TCK")
IDLE_CORES = 0.15          # the server without a job: its event loop and the page reruns


def _cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of the server process (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def _cpu_use(pid: int, window: float = 0.5) -> float:
    """Cores the server used over the next ``window`` seconds."""
    a, t = _cpu_seconds(pid), time.monotonic()
    time.sleep(window)
    return (_cpu_seconds(pid) - a) / (time.monotonic() - t)


def _wait_until_idle(server, timeout_s: float = 900.0) -> float:
    """Wait until the server's kernels are all compiled (its log says "kernels: all …
    groups ready": on a cold numba cache background processes compile them for minutes)
    and the server process is idle (two 1 s windows below IDLE_CORES): "idle within 2 s of
    Cancel" and "responsive beside a job" are about the job, not about the warm-up.
    Returns the seconds waited; fails if that never happens."""
    t0 = time.monotonic()
    pid = server.proc.pid
    if wait_for_kernels(server.log, timeout_s, poll_s=1.0) is None:
        pytest.fail(f"the server's kernels were not ready within {timeout_s:.0f} s:\n"
                    + server_log_tail(server))
    quiet = 0
    while time.monotonic() - t0 < timeout_s:
        quiet = quiet + 1 if _cpu_use(pid, 1.0) < IDLE_CORES else 0
        if quiet >= 2:
            return time.monotonic() - t0
    pytest.fail(f"the server never went idle within {timeout_s:.0f} s")


_DATA_PAGE_DRAWN = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.dataset.testScriptState !== 'notRunning') return false;
    if (document.querySelector('[data-testid="stStatusWidget"]')) return false;
    const main = document.querySelector('[data-testid="stMain"]');
    if (!main || main.querySelector('[data-stale="true"]')) return false;
    return [...main.querySelectorAll('[data-testid="stMetricLabel"]')]
        .some(e => e.innerText.trim() === 'Points n (train)');
}"""


def _data_page_seconds(page, times: int = 3) -> float:
    """Median seconds from clicking Data in the menu (from Home) until the Data page is
    drawn: its run over, its "Points n (train)" card shown, nothing of Home left.

    Timed with one condition polled in the browser, not with :func:`goto_page`, whose
    grace period for a run to *start* (5 s) is spent in full whenever the run finished
    before the browser saw it running: that made a 0.5 s page read 5.2 s at random, with
    or without the job (the CI run of 5ef0016 and a local rerun)."""
    out = []
    link = page.locator('[data-testid="stSidebarNavLink"]').filter(has_text="Data").first
    for _ in range(times):
        goto_page(page, "Home")
        assert not page.evaluate(_DATA_PAGE_DRAWN)          # Home is shown, not Data
        t0 = time.monotonic()
        link.click()
        page.wait_for_function(_DATA_PAGE_DRAWN, polling=50)
        out.append(time.monotonic() - t0)
    return sorted(out)[len(out) // 2]


@pytest.mark.e2e
def test_cancel_a_long_baseline_on_a_big_upload(app_server, browser, tmp_path):
    data = make_powerlaw_multilabel(20_000, 50_000, 5_000, avg_features=300, random_state=0)
    path = tmp_path / "big_powerlaw.txt"
    save_xc(data, path)
    assert path.stat().st_size < 50 * 2 ** 20
    pid = app_server.proc.pid
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(2)]
    for c in contexts:
        c.set_default_timeout(300_000)
    try:
        alice, bob = (c.new_page() for c in contexts)
        for pg in (alice, bob):
            pg.goto(app_server)
            wait_for_app(pg)
        goto_page(bob, "Data")                         # Bibtex's statistics, computed once
        metric_cards(bob)
        _wait_until_idle(app_server)                          # the warm-up is done
        idle_s = _data_page_seconds(bob)               # the peer: no job running

        upload_file(alice, path, timeout_ms=300_000)
        alice.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').filter(
            has_text="Loaded").wait_for(timeout=300_000)
        goto_page(alice, "Feature agglomeration")
        main = alice.locator('[data-testid="stMain"]')
        main.get_by_role("button", name="Run", exact=True).click()
        wait_for_jobs(alice, timeout_ms=600_000)
        assert metric_cards(alice).get("Clusters K") == "8,192", server_log_tail(app_server)
        # the guard: k-means on every feature would take minutes, so it was not started
        # behind the user's back; the page offers a sample, or all of them on request
        text = page_text(alice)
        assert "k-means on all 50,000 features would take about" in text, text[-3000:]
        _wait_until_idle(app_server)                          # nothing else left running
        main.get_by_role("button", name="Run on all 50,000 features").click()
        alice.get_by_text("running for").first.wait_for(timeout=120_000)
        time.sleep(2.0)
        busy = _cpu_use(pid, 1.0)
        # a running job keeps the server above the idle threshold used below (on a shared
        # machine it may get well under one core)
        assert busy > IDLE_CORES, f"the job should keep the server busy, used {busy:.2f} cores"

        # meanwhile another session's Data page renders quickly: under 2 s, or — when other
        # work on a shared machine already makes it slower — clearly less than the 2-3x
        # slowdown of the bug, against the same page without the job in the same run
        render_s = _data_page_seconds(bob)
        load = os.getloadavg()[0]
        assert render_s < max(2.0, 1.75 * idle_s), \
            f"Data page took {render_s:.2f} s while the job ran ({idle_s:.2f} s without; " \
            f"load {load:.1f})"
        alice.screenshot(path=f"{SHOTS}/featagg_cancel_running.png", full_page=True)

        main.get_by_role("button", name="Cancel").first.click()
        t_cancel = time.monotonic()
        idle_after = None
        while time.monotonic() - t_cancel < 10.0:
            if _cpu_use(pid, 0.25) < IDLE_CORES:
                idle_after = time.monotonic() - t_cancel
                break
        assert idle_after is not None and idle_after <= 2.0, \
            f"server CPU not idle within 2 s of Cancel ({idle_after})"
        alice.get_by_text("cancelled").first.wait_for(timeout=30_000)
        assert "Traceback" not in alice.content()
        alice.screenshot(path=f"{SHOTS}/featagg_cancel_done.png", full_page=True)
        print(f"[cancel e2e] Data page {render_s:.2f} s while the job ran, {idle_s:.2f} s "
              f"without; server CPU idle {idle_after:.2f} s after Cancel (busy {busy:.2f} "
              f"cores before); load average {os.getloadavg()[0]:.1f}")
    finally:
        for c in contexts:
            c.close()
