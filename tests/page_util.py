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


def dataset_entry(data, origin="upload", source_id=None):
    """The value ``featagg_app.state.set_dataset`` stores for ``data``, with the
    ``source_id`` the sidebar gives: the sample's name for a sample, ``"upload"`` for an
    upload (a folder file: its path relative to the data folder)."""
    if source_id is None:
        source_id = "upload" if origin == "upload" else getattr(data, "name", None)
    return {"data": data, "fingerprint": data.fingerprint, "origin": origin,
            "source_id": source_id, "name": getattr(data, "name", "") or "dataset"}


def _script(page: str) -> Path:
    """``pages/<page>.py`` (``page`` with or without ``.py``); ``"app"`` is ``app.py``."""
    if page in ("app", "app.py"):
        return ROOT / "app.py"
    return PAGES / (page if page.endswith(".py") else f"{page}.py")


def app_for(page: str, data=None, *, origin: str = "upload", source_id=None, runs=None,
            state=None, timeout: float = 300):
    """An AppTest of ``pages/<page>.py`` (not run yet) whose session is as the app leaves
    it once ``data`` is picked (the ``tests/conftest.py`` fixture ``app_for`` returns this).

    Parameters
    ----------
    page : str
        The page's file name in ``pages/`` (``"data"`` or ``"data.py"``); ``"app"`` is the
        whole app (``app.py``: sidebar and navigation).
    data : dataset or None
        The session's dataset, stored as ``state.set_dataset(data, origin, source_id)``
        stores it (and, like it, with every page's namespace emptied when it is not the
        dataset ``state`` already holds). None: the page picks its default sample itself.
    origin, source_id : str
        As the sidebar passes them (``"upload"``/``"upload"``, ``"sample"``/its name).
    runs : list of experiment.Run or None
        The session's run registry (``featagg.runs``), oldest first.
    state : dict or None
        The rest of the session (e.g. :func:`carry` of the page before).
    timeout : float
        AppTest's default timeout per script run, in seconds.

    Returns
    -------
    streamlit.testing.v1.AppTest
    """
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(_script(page)), default_timeout=timeout)
    state = dict(state or {})
    if data is not None:
        old = state.get("featagg.dataset")
        if old is None or old["fingerprint"] != data.fingerprint:
            state["featagg.pages"] = {}
        state["featagg.dataset"] = dataset_entry(data, origin, source_id)
    if runs is not None:
        state["featagg.runs"] = list(runs)
    for k, v in state.items():
        at.session_state[k] = v
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


def column_formats(df_element) -> dict:
    """{column: number format} of one shown dataframe, as its page configured it."""
    import json

    cols = json.loads(df_element.proto.columns or "{}")
    return {name: (cfg.get("type_config") or {}).get("format") for name, cfg in cols.items()}


def widget(elements, name: str):
    """The one widget of ``elements`` (e.g. ``at.number_input``) named ``name``: its key is
    ``name`` or ``featagg_app.keys.data_key(name, data)`` for whichever dataset the page
    drew it for (pages key dataset-dependent widgets by the dataset's fingerprint)."""
    from featagg_app.keys import key_name
    hits = [w for w in elements if w.key is not None and key_name(w.key) == name]
    if len(hits) != 1:
        raise KeyError(f"{len(hits)} widgets named {name!r}: "
                       f"{[w.key for w in elements]}")
    return hits[0]


def switch_dataset(at, data, origin: str = "upload", source_id=None):
    """Make ``data`` the session's dataset while the page stays open, as the sidebar's
    ``state.set_dataset`` does (every page's namespace emptied when the fingerprint
    changes; widget state is left as the browser would send it back). Returns ``at``
    (not run)."""
    old = at.session_state["featagg.dataset"] if "featagg.dataset" in at.session_state \
        else None
    if old is None or old["fingerprint"] != data.fingerprint:
        at.session_state["featagg.pages"] = {}
    at.session_state["featagg.dataset"] = dataset_entry(data, origin, source_id)
    return at
