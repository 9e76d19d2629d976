"""Helpers for the AppTest page tests: start a page on a dataset, carry one browser
session's state from page to page (as navigation does), and wait for the session's jobs.

Pages run every fit through the job runner, so a click only queues a job; the page shows
the result on a later script run. :func:`settle` reruns the page until no job of the
session is queued or running (AppTest does not run the job panel's timer).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

os.environ.setdefault("FEATAGG_WARMUP", "0")  # no background JIT warm-up in AppTest runs

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "pages"
#: session_state keys one browser session carries from page to page
SESSION_KEYS = ("featagg.dataset", "featagg.runs", "featagg.pages", "featagg.splits",
                "featagg.split_settings", "featagg.session_id", "featagg.picker_auto")


def dataset_entry(data, origin="upload"):
    """The value session.set_dataset stores, for putting a dataset into an AppTest."""
    return {"data": data, "fingerprint": data.fingerprint, "origin": origin,
            "source_id": "upload" if origin == "upload" else getattr(data, "name", None),
            "name": getattr(data, "name", "") or "dataset"}


def app(page: str, data=None, state=None, timeout: float = 300):
    """An AppTest of ``pages/<page>`` (not run yet), with ``data`` as the session's dataset
    and ``state`` (from :func:`carry`) as the rest of its session."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(PAGES / page), default_timeout=timeout)
    for k, v in (state or {}).items():
        at.session_state[k] = v
    if data is not None:
        at.session_state["featagg.dataset"] = dataset_entry(data)
    return at


def carry(at) -> dict:
    """This AppTest's session state that the next page of the same session sees."""
    return {k: at.session_state[k] for k in SESSION_KEYS if k in at.session_state}


def jobs_of(at) -> list:
    """Every job the session's pages remember (queued, running or just finished)."""
    pages = at.session_state["featagg.pages"] if "featagg.pages" in at.session_state else {}
    return [j for ns in pages.values() for j in ns.get("_jobs", {}).values()]


def busy(at) -> bool:
    return any(j.status in ("queued", "running") for j in jobs_of(at))


def settle(at, timeout: float = 300.0, poll: float = 0.2):
    """Rerun ``at`` until none of its session's jobs is queued or running (and once more,
    so the page shows what they produced, and the jobs they queue in turn are waited
    for too). Returns ``at``."""
    deadline = time.monotonic() + timeout
    at.run()
    while True:
        if at.exception:
            return at
        if not busy(at):
            at.run()
            if not busy(at):
                return at
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs still running after {timeout} s: "
                               f"{[(j.label, j.status) for j in jobs_of(at)]}")
        time.sleep(poll)
        at.run()


def click(at, key: str, timeout: float = 300.0):
    """Click the button ``key`` and wait for the jobs it starts."""
    at.button(key=key).click()
    return settle(at, timeout)


def ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def runs(at) -> list:
    return list(at.session_state["featagg.runs"]) if "featagg.runs" in at.session_state else []
