"""featagg_app/server/memory.py (byte sizes, the byte-bounded shared-fits cache) and
featagg_app/server/reaper.py (closed and idle sessions are freed), against hand-computed cases and
a fake session manager."""
import os
import time
import types

import numpy as np
import scipy.sparse as sp

os.environ.setdefault("FEATAGG_WARMUP", "0")

from featagg_app.server.memory import SharedResults, deep_nbytes
from featagg_app.server.reaper import FREED_KEY, SessionReaper


def test_deep_nbytes_counts_each_array_once():
    a = np.zeros(1000)                              # 8,000 bytes
    m = sp.random(50, 40, density=0.1, format="csr", random_state=0)
    sparse_bytes = m.data.nbytes + m.indices.nbytes + m.indptr.nbytes
    obj = types.SimpleNamespace(a=a, again=a, view=a[:10], m=m, items=[a, {"k": a}])
    n = deep_nbytes(obj)
    arrays = a.nbytes + sparse_bytes
    assert arrays <= n <= arrays + 64 * 10          # objects cost 64 bytes each, no more


def test_shared_results_evicts_by_bytes_least_recently_used():
    cache = SharedResults(max_bytes=100, size_of=lambda v: v)
    assert cache.put("a", 20) and cache.put("b", 20) and cache.put("c", 20)
    assert cache.get("a") == 20                     # a is now the most recent
    assert cache.put("d", 25) and cache.put("e", 25)   # 20+20+20+25+25 = 110 > 100
    assert cache.get("b") is None                   # the least recently used went first
    assert [cache.get(k) for k in "acde"] == [20, 20, 25, 25]
    assert cache.nbytes == 90
    assert not cache.put("huge", 26)                # > max_bytes // 4: never kept
    assert cache.get("huge") is None and cache.nbytes == 90


class _Info:
    def __init__(self, sid):
        self.session = types.SimpleNamespace(id=sid, _state="NOT_RUNNING")


class _Manager:
    def __init__(self):
        self.active, self.closed = set(), []

    def list_active_sessions(self):
        return [_Info(s) for s in sorted(self.active)]

    def get_session_info(self, sid):
        return _Info(sid)

    def close_session(self, sid):
        self.closed.append(sid)


class _Runner:
    def __init__(self):
        self.cancelled = []

    def cancel_session(self, sid):
        self.cancelled.append(sid)
        return 0

    def jobs(self, sid=None):
        return []


class _State(dict):
    @property
    def filtered_state(self):
        return dict(self)


def test_reaper_closes_gone_sessions_after_the_grace_and_frees_idle_ones():
    mgr, runner, released = _Manager(), _Runner(), []
    reaper = SessionReaper(runner, grace_s=60, idle_s=600, manager=lambda: mgr,
                           release=lambda: released.append(1) or 0)
    gone, idle, busy = _State({"featagg.run": "big"}), _State({"featagg.data": "x", "w": 1}), _State()
    for sid, st_ in (("gone", gone), ("idle", idle), ("busy", busy)):
        mgr.active.add(sid)
        reaper.seen(sid, st_)
    t0 = time.time()
    mgr.active.discard("gone")                      # the tab was closed
    assert reaper.sweep(now=t0) == []               # within the grace: a reconnect resumes
    reaper.seen("busy", busy)
    reaper._seen["busy"].last_run = t0 + 600
    assert reaper.sweep(now=t0 + 61) == [("gone", "closed")]
    assert gone == {} and mgr.closed == ["gone"] and "gone" in runner.cancelled
    reaper._seen["idle"].last_run = t0
    done = reaper.sweep(now=t0 + 700)
    assert done == [("idle", "idle")]
    assert idle == {"w": 1, FREED_KEY: True}         # only featagg.* state is dropped
    assert busy == {} and "busy" not in runner.cancelled
    assert len(released) == 2                       # memory handed back after each freeing
    assert reaper.known() == ["idle", "busy"]


def test_memory_report_is_off_by_default_and_tells_spilled_from_in_memory(tmp_path, monkeypatch):
    """FEATAGG_MEMORY_REPORT (debug only): nothing written unset; set, one JSON line per
    sweep with the durable sessions split into in memory and spilled."""
    import json

    from featagg_app.server import memreport
    from featagg_app.server.sessions import SessionStore

    store = SessionStore(spill_dir=tmp_path / "spill", idle_s=0)
    k1, r1 = store.create()
    k2, r2 = store.create()
    store.save(k1, {"w": 1, "featagg.big": np.zeros(50_000)})     # 400,000 bytes
    store.save(k2, {"w": 2, "featagg.big": np.zeros(50_000)})
    assert store.spill_detached({r2.sid}, grace_s=0, now=time.time() + 1) == 1
    reaper = SessionReaper(_Runner(), grace_s=60, idle_s=0, manager=lambda: None,
                           release=lambda: 0, sessions=store)
    out = tmp_path / "report.jsonl"
    monkeypatch.delenv(memreport.ENV, raising=False)
    reaper._debug_report()
    assert not out.exists()
    monkeypatch.setenv(memreport.ENV, str(out))
    reaper._debug_report()
    reaper._debug_report()
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 2
    d = lines[0]["durable"]
    assert (d["in_memory"], d["spilled"]) == (1, 1)
    assert 400_000 <= d["in_memory_mb"] * 2 ** 20 < 401_000     # r2's array, once
    assert d["spilled_light_mb"] * 2 ** 20 < 1_000                # r1 kept only "w"
    assert lines[0]["rss_mb"] > 0
    store.close()

