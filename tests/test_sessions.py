"""Durable sessions (featagg_app/server/sessions.py, featagg_app/state.py): the key is an
unguessable capability compared in constant time; the store stays under its memory and
spill caps with a class's uploads, least recently used first; idle sessions expire; and
through the whole app (AppTest) a second visit with the same ``?session=KEY`` gets the
dataset, uploads and runs back while a made-up key gets a fresh session."""
import os

os.environ.setdefault("FEATAGG_WARMUP", "0")  # no background JIT warm-up in AppTest runs

import base64
import hmac
import re
from pathlib import Path

import numpy as np
import pytest

import featagg_core.experiment  # noqa: F401 - sklearn imported on the main thread first
from featagg_app.server import sessions as sessions_mod
from featagg_app.server.sessions import (AppSpiller, SessionStore, Upload, key_digest,
                                         looks_like_key, new_key)
from page_util import app_for, carry, click, ok
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


class _Clock:
    def __init__(self, t=1000.0):
        self.t = float(t)

    def __call__(self):
        return self.t


def _xc_bytes(seed: int, n: int = 400, d: int = 300, L: int = 6) -> bytes:
    """A small Extreme Classification Repository text file (what a student uploads)."""
    rng = np.random.default_rng(seed)
    lines = [f"{n} {d} {L}"]
    for _ in range(n):
        labels = sorted(set(rng.integers(0, L, 2).tolist()))
        feats = sorted(set(rng.integers(0, d, 12).tolist()))
        lines.append(",".join(map(str, labels)) + " "
                     + " ".join(f"{f}:{rng.random():.4f}" for f in feats))
    return ("\n".join(lines) + "\n").encode()


def _upload_values(seed: int) -> dict:
    from featagg_app.intake.uploads import read_upload
    raw = _xc_bytes(seed)
    data = read_upload("multilabel", f"student{seed}.txt", raw)
    up = Upload(kind="multilabel", name=f"student{seed}.txt", raw=raw, data=data,
                fingerprint=data.fingerprint)
    return {"featagg.uploads": {"multilabel": up},
            "featagg.dataset": {"data": data, "fingerprint": data.fingerprint,
                                "origin": "upload", "source_id": "upload",
                                "name": data.name},
            "featagg_large_text": True, "featagg_source": "Upload a file"}


def _disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# ---------------------------------------------------------------------------- keys
def test_keys_have_256_random_bits_in_url_safe_text():
    keys = [new_key() for _ in range(2000)]
    assert len(set(keys)) == len(keys)
    for k in keys[:50]:
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", k) and looks_like_key(k)
        assert len(base64.urlsafe_b64decode(k + "=")) == 32        # 256 bits >= 128
    # every character position varies (no fixed prefix, nothing derived from a name)
    assert all(len({k[i] for k in keys}) > 20 for i in range(42))
    bits = np.unpackbits(np.frombuffer(b"".join(base64.urlsafe_b64decode(k + "=")
                                                for k in keys), dtype=np.uint8))
    assert abs(bits.mean() - 0.5) < 0.01


def test_store_keeps_only_a_digest_and_compares_in_constant_time(monkeypatch):
    store = SessionStore(mem_bytes=1 << 30, spill_bytes=1 << 30, idle_s=0)
    key, rec = store.create()
    assert key not in repr(vars(rec)) and rec.digest == key_digest(key)
    assert key not in repr(store.sids()) and rec.sid not in key
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(sessions_mod.hmac, "compare_digest", spy)
    assert store.lookup(key) is rec
    assert calls and calls[-1] == (rec.digest, key_digest(key))


def test_an_unknown_made_up_or_malformed_key_finds_nothing():
    store = SessionStore(mem_bytes=1 << 30, spill_bytes=1 << 30, idle_s=0)
    key, rec = store.create()
    assert store.save(key, {"featagg.x": 1})
    other = key[:-1] + ("A" if key[-1] != "A" else "B")
    for bad in (new_key(), other, key.upper() if key.upper() != key else key.lower(),
                "", "x" * 43 + "y", key + "=", None, 12, "../" + key[3:]):
        assert store.lookup(bad) is None
        assert store.save(bad, {"stolen": 1}) is False
    assert store.stats()["sessions"] == 1
    assert store.lookup(key).values == {"featagg.x": 1}


# ----------------------------------------------------------------------- bounds
def test_fifty_uploads_stay_under_both_caps_least_recently_used_first(tmp_path):
    clock = _Clock()
    one = len(_xc_bytes(0))
    spill_dir = tmp_path / "spill"
    store = SessionStore(spill_dir, mem_bytes=0, spill_bytes=0, idle_s=0, clock=clock)
    probe_key, _ = store.create()
    store.save(probe_key, _upload_values(0))
    per_session = store.stats()["mem_bytes"]
    store.drop(probe_key)
    assert per_session > one                    # the parsed data and the bytes are counted
    store = SessionStore(spill_dir, mem_bytes=5 * per_session + per_session // 2,
                         spill_bytes=12 * one + one // 2, idle_s=0, clock=clock)
    keys, fps = [], []
    for i in range(50):
        clock.t += 1
        key, _ = store.create()
        values = _upload_values(i)
        fps.append(values["featagg.dataset"]["fingerprint"])
        store.save(key, values)
        keys.append(key)
        s = store.stats()
        assert s["mem_bytes"] <= store.mem_bytes
        assert _disk_bytes(spill_dir) <= store.spill_bytes           # measured on disk
    s = store.stats()
    assert s["sessions"] == 5 + 12 and s["spilled"] == 12 and s["evictions"] == 50 - 17
    spilled = [p for p in spill_dir.iterdir() if p.is_dir()]
    assert len(spilled) == 12
    # the oldest were forgotten, the next ones spilled, the newest still in memory
    in_memory = {r.sid for r in store._items.values() if not r.spilled}
    assert all(store.lookup(k) is None for k in keys[:33])
    assert len(in_memory) == 5
    rec = store.lookup(keys[33])                 # spilled: read back from its files
    assert rec is not None and not rec.spilled
    back = rec.values["featagg.dataset"]
    assert back["fingerprint"] == fps[33] and back["data"].fingerprint == fps[33]
    assert rec.values["featagg.uploads"]["multilabel"].raw == _xc_bytes(33)
    assert rec.values["featagg_large_text"] is True
    assert store.stats()["mem_bytes"] <= store.mem_bytes            # it pushed another out
    newest = store.lookup(keys[-1])
    assert newest.values["featagg.dataset"]["fingerprint"] == fps[-1]


def test_idle_sessions_expire_unless_a_job_runs(tmp_path):
    clock, dropped, busy = _Clock(), [], set()
    store = SessionStore(tmp_path, mem_bytes=1 << 30, spill_bytes=1 << 30, idle_s=60,
                         clock=clock, busy=lambda sid: sid in busy, on_drop=dropped.append)
    k1, r1 = store.create()
    k2, r2 = store.create()
    store.save(k1, {"a": 1})
    store.save(k2, {"b": 2})
    busy.add(r2.sid)
    clock.t += 59
    assert store.sweep() == [] and store.lookup(k1) is not None
    clock.t += 61
    assert store.sweep() == [(r1.sid, "expired")]
    assert dropped == [r1.sid] and store.lookup(k1) is None
    assert store.lookup(k2) is not None                       # its job keeps it
    busy.clear()
    clock.t += 61
    assert store.lookup(k2) is None and dropped == [r1.sid, r2.sid]


def test_a_closed_tabs_session_is_spilled_and_comes_back(tmp_path):
    clock = _Clock()
    store = SessionStore(tmp_path, mem_bytes=1 << 30, spill_bytes=1 << 30, idle_s=0,
                         clock=clock)
    key, rec = store.create()
    store.save(key, _upload_values(7))
    before = store.stats()["mem_bytes"]
    clock.t += 30
    assert store.spill_detached({rec.sid}, grace_s=10) == 0         # a tab still shows it
    assert store.spill_detached(set(), grace_s=60) == 0             # within the grace
    assert store.spill_detached(set(), grace_s=10) == 1
    assert store.stats()["mem_bytes"] < before / 5 and _disk_bytes(tmp_path) >= len(
        _xc_bytes(7))
    back = store.lookup(key).values
    assert back["featagg.uploads"]["multilabel"].data.fingerprint == \
        back["featagg.dataset"]["fingerprint"]
    assert _disk_bytes(tmp_path) == 0                                # back in memory


# ------------------------------------------------------------- the whole app
def _app(key=None):
    at = AppTest.from_file(APP, default_timeout=300)
    if key is not None:
        at.query_params["session"] = key
    return at.run()


def _key(at) -> str:
    value = at.query_params["session"]
    return value[0] if isinstance(value, list) else value


def test_a_second_visit_with_the_key_gets_the_runs_and_dataset_back_and_a_made_up_one_not():
    # a run on a page (DEFRAG on the default Bibtex), then the app's end of run saves it
    from featagg_app.state import load_sample_cached
    page = app_for("feature_agglomeration", load_sample_cached("bibtex"), origin="sample",
                   source_id="bibtex", timeout=300)
    page.run()
    click(page, "fa_run")
    ok(page)
    mine = [r for r in page.session_state["featagg.runs"]]
    assert mine and mine[0].pipeline is not None
    first = AppTest.from_file(APP, default_timeout=300)
    for k, v in carry(page).items():
        first.session_state[k] = v
    first.run()
    ok(first)
    key = _key(first)
    assert looks_like_key(key)
    first.toggle(key="featagg_large_text").set_value(True).run()

    again = _app(key)                        # a reload: a new browser session, same URL
    ok(again)
    assert _key(again) == key
    runs = again.session_state["featagg.runs"]
    assert [r.run_id for r in runs] == [r.run_id for r in mine]
    np.testing.assert_array_equal(runs[0].pipeline.defrag.labels_,
                                  mine[0].pipeline.defrag.labels_)
    assert again.session_state["featagg.dataset"]["fingerprint"] == \
        page.session_state["featagg.dataset"]["fingerprint"]
    assert again.toggle(key="featagg_large_text").value is True
    assert again.session_state["featagg.pages"]["Feature agglomeration"]["root_run"] == \
        page.session_state["featagg.pages"]["Feature agglomeration"]["root_run"]

    stranger = _app(new_key())               # a made-up key: a fresh session
    ok(stranger)
    assert _key(stranger) != key and looks_like_key(_key(stranger))
    assert "featagg.runs" not in stranger.session_state or \
        not stranger.session_state["featagg.runs"]
    assert stranger.toggle(key="featagg_large_text").value is False
    assert any("does not have" in i.value for i in stranger.info)


def test_each_kind_keeps_its_upload_across_kind_switches_and_a_reload():
    raw = _xc_bytes(3)
    at = _app()
    at.radio(key="featagg_source").set_value("Upload a file").run()
    at.radio(key="featagg_upload_kind").set_value("multilabel").run()
    up = next(u for u in at.file_uploader if u.key == "featagg_upload_multilabel")
    up.set_value(("mine.txt", raw, "application/octet-stream"))
    at.run()
    ok(at)
    fp = at.session_state["featagg.dataset"]["fingerprint"]
    assert at.session_state["featagg.dataset"]["data"].name == "mine.txt"
    at.radio(key="featagg_upload_kind").set_value("graph").run()
    at.radio(key="featagg_upload_kind").set_value("multilabel").run()
    ok(at)
    assert at.session_state["featagg.dataset"]["fingerprint"] == fp
    key = _key(at)

    back = _app(key)
    ok(back)
    assert back.session_state["featagg.dataset"]["fingerprint"] == fp
    assert back.radio(key="featagg_source").value == "Upload a file"
    assert any("earlier upload" in c.value and "mine.txt" in c.value
               for c in back.sidebar.caption)
    assert back.session_state["featagg.uploads"]["multilabel"].raw == raw


def test_spilled_runs_come_back_with_their_pipelines_as_artifacts(tmp_path):
    page = app_for("feature_agglomeration", timeout=300)
    page.run()
    click(page, "fa_run")
    ok(page)
    values = dict(carry(page))
    run = values["featagg.runs"][0]
    store = SessionStore(tmp_path, mem_bytes=1 << 30, spill_bytes=1 << 30, idle_s=0)
    k_old, _ = store.create()
    store.save(k_old, values)
    assert store.spill_detached(set()) == 1     # no tab shows it any more
    assert store.stats()["spilled"] == 1
    assert list(tmp_path.rglob("*.fgz"))        # the pipelines went out as artifacts
    assert not list(tmp_path.rglob("*.pkl")) and not list(tmp_path.rglob("*.pickle"))
    back = store.lookup(k_old).values
    got = back["featagg.runs"][0]
    assert got.run_id == run.run_id and got.metrics == run.metrics
    np.testing.assert_array_equal(got.pipeline.defrag.labels_, run.pipeline.defrag.labels_)
    assert run.pipeline is not None             # the live objects were never changed
    assert AppSpiller().size_of(back) > 0


# ------------------------------------------------------------------ the reaper
def test_a_closed_tab_keeps_its_job_and_its_work_and_an_idle_one_loses_both(tmp_path):
    """The reaper closes a tab gone for the grace without cancelling its durable session's
    jobs, spills that session once no tab shows it, and an idle tab's freeing forgets its
    durable session too (its next visit with the old URL starts afresh)."""
    import time
    import types
    from featagg_app.server.reaper import FREED_KEY, SessionReaper

    class Info:
        def __init__(self, sid):
            self.session = types.SimpleNamespace(id=sid, _state="NOT_RUNNING")

    class Manager:
        def __init__(self):
            self.active, self.closed = set(), []

        def list_active_sessions(self):
            return [Info(s) for s in sorted(self.active)]

        def get_session_info(self, sid):
            return Info(sid)

        def close_session(self, sid):
            self.closed.append(sid)

    class Runner:
        def __init__(self):
            self.cancelled, self.running = [], set()

        def cancel_session(self, sid):
            self.cancelled.append(sid)
            return 0

        def jobs(self, sid=None):
            return ["job"] if sid in self.running else []

    class State(dict):
        @property
        def filtered_state(self):
            return dict(self)

    mgr, runner = Manager(), Runner()
    t0 = time.time()
    store = SessionStore(tmp_path, mem_bytes=1 << 30, spill_bytes=1 << 30, idle_s=0,
                         busy=lambda sid: bool(runner.jobs(sid)),
                         on_drop=runner.cancel_session, clock=lambda: t0)
    k_gone, d_gone = store.create()
    k_idle, d_idle = store.create()
    store.save(k_gone, _upload_values(1))
    store.save(k_idle, {"featagg.x": 1})
    reaper = SessionReaper(runner, grace_s=60, idle_s=600, manager=lambda: mgr,
                           release=lambda: 0, sessions=store)
    gone = State({"featagg.session_id": d_gone.sid})
    idle = State({"featagg.session_id": d_idle.sid, "w": 1})
    for sid, st_, d in (("tab-gone", gone, d_gone), ("tab-idle", idle, d_idle)):
        mgr.active.add(sid)
        reaper.seen(sid, st_, d.sid)
    runner.running.add(d_gone.sid)                     # its job runs
    mgr.active.discard("tab-gone")                     # the tab was closed
    reaper.sweep(now=t0)
    assert reaper.sweep(now=t0 + 61) == [("tab-gone", "closed")]
    assert mgr.closed == ["tab-gone"] and runner.cancelled == []    # the job goes on
    assert store.stats()["spilled"] == 0                # a running job keeps it in memory
    runner.running.clear()                              # the job finished
    reaper.sweep(now=t0 + 122)
    assert store.stats()["spilled"] == 1 and d_gone.spilled and not d_idle.spilled
    assert store.lookup(k_gone).values["featagg_large_text"] is True  # a reload: back
    reaper._seen["tab-idle"].last_run = t0
    assert ("tab-idle", "idle") in reaper.sweep(now=t0 + 700)
    assert idle.get(FREED_KEY) is True and "featagg.session_id" not in idle
    assert d_idle.sid in runner.cancelled and store.lookup(k_idle) is None


def test_a_tab_opening_another_key_keeps_nothing_of_the_first_and_the_first_keeps_all():
    a = _app()
    a.toggle(key="featagg_large_text").set_value(True).run()
    a.session_state["featagg.marker"] = "alice's"
    a.run()
    k1 = _key(a)
    k2 = _key(_app())                                   # someone else's session
    a.query_params["session"] = k2                      # this tab now opens that URL
    a.run()
    ok(a)
    assert _key(a) == k2
    assert a.toggle(key="featagg_large_text").value is False
    assert "featagg.marker" not in a.session_state
    first = _app(k1)                                    # the first key still has its work
    assert first.toggle(key="featagg_large_text").value is True
    assert first.session_state["featagg.marker"] == "alice's"
