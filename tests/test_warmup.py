"""Background kernel compilation (featagg_app/server/warmup.py): which kernels a job needs, the
claim protocol of the compile workers, the server's loader and the job runner's gate.
Fake kernel modules stand in for featagg_core's (their ``warmup()`` records who ran it)."""
import json
import os
import sys
import textwrap
import threading
import time

import pytest

os.environ.setdefault("FEATAGG_WARMUP", "0")  # no server warm-up in this test process

from featagg_app.server import warmup as W
from featagg_app.runs_ui import panel_progress_text, status_text
from featagg_app.server.jobs import JobRunner

WAIT = 60.0        # generous: child processes start Python on a shared machine


def test_every_warmed_module_is_in_a_group_and_groups_are_in_page_order():
    grouped = {m for g in W.GROUPS for m in g.modules}
    assert set(W.MODULES) <= grouped
    # what a class clicks first; the exact products second, so two compile workers share
    # DEFRAG's JIT (its warm-up fits the XY representation, which needs them, last)
    assert W.GROUP_NAMES[:4] == ("defrag", "products", "xmlc", "readers")
    assert len(set(W.GROUP_NAMES)) == len(W.GROUP_NAMES)


def _warmup_functions():
    """featagg_core module -> its top-level ``warmup*`` function nodes, and module -> the
    module's own top-level ``from M import warmup`` re-exports, read from the source."""
    import ast
    from pathlib import Path
    root = Path(W.ROOT)
    defs, reexports = {}, {}
    for f in sorted((root / "featagg_core").rglob("*.py")):
        parts = list(f.relative_to(root).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("warmup"):
                defs.setdefault(name, []).append(node)
            if isinstance(node, ast.ImportFrom) and node.module \
                    and any(a.name == "warmup" for a in node.names):
                reexports.setdefault(name, []).append(node.module)
    return defs, reexports


def test_every_kernel_warmup_is_reached_by_a_group():
    """A module with kernels has a ``warmup()``; a group must call it (directly, or through
    a grouped module's warm-up that imports it), or the kernels compile in the server on
    a visitor's first use. The health checks' (run inline by the Data and Triage pages,
    4 s of CPU to compile) were missed until this test."""
    import ast
    defs, reexports = _warmup_functions()
    reached = {m for g in W.GROUPS for m in g.modules}
    todo = list(reached)
    while todo:
        m = todo.pop()
        found = list(reexports.get(m, []))
        for fn in defs.get(m, []):
            for n in ast.walk(fn):
                if isinstance(n, ast.ImportFrom) and n.module:
                    found += [n.module] + [f"{n.module}.{a.name}" for a in n.names]
        for t in found:
            if t in defs and t not in reached:
                reached.add(t)
                todo.append(t)
    assert set(defs) - reached == set(), "warm-ups no kernel group calls"
    assert "featagg_core._kernels.health" in reached


def test_groups_in_order_moves_the_named_groups_first():
    names = [g.name for g in W.groups_in_order(("readers",))]
    assert names == ["readers", "defrag", "products", "xmlc", "health", "rare_labels",
                     "graph", "vocabulary", "rest"]
    assert W.groups_in_order() == W.GROUPS
    assert [g.name for g in W.groups_in_order(("rest", "unknown", "graph", "rest"))][:2] == \
        ["rest", "graph"]
    assert sorted(g.name for g in W.groups_in_order(("rest",))) == sorted(W.GROUP_NAMES)


def test_a_data_folder_server_compiles_the_readers_first(tmp_path, monkeypatch):
    import streamlit as st
    from featagg_app.server import context
    made = []

    class FakeWarmup:
        def __init__(self, **kwargs):
            made.append(kwargs)

        def start(self):
            return self

    monkeypatch.setattr(W, "KernelWarmup", FakeWarmup)
    monkeypatch.setattr(W, "watch_compiles", lambda log=None: (lambda: 0))
    for folder in (None, str(tmp_path)):
        if folder is None:
            monkeypatch.delenv("FEATAGG_DATA_DIR", raising=False)
        else:
            monkeypatch.setenv("FEATAGG_DATA_DIR", folder)
        st.cache_resource.clear()
        context._server_kernels()
    st.cache_resource.clear()
    assert made[0] == {"freeze_gc": True}                     # the usual order
    assert made[1]["freeze_gc"] is True
    assert [g.name for g in made[1]["groups"]][:3] == ["readers", "defrag", "products"]


@pytest.mark.parametrize("spec, expected", [
    ({"defrag": {"d0": 8}}, ("defrag",)),
    ({"feature_clustering": {"kind": "kmeans"}}, ("defrag",)),
    ({"classifier": {"kind": "ktxmlc"}}, ("defrag", "xmlc")),
    ({"defrag": {}, "classifier": {}, "rerank": {}}, ("defrag", "xmlc", "rare_labels")),
    ({"classifier": {}, "impute": {}}, ("defrag", "xmlc", "rare_labels")),
    ({"feature_selection": {"kind": "bmgufs"}}, ("graph",)),
    ({"vocabulary": {"method": "dp"}}, ("vocabulary",)),
    ({}, W.GROUP_NAMES),
])
def test_groups_for_spec(spec, expected):
    assert W.groups_for_spec(spec) == expected


def test_groups_for_page_waits_for_everything_on_unknown_pages():
    assert W.groups_for_page("Feature agglomeration") == ("defrag",)
    assert W.groups_for_page("Compare") == ()
    assert W.groups_for_page("Export") == W.GROUP_NAMES      # imported pipelines: anything
    assert W.groups_for_page("Triage") == W.GROUP_NAMES


# ----------------------------------------------------------------------------- fake modules
@pytest.fixture
def fake_kernels(tmp_path, monkeypatch):
    """Modules ``fk_a``, ``fk_b``, ``fk_bad``, ``fk_crash`` whose warmup() appends
    ``<module> <pid>`` to ``log.txt``; fk_bad raises, fk_crash kills a child process (and
    only records in the server)."""
    log = tmp_path / "log.txt"
    src = tmp_path / "mods"
    src.mkdir()
    body = {
        "fk_a": "",
        "fk_b": "time.sleep(0.2)",
        "fk_bad": "raise RuntimeError('no compiler today')",
        "fk_crash": "if os.getpid() != SERVER: os._exit(3)",
    }
    for name, extra in body.items():
        (src / f"{name}.py").write_text(textwrap.dedent(f"""
            import os, time
            SERVER = {os.getpid()}
            def warmup():
                with open({str(log)!r}, "a") as f:
                    f.write("{name} " + str(os.getpid()) + "\\n")
                {extra}
        """))
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]))
    for name in body:
        sys.modules.pop(name, None)
    return log


def _runs(log):
    if not log.exists():
        return []
    return [tuple(line.split()) for line in log.read_text().splitlines()]


def test_workers_claim_each_group_once(tmp_path, fake_kernels):
    groups = [W.KernelGroup(f"g{i}", f"group {i}", ("fk_a",)) for i in range(6)]
    status = tmp_path / "status"
    status.mkdir()
    done = []
    threads = [threading.Thread(target=lambda: done.append(W.compile_groups(status, groups)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert sorted(g for mine in done for g in mine) == [g.name for g in groups]
    for g in groups:
        info = json.loads((status / f"{g.name}.done").read_text())
        assert info["errors"] == {} and info["seconds"] >= 0
    assert W.compile_groups(status, groups) == []            # nothing left to claim
    assert len(_runs(fake_kernels)) == len(groups)


def test_a_failing_warmup_is_marked_failed(tmp_path, fake_kernels):
    status = tmp_path / "status"
    status.mkdir()
    W.compile_groups(status, [W.KernelGroup("bad", "bad", ("fk_bad",))])
    info = json.loads((status / "bad.failed").read_text())
    assert "no compiler today" in info["errors"]["fk_bad"]


def test_the_server_loads_what_the_children_compiled(fake_kernels, tmp_path):
    groups = (W.KernelGroup("a", "group A", ("fk_a",)), W.KernelGroup("b", "group B", ("fk_b",)),
              W.KernelGroup("bad", "group bad", ("fk_bad",)),
              W.KernelGroup("crash", "group crash", ("fk_crash",)))
    lines = []
    k = W.KernelWarmup(groups, processes=2, calibrate=False, log=lines.append)
    try:
        assert not k.ready(["a"]) and k.pending(["a", "zz"])[0].name == "a"
        k.start()
        assert k.wait(["a", "b", "bad", "crash"], timeout=WAIT), (k.state(), lines)
        deadline = time.time() + WAIT
        while not k.all_ready and time.time() < deadline:
            time.sleep(0.05)
        state = k.state()
        assert state["a"] == state["b"] == "ready"
        assert state["bad"] == "failed" and k.ready(["bad"])   # jobs go on: compile in-process
        assert state["crash"] == "ready"                       # a dead child: the server did it
        me = str(os.getpid())
        runs = _runs(fake_kernels)
        for mod in ("fk_a", "fk_b"):
            pids = [pid for m, pid in runs if m == mod]
            assert len(pids) == 2 and pids.count(me) == 1      # once in a child, once loaded here
        assert [pid for m, pid in runs if m == "fk_crash"].count(me) == 1
        assert any("a ready after" in line and "compiled in the background" in line
                   for line in lines)
        assert any("all 4 groups ready" in line for line in lines)
        assert k.speed() == W.REFERENCE_SPEED                  # no calibration asked for
    finally:
        k.close()
    assert all(p.poll() is not None for p in k._procs)
    # the benchmarks and e2e tests wait for exactly this line in a server's log
    log = tmp_path / "server.log"
    log.write_text("\n".join(x for x in lines if "groups ready" not in x) + "\n")
    assert _e2e_util().wait_for_kernels(log, timeout_s=0.0) is None
    log.write_text("\n".join(lines) + "\n")
    assert _e2e_util().wait_for_kernels(log, timeout_s=0.0) is not None


def test_then_runs_before_the_ready_line_or_at_once_when_late(fake_kernels):
    lines, order = [], []
    k = W.KernelWarmup((W.KernelGroup("a", "group A", ("fk_a",)),), processes=1,
                       calibrate=False, log=lines.append)

    def first():
        order.append(("first", list(lines)))
        return "[featagg] warm: first"

    def broken():
        raise RuntimeError("no sample today")

    try:
        k.then(first).then(broken)
        k.start()
        deadline = time.time() + WAIT
        while not any("groups ready" in x for x in lines) and time.time() < deadline:
            time.sleep(0.05)
        # before the line the benchmarks wait for, after the group was loaded
        (name, seen), = order
        assert not any("groups ready" in x for x in seen)
        assert any("a ready after" in x for x in seen)
        i_warm = next(i for i, x in enumerate(lines) if x.startswith("[featagg] warm: first"))
        i_all = next(i for i, x in enumerate(lines) if "all 1 groups ready" in x)
        assert i_warm < i_all                     # a failing step logged, nothing else lost
        late = threading.Event()
        k.then(lambda: late.set())                # too late for the loader: its own thread
        assert late.wait(WAIT)
    finally:
        k.close()


def _e2e_util():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "e2e"))
    try:
        import e2e_util
    finally:
        sys.path.pop(0)
    return e2e_util


def test_waiting_for_the_kernels_line_gives_up_when_the_server_is_gone(tmp_path):
    log = tmp_path / "server.log"           # not even written yet
    t0 = time.monotonic()
    assert _e2e_util().wait_for_kernels(log, timeout_s=30.0, alive=lambda: False) is None
    assert time.monotonic() - t0 < 5.0      # at once, not after the timeout
    log.write_text("[featagg] kernels: defrag ready after 3.1 s\n")
    assert _e2e_util().wait_for_kernels(log, timeout_s=0.2, poll_s=0.05) is None


def test_the_server_freezes_what_it_loaded_once_every_group_is_ready(fake_kernels):
    """With ``freeze_gc`` (the server's) the loader moves what is alive once every group is
    loaded into the collector's permanent generation; without it (the default) the process's
    collector is left alone."""
    import gc
    groups = (W.KernelGroup("a", "group A", ("fk_a",)),)
    assert gc.get_freeze_count() == 0
    for freeze in (False, True):
        k = W.KernelWarmup(groups, processes=0, calibrate=False, log=lambda line: None,
                           freeze_gc=freeze)
        try:
            k.start()
            deadline = time.time() + WAIT
            while not k.all_ready and time.time() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)                 # the loader freezes right after saying so
            assert k.all_ready
            frozen = gc.get_freeze_count()
            assert (frozen > 1000) if freeze else frozen == 0, frozen
            if freeze:
                before = len(gc.get_objects())
                assert before < frozen      # a full collection no longer walks them
        finally:
            k.close()
            gc.unfreeze()


class _Gate:
    """A gate whose groups open when the test says so."""

    def __init__(self):
        self.open = set()

    def ready(self, names):
        return all(n in self.open for n in names)

    def pending(self, names):
        return [W.KernelGroup(n, f"the {n} kernels", ()) for n in names if n not in self.open]


def test_the_runner_passes_over_jobs_whose_kernels_are_compiling():
    gate = _Gate()
    r = JobRunner(max_workers=1, gate=gate)
    try:
        order = []
        slow = r.submit("A", "DEFRAG", lambda p, c: order.append("A") or "a", needs=("defrag",))
        other = r.submit("B", "Compare", lambda p, c: order.append("B") or "b", needs=())
        assert other.wait(WAIT) and order == ["B"]              # B did not wait behind A
        time.sleep(0.3)
        assert slow.status == "queued" and slow.waiting_for == ["the defrag kernels"]
        assert "still compiling the kernels for the defrag kernels" in panel_progress_text(slow)
        assert "queued, next in line" in status_text(slow)
        gate.open.add("defrag")
        assert slow.wait(WAIT) and slow.result == "a" and order == ["B", "A"]
    finally:
        r.shutdown()


def test_a_page_estimate_waits_for_the_kernels_it_would_compile(monkeypatch):
    """While the DEFRAG kernels compile in the background, a page's time estimate is
    "unknown" (it would compile xt_y_nnz in the visitor's rerun), and it is not cached:
    once they are ready, the real number comes."""
    from featagg_app import runs_ui
    from featagg_app.server import context
    from featagg_core.experiment import make_split
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    gate = _Gate()
    gate.speed = lambda: dict(W.REFERENCE_SPEED)
    monkeypatch.setattr(context, "kernels", lambda: gate)
    data = make_powerlaw_multilabel(300, 200, 12, random_state=0, test_size=0.25)
    split = make_split(data)
    spec = {"defrag": {"d0": 8}}
    assert runs_ui.estimate(data, split, spec) is None
    gate.open.add("defrag")
    est = runs_ui.estimate(data, split, spec)
    assert isinstance(est, float) and est > 0
