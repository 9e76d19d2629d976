"""The job runner (no Streamlit runtime) and the job panel (AppTest on a tiny script)."""
import gc
import logging
import os
import threading
import time
import weakref

import pytest

os.environ.setdefault("FEATAGG_WARMUP", "0")  # no background compilation in AppTest runs

from featagg_app.runs_ui import status_text
from featagg_app.server.jobs import JobQueueFull, JobRunner, friendly_error

WAIT = 20.0   # generous: the machine is shared; nothing here asserts on time


@pytest.fixture
def runner():
    r = JobRunner(max_workers=1, max_queued_per_session=4)
    yield r
    r.shutdown(cancel=True)


def _gate(runner, session="gatekeeper"):
    """Occupy the (single) worker until the returned event is set."""
    release = threading.Event()
    started = threading.Event()

    def hold(progress, cancel):
        started.set()
        while not release.wait(0.01):
            progress(0.0, "holding")
        return "gate"

    job = runner.submit(session, "gate", hold)
    assert started.wait(WAIT)
    return release, job


def _recorder(log, name):
    def fn(progress, cancel):
        log.append(name)
        return name
    return fn


def test_round_robin_over_sessions_fifo_within(runner):
    release, gate = _gate(runner)
    order = []
    plan = [("A", "a1"), ("A", "a2"), ("A", "a3"), ("B", "b1"), ("C", "c1"), ("C", "c2")]
    jobs = {name: runner.submit(sid, name, _recorder(order, name)) for sid, name in plan}
    expected = ["a1", "b1", "c1", "a2", "c2", "a3"]
    # queue positions say the same thing before anything runs
    assert [jobs[n].queue_position for n in expected] == [1, 2, 3, 4, 5, 6]
    assert [j.label for j in runner.jobs()] == ["gate"] + expected
    assert gate.queue_position is None and gate.status == "running"
    release.set()
    for j in jobs.values():
        assert j.wait(WAIT)
    assert order == expected
    assert all(j.status == "done" and j.result == j.label for j in jobs.values())
    assert all(j.progress == 1.0 for j in jobs.values())


def test_a_session_that_comes_back_waits_for_the_others(runner):
    release, _ = _gate(runner)
    order = []
    runner.submit("A", "a1", _recorder(order, "a1"))
    runner.submit("B", "b1", _recorder(order, "b1"))
    release.set()
    runner.jobs()
    for j in runner.jobs():
        j.wait(WAIT)
    # A is served, then B; a new A job queued after both goes behind B's next one
    release2, gate2 = _gate(runner)
    a2 = runner.submit("A", "a2", _recorder(order, "a2"))
    b2 = runner.submit("B", "b2", _recorder(order, "b2"))
    a3 = runner.submit("A", "a3", _recorder(order, "a3"))
    assert (a2.queue_position, b2.queue_position, a3.queue_position) == (1, 2, 3)
    release2.set()
    for j in (a2, b2, a3):
        assert j.wait(WAIT)
    assert order == ["a1", "b1", "a2", "b2", "a3"]


def test_bounded_queue_per_session():
    r = JobRunner(max_workers=1, max_queued_per_session=2)
    try:
        release, _ = _gate(r, session="A")          # A: one running
        r.submit("A", "a2", lambda p, c: 2)           # A: one queued -> 2 unfinished
        with pytest.raises(JobQueueFull, match="at most 2 per session"):
            r.submit("A", "a3", lambda p, c: 3)
        other = r.submit("B", "b1", lambda p, c: 1)   # other sessions are not affected
        release.set()
        assert other.wait(WAIT) and other.result == 1
        late = r.submit("A", "a4", lambda p, c: 4)    # room again once A's jobs are done
        assert late.wait(WAIT) and late.result == 4
    finally:
        r.shutdown()


def test_cancel_a_queued_job_never_runs_it(runner):
    release, _ = _gate(runner)
    ran = []
    job = runner.submit("A", "never", _recorder(ran, "never"))
    assert job.status == "queued"
    job.cancel()
    assert job.status == "cancelled" and job.done and job.wait(0)
    assert job.queue_position is None and job.result is None
    release.set()
    after = runner.submit("A", "after", _recorder(ran, "after"))
    assert after.wait(WAIT)
    assert ran == ["after"]


def test_cancel_a_running_job_stops_it_and_frees_the_worker(runner):
    seen = []

    def spin(progress, cancel):
        for i in range(100_000):
            progress(i / 100_000, f"step {i}")
            seen.append(i)
            time.sleep(0.005)
        return "finished"                          # only if the cancel were ignored

    job = runner.submit("A", "spin", spin)
    while not seen:
        time.sleep(0.01)
    assert job.status == "running"
    assert 0.0 <= job.progress < 1.0 and job.message.startswith("step")
    job.cancel()
    assert job.wait(WAIT)
    assert job.status == "cancelled" and job.result is None
    assert len(seen) < 100_000
    nxt = runner.submit("A", "next", lambda p, c: "ok")
    assert nxt.wait(WAIT) and nxt.result == "ok"


def test_cancel_session_cancels_queued_and_running(runner):
    stop_seen = threading.Event()
    inside = threading.Event()

    def spin(progress, cancel):
        inside.set()
        try:
            while True:
                if cancel.wait(0.01):
                    return "ignored result"   # returning after a cancel is still cancelled
                progress(0.1, "spinning")     # ... and so is raising from progress
        finally:
            stop_seen.set()

    running = runner.submit("A", "spin", spin)
    queued = runner.submit("A", "q", lambda p, c: 1)
    other = runner.submit("B", "b", lambda p, c: "b")
    # wait until spin itself runs: a job whose status is "running" but whose function has
    # not been entered yet is cancelled without calling it (then stop_seen is never set)
    assert inside.wait(WAIT)
    assert runner.cancel_session("A") == 2
    assert running.wait(WAIT) and queued.wait(WAIT)
    assert stop_seen.is_set()
    assert running.status == "cancelled" and running.result is None
    assert queued.status == "cancelled"
    assert other.wait(WAIT) and other.status == "done"


def test_failures_are_logged_and_carried_as_a_message(runner, caplog):
    def bad_value(progress, cancel):
        raise ValueError("n_clusters=0: must be at least 1")

    def bad_bug(progress, cancel):
        return [][1]

    with caplog.at_level(logging.ERROR, logger="featagg_app.server.jobs"):
        j1 = runner.submit("A", "bad value", bad_value)
        j2 = runner.submit("A", "bad bug", bad_bug)
        assert j1.wait(WAIT) and j2.wait(WAIT)
    assert j1.status == "failed" and j1.error == "n_clusters=0: must be at least 1"
    assert j2.status == "failed"
    assert j2.error.startswith("Unexpected error (IndexError)")
    assert "Traceback" not in j2.error and "line" not in j2.error
    assert "failed: n_clusters=0" in status_text(j1)
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 2                      # the server log has the traceback


def test_a_result_reporting_cancelled_makes_a_cancelled_job(runner):
    class FakeRun:
        status = "cancelled"

    job = runner.submit("A", "run", lambda p, c: FakeRun())
    assert job.wait(WAIT)
    assert job.status == "cancelled" and job.result is None


class _Big:
    """Stands for the arrays a fit holds."""


@pytest.mark.parametrize("when", ["queued", "running"])
def test_cancel_drops_the_function_and_what_it_holds(runner, when):
    release, _ = _gate(runner) if when == "queued" else (None, None)
    big = _Big()
    ref = weakref.ref(big)
    started = threading.Event()

    def work(progress, cancel, held=big):
        started.set()
        while True:
            progress(0.5, "holding a big object")
            time.sleep(0.005)

    job = runner.submit("A", "holder", work)
    del work, big
    if when == "running":
        assert started.wait(WAIT)
    job.cancel()
    assert job.wait(WAIT) and job.status == "cancelled"
    if release is not None:
        release.set()
    # the worker's frame lets go once it returns to its loop; give it a moment
    for _ in range(200):
        gc.collect()
        if ref() is None:
            break
        time.sleep(0.01)
    assert ref() is None
    assert job.result is None and job._fn is None


def test_a_done_job_keeps_its_result_only_while_the_page_keeps_the_job(runner):
    job = runner.submit("A", "make", lambda p, c: _Big())
    assert job.wait(WAIT)
    ref = weakref.ref(job.result)
    assert ref() is not None
    del job
    for _ in range(200):
        gc.collect()
        if ref() is None:
            break
        time.sleep(0.01)
    assert ref() is None                             # the runner itself kept nothing


def test_threads_per_job_never_oversubscribe():
    import numba
    cores = os.cpu_count() or 1
    r = JobRunner(max_workers=2)
    try:
        assert r.threads_per_job == max(1, cores // 2)
        from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
        seen, omp = [], []

        def probe(p, c):
            seen.append(numba.get_num_threads())
            omp.append(_openmp_effective_n_threads())
        jobs = [r.submit(f"s{i}", "threads", probe) for i in range(2)]
        for j in jobs:
            assert j.wait(WAIT)
        assert seen == [min(r.threads_per_job, numba.config.NUMBA_NUM_THREADS)] * 2
        assert omp == [r.threads_per_job] * 2          # OpenMP's count is per thread too
        assert r.max_workers * r.threads_per_job <= max(cores, r.max_workers)
    finally:
        r.shutdown()


def test_workers_from_the_environment(monkeypatch):
    from featagg_app.server.jobs import default_workers
    monkeypatch.setenv("FEATAGG_JOB_WORKERS", "3")
    assert default_workers() == 3
    monkeypatch.setenv("FEATAGG_JOB_WORKERS", "many")
    assert default_workers() == (os.cpu_count() or 1)
    with pytest.raises(ValueError, match="max_workers"):
        JobRunner(max_workers=0)


def test_friendly_error_words():
    from featagg_core.utils.cancel import Cancelled
    assert friendly_error(Cancelled()) == "Cancelled."
    assert "ran out of memory" in friendly_error(MemoryError())
    assert friendly_error(ValueError("x  \n y")) == "x y"
    assert len(friendly_error(RuntimeError("z" * 1000))) < 460


# ----------------------------------------------------------------------------- the widget
_SCRIPT = '''
import os, time
os.environ["FEATAGG_WARMUP"] = "0"
import streamlit as st
from featagg_app import runs_ui

FLAG = {flag!r}

def work(progress, cancel):
    while not os.path.exists(FLAG):
        progress(0.5, "half way there")
        time.sleep(0.01)
    return 42

sec = runs_ui.run_section("Test page", None, None, work, slot="slot", key="go", button="Run",
                          layout="button", label="Tiny job", estimate_s=3.0)
if sec.job is not None and sec.job.status == "done":
    st.session_state["res"] = sec.job.result
    st.session_state["collected"] = st.session_state.get("collected", 0) + 1
if "res" in st.session_state:
    st.success(f"result {{st.session_state['res']}}")
'''
_CANCEL = "job:Test page:slot__cancel"


def _settle(at, job_status, timeout=WAIT):
    end = time.time() + timeout
    while time.time() < end:
        pages = at.session_state["featagg.pages"] if "featagg.pages" in at.session_state \
            else {}
        job = pages.get("Test page", {}).get("_jobs", {}).get("slot")
        if job is None or job.status in job_status:
            return job
        time.sleep(0.02)
    raise AssertionError(f"job did not reach {job_status}")


def test_panel_shows_progress_and_the_page_gets_the_result(tmp_path):
    from streamlit.testing.v1 import AppTest
    flag = tmp_path / "flag"
    at = AppTest.from_string(_SCRIPT.format(flag=str(flag)), default_timeout=30)
    at.run()
    assert not at.exception and not at.success
    at.button(key="go").click().run()
    _settle(at, ("running",))
    at.run()
    text = " ".join(m.value for m in at.markdown)
    assert "Tiny job" in text and "running for" in text and "of about 3 s" in text
    assert [b.key for b in at.button] == ["go", _CANCEL]
    assert at.button(key="go").disabled                  # one job per slot: no second press
    flag.write_text("go")
    _settle(at, ("done",))
    at.run()
    assert [s.value for s in at.success] == ["result 42"]
    assert _CANCEL not in [b.key for b in at.button] and not at.button(key="go").disabled
    at.run()                                             # the result is handed over once
    assert at.session_state["collected"] == 1
    assert not at.exception


def test_cancel_button_cancels_the_job(tmp_path):
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_string(_SCRIPT.format(flag=str(tmp_path / "never")), default_timeout=30)
    at.run()
    at.button(key="go").click().run()
    job = _settle(at, ("running",))
    at.run()
    at.button(key=_CANCEL).click().run()
    assert job.wait(WAIT) and job.status == "cancelled"
    at.run()
    # the slot's outcome stays said (a warning, as on every page) until the next press
    assert [w.value for w in at.warning] == ["Tiny job: cancelled."]
    at.run()
    assert [w.value for w in at.warning] == ["Tiny job: cancelled."]
    assert not at.success and not at.exception
