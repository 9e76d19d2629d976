"""Honest fit timings: how long a fit takes, with its spread, and when one is faster.

A timing a report states has to survive being measured again. Three things made earlier
claims noise (issue 30): kernel compilation counted as training (a cold first fit), a
single timing of a fit that takes a few hundredths of a second (the timer's and the
machine's jitter are of that size on a busy 2-core machine), and a difference smaller than
the run-to-run spread called a speed-up. :func:`time_fit` and :func:`compare` follow the
usual benchmarking practice (``timeit``'s autorange, pyperf's warm-up and spread):

* **warm first** — ``warm`` (e.g. the same fit on a tiny slice, or a module's
  ``warmup()``) runs once, untimed, so that compilation is never on the clock;
* **repeat until the total covers** :data:`MIN_TOTAL_S` — a fit that takes at least
  0.2 s once is timed once (the cost of a triage stays that of its fits); a faster one is
  timed again and again, at least :data:`MIN_REPEATS` times, until the repeats add up to
  0.2 s of wall time and, when it is CPU-bound, of CPU time (at most ``max_repeats``). A fit
  whose repeats still add up to less than :data:`MIN_TOTAL_S` is *too fast to time*: no
  ratio is stated for it;
* **wall and CPU** — each repeat records wall seconds (``time.perf_counter``, what the user
  waits) and CPU seconds of the process (``time.process_time``: every thread, numba's
  worker threads included); claims are made on wall time;
* **a claim only outside the spread** — :func:`compare` states "N× faster" only when the
  two fits' ranges ``[min, max]`` over their repeats, each widened to at least
  ±:data:`NOISE` of its median (one timing has no spread of its own), do not overlap;
  otherwise "no measurable difference". The claim is made on **CPU seconds** when both
  timings have them: on a machine shared with other work (2 cores at a load of 15 while
  benchmarks/results/triage_claims.md was measured) the wall time of the same fit moved
  by 2× between runs, its CPU time far less; a fit that does less work shows it in CPU
  seconds whatever else runs. (In the dashboard other jobs of the same server process add
  to the process's CPU clock too: there the spreads are wider and claims rarer.) Wall
  seconds are reported beside it.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

__all__ = ["Timing", "SpeedClaim", "time_fit", "compare", "MIN_TOTAL_S", "NOISE",
           "MAX_REPEATS", "MIN_REPEATS", "seconds_text"]

#: the repeats of one fit must add up to at least this many seconds for a time to be stated
MIN_TOTAL_S = 0.2
#: the least relative spread assumed around a median (a single timing has none of its own)
NOISE = 0.15
#: at most this many repeats of a fast fit
MAX_REPEATS = 25
#: at least this many timings of a fit under MIN_TOTAL_S (two give no spread worth the name)
MIN_REPEATS = 3


@dataclass(frozen=True)
class Timing:
    """The repeats of one fit: wall and CPU seconds of each (in order)."""
    wall: Tuple[float, ...]
    cpu: Tuple[float, ...] = ()

    @property
    def repeats(self) -> int:
        return len(self.wall)

    @property
    def total(self) -> float:
        return float(sum(self.wall))

    @property
    def too_fast(self) -> bool:
        """True when the repeats add up to less than :data:`MIN_TOTAL_S`."""
        return self.total < MIN_TOTAL_S

    @property
    def seconds(self) -> float:
        """Median wall seconds of one fit."""
        return _median(self.wall)

    @property
    def cpu_seconds(self) -> float:
        """Median CPU seconds of one fit (NaN when not recorded)."""
        return _median(self.cpu) if self.cpu else math.nan

    @property
    def low(self) -> float:
        """The low end of the spread: the fastest repeat, at most (1 - NOISE) x median."""
        return min(min(self.wall), (1.0 - NOISE) * self.seconds)

    @property
    def high(self) -> float:
        """The high end of the spread: the slowest repeat, at least (1 + NOISE) x median."""
        return max(max(self.wall), (1.0 + NOISE) * self.seconds)

    def text(self) -> str:
        """The timing in words.

        Returns
        -------
        str
            ``"0.84 s"``, ``"0.031 s (min 0.029, max 0.036 over 7 fits)"`` or
            ``"too fast to time"``.
        """
        if self.too_fast:
            return "too fast to time"
        if self.repeats == 1:
            return seconds_text(self.seconds)
        return (f"{seconds_text(self.seconds)} (min {seconds_text(min(self.wall), False)}, max "
                f"{seconds_text(max(self.wall), False)} over {self.repeats} fits)")

    def to_dict(self) -> dict:
        """The JSON of this timing.

        Returns
        -------
        dict
            Median wall and CPU seconds, min, max, repeats, ``too_fast``.
        """
        return {"seconds": self.seconds, "cpu_seconds": self.cpu_seconds,
                "min_s": min(self.wall), "max_s": max(self.wall),
                "repeats": self.repeats, "too_fast": self.too_fast}


@dataclass(frozen=True)
class SpeedClaim:
    """What may be said of ``after`` against ``before``: ``kind`` is "faster", "slower",
    "same" (no measurable difference) or "too_fast" (one of them too fast to time);
    ``ratio`` is before / after (median seconds of ``basis``: "CPU" or "wall"), NaN unless
    it is "faster" or "slower"; ``before`` and ``after`` are the timings in that basis."""
    kind: str
    ratio: float
    before: Timing
    after: Timing
    basis: str = "wall"

    def text(self, verb: str = "trains") -> str:
        """The claim in one phrase.

        Parameters
        ----------
        verb : str, default="trains"
            The phrase's verb.

        Returns
        -------
        str
            ``"trains 3.5× faster (2.10 s → 0.60 s)"``, ``"trains 1.8× slower (…)"``,
            ``"trains with no measurable difference (0.31 s vs 0.29 s)"`` or ``"trains too
            fast to time (…)"``.
        """
        b, a = seconds_text(self.before.seconds), seconds_text(self.after.seconds)
        if self.basis == "CPU":
            b = "CPU " + b
        if self.kind == "too_fast":
            return (f"{verb} too fast to time (the repeated fits add up to less than "
                    f"{MIN_TOTAL_S:g} s)")
        if self.kind == "same":
            return f"{verb} with no measurable difference ({b} vs {a})"
        if self.kind == "faster":
            return f"{verb} {self.ratio:.1f}× faster ({b} → {a})"
        return f"{verb} {1.0 / self.ratio:.1f}× slower ({b} → {a})"


def _median(v) -> float:
    s = sorted(float(x) for x in v)
    n = len(s)
    if not n:
        return math.nan
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def seconds_text(s: float, unit: bool = True) -> str:
    """Seconds with the digits a timing has: ``0.031 s``, ``0.84 s``, ``12.3 s``.

    Parameters
    ----------
    s : float
        Seconds.
    unit : bool, default=True
        Append `` s``.

    Returns
    -------
    str
        The text.
    """
    out = f"{s:.3f}" if s < 0.1 else f"{s:.2f}" if s < 10 else f"{s:.1f}"
    return out + (" s" if unit else "")


def time_fit(fit: Callable[[], Any], *, warm: Optional[Callable[[], Any]] = None,
             first: Optional[Tuple[float, float]] = None, min_total: float = MIN_TOTAL_S,
             max_repeats: int = MAX_REPEATS) -> Timing:
    """Time ``fit()`` honestly (module docstring).

    Parameters
    ----------
    fit : callable
        One fit (its result is dropped).
    warm : callable, optional
        Called once, untimed, before the clock starts (compiles the kernels). Not needed
        when ``first`` comes from a fit made after the kernels were compiled.
    first : (float, float), optional
        Wall and CPU seconds (CPU may be NaN) of a fit already made: counted as the first
        repeat; when it alone covers ``min_total`` nothing more is run.
    min_total : float, default=MIN_TOTAL_S
        Repeat until the wall seconds add up to this.
    max_repeats : int, default=MAX_REPEATS
        At most this many repeats (``first`` included).

    Returns
    -------
    Timing
        Wall and CPU seconds of every repeat.
    """
    wall, cpu = [], []
    if first is not None:
        wall.append(float(first[0]))
        cpu.append(float(first[1]) if first[1] is not None else math.nan)
    if sum(wall) >= min_total:
        return Timing(tuple(wall), tuple(cpu))
    if warm is not None:
        warm()

    def more() -> bool:
        if wall and wall[0] >= min_total:           # one fit covered it: timed once
            return False
        if sum(wall) < min_total or len(wall) < MIN_REPEATS:
            return True
        known = [c for c in cpu if math.isfinite(c)]
        # a CPU-bound fit also until its CPU seconds cover min_total (claims use them)
        return sum(known) < min_total and sum(known) >= 0.25 * sum(wall)
    while len(wall) < max(int(max_repeats), 1) and more():
        c0, t0 = time.process_time(), time.perf_counter()
        fit()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return Timing(tuple(wall), tuple(cpu))


def compare(before: Timing, after: Timing) -> SpeedClaim:
    """What may be said of the fit timed in ``after`` against the one in ``before``.

    Parameters
    ----------
    before, after : Timing
        The two fits' timings (e.g. raw features, then DEFRAG features).

    Returns
    -------
    SpeedClaim
        "too_fast" when either is too fast to time (wall seconds); "faster" / "slower" when
        their spreads (:attr:`Timing.low` .. :attr:`Timing.high`, in CPU seconds when both
        have them, else wall) do not overlap; "same" otherwise.
    """
    if before.too_fast or after.too_fast:
        return SpeedClaim("too_fast", math.nan, before, after)
    basis = "wall"
    if _cpu_ok(before) and _cpu_ok(after):
        basis = "CPU"
        before, after = Timing(before.cpu, before.cpu), Timing(after.cpu, after.cpu)
    ratio = before.seconds / after.seconds if after.seconds > 0 else math.nan
    if after.high < before.low:
        return SpeedClaim("faster", ratio, before, after, basis)
    if before.high < after.low:
        return SpeedClaim("slower", ratio, before, after, basis)
    return SpeedClaim("same", math.nan, before, after, basis)


def _cpu_ok(t: Timing) -> bool:
    """Every repeat has a CPU time and they add up to at least half of
    :data:`MIN_TOTAL_S` (a fit that mostly waits -- on a disk, a lock, a sleep -- is
    judged on its wall time)."""
    return len(t.cpu) == len(t.wall) and all(math.isfinite(c) for c in t.cpu) and \
        sum(t.cpu) >= MIN_TOTAL_S / 2
