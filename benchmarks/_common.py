"""What the benchmarks share: where ``../shared/data`` is, the timing row (wall seconds,
CPU seconds, load average) and the markdown table.

Import it as ``from _common import ...`` (a benchmark's own folder is on ``sys.path`` when
it runs as ``python benchmarks/x_bench.py``); importing it also puts the checkout on
``sys.path`` so ``featagg_core`` imports without an install.
"""
from __future__ import annotations

import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
#: the checkout (the folder holding ``benchmarks/``)
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
#: the read-only real data sets: ``shared/data`` next to the checkout
SHARED_DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")


def shared_data(*parts: str) -> str:
    """A path in ``../shared/data`` (the folder itself without ``parts``).

    Parameters
    ----------
    *parts : str
        Path components below ``shared/data``.

    Returns
    -------
    str
        The joined path, whether or not it exists (see :func:`missing_shared_data`).
    """
    return os.path.join(SHARED_DATA, *parts)


def missing_shared_data(*paths: str) -> list:
    """The ones of ``paths`` that do not exist, with a reason a reader can act on.

    Parameters
    ----------
    *paths : str
        Paths (usually from :func:`shared_data`).

    Returns
    -------
    list of str
        ``"<path> not found"`` for a missing file, or one ``"<SHARED_DATA> is missing"``
        when the whole folder is absent; empty when everything is there.
    """
    if not os.path.isdir(SHARED_DATA):
        return [f"{SHARED_DATA} is missing"]
    return [f"{p} not found" for p in paths if not os.path.exists(p)]


def cpu_seconds() -> float:
    """User + system CPU seconds of this process (all its threads) so far.

    Returns
    -------
    float
    """
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load_average() -> float:
    """The 1-minute load average (how busy the shared machine is).

    Returns
    -------
    float
    """
    return os.getloadavg()[0]


class Clock:
    """Wall and CPU seconds of a block, and the load average when it started::

        with Clock() as c:
            work()
        print(c.wall, c.cpu, c.load)

    ``cpu`` is ``time.process_time`` (this process, every thread).
    """

    def __enter__(self):
        self.load = load_average()
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0


def timed(fn):
    """Run ``fn()`` once and time it with ``time.process_time`` and ``perf_counter``.

    Parameters
    ----------
    fn : callable
        The work (no arguments).

    Returns
    -------
    tuple
        ``(result, cpu_seconds, wall_seconds)``, CPU first (vocab_bench's order).
    """
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - w


def md_row(cells) -> str:
    """One markdown table row: ``| a | b |``.

    Parameters
    ----------
    cells : iterable of str
        The cells, already formatted.

    Returns
    -------
    str
    """
    return "| " + " | ".join(cells) + " |"


def md_header(columns) -> list:
    """A markdown table's header and rule lines.

    Parameters
    ----------
    columns : iterable of str
        The column titles.

    Returns
    -------
    list of str
        ``["| a | b |", "|---|---|"]``.
    """
    columns = list(columns)
    return [md_row(columns), "|" + "---|" * len(columns)]


def md_table(columns, rows) -> list:
    """A whole markdown table: header, rule and one line per row.

    Parameters
    ----------
    columns : iterable of str
        The column titles.
    rows : iterable of iterable of str
        The rows' cells, already formatted.

    Returns
    -------
    list of str
        The table's lines (join them with newlines).
    """
    return md_header(columns) + [md_row(r) for r in rows]


def wall_and_cpu(fn):
    """Run ``fn()``; its result and ``(wall seconds, CPU seconds)`` (CPU as
    :func:`cpu_seconds`: every thread of this process).

    Parameters
    ----------
    fn : callable
        Called without arguments.

    Returns
    -------
    tuple
        ``(result, (wall_seconds, cpu_seconds))``.
    """
    t0, c0 = time.perf_counter(), cpu_seconds()
    out = fn()
    return out, (time.perf_counter() - t0, cpu_seconds() - c0)


def copy_without_first_line(src, dst) -> None:
    """Copy the file ``src`` to ``dst`` without its first line (an XC header, so that
    svmlight readers can read the rows), 16 MiB at a time.

    Parameters
    ----------
    src, dst : str or path-like
        The file to read and the file to write.
    """
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        fin.readline()
        while True:
            chunk = fin.read(1 << 24)
            if not chunk:
                break
            fout.write(chunk)


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and its threads, from /proc.

    Parameters
    ----------
    pid : int
        The process (e.g. a dashboard server the benchmark started).

    Returns
    -------
    float
        NaN when the process is gone or /proc cannot be read.
    """
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def parent_pids() -> dict:
    """Every process on the machine, from /proc: pid -> parent pid.

    Returns
    -------
    dict of int to int
    """
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    out[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return out


def descendants(pid: int, parents: dict = None) -> set:
    """The processes below ``pid`` (children, their children, ...), ``pid`` not included.

    Parameters
    ----------
    pid : int
        The root of the process tree.
    parents : dict or None
        :func:`parent_pids`'s map, when already read (None: read it now).

    Returns
    -------
    set of int
    """
    parents = parent_pids() if parents is None else parents
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier and p not in out}
        out |= frontier
    return out
