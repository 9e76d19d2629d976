"""benchmarks/classroom_bench.py's WireClock, without a browser: it reads websocket frames
as RFC 6455 lays them out (the RFC's own examples, section 5.7), passes every byte between
a client and a server unchanged while it records the messages with their times, refuses to
misread a compressed socket, and times a click → result the way the protocol simulator
does (the press's rerun → the metric card, then the end of a full run)."""
import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from classroom_bench import WireClock, _run_async  # noqa: E402


@pytest.mark.parametrize("raw, payload", [
    (bytes([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]), b"Hello"),           # unmasked text
    (bytes([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]), b"Hello"),
    (bytes([0x82, 0x7E, 0x01, 0x00]) + bytes(range(256)), bytes(range(256))),  # 16-bit length
    (bytes([0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0]) + b"x" * 65536, b"x" * 65536),  # 64-bit
])
def test_frames_of_rfc_6455_examples(raw, payload):
    used, fin, opcode, got, deflated = WireClock._frame(raw + b"\x81")   # + a next frame
    assert (used, fin, got, deflated) == (len(raw), True, payload, False)
    assert opcode == raw[0] & 0x0F
    for cut in (1, 3, len(raw) - 1):                        # not all there yet
        assert WireClock._frame(raw[:cut]) is None


def test_a_fragmented_message_is_one_message():
    # RFC 6455 5.7: "Hel" (text, FIN 0) then "lo" (continuation, FIN 1)
    first = bytes([0x01, 0x03, 0x48, 0x65, 0x6C])
    second = bytes([0x80, 0x02, 0x6C, 0x6F])
    a = WireClock._frame(first + second)
    assert a[:3] == (5, False, 1) and a[3] == b"Hel"
    b = WireClock._frame(second)
    assert b[:3] == (4, True, 0) and b[3] == b"lo"
    # RFC 7692 7.2.3.1: "Hello" compressed in one frame, RSV1 set
    c = WireClock._frame(bytes([0xC1, 0x07, 0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]))
    assert c[0] == 9 and c[4] is True


def _rerun(auto=False):
    from streamlit.proto.BackMsg_pb2 import BackMsg
    m = BackMsg()
    m.rerun_script.query_string = "session=x"
    if auto:
        m.rerun_script.fragment_id = "f"
        m.rerun_script.is_auto_rerun = True
    return m.SerializeToString()


def _metric(label):
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    fm = ForwardMsg()
    fm.delta.new_element.metric.label = label
    fm.delta.new_element.metric.body = "1,836 → 256"
    return fm.SerializeToString()


def _finished(status):
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    fm = ForwardMsg()
    fm.script_finished = status
    return fm.SerializeToString()


def test_share_is_the_press_to_the_end_of_the_run_that_drew_the_card():
    frames = [(True, 9.0, _rerun(auto=True)),        # a fragment's timer: not the press
              (True, 10.0, _rerun()),                # the press
              (False, 10.1, _finished(0)),           # its run ends: no card yet (a panel)
              (True, 11.1, _rerun(auto=True)),       # the panel's tick
              (False, 11.2, _metric("Dimensions")),
              (False, 11.3, _finished(2)),           # ended early for a rerun: not the end
              (False, 11.4, _metric("Dimensions")),
              (False, 11.5, _finished(0)),
              (False, 12.5, _finished(0))]
    assert WireClock._share(frames, "Dimensions") == pytest.approx(1.5)
    assert WireClock._share(frames, "P@1") is None
    assert WireClock._share(frames[:-2], "Dimensions") is None


def _echo_server():
    """A websocket server answering every message with two: its reverse, then b"end"."""
    from websockets.asyncio.server import serve

    async def handler(ws):
        async for msg in ws:
            await ws.send(msg[::-1])
            await ws.send(b"end")
    return serve(handler, "127.0.0.1", 0, compression=None)


def test_relay_passes_bytes_unchanged_and_records_messages():
    from websockets.asyncio.client import connect

    async def main():
        async with _echo_server() as server:
            port = server.sockets[0].getsockname()[1]
            clock = WireClock(port)
            try:
                clock.arm()
                big = bytes(range(256)) * 300               # several reads, 16-bit lengths
                async with connect(f"ws://127.0.0.1:{clock.port}/_stcore/stream",
                                   compression=None, max_size=None) as ws:
                    got = []
                    for msg in (b"abc", big):
                        await ws.send(msg)
                        got += [await ws.recv(), await ws.recv()]
                with clock._lock:
                    frames = list(clock._frames)
            finally:
                clock.close()
        assert got == [b"cba", b"end", big[::-1], b"end"]
        assert [(c, p) for c, _, p in frames] == [
            (True, b"abc"), (False, b"cba"), (False, b"end"),
            (True, big), (False, big[::-1]), (False, b"end")]
        times = [t for _, t, _ in frames]
        assert times == sorted(times)
    _run_async(main())     # a thread of its own: the suite's playwright holds a loop here


def test_relay_records_nothing_of_a_compressed_socket():
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed
    from websockets.asyncio.server import serve

    async def handler(ws):
        async for msg in ws:
            await ws.send(msg)

    async def main():
        async with serve(handler, "127.0.0.1", 0) as server:       # permessage-deflate
            clock = WireClock(server.sockets[0].getsockname()[1])
            try:
                clock.arm()
                try:
                    async with connect(f"ws://127.0.0.1:{clock.port}/_stcore/stream") as ws:
                        await ws.send(b"x" * 1000)
                        await asyncio.wait_for(ws.recv(), 2.0)
                except ConnectionClosed:       # the relay hung up: what is checked here
                    pass
                with clock._lock:
                    frames = list(clock._frames)
            finally:
                clock.close()
        assert frames == []
    _run_async(main())     # a thread of its own: the suite's playwright holds a loop here
