"""A class on one server, simulated at the protocol (issue 31): N students without browsers.

    .venv/bin/python benchmarks/class_sim.py --n N [--port P] [--json OUT] [--arrival-s 60]
        [--no-close-wait] [--uploads-every 5] [--calibrate [--browser-nice 19]]

(the tables of ``benchmarks/results/classroom.md`` are written from the ``--json`` files)

``classroom_bench.py`` drives N headless chromium sessions; on this machine the browsers
take most of the CPU (chromium 466 of 514 CPU s at N = 30), so it measures the browsers.
This simulator speaks Streamlit's own protocol instead, many students per core: each student

* fetches the page as a browser's first load does (``/`` and the ``./static/`` assets
  ``index.html`` names, ``/_stcore/health``, ``/_stcore/host-config``; the ``_streamlit_xsrf``
  cookie comes with ``/``), then opens ``ws://HOST/_stcore/stream`` with the subprotocols
  the frontend sends (``streamlit``, the XSRF token);
* sends the ``BackMsg`` s the frontend (``static/js/index.*.js`` of the installed
  streamlit) sends: ``rerun_script`` with the widget states of every widget the page drew
  (each widget's initial value taken from its element as the frontend does: ``value``
  when ``set_value``, else ``default``), the current ``page_script_hash``, the query string
  (``page_info_changed`` updates it; a page change keeps only widget-bound parameters),
  ``context_info`` and ``cached_message_hashes`` (the ForwardMsg cache: cacheable
  messages are kept, ``ref_hash`` messages are answered from it); a page change sends only
  the main script's widgets; a button press is a ``trigger_value``; a fragment's
  ``auto_rerun`` (the job panels' ``st.fragment(run_every=1)``) is a timer that sends a
  ``rerun_script`` with ``fragment_id`` and ``is_auto_rerun`` (the browser's
  ``setInterval``; a full run's ``new_session`` and a page change clear the timers); an
  upload is ``file_urls_request`` → ``file_urls_response`` → HTTP ``PUT`` multipart to
  ``/_stcore/upload_file/<session>/<file>`` with ``X-Xsrftoken`` → the uploader's
  ``file_uploader_state_value``;
* finds every widget by its type and label in the ``ForwardMsg`` deltas (never by id: ids
  carry keys that change with the app), and keeps the element tree by delta path, dropping
  stale elements when a run finishes, as the frontend does.

Checked against a real chromium session (a server patched to log every ``BackMsg``): the
same message kinds in the same order, the same widget ids and values (see
``benchmarks/results/classroom.md``). Not emulated: the lazily loaded JS chunks of element
types (plotly, data grid; static files), the browser's own rendering.

The load model is classroom_bench's: student ``i`` (``i % 5 != 4``) keeps Bibtex, opens
Feature agglomeration, sets d0 = ``D0S[i % 4]``, presses **Run** (DEFRAG, then its
baselines as jobs), opens Extreme classification and presses **Train** with the defaults;
every fifth uploads its own small file (``student07_a1.txt``) and runs DEFRAG on it; each
then checks it saw only its own names (the Data page's d, DEFRAG's dimensions, the run
picker's d0 values, Compare's dataset and run names, and no other student's file name
anywhere in what the server sent it).

Measured: errors (an exception element, a failed job text, a timeout, a closed socket),
cross-talk, click → result (press → the result's metric card drawn and the page's run
finished: ``script_finished``, the whole page there) over the same action
of a lone student on a fresh server first (its p50/p95), the server's CPU (user + system
of the server's process tree, before/after the class) per student, its peak RSS
(``VmHWM`` reset after the warm-up through ``/proc/PID/clear_refs``), RSS two minutes after
the class against the idle server (``--no-close-wait`` skips the wait), the machine's load.

``--calibrate`` runs classroom_bench's ``run_classroom`` at N = 10 and this simulator at
N = 10 on the same machine, one after the other, and prints both side by side. What this
simulator measures of a click → result is the server's share: the press's ``rerun_script``
sent → the result's delta and the end of the run received. A person in chromium waits for
that plus the browser's own share (the click's dispatch before it; processing the deltas
and drawing the page after it, 0.3-0.5 s on the result pages). The chromium side is
therefore timed at the same two points on the wire (``classroom_bench.WireClock``, a relay
between each browser and the server), and what a person sees is printed beside it.
``--browser-nice 19`` runs chromium at that niceness, so that on one machine the server
gets the cores first, as it does when the browsers are on the students' own machines.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from classroom_bench import Server as DashboardServer, _status  # noqa: E402

D0S = (8, 4, 16, 32)
BIBTEX_D = 1836
UPLOAD_SHAPE = (400, 300, 12)       # points, features, labels of a student's own file
ACTION_TIMEOUT_S = 600.0            # one action (a run, a page) never waits longer
CONTEXT = dict(timezone="UTC", timezone_offset=0, locale="en-US", is_embedded=False,
               color_scheme="light")
GB = 2 ** 30


# ----------------------------------------------------------------------------- server
def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid``, its reaped children and its live descendants."""
    from _common import descendants
    tck = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in [pid, *sorted(descendants(pid))]:
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]))) / tck
    return total


class Server(DashboardServer):
    """classroom_bench's server (``python -m featagg_app.server.serve`` with
    scripts/dashboard.sh's streamlit options), plus its peak resident memory since a reset
    (``VmHWM``) and the CPU seconds of its process tree."""

    def __init__(self, log: Path, port: int | None = None, ttl_s: int = 30, env=None):
        super().__init__(log, ttl_s=ttl_s, port=port, env=env)

    def reset_peak(self) -> None:
        """Reset ``VmHWM`` to the current RSS (``clear_refs`` 5), and sample RSS too."""
        try:
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        except OSError:
            pass
        self.start_sampling()

    def peak(self) -> int:
        return max(self._peak, _status(self.pid, "VmHWM"))

    def cpu(self) -> float:
        return tree_cpu_seconds(self.pid)


def student_file(folder: Path, i: int, k: int) -> Path:
    """Student ``i``'s own small multi-label file (XC text), as classroom_bench makes it."""
    from featagg_core.data import save_xc
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    n, d, L = UPLOAD_SHAPE
    ds = make_powerlaw_multilabel(n_samples=n, n_features=d, n_labels=L,
                                  random_state=100 + k // 2)
    path = folder / f"student{i:02d}_{'ab'[k % 2]}{k // 2}.txt"
    save_xc((ds.X, ds.Y), path)
    return path


def make_plan(n: int, folder: Path, uploads_every: int = 5, first: int = 0) -> list:
    plan, k = [], 0
    for i in range(first, first + n):
        if i % uploads_every == uploads_every - 1:
            path = student_file(folder, i, k)
            plan.append({"i": i, "upload": path, "name": path.name, "d0": 8})
            k += 1
        else:
            plan.append({"i": i, "upload": None, "name": "bibtex", "d0": D0S[i % len(D0S)]})
    return plan


def expected_k(d: int, d0: int) -> int:
    """DEFRAG's K: a balanced binary tree split until every leaf holds ≤ d0 features."""
    k = 1
    while -(-d // k) > d0:
        k *= 2
    return k


# ----------------------------------------------------------------------------- protocol
_WIDGETS = ("button", "checkbox", "radio", "selectbox", "multiselect", "slider",
            "number_input", "text_input", "text_area", "file_uploader", "button_group",
            "download_button", "date_input", "time_input", "color_picker", "chat_input")


_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~<>$])")


def element_text(el, visible: bool = False) -> str:
    """What a person reads in an element (labels, bodies, options, cells; its help
    tooltip too unless ``visible``)."""
    kind = el.WhichOneof("type")
    if kind is None:
        return ""
    sub = getattr(el, kind)
    parts = []
    for f in ("label", "body", "value", "delta", "text", "message", "placeholder", "caption",
              *(() if visible else ("help",))):
        try:
            v = getattr(sub, f)
        except AttributeError:
            continue
        if isinstance(v, str) and v:
            parts.append(v)
    for f in ("options", "captions"):
        try:
            v = getattr(sub, f)
        except AttributeError:
            continue
        for o in v:
            parts.append(o if isinstance(o, str) else getattr(o, "content", ""))
    if kind == "arrow_data_frame" or kind == "arrow_table":
        try:
            import pyarrow as pa
            t = pa.ipc.open_stream(sub.data).read_all()
            parts.append(" ".join(str(v) for col in t.columns for v in col.to_pylist()))
            parts.append(" ".join(str(c) for c in t.column_names))
        except Exception:  # noqa: BLE001 - a table we cannot read adds no text
            pass
    if kind == "exception":
        parts.append(f"{sub.type}: {sub.message}")
    if kind == "plotly_chart":
        parts.append(sub.spec[:20000] if sub.spec else "")
    # markdown's backslash escapes (md_escape writes student04\_a0.txt): a browser shows
    # the name without them, and the cross-talk check must find it
    return _MD_ESCAPE.sub(r"\1", "\n".join(parts))


def initial_state(el):
    """The widget state the frontend stores when ``el`` is first drawn (its default, or
    its value when the script set one): ``(field, value)`` or None (no state)."""
    kind = el.WhichOneof("type")
    w = getattr(el, kind)
    if kind in ("button", "download_button"):
        return None
    if kind == "checkbox":
        return "bool_value", (w.value if w.set_value else w.default)
    if kind in ("radio", "selectbox"):
        if w.HasField("raw_value"):
            return "string_value", w.raw_value
        if w.HasField("default") and 0 <= w.default < len(w.options):
            return "string_value", w.options[w.default]
        return None
    if kind == "multiselect":
        if w.set_value or len(w.raw_values):
            return "string_array_value", list(w.raw_values)
        return "string_array_value", [w.options[j] for j in w.default]
    if kind == "slider":
        return "double_array_value", list(w.value if w.set_value else w.default)
    if kind == "number_input":
        has = w.set_value and w.HasField("value")
        v = w.value if has else (w.default if w.HasField("default") else None)
        if v is None:
            return None
        return ("int_value", int(v)) if w.data_type == w.INT else ("double_value", float(v))
    if kind in ("text_input", "text_area"):
        if w.set_value and w.HasField("value"):
            return "string_value", w.value
        return ("string_value", w.default) if w.HasField("default") else None
    if kind == "file_uploader":
        return "file_uploader_state_value", None
    if kind == "button_group":
        if w.set_value or len(w.raw_values):
            return "string_array_value", list(w.raw_values)
        return "int_array_value", list(w.default)
    return None


class Student:
    """One simulated browser tab on the dashboard (see the module docstring)."""

    def __init__(self, base: str, rec: dict):
        self.base = base.rstrip("/")
        self.rec = rec
        self.ws = None
        self.session_id = ""
        self.main_hash = ""
        self.page_hash = ""
        self.pages = {}                  # title -> (page_script_hash, url_pathname)
        self.query = ""
        self.path = "/"
        self.elements = {}               # delta path -> [element or None, run, fragment, script]
        self.collapsed = set()           # paths of collapsed expanders (their text is hidden)
        self.widgets = {}                # widget id -> (field, value)
        self.run = 0
        self.running = False
        self.finished = asyncio.Event()
        self.status = None
        self.cache = {}                  # hash -> [ForwardMsg, last run seen]
        self.max_age = 2
        self.timers = {}                 # fragment id -> (interval, task)
        self.file_urls = {}
        self.cookie = ""
        self.xsrf = ""
        self.transcript = []             # every text the server sent (for cross-talk)
        self.sent = []                   # every BackMsg sent (tests compare them)
        self.reader = None
        self.closed = None
        self.errors = rec.setdefault("errors", [])
        self._changed = asyncio.Event()

    # --- HTTP, as the first page load --------------------------------------------------
    def _get(self, path: str) -> bytes:
        req = urllib.request.Request(self.base + path)
        req.add_header("Accept-Encoding", "gzip, deflate, br, zstd")   # as chromium asks
        if self.cookie:
            req.add_header("Cookie", self.cookie)
        with urllib.request.urlopen(req, timeout=60) as r:
            for h in r.headers.get_all("Set-Cookie") or []:
                if h.startswith("_streamlit_xsrf="):
                    self.cookie = h.split(";", 1)[0]
                    self.xsrf = self.cookie.split("=", 1)[1].strip('"')
            return r.read()

    def _load_page(self) -> None:
        html = self._get("/").decode("utf-8", "replace")
        for ref in re.findall(r'(?:src|href)="\./(static/[^"]+)"', html):
            self._get("/" + ref)
        self._get("/_stcore/health")
        self._get("/_stcore/host-config")

    # --- websocket -------------------------------------------------------------------------
    async def connect(self) -> None:
        from websockets.asyncio.client import connect
        await asyncio.to_thread(self._load_page)
        host = self.base.split("://", 1)[1]
        headers = {"Origin": self.base}
        if self.cookie:
            headers["Cookie"] = self.cookie
        self.ws = await connect(f"ws://{host}/_stcore/stream",
                                subprotocols=["streamlit", self.xsrf or "undefined"],
                                additional_headers=headers, max_size=None,
                                compression=None, open_timeout=60, ping_interval=None)
        self.reader = asyncio.create_task(self._read())
        await self.rerun()            # the first run: no page hash, the path's page name
        await self.wait_run()

    async def close(self) -> None:
        for _, task in self.timers.values():
            task.cancel()
        self.timers.clear()
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            self.reader.cancel()

    async def _send(self, msg) -> None:
        self.sent.append(msg)
        await self.ws.send(msg.SerializeToString())

    def widget_states(self, only=None):
        from streamlit.proto.WidgetStates_pb2 import WidgetStates
        ws = WidgetStates()
        for wid, (field, value) in self.widgets.items():
            if only is not None and wid not in only:
                continue
            w = ws.widgets.add()
            w.id = wid
            if field == "file_uploader_state_value":
                w.file_uploader_state_value.SetInParent()
                if value is not None:
                    w.file_uploader_state_value.CopyFrom(value)
            elif field.endswith("_array_value"):
                getattr(w, field).data.extend(value)
            else:
                setattr(w, field, value)
        return ws

    async def rerun(self, page_hash=None, fragment_id="", auto=False, trigger=None,
                    only=None) -> None:
        """``sendRerunBackMsg``: the widget states, the page, the query string."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        msg = BackMsg()
        rs = msg.rerun_script
        rs.widget_states.CopyFrom(self.widget_states(only))
        if trigger is not None:
            w = rs.widget_states.widgets.add()
            w.id = trigger
            w.trigger_value = True
        if page_hash and page_hash != self.page_hash:
            self.query = ""                      # a page change keeps bound params only
            rs.page_script_hash = page_hash
        elif self.page_hash:
            rs.page_script_hash = self.page_hash
        if self.query:
            rs.query_string = self.query
        if fragment_id:
            rs.fragment_id = fragment_id
            rs.is_auto_rerun = auto
        rs.cached_message_hashes.extend(self.cache)
        ci = rs.context_info
        for k, v in CONTEXT.items():
            setattr(ci, k, v)
        ci.url = self.base + self.path + (f"?{self.query}" if self.query else "")
        if not fragment_id:
            self.finished.clear()
        await self._send(msg)

    async def wait_run(self, timeout_s: float = ACTION_TIMEOUT_S) -> None:
        """Until the full run asked for has finished (``script_finished``)."""
        await asyncio.wait_for(self.finished.wait(), timeout_s)

    def _on_forward(self, fm) -> None:
        self._changed.set()
        kind = fm.WhichOneof("type")
        if kind == "ref_hash":
            hit = self.cache.get(fm.ref_hash)
            if hit is None:
                self.errors.append(f"ref_hash {fm.ref_hash} not in the cache")
                return
            hit[1] = self.run
            cached = type(fm)()
            cached.CopyFrom(hit[0])
            cached.metadata.CopyFrom(fm.metadata)
            fm, kind = cached, cached.WhichOneof("type")
        elif fm.metadata.cacheable and fm.hash:
            self.cache[fm.hash] = [fm, self.run]
        if kind == "new_session":
            ns = fm.new_session
            self.session_id = ns.initialize.session_id
            self.main_hash = ns.main_script_hash
            self.page_hash = ns.page_script_hash
            self.max_age = ns.config.max_cached_message_age or 2
            self._set_pages(ns.app_pages, ns.page_script_hash)
            self.run += 1                 # a new script run (a fragment's too) tags deltas
            if not (fm.metadata.HasField("run") and len(fm.metadata.run.fragment_ids)):
                for _, task in self.timers.values():      # a full run: cleanupAutoReruns
                    task.cancel()
                self.timers.clear()
        elif kind == "delta":
            d = fm.delta
            path = tuple(fm.metadata.delta_path)
            which = d.WhichOneof("type")
            if which == "new_element":
                el = d.new_element
                self.elements[path] = [el, self.run, d.fragment_id, fm.metadata.active_script_hash]
                self.collapsed.discard(path)
                text = element_text(el)
                if text:
                    self.transcript.append(text)
                ek = el.WhichOneof("type")
                if ek == "exception":
                    self.errors.append(f"exception element: {el.exception.type}: "
                                       f"{el.exception.message[:200]}")
                if ek in _WIDGETS:
                    w = getattr(el, ek)
                    st = initial_state(el)
                    if st is not None and (w.id not in self.widgets or
                                           getattr(w, "set_value", False)):
                        self.widgets[w.id] = st
            elif which == "add_block":
                b = d.add_block
                collapsed = b.WhichOneof("type") == "expandable" and not b.expandable.expanded
                self.elements[path] = [None, self.run, d.fragment_id,
                                       fm.metadata.active_script_hash]
                if collapsed:
                    self.collapsed.add(path)
                else:
                    self.collapsed.discard(path)
            self._changed.set()
        elif kind == "navigation":          # st.navigation's pages and the current one
            self._set_pages(fm.navigation.app_pages, fm.navigation.page_script_hash)
        elif kind == "page_info_changed":
            self.query = fm.page_info_changed.query_string
        elif kind == "auto_rerun":
            fid, every = fm.auto_rerun.fragment_id, fm.auto_rerun.interval
            if fid and (fid not in self.timers or self.timers[fid][0] != every):
                if fid in self.timers:
                    self.timers[fid][1].cancel()
                self.timers[fid] = (every, asyncio.create_task(self._auto(fid, every)))
        elif kind == "stop_auto_rerun":
            for fid in fm.stop_auto_rerun.fragment_ids:
                if fid in self.timers:
                    self.timers.pop(fid)[1].cancel()
        elif kind == "file_urls_response":
            r = fm.file_urls_response
            fut = self.file_urls.pop(r.response_id, None)
            if fut is not None and not fut.done():
                fut.set_result(r)
        elif kind == "session_status_changed":
            self.running = fm.session_status_changed.script_is_running
        elif kind == "script_finished":
            st = fm.script_finished
            frag = list(fm.metadata.run.fragment_ids) if fm.metadata.HasField("run") else []
            # 0 FINISHED_SUCCESSFULLY, 1 …_WITH_COMPILE_ERROR, 2 …_EARLY_FOR_RERUN,
            # 3 FINISHED_FRAGMENT_RUN_SUCCESSFULLY
            if st in (0, 3):
                self._clear_stale(frag if st == 3 else [])
            if st != 2:
                for h, hit in list(self.cache.items()):     # incrementMessageCacheRunCount
                    if self.run - hit[1] > self.max_age:
                        del self.cache[h]
            if st in (0, 1):              # a full run ended (not a fragment's, not early)
                self.status = st
                self.finished.set()
            self._changed.set()

    def _set_pages(self, pages, current: str) -> None:
        if len(pages):
            self.pages = {p.page_name: (p.page_script_hash, p.url_pathname) for p in pages}
        if current:
            self.page_hash = current
        for p in pages:
            if p.page_script_hash == self.page_hash:
                self.path = "/" + (p.url_pathname if not p.is_default else "")

    def _clear_stale(self, fragments) -> None:
        if fragments:
            stale = [p for p, (_, run, fid, _) in self.elements.items()
                     if fid in fragments and run != self.run]
        else:
            stale = [p for p, (_, run, _, _) in self.elements.items() if run != self.run]
        for p in stale:
            del self.elements[p]
        live = {getattr(e, e.WhichOneof("type")).id for e, *_ in self.elements.values()
                if e is not None and e.WhichOneof("type") in _WIDGETS}
        for wid in list(self.widgets):
            if wid not in live:
                del self.widgets[wid]

    async def _read(self) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        try:
            async for data in self.ws:
                fm = ForwardMsg()
                fm.ParseFromString(data)
                self._on_forward(fm)
        except Exception as exc:  # noqa: BLE001 - recorded; the waits time out
            self.closed = f"{type(exc).__name__}: {exc}"
        else:
            self.closed = "the server closed the websocket"
        self._changed.set()

    async def _auto(self, fid: str, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            await self.rerun(fragment_id=fid, auto=True)

    # --- what a person sees and does ------------------------------------------------------
    def find(self, kind: str, label=None, main=None):
        """The live element of type ``kind`` whose label is ``label`` (a string: equal; a
        callable: true), in the main area (``main=True``) or the sidebar (False)."""
        for path, (el, *_rest) in sorted(self.elements.items()):
            if el is None or el.WhichOneof("type") != kind:
                continue
            if main is not None and (path[:1] == (0,)) != main:
                continue
            lab = getattr(getattr(el, kind), "label", "")
            if label is None or (label(lab) if callable(label) else lab == label):
                return getattr(el, kind)
        return None

    def drawn(self) -> bool:
        """The page's run is over (``script_finished``): everything it draws is there."""
        return self.finished.is_set() and not self.running

    def metric(self, label: str):
        m = self.find("metric", label, main=True)
        return None if m is None else m.body

    def main_text(self) -> str:
        """The main area's text a person sees (a browser's ``innerText``: not what is in a
        collapsed expander, not the help tooltips)."""
        hidden = {c for c in self.collapsed if c in self.elements}
        return "\n".join(element_text(el, visible=True)
                         for p, (el, *_r) in sorted(self.elements.items())
                         if el is not None and p[:1] == (0,)
                         and not any(p[:len(c)] == c for c in hidden))

    async def until(self, pred, what: str, timeout_s: float = ACTION_TIMEOUT_S):
        t0 = time.monotonic()
        while True:
            v = pred()
            if v:
                return v
            if self.closed:
                raise RuntimeError(f"{what}: {self.closed}")
            left = timeout_s - (time.monotonic() - t0)
            if left <= 0:
                raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 5.0))
            except asyncio.TimeoutError:
                pass

    async def goto(self, title: str) -> None:
        """A click on the sidebar's page link: only the main script's widgets go along."""
        if title not in self.pages:
            raise RuntimeError(f"no page {title!r} in {sorted(self.pages)}")
        for _, task in self.timers.values():
            task.cancel()
        self.timers.clear()
        h = self.pages[title][0]
        keep = {getattr(e, e.WhichOneof("type")).id for e, _, _, script
                in self.elements.values()
                if e is not None and e.WhichOneof("type") in _WIDGETS
                and script == self.main_hash}
        await self.rerun(page_hash=h, only=keep)
        await self.wait_run()

    async def set_value(self, kind: str, label, field: str, value, main=None) -> bool:
        w = self.find(kind, label, main)
        if w is None:
            raise RuntimeError(f"no {kind} {label!r} on the page")
        if self.widgets.get(w.id) == (field, value):
            return False
        self.widgets[w.id] = (field, value)
        await self.rerun()
        await self.wait_run()
        return True

    async def press(self, label, main=True) -> str:
        w = self.find("button", label, main)
        if w is None:
            raise RuntimeError(f"no button {label!r} on the page")
        await self.rerun(trigger=w.id)
        return w.id

    async def wait_jobs(self) -> None:
        """Until no job panel (a Cancel button) is left and the page's run is over."""
        await asyncio.sleep(0)
        await self.until(lambda: self.find("button", "Cancel", True) is None
                         and not self.running and self.finished.is_set(), "jobs to finish")

    async def upload(self, path: Path) -> None:
        """Pick the file in the sidebar's "Data file" uploader, as the frontend does."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.Common_pb2 import FileUploaderState
        w = self.find("file_uploader", "Data file", False)
        if w is None:
            raise RuntimeError("no Data file uploader in the sidebar")
        rid = str(uuid.uuid4())
        fut = asyncio.get_running_loop().create_future()
        self.file_urls[rid] = fut
        msg = BackMsg()
        msg.file_urls_request.request_id = rid
        msg.file_urls_request.file_names.append(path.name)
        msg.file_urls_request.session_id = self.session_id
        await self._send(msg)
        resp = await asyncio.wait_for(fut, 60)
        if resp.error_msg:
            raise RuntimeError(f"file URLs refused: {resp.error_msg}")
        urls = resp.file_urls[0]
        data = path.read_bytes()
        await asyncio.to_thread(self._put, urls.upload_url, path.name, data)
        state = FileUploaderState()
        info = state.uploaded_file_info.add()
        info.name, info.size, info.file_id = path.name, len(data), urls.file_id
        info.file_urls.CopyFrom(urls)
        self.widgets[w.id] = ("file_uploader_state_value", state)
        await self.rerun()
        await self.wait_run()

    def _put(self, url: str, name: str, data: bytes) -> None:
        boundary = "----simboundary" + uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
                f"filename=\"{name}\"\r\nContent-Type: text/plain\r\n\r\n").encode() + data \
            + f"\r\n--{boundary}--\r\n".encode()
        req = urllib.request.Request(self.base + url, data=body, method="PUT")
        req.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
        req.add_header("Origin", self.base)
        if self.cookie:
            req.add_header("Cookie", self.cookie)
            req.add_header("X-Xsrftoken", self.xsrf)
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()


# ----------------------------------------------------------------------------- checks
def crosstalk(texts, own: dict, plan: list, run_names=()) -> list:
    """Problems in what one student saw: another student's file name anywhere in
    ``texts``; a d0 other than its own in its run names (``run_names``: the run picker's
    options and the Compare page's text)."""
    out = []
    blob = "\n".join(texts)
    for other in plan:
        nm = other["name"]
        if other["i"] != own["i"] and nm != "bibtex" and nm in blob:
            out.append(f"saw another student's file {nm!r}")
    for where, text in run_names:
        others = set(re.findall(r"d0=(\d+)", text)) - {str(own["d0"])}
        if others:
            out.append(f"{where} lists d0 {sorted(others)}, its own is {own['d0']}")
    return out


async def student(base: str, p: dict, plan: list, rec: dict) -> None:
    """One student's session (the load model of the module docstring); fills ``rec``."""
    s = Student(base, rec)
    rec.update(name=p["name"], d0=p["d0"])
    actions = rec.setdefault("actions", {})
    rec.setdefault("crosstalk", [])
    names = []
    try:
        await s.connect()
        if p["upload"] is None:
            await s.set_value("radio", "Source", "string_value", "Bundled sample", main=False)
            sel = s.find("selectbox", "Sample dataset", False)
            bib = next(o for o in sel.options if "Bibtex" in o)
            await s.set_value("selectbox", "Sample dataset", "string_value", bib, main=False)
            d = BIBTEX_D
        else:
            await s.set_value("radio", "Source", "string_value", "Upload a file", main=False)
            await s.upload(p["upload"])
            await s.until(lambda: any("Loaded" in element_text(e) for pth, (e, *_r)
                                      in s.elements.items() if e is not None
                                      and pth[:1] == (1,)), "the upload to load")
            d = UPLOAD_SHAPE[1]
        await s.goto("Data")
        got = await s.until(lambda: s.metric("Features d"), "the Data page's card")
        if got != f"{d:,}":
            rec["crosstalk"].append(f"Data page shows d = {got}, not {d:,}")
        await s.goto("Feature agglomeration")
        await s.set_value("slider", lambda lab: "d0" in lab, "double_array_value",
                          [float(p["d0"])], main=True)
        K = expected_k(d, p["d0"])
        t = time.monotonic()
        await s.press("Run")
        dims = await s.until(lambda: s.drawn() and s.metric("Dimensions"), "DEFRAG's result")
        actions[f"DEFRAG d0={p['d0']}" + (" (upload)" if p["upload"] else "")] = \
            time.monotonic() - t
        if dims != f"{d:,} → {K:,}":
            rec["crosstalk"].append(f"DEFRAG shows {dims}, expected {d:,} → {K:,}")
        await s.wait_jobs()
        picker = s.find("selectbox", "Show run", True)
        opts = " | ".join(picker.options) if picker is not None else ""
        rec["runs"] = opts
        names.append(("the run picker", opts))
        if str(p["d0"]) not in set(re.findall(r"d0=(\d+)", opts)):
            rec["crosstalk"].append(f"the run picker does not list its d0 {p['d0']}: {opts}")
        if p["upload"] is None:
            await s.goto("Extreme classification")
            t = time.monotonic()
            await s.press("Train")
            await s.until(lambda: s.drawn() and s.metric("P@1"), "KTXMLC's result")
            actions["KTXMLC (page defaults)"] = time.monotonic() - t
            await s.wait_jobs()
        await s.goto("Compare")
        text = s.main_text()
        if f"· {p['name']}" not in text:
            rec["crosstalk"].append(f"Compare does not list its dataset {p['name']!r}")
        names.append(("Compare", text))
        for line in s.transcript + [text]:
            if "failed:" in line or "Traceback" in line:
                rec["errors"].append(f"the page shows an error: {line[:300]}")
                break
        rec["crosstalk"] += crosstalk(s.transcript + [text], p, plan, names)
    except Exception as exc:  # noqa: BLE001 - counted, the class goes on
        rec["errors"].append(f"{type(exc).__name__}: {str(exc)[:300]}")
    finally:
        rec["sent"] = len(s.sent)
        rec["transcript_chars"] = sum(map(len, s.transcript))
        rec["_student"] = s
        try:
            await s.close()
        except Exception:  # noqa: BLE001
            pass


async def drive(base: str, plan: list, arrival_s: float) -> list:
    recs = [{"i": p["i"], "errors": [], "crosstalk": []} for p in plan]
    gap = arrival_s / max(1, len(plan) - 1) if len(plan) > 1 else 0.0

    async def arrive(k, p):
        await asyncio.sleep(k * gap)
        try:
            await asyncio.wait_for(student(base, p, plan, recs[k]), 3 * ACTION_TIMEOUT_S)
        except asyncio.TimeoutError:
            recs[k]["errors"].append("session timed out")
    await asyncio.gather(*(arrive(k, p) for k, p in enumerate(plan)))
    return recs


def _run(coro):
    box = {}

    def target():
        try:
            box["v"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001
            box["e"] = exc
    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "e" in box:
        raise box["e"]
    return box["v"]


# ----------------------------------------------------------------------------- the class
def lone_times(folder: Path, port=None) -> dict:
    """Click → result of each action of one student alone on a fresh server (its fits
    computed), one kind of student after the other; and the server CPU per student."""
    srv = Server(folder / "lone.log", port=port)
    try:
        srv.wait_up()
        srv.wait_kernels()
        time.sleep(3.0)
        plan = make_plan(5, folder)
        actions, cpu = {}, []
        for p in plan:
            c0 = srv.cpu()
            rec = _run(drive(srv.url, [p], 0.0))[0]
            cpu.append(srv.cpu() - c0)
            if rec["errors"] or rec["crosstalk"]:
                raise RuntimeError(f"the lone student failed: {rec['errors']} "
                                   f"{rec['crosstalk']}")
            for a, secs in rec["actions"].items():
                actions.setdefault(a, secs)
        return {"actions": actions, "server_cpu_s": statistics.mean(cpu)}
    finally:
        srv.stop()


def run_class(n: int, port=None, arrival_s: float = 60.0, close_wait_s: float = 120.0,
              ttl_s: int = 30, workdir=None, lone=None, uploads_every: int = 5) -> dict:
    folder = Path(workdir or tempfile.mkdtemp(prefix="featagg-sim-"))
    folder.mkdir(parents=True, exist_ok=True)
    res = {"n": n, "arrival_s": arrival_s, "cores": os.cpu_count(),
           "load_before": os.getloadavg()[0], "started": time.strftime("%H:%M:%S")}
    res["lone"] = lone if lone is not None else lone_times(folder, port)
    plan = make_plan(n, folder, uploads_every)
    srv = Server(folder / "server.log", port=port, ttl_s=ttl_s)
    res["log"] = str(srv.log)
    loads, stop = [], threading.Event()
    try:
        srv.wait_up()
        srv.wait_kernels()
        time.sleep(5.0)
        res["rss_idle_mb"] = srv.rss() / 2 ** 20
        srv.reset_peak()
        cpu0, t0 = srv.cpu(), time.monotonic()
        sim0 = os.times()

        def sample():
            while not stop.wait(5.0):
                loads.append(os.getloadavg()[0])
        threading.Thread(target=sample, daemon=True).start()
        recs = _run(drive(srv.url, plan, arrival_s))
        stop.set()
        sim1 = os.times()
        res["class_wall_s"] = time.monotonic() - t0
        res["server_cpu_s"] = srv.cpu() - cpu0
        res["sim_cpu_s"] = (sim1.user - sim0.user) + (sim1.system - sim0.system)
        res["peak_rss_mb"] = srv.peak() / 2 ** 20
        res["load_mean"] = statistics.mean(loads) if loads else os.getloadavg()[0]
        res["load_max"] = max(loads) if loads else os.getloadavg()[0]
        for r in recs:
            r.pop("_student", None)
        res["recs"] = recs
        if close_wait_s:
            time.sleep(close_wait_s)
            res["rss_after_close_mb"] = srv.rss() / 2 ** 20
            res["close_wait_s"] = close_wait_s
    finally:
        stop.set()
        srv.stop()
    res["errors"] = sum(len(r["errors"]) for r in recs)
    res["cross_talk"] = sum(len(r["crosstalk"]) for r in recs)
    ratios, clicks = [], []
    for r in recs:
        for a, secs in r.get("actions", {}).items():
            clicks.append(secs)
            base = res["lone"]["actions"].get(a)
            if base:
                ratios.append(secs / base)
    res["ratios"] = ratios
    res["lone_s"] = statistics.mean(res["lone"]["actions"].values())
    res["p50_ratio"] = _q(ratios, .5)
    res["p95_ratio"] = _q(ratios, .95)
    res["click_p50_s"] = _q(clicks, .5)
    res["click_p95_s"] = _q(clicks, .95)
    res["server_cpu_s_per_student"] = res["server_cpu_s"] / n
    res["sim_cpu_s_per_student"] = res["sim_cpu_s"] / n
    return res


def _q(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summary(r: dict) -> dict:
    keys = ("n", "errors", "cross_talk", "lone_s", "p50_ratio", "p95_ratio",
            "server_cpu_s_per_student", "peak_rss_mb", "rss_idle_mb", "rss_after_close_mb",
            "click_p50_s", "click_p95_s", "class_wall_s", "server_cpu_s", "sim_cpu_s",
            "sim_cpu_s_per_student", "load_before", "load_mean", "load_max", "arrival_s",
            "started", "cores")
    out = {k: r.get(k) for k in keys}
    out["lone_actions"] = r["lone"]["actions"]
    out["lone_server_cpu_s"] = r["lone"]["server_cpu_s"]
    out["problems"] = [{"i": x["i"], "errors": x["errors"], "crosstalk": x["crosstalk"]}
                       for x in r["recs"] if x["errors"] or x["crosstalk"]]
    out["students"] = [{k: x.get(k) for k in ("i", "name", "d0", "runs", "actions", "errors",
                                              "crosstalk", "sent")} for x in r["recs"]]
    return out


def calibrate(arrival_s: float = 60.0, browser_nice: int = 0) -> dict:
    """classroom_bench at N = 10 and the simulator at N = 10, one after the other.
    ``browser_nice`` > 0 runs chromium at that niceness, so that on one machine the server
    gets the cores first, as it would with the browsers on the students' own machines."""
    import classroom_bench as cb
    t0 = time.monotonic()
    c = cb.run_classroom(10, arrival_s=arrival_s, close_wait_s=0, browser_nice=browser_nice)
    chrom_clicks = [v for r in c["recs"] for v in r.get("actions", {}).values()]
    # what this simulator measures is the server's share of a click → result: chromium's
    # is timed at the same two points on the wire (classroom_bench.WireClock); the rest of
    # a person's click → result is the browser's (dispatch, drawing), reported beside it
    lone_wire = c["single"].get("server_share", {})
    at_wire = [v for r in c["recs"] for v in r.get("server_share", {}).values()
               if v is not None]
    wire_ratios = [v / lone_wire[a] for r in c["recs"]
                   for a, v in r.get("server_share", {}).items()
                   if v is not None and lone_wire.get(a)]
    lone = [v for v in lone_wire.values() if v is not None]
    chromium = {"server_cpu_s_per_student": c["server_cpu_s"] / 10,
                "click_p50_s": _q(at_wire, .5), "click_p95_s": _q(at_wire, .95),
                "lone_s": statistics.mean(lone) if lone else float("nan"),
                "p50_ratio": _q(wire_ratios, .5), "p95_ratio": _q(wire_ratios, .95),
                "seen_click_p50_s": _q(chrom_clicks, .5),
                "seen_click_p95_s": _q(chrom_clicks, .95),
                "seen_lone_s": statistics.mean(c["single"]["actions"].values()),
                "seen_p50_ratio": _q(c.get("ratios", []), .5),
                "seen_p95_ratio": _q(c.get("ratios", []), .95),
                "lone_actions_seen": c["single"]["actions"],
                "lone_actions_at_the_wire": lone_wire,
                "lone_server_cpu_s": c["single"]["server_cpu_s"],
                "errors": c["errors"], "cross_talk": c["crosstalk"],
                "browser_cpu_s": c.get("browser_cpu_s"), "load_mean": c["load_during"],
                "load_max": c["load_max"], "browser_nice": browser_nice,
                "wall_s": time.monotonic() - t0,
                "students": [{"i": r["i"], "seen": r.get("actions", {}),
                              "at_the_wire": r.get("server_share", {})} for r in c["recs"]]}
    sim = summary(run_class(10, arrival_s=arrival_s, close_wait_s=0))
    return {"chromium": chromium, "sim": sim}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--arrival-s", type=float, default=60.0)
    ap.add_argument("--uploads-every", type=int, default=5,
                    help="every k-th student uploads its own file (default 5)")
    ap.add_argument("--no-close-wait", action="store_true",
                    help="skip the 2-minute wait for RSS after the class")
    ap.add_argument("--calibrate", action="store_true",
                    help="classroom_bench (chromium) and the simulator at N = 10, side by side")
    ap.add_argument("--browser-nice", type=int, default=0,
                    help="with --calibrate: chromium at this niceness (default 0)")
    args = ap.parse_args(argv)
    if args.calibrate:
        out = calibrate(args.arrival_s, args.browser_nice)
        c, s = out["chromium"], out["sim"]
        print("                      chromium   simulator   sim/chromium")
        for k in ("server_cpu_s_per_student", "lone_server_cpu_s", "click_p50_s",
                  "click_p95_s", "lone_s", "p50_ratio", "p95_ratio"):
            a, b = c[k], s[k]
            print(f"{k:26s} {a:8.2f} {b:10.2f} {b / a:10.2f}")
        print("chromium as a person sees it (the server's share above + the browser's): "
              f"lone {c['seen_lone_s']:.2f} s, class p50 {c['seen_click_p50_s']:.2f} s, "
              f"p95 {c['seen_click_p95_s']:.2f} s")
    else:
        out = summary(run_class(args.n, port=args.port, arrival_s=args.arrival_s,
                                close_wait_s=0 if args.no_close_wait else 120.0,
                                uploads_every=args.uploads_every))
        print(json.dumps({k: v for k, v in out.items() if k not in ("problems", "students")},
                         indent=1))
        for p in out["problems"][:20]:
            print("  ", p)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
