"""A class on one server (issue 11): N real browser sessions against the real dashboard.

    .venv/bin/python benchmarks/classroom_bench.py --n 10 [--n 30] [--arrival-s 60]
        [--out benchmarks/results/classroom.md]

The load model. Sessions arrive spread evenly over ``--arrival-s`` seconds (one headless
Debian chromium, one browser context per student, all on localhost, driven by playwright's
asyncio API). Student ``i``:

* most (``i % 5 != 4``) pick Bibtex, open Feature agglomeration, set d0 to one of
  ``D0S`` (``D0S[i % 4]``) and press **Run** (DEFRAG, then its baselines), then open
  Extreme classification and press **Train** with the page's defaults (KTXMLC; the same
  fit for everybody, so the class shares one computation of it);
* every fifth (``i % 5 == 4``) uploads a small multi-label file of its own
  (``student07_….txt``; consecutive uploaders are twins: the same numbers under different
  file names) and runs DEFRAG on it;
* each then checks that it sees only its own data, names and results: the Data page's
  counts are its dataset's, DEFRAG's dimensions are its d0's, the page's run picker lists
  only runs with its own d0, and the Compare page lists its dataset's name and no other
  student's d0 or file name (cross-talk otherwise).

Measured: errors (an exception element, a failed job, a timeout: goal 0); cross-talk
(goal 0); click → result of every action divided by the single-session time of the same
action, measured first on its own server (same code, fresh cache of shared fits; the
first, computed time of each action) — median and p95 (goal p95 ≤ 4× at N = 30); each
action's server share too (``server_share``: the same click → result timed on the wire
between the browser and the server by :class:`WireClock`, what ``class_sim.py`` is
calibrated against); the server's peak RSS (``VmHWM`` after the warm-up is reset; goal
≤ 1 GB at N = 10, ≤ 2 GB at N = 30); the server's RSS 2 minutes after every session
closed vs the idle server after its warm-up (goal within 20 %). The server is
started like ``scripts/dashboard.sh`` (``python -m featagg_app.server.serve``) with
``--server.disconnectedSessionTTL 30`` so closed sessions are freed within the 2 minutes.

``run_classroom(n, ...)`` is what ``tests/e2e/test_classroom_e2e.py`` calls with N = 4.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(ROOT))

from _common import descendants, process_cpu_seconds  # noqa: E402
from e2e_util import wait_for_kernels  # noqa: E402

D0S = (8, 4, 16, 32)
TIMEOUT_MS = 900_000        # per action (bounded: a session never waits forever)
SESSION_TIMEOUT_S = 1800.0
BIBTEX = {"n_train": None, "d": 1836}
UPLOAD_SHAPE = (400, 300, 12)     # points, features, labels of a student's own file


# ----------------------------------------------------------------------------- server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(pid: int, key: str) -> int:
    """``VmRSS`` / ``VmHWM`` of ``pid`` in bytes (0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


_cpu = process_cpu_seconds


class BrowserCPU:
    """CPU seconds (user + system) of every chromium process descended from this one,
    sampled from /proc every ``every_s`` while running (the last reading of each process
    counts: its total when it ended, to within one interval). ``getrusage(RUSAGE_CHILDREN)``
    is no substitute: chromium does not reap all of its renderers, and one student's flow
    read 3.6 s there against 13.0 s here."""

    def __init__(self, every_s: float = 0.25):
        self.every_s = every_s
        self._seen = {}
        self._stop = threading.Event()
        self._thread = None

    def _sample(self) -> None:
        # a process once seen stays counted if it is reparented (its parent ended first)
        for pid in descendants(os.getpid()) | set(self._seen):
            try:
                if b"chromium" not in Path(f"/proc/{pid}/cmdline").read_bytes()[:300]:
                    continue
            except OSError:
                continue
            cpu = _cpu(pid)
            if cpu == cpu:                       # NaN: it ended since the listing
                self._seen[pid] = max(self._seen.get(pid, 0.0), cpu)

    def __enter__(self) -> "BrowserCPU":
        def loop():
            while not self._stop.wait(self.every_s):
                self._sample()
        self._thread = threading.Thread(target=loop, daemon=True, name="browser-cpu")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    @property
    def seconds(self) -> float:
        return float(sum(self._seen.values()))


class Server:
    """``python -m featagg_app.server.serve`` (what scripts/dashboard.sh runs) on a free port."""

    def __init__(self, log: Path, ttl_s: int = 30, port: int | None = None, env=None):
        from conftest import SERVER_FLAGS, _python
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        extra = env or {}
        env = {k: v for k, v in os.environ.items() if k != "FEATAGG_WARMUP"}
        env.update(PYTHONUNBUFFERED="1", PYTHONHASHSEED="0", **extra)
        with open(log, "wb") as f:
            self.proc = subprocess.Popen(
                [_python(), "-m", "featagg_app.server.serve", "--server.port", str(self.port),
                 *SERVER_FLAGS, "--server.disconnectedSessionTTL", str(int(ttl_s))],
                cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        self.pid = self.proc.pid
        self._peak = 0
        self._sampling = threading.Event()

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_up(self, timeout_s: float = 600.0) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited:\n{self.text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError("the server did not come up")

    def wait_kernels(self, timeout_s: float = 900.0) -> bool:
        return wait_for_kernels(self.log, timeout_s,
                                alive=lambda: self.proc.poll() is None) is not None

    def rss(self) -> int:
        return _status(self.pid, "VmRSS")

    def start_sampling(self) -> None:
        """Sample RSS every 0.25 s (the peak of the class, not of the warm-up)."""
        def loop():
            while not self._sampling.wait(0.25):
                self._peak = max(self._peak, self.rss())
        self._peak = self.rss()
        threading.Thread(target=loop, daemon=True).start()

    def stop_sampling(self) -> int:
        self._sampling.set()
        return self._peak

    def stop(self) -> None:
        self._sampling.set()
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            pass


# ----------------------------------------------------------------------------- data
def student_file(folder: Path, i: int, k: int) -> Path:
    """Student ``i``'s own small multi-label file (XC text); the ``k``-th uploader. Two
    consecutive uploaders (k = 2j, 2j+1) are twins: the same numbers, different names."""
    from featagg_core.data import save_xc
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    n, d, L = UPLOAD_SHAPE
    ds = make_powerlaw_multilabel(n_samples=n, n_features=d, n_labels=L,
                                  random_state=100 + k // 2)
    path = folder / f"student{i:02d}_{'ab'[k % 2]}{k // 2}.txt"
    save_xc((ds.X, ds.Y), path)
    return path


# ----------------------------------------------------------------------------- the wire
class WireClock:
    """The server's share of a click → result, timed on the wire between one student's
    browser and the server.

    A person's click → result in chromium is the server's share (the click's
    ``rerun_script`` on the wire → the result's delta and the end of the page's run on the
    wire) plus the browser's own (dispatching the click before it, processing the deltas and
    drawing the page after it). The protocol simulator (``class_sim.py``) has only the first,
    so it is calibrated against this figure. The browser's own clocks cannot give it: the
    DevTools protocol stamps a websocket frame when the page's main thread handles it, so a
    page busy drawing one delta stamps the next ones late (0.2-0.5 s on a result page).

    How: a TCP relay on a port of its own, in a thread of its own (its own event loop, not
    the browsers'), which the student's browser talks to instead of the server; it passes
    every byte on unchanged and, on the ``/_stcore/stream`` websocket (uncompressed:
    Streamlit's ``server.enableWebsocketCompression`` is off by default; a compressed
    socket is refused here rather than misread), reads the frames going by with the time
    they passed. The end is the simulator's: the metric card ``label`` is among the deltas
    and then a full run finishes (``script_finished`` = FINISHED_SUCCESSFULLY)."""

    def __init__(self, server_port: int):
        self.server_port = server_port
        self._frames = None       # (client?, monotonic s, payload) while armed
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="wire-clock")
        self._thread.start()
        self._ready.wait(10)
        self.url = f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start():
            self._srv = await asyncio.start_server(self._client, "127.0.0.1", 0)
            self.port = self._srv.sockets[0].getsockname()[1]
            self._ready.set()
        self._loop.run_until_complete(start())
        self._loop.run_forever()
        self._srv.close()                     # stopped: end the relays, then the loop
        tasks = asyncio.all_tasks(self._loop)
        for t in tasks:
            t.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _client(self, c_reader, c_writer) -> None:
        try:
            await self._relay(c_reader, c_writer)
        except (asyncio.CancelledError, ConnectionError):
            # the clock closing (its tasks cancelled) or a side hanging up: the relay's
            # end, not an error (a cancelled handler would be reported by asyncio)
            c_writer.close()

    async def _relay(self, c_reader, c_writer) -> None:
        try:
            s_reader, s_writer = await asyncio.open_connection("127.0.0.1", self.server_port)
        except OSError:
            c_writer.close()
            return
        head = b""
        while b"\r\n\r\n" not in head:     # the whole request line and headers
            data = await c_reader.read(65536)
            if not data:
                break
            head += data
        stream = head.startswith(b"GET /_stcore/stream")
        s_writer.write(head)
        await s_writer.drain()
        if not stream:
            await asyncio.gather(self._pipe(c_reader, s_writer), self._pipe(s_reader, c_writer),
                                 return_exceptions=True)
            return
        await asyncio.gather(self._frames_of(c_reader, s_writer, True),
                             self._frames_of(s_reader, c_writer, False, upgrade=True),
                             return_exceptions=True)

    @staticmethod
    async def _pipe(reader, writer) -> None:
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    async def _frames_of(self, reader, writer, from_client: bool, upgrade=False) -> None:
        """Pass bytes on as they come; parse websocket frames out of them on the side."""
        buf, message = b"", b""
        try:
            if upgrade:                      # the server's HTTP 101 answer comes first
                while b"\r\n\r\n" not in buf:
                    data = await reader.read(65536)
                    if not data:
                        return
                    writer.write(data)
                    buf += data
                end = buf.index(b"\r\n\r\n") + 4
                if b"permessage-deflate" in buf[:end].lower():
                    raise RuntimeError("the websocket is compressed: WireClock reads only "
                                       "uncompressed frames")
                buf = buf[end:]
            while True:
                while True:                  # every whole frame in buf
                    frame = self._frame(buf)
                    if frame is None:
                        break
                    used, fin, opcode, payload, deflated = frame
                    buf = buf[used:]
                    if deflated:                 # RSV1: permessage-deflate, not readable
                        raise RuntimeError("the websocket is compressed: WireClock reads "
                                           "only uncompressed frames")
                    if opcode in (0, 1, 2):
                        message += payload
                        if fin:
                            if opcode != 1:
                                self._record(from_client, message)
                            message = b""
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
                buf += data
        finally:
            writer.close()

    @staticmethod
    def _frame(buf: bytes):
        """``(bytes used, fin, opcode, payload, rsv1)`` of the frame at the start of
        ``buf``, or None when it is not all there yet (RFC 6455, section 5.2; RSV1 set:
        the message is compressed, RFC 7692)."""
        if len(buf) < 2:
            return None
        fin, opcode, rsv1 = buf[0] & 0x80, buf[0] & 0x0F, bool(buf[0] & 0x40)
        masked, n, pos = buf[1] & 0x80, buf[1] & 0x7F, 2
        if n == 126:
            if len(buf) < 4:
                return None
            n, pos = int.from_bytes(buf[2:4], "big"), 4
        elif n == 127:
            if len(buf) < 10:
                return None
            n, pos = int.from_bytes(buf[2:10], "big"), 10
        key = b""
        if masked:
            key, pos = buf[pos:pos + 4], pos + 4
        if len(buf) < pos + n:
            return None
        payload = buf[pos:pos + n]
        if masked:
            payload = (np.frombuffer(payload, np.uint8)
                       ^ np.resize(np.frombuffer(key, np.uint8), n)).tobytes()
        return pos + n, bool(fin), opcode, payload, rsv1

    def _record(self, from_client: bool, payload: bytes) -> None:
        t = time.monotonic()
        with self._lock:
            if self._frames is not None:
                self._frames.append((from_client, t, payload))

    def arm(self) -> None:
        """Start recording (just before the click)."""
        with self._lock:
            self._frames = []

    async def server_share(self, label: str, wait_s: float = 5.0):
        """Seconds from the click's ``rerun_script`` to the end of the run that drew the
        metric card ``label`` (None if that is not on the wire within ``wait_s`` of the
        call: the page shows the card before its run ends); stops recording."""
        t0 = time.monotonic()
        while True:
            with self._lock:
                frames = list(self._frames or [])
            share = self._share(frames, label)
            if share is not None or time.monotonic() - t0 > wait_s:
                with self._lock:
                    self._frames = None
                return share
            await asyncio.sleep(0.05)

    @staticmethod
    def _share(frames, label: str):
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        t_sent, card = None, False
        for from_client, ts, raw in frames:
            if from_client:
                if t_sent is None:
                    bm = BackMsg()
                    bm.ParseFromString(raw)
                    if bm.WhichOneof("type") == "rerun_script" and \
                            not bm.rerun_script.is_auto_rerun:
                        t_sent = ts
                continue
            if t_sent is None:
                continue
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                if el.WhichOneof("type") == "metric" and el.metric.label == label:
                    card = True
            elif kind == "script_finished" and card and fm.script_finished == 0:
                return ts - t_sent
        return None


# ----------------------------------------------------------------------------- browser
_STALE = ("() => document.querySelectorAll('[data-testid=\"stMain\"] [data-stale=\"true\"]')"
          ".length === 0")
_CANCEL_SHOWN = ("[...document.querySelectorAll('[data-testid=\"stMain\"] button')]"
                 ".some(b => b.innerText.trim() === 'Cancel')")


async def wait_app(page, start_ms: int = 1_500, timeout_ms: int = TIMEOUT_MS) -> None:
    try:
        await page.wait_for_selector('[data-testid="stApp"][data-test-script-state="running"]',
                                     state="attached", timeout=start_ms)
    except Exception:  # noqa: BLE001 - a quick run may be over already
        pass
    await page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]',
                                 state="attached", timeout=timeout_ms)
    await page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached",
                                 timeout=timeout_ms)


async def goto(page, title: str) -> None:
    link = page.locator('[data-testid="stSidebarNavLink"]').filter(has_text=title).first
    href = await link.get_attribute("href", timeout=TIMEOUT_MS) or ""
    await link.click(timeout=TIMEOUT_MS)
    if href:      # paths only: the URL keeps its ?session=KEY query on every page
        path = href.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        await page.wait_for_url(lambda u: u.split("?", 1)[0].rstrip("/").endswith("/" + path),
                                timeout=TIMEOUT_MS)
    await wait_app(page, 5_000)
    await page.wait_for_function(_STALE, timeout=TIMEOUT_MS)


async def wait_jobs(page) -> None:
    try:
        await page.wait_for_function(f"() => {_CANCEL_SHOWN}", timeout=3_000)
    except Exception:  # noqa: BLE001
        pass
    await page.wait_for_function(f"() => !({_CANCEL_SHOWN})", timeout=TIMEOUT_MS)
    await wait_app(page)
    await page.wait_for_function(_STALE, timeout=TIMEOUT_MS)


async def cards(page) -> dict:
    out = {}
    for card in await page.locator('[data-testid="stMain"] [data-testid="stMetric"]').all():
        label = (await card.locator('[data-testid="stMetricLabel"]').inner_text()).strip()
        out[label] = (await card.locator('[data-testid="stMetricValue"]').inner_text()).strip()
    return out


async def wait_card(page, label: str, value=None) -> dict:
    """Wait until the main area shows the metric card ``label`` (with ``value``)."""
    js = ("([l, v]) => [...document.querySelectorAll('[data-testid=\"stMain\"] "
          "[data-testid=\"stMetric\"]')].some(c => { const a = c.querySelector("
          "'[data-testid=\"stMetricLabel\"]'), b = c.querySelector("
          "'[data-testid=\"stMetricValue\"]'); return a && b && a.innerText.trim() === l && "
          "(v === null || b.innerText.trim() === v); })")
    await page.wait_for_function(js, arg=[label, value], timeout=TIMEOUT_MS)
    return await cards(page)


async def main_text(page) -> str:
    return await page.locator('[data-testid="stMain"]').inner_text()


async def check_no_error(page, where: str) -> None:
    n = await page.locator('[data-testid="stException"]').count()
    text = await main_text(page)
    if n or "Traceback" in text or "failed:" in text:
        raise RuntimeError(f"{where}: the page shows an error: {text[-600:]}")


async def set_d0(page, d0: int) -> None:
    """Move the d0 slider (a range input) with the keyboard, as a person can."""
    box = page.locator('[data-testid="stMain"] [data-testid="stSlider"]').filter(has_text="d0")
    slider = box.locator('input[type="range"]').first
    now = int(await slider.input_value())
    if now == d0:
        return
    await slider.focus()
    for _ in range(abs(d0 - now)):
        await slider.press("ArrowRight" if d0 > now else "ArrowLeft")
    await wait_app(page, 3_000)
    await page.wait_for_function(
        "v => { const s = document.querySelector('[data-testid=\"stMain\"] "
        "[data-testid=\"stSlider\"] input[type=\"range\"]'); "
        "return s && +s.value === v; }", arg=d0, timeout=TIMEOUT_MS)
    await wait_app(page, 3_000)


async def upload(page, path: Path) -> None:
    sb = page.locator('[data-testid="stSidebar"]')
    await sb.get_by_text("Upload a file", exact=True).click()
    await wait_app(page)
    up = sb.locator('[data-testid="stFileUploader"]').filter(has_text="Data file").first
    await up.wait_for(state="visible", timeout=TIMEOUT_MS)
    await up.locator('input[type="file"]').first.set_input_files(str(path))
    await wait_app(page, 3_000)
    await sb.locator('[data-testid="stAlert"]').filter(has_text="Loaded").first.wait_for(
        timeout=TIMEOUT_MS)


async def select_bibtex(page) -> None:
    sb = page.locator('[data-testid="stSidebar"]')
    await sb.get_by_text("Bundled sample", exact=True).click()
    await wait_app(page)
    await sb.locator('[data-testid="stSelectbox"]').filter(has_text="Sample dataset").click()
    await page.get_by_role("option").filter(has_text="Bibtex").first.click(timeout=TIMEOUT_MS)
    await wait_app(page)


def expected_k(d: int, d0: int) -> int:
    """DEFRAG's K: a balanced binary tree split until every leaf holds ≤ d0 features."""
    k = 1
    while -(-d // k) > d0:
        k *= 2
    return k


async def student(browser, url: str, i: int, upload_path, rec: dict, plan: list) -> None:
    """One student's session (see the module docstring); fills ``rec``."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.set_default_timeout(TIMEOUT_MS)
    page = await ctx.new_page()
    clock = WireClock(int(url.rsplit(":", 1)[1].split("/")[0]))
    url = clock.url
    actions = rec.setdefault("actions", {})
    at_server = rec.setdefault("server_share", {})
    try:
        await page.goto(url)
        await page.locator('[data-testid="stSidebarNavLink"]').first.wait_for()
        await wait_app(page)
        if upload_path is None:
            d0 = D0S[i % len(D0S)]
            await select_bibtex(page)
            name, d = "bibtex", BIBTEX["d"]
        else:
            d0 = 8
            await upload(page, upload_path)
            name, d = upload_path.name, UPLOAD_SHAPE[1]
        rec.update(name=name, d0=d0)
        await goto(page, "Data")
        c = await wait_card(page, "Features d")
        if c.get("Features d") != f"{d:,}":
            rec["crosstalk"].append(f"Data page shows d = {c.get('Features d')}, not {d:,}")
        await goto(page, "Feature agglomeration")
        await set_d0(page, d0)
        K = expected_k(d, d0)
        action = f"DEFRAG d0={d0}" + (" (upload)" if upload_path else "")
        clock.arm()
        t = time.monotonic()
        await page.locator('[data-testid="stMain"]').get_by_role(
            "button", name="Run", exact=True).click()
        c = await wait_card(page, "Dimensions")
        actions[action] = time.monotonic() - t
        at_server[action] = await clock.server_share("Dimensions")
        if c.get("Dimensions") != f"{d:,} → {K:,}":
            rec["crosstalk"].append(f"DEFRAG shows {c.get('Dimensions')}, expected "
                                    f"{d:,} → {K:,}")
        await wait_jobs(page)                      # its baselines
        await check_no_error(page, "Feature agglomeration")
        # the page's run picker lists every DEFRAG run of this session on this dataset
        picker = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').filter(
            has_text="Show run").first
        await picker.click()
        await page.get_by_role("option").first.wait_for(timeout=TIMEOUT_MS)
        opts = " | ".join(await page.get_by_role("option").all_inner_texts())
        await page.keyboard.press("Escape")
        seen = set(re.findall(r"d0=(\d+)", opts))
        if seen != {str(d0)}:
            rec["crosstalk"].append(f"DEFRAG run picker lists d0 {sorted(seen)} ({opts[:200]}),"
                                    f" its own is {d0}")
        if upload_path is None:
            await goto(page, "Extreme classification")
            clock.arm()
            t = time.monotonic()
            await page.locator('[data-testid="stMain"]').get_by_role(
                "button", name="Train", exact=True).click()
            await wait_card(page, "P@1")
            actions["KTXMLC (page defaults)"] = time.monotonic() - t
            at_server["KTXMLC (page defaults)"] = await clock.server_share("P@1")
            await wait_jobs(page)
            await check_no_error(page, "Extreme classification")
        await goto(page, "Compare")
        text = await main_text(page)
        if f"· {name}" not in text:
            rec["crosstalk"].append(f"Compare does not list its dataset {name!r}")
        for other in plan:
            if other["name"] != name and other["name"] != "bibtex" and other["name"] in text:
                rec["crosstalk"].append(f"Compare lists {other['name']!r}")
        others = set(re.findall(r"d0=(\d+)", text)) - {str(d0)}
        if others:
            rec["crosstalk"].append(f"Compare lists d0 values {sorted(others)}, its own is {d0}")
        await check_no_error(page, "Compare")
    except Exception as exc:  # noqa: BLE001 - counted, the class goes on
        rec["errors"].append(f"{type(exc).__name__}: {str(exc)[:300]}")
    finally:
        await ctx.close()
        clock.close()


def make_plan(n: int, folder: Path, uploads_every: int = 5) -> list:
    plan, k = [], 0
    for i in range(n):
        if i % uploads_every == uploads_every - 1:
            path = student_file(folder, i, k)
            plan.append({"i": i, "upload": path, "name": path.name})
            k += 1
        else:
            plan.append({"i": i, "upload": None, "name": "bibtex"})
    return plan


async def _drive(url: str, plan: list, arrival_s: float) -> list:
    from conftest import CHROMIUM, CHROMIUM_ARGS
    from playwright.async_api import async_playwright
    recs = [{"i": p["i"], "errors": [], "crosstalk": []} for p in plan]
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                           args=CHROMIUM_ARGS)
        try:
            gap = arrival_s / max(1, len(plan) - 1) if len(plan) > 1 else 0.0

            async def arrive(k, p):
                await asyncio.sleep(k * gap)
                recs[k]["arrived"] = time.monotonic()
                try:
                    await asyncio.wait_for(student(browser, url, p["i"], p["upload"],
                                                   recs[k], plan), SESSION_TIMEOUT_S)
                except asyncio.TimeoutError:
                    recs[k]["errors"].append(f"session over {SESSION_TIMEOUT_S:.0f} s")
            await asyncio.gather(*(arrive(k, p) for k, p in enumerate(plan)))
        finally:
            await browser.close()
    return recs


def _run_async(coro, nice: int = 0):
    """``asyncio.run(coro)`` in a thread of its own: the caller's thread may hold a running
    event loop (pytest's session-wide sync playwright does). ``nice`` > 0 lowers that
    thread's priority first (on Linux a nice value is per thread and inherited at fork):
    the playwright driver and chromium it launches run at that niceness, the server and
    this process do not."""
    box = {}

    def target():
        try:
            if nice:
                os.nice(nice)
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc
    t = threading.Thread(target=target, name="classroom-driver")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def single_session_times(folder: Path, log: Path, upload_path: Path,
                         browser_nice: int = 0) -> dict:
    """Click → result of every action of the load model, one session at a time, on a
    server of its own (no fit shared with the class): ``{"actions": {action: seconds},
    "browser_cpu_s": ..., "server_cpu_s": ...}``, the CPU one student costs in chromium
    and in the server (the mean over the load model's five kinds of student; the first
    sessions compute their fits)."""
    srv = Server(log)
    try:
        srv.wait_up()
        srv.wait_kernels()
        plan = [{"i": i, "upload": None, "name": "bibtex"} for i in range(len(D0S))]
        plan.append({"i": 4, "upload": upload_path, "name": upload_path.name})
        actions, at_server = {}, {}
        browser_cpu, server_cpu = [], []
        for p in plan:        # one after the other: a single session each time
            s0 = _cpu(srv.pid)
            with BrowserCPU() as chromium:
                rec = _run_async(_drive(srv.url, [p], 0.0), browser_nice)[0]
            browser_cpu.append(chromium.seconds)
            server_cpu.append(_cpu(srv.pid) - s0)
            if rec["errors"] or rec["crosstalk"]:
                raise RuntimeError(f"single session failed: {rec}")
            for action, secs in rec["actions"].items():
                # the first time is the computation; a later session of the same action
                # gets the shared fit (KTXMLC's defaults do not depend on d0)
                actions.setdefault(action, secs)
            for action, secs in rec["server_share"].items():
                at_server.setdefault(action, secs)
        return {"actions": actions, "server_share": at_server,
                "browser_cpu_s": float(np.mean(browser_cpu)),
                "server_cpu_s": float(np.mean(server_cpu))}
    finally:
        srv.stop()


def run_classroom(n: int, arrival_s: float = 60.0, baseline: bool = True,
                  close_wait_s: float = 120.0, ttl_s: int = 30, workdir=None,
                  uploads_every: int = 5, single=None, browser_nice: int = 0) -> dict:
    """The whole measurement (see the module docstring); returns the figures. ``single``:
    the single-session times of an earlier call, reused (same run, same machine).
    ``browser_nice``: run chromium at this niceness (0: the same priority as the server).
    The class's browsers normally run on the students' own machines; on one localhost they
    take the server's cores, and a positive value models the server having its cores
    first. Reported as a separate row: it is not the equal-priority measurement."""
    folder = Path(workdir or tempfile.mkdtemp(prefix="featagg-class-"))
    folder.mkdir(parents=True, exist_ok=True)
    plan = make_plan(n, folder, uploads_every)
    res = {"n": n, "arrival_s": arrival_s, "cores": os.cpu_count(), "browser_nice": browser_nice,
           "load_before": os.getloadavg()[0]}
    if baseline and single is not None:
        res["single"] = single
    elif baseline:
        first_upload = next((p["upload"] for p in plan if p["upload"] is not None), None) \
            or student_file(folder, 4, 0)
        res["single"] = single_session_times(folder, folder / "single.log", first_upload,
                                             browser_nice)
    srv = Server(folder / "server.log", ttl_s=ttl_s)
    res["log"] = str(srv.log)
    try:
        srv.wait_up()
        srv.wait_kernels()
        time.sleep(5.0)
        res["rss_idle"] = srv.rss()
        srv.start_sampling()
        cpu0, t0 = _cpu(srv.pid), time.monotonic()
        loads = []
        stop_load = threading.Event()

        def sample_load():
            while not stop_load.wait(5.0):
                loads.append(os.getloadavg()[0])
        threading.Thread(target=sample_load, daemon=True).start()
        with BrowserCPU() as chromium:
            recs = _run_async(_drive(srv.url, plan, arrival_s), browser_nice)
        res["browser_cpu_s"] = chromium.seconds
        stop_load.set()
        res["class_wall_s"] = time.monotonic() - t0
        res["server_cpu_s"] = _cpu(srv.pid) - cpu0
        res["rss_peak"] = srv.stop_sampling()
        res["load_during"] = (statistics.mean(loads) if loads else os.getloadavg()[0])
        res["load_max"] = max(loads) if loads else os.getloadavg()[0]
        res["recs"] = recs
        t_closed = time.monotonic()
        freed_before = srv.text().count("featagg: freed")
        while time.monotonic() - t_closed < close_wait_s:
            time.sleep(2.0)
        res["rss_after_close"] = srv.rss()
        res["freed_lines"] = srv.text().count("featagg: freed") - freed_before
        res["sessions_freed"] = sum(int(m) for m in re.findall(
            r"featagg: freed (\d+) session", srv.text()))
    finally:
        srv.stop()
    res["errors"] = sum(len(r["errors"]) for r in recs)
    res["crosstalk"] = sum(len(r["crosstalk"]) for r in recs)
    if baseline:
        ratios = []
        for r in recs:
            for action, secs in r.get("actions", {}).items():
                base = res["single"]["actions"].get(action)
                if base:
                    ratios.append(secs / base)
        res["ratios"] = ratios
    return res


def _q(xs, q):
    return float(np.quantile(np.asarray(xs, float), q)) if xs else float("nan")


def _nice_note(r: dict) -> str:
    return f" (browsers at nice {r['browser_nice']})" if r.get("browser_nice") else ""


def _fmt_s(x) -> str:
    return "–" if x is None else f"{x:.0f} s"


def _cpu_budget(r: dict) -> list:
    """Where the class's CPU went: the browsers run on the server's cores here (load tests
    stay on localhost), so what they need is time the server cannot have."""
    one = r.get("single", {})
    b1, v1, cls = one.get("browser_cpu_s"), one.get("server_cpu_s"), r.get("browser_cpu_s")
    if b1 is None or cls is None:
        return []
    cores = r.get("cores") or os.cpu_count() or 1
    flow = sum(one["actions"].values())
    need = (cls + r["server_cpu_s"]) / cores
    return [f"CPU: one student alone cost {b1:.1f} s in chromium and {v1:.1f} s in the "
            f"server (its fits computed, not shared) over {flow:.0f} s of click → result. "
            f"{r['n']} students' browsers alone need {r['n'] * b1:.0f} CPU s, "
            f"{r['n'] * b1 / cores:.0f} s of all {cores} cores, against the "
            f"{r['arrival_s']:.0f} s they arrive in. "
            f"The class of {r['n']} cost {cls:.0f} s in chromium ({cls / r['n']:.1f} s per "
            f"student) and {r['server_cpu_s']:.0f} s in the server "
            f"({r['server_cpu_s'] / r['n']:.1f} s per student): on {cores} cores that is "
            f"{need:.0f} s of work with every core busy, against a {r['arrival_s']:.0f} s "
            f"arrival window and a class that took {r['class_wall_s']:.0f} s.", ""]


def render(results: list) -> str:
    gb = 2 ** 30
    lines = ["# Classroom bench (issue 11)", "",
             "Real server (`python -m featagg_app.server.serve`, as `scripts/dashboard.sh`; "
             "`disconnectedSessionTTL` 30 s), N headless Debian chromium sessions arriving "
             "over the arrival window; Bibtex students: DEFRAG with d0 ∈ {8, 4, 16, 32}, then "
             "KTXMLC with the page's defaults; every fifth: its own small upload (twins: equal "
             "numbers, different names) and DEFRAG on it. Ratios: each click → result over "
             "the same action in a single session on its own server, same run. Machine: "
             f"{os.cpu_count()} cores shared with other engineers (load below).", "",
             "| N | errors (goal 0) | cross-talk (goal 0) | median ratio | p95 ratio | "
             "max ratio | peak RSS | idle RSS | RSS 2 min after close | load (mean / max) | "
             "class wall / server CPU / browsers' CPU |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        rat = r.get("ratios", [])
        lines.append(
            f"| {r['n']}{_nice_note(r)} | {r['errors']} | {r['crosstalk']} | {_q(rat, .5):.2f}× | "
            f"{_q(rat, .95):.2f}× | {max(rat) if rat else float('nan'):.2f}× | "
            f"{r['rss_peak'] / gb:.2f} GB | {r['rss_idle'] / gb:.2f} GB | "
            f"{r['rss_after_close'] / gb:.2f} GB ({r['rss_after_close'] / r['rss_idle'] - 1:+.0%}) | "
            f"{r['load_during']:.1f} / {r['load_max']:.1f} | "
            f"{r['class_wall_s']:.0f} s / {r['server_cpu_s']:.0f} s / "
            f"{_fmt_s(r.get('browser_cpu_s'))} |")
    for r in results:
        lines += ["", f"## N = {r['n']}{_nice_note(r)}", "",
                  "Single-session click → result (s): " + ", ".join(
                      f"{k} {v:.1f}" for k, v in
                      r.get("single", {}).get("actions", {}).items()), ""]
        lines += _cpu_budget(r)
        per = {}
        for rec in r["recs"]:
            for k, v in rec.get("actions", {}).items():
                per.setdefault(k, []).append(v)
        lines += ["| action | sessions | median s | max s |", "|---|---:|---:|---:|"]
        for k, v in sorted(per.items()):
            lines.append(f"| {k} | {len(v)} | {statistics.median(v):.1f} | {max(v):.1f} |")
        lines.append("")
        lines.append(f"Sessions freed by the reaper after closing: {r['sessions_freed']}.")
        bad = [(rec["i"], rec["errors"] + rec["crosstalk"]) for rec in r["recs"]
               if rec["errors"] or rec["crosstalk"]]
        for i, what in bad:
            lines.append(f"* student {i}: " + "; ".join(what)[:500])
        goal_rss = 1.0 if r["n"] <= 10 else 2.0
        lines += ["", f"Goals: errors 0 — {'met' if r['errors'] == 0 else 'not met'}; "
                  f"cross-talk 0 — {'met' if r['crosstalk'] == 0 else 'not met'}; peak RSS ≤ "
                  f"{goal_rss:.0f} GB — {'met' if r['rss_peak'] <= goal_rss * gb else 'not met'};"
                  f" RSS after close within 20 % of idle — "
                  f"{'met' if r['rss_after_close'] <= 1.2 * r['rss_idle'] else 'not met'}"
                  + (f"; p95 ≤ 4× — {'met' if _q(r.get('ratios', []), .95) <= 4 else 'not met'}"
                     " (the goal is stated for N = 30)" if r.get("ratios") else "") + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, action="append", help="sessions (repeatable)")
    ap.add_argument("--arrival-s", type=float, default=60.0)
    ap.add_argument("--browser-nice", type=int, default=0,
                    help="run chromium at this niceness (default 0: the server's priority)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "classroom.md")
    args = ap.parse_args(argv)
    results, single = [], None
    for n in args.n or [10]:
        r = run_classroom(n, arrival_s=args.arrival_s, single=single,
                          browser_nice=args.browser_nice)
        single = r.get("single")
        print(f"N={n}: errors {r['errors']}, cross-talk {r['crosstalk']}, ratios median "
              f"{_q(r.get('ratios', []), .5):.2f} p95 {_q(r.get('ratios', []), .95):.2f}, peak "
              f"RSS {r['rss_peak'] / 2**30:.2f} GB, idle {r['rss_idle'] / 2**30:.2f} GB, "
              f"after close {r['rss_after_close'] / 2**30:.2f} GB, log {r['log']}", flush=True)
        for rec in r["recs"]:
            if rec["errors"] or rec["crosstalk"]:
                print("  ", rec["i"], rec["errors"], rec["crosstalk"], flush=True)
        results.append(r)
        text = render(results)
        tmp = args.out.with_suffix(".md.tmp")
        tmp.write_text(text)
        os.replace(tmp, args.out)
        raw = args.out.with_suffix(".json")
        tmp = raw.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(results, indent=1, default=str))
        os.replace(tmp, raw)
    print(render(results))


if __name__ == "__main__":
    main()
