"""Keep a progress callback alive while one long numba kernel runs (no streamlit, no state).

The cancellation contract (:mod:`featagg_core.utils.cancel`) asks every estimator to call its
``progress`` callback often, because that callback is where :class:`~featagg_core.utils.cancel.
Cancelled` is raised. Between kernel calls that is easy; *during* one long kernel call
(DEFRAG's root split of 10^6 features, an ONMtF run, the vocabulary DP) nobody is there to
call it. :func:`call_polled` fills the gap:

* the kernel (``nogil``) runs in a short-lived helper thread with the caller's numba
  thread count (``numba.set_num_threads`` is per thread, and a new thread would otherwise
  use every core: two jobs would then oversubscribe the machine);
* the calling thread waits in slices of ``interval`` seconds and calls ``tick()`` after
  each one (the estimator's progress callback, repeating its last report);
* when ``tick`` raises (the user pressed Cancel), the kernel's ``stop`` flag is set; the
  kernel looks at it once per outer iteration and returns early; the helper thread is
  joined (so no thread outlives the call) and the exception propagates.

Without a ``tick`` the kernel simply runs in the calling thread: results are the same
either way (the flag is only read).

Also :class:`Throttle`, a clock that says when a cheap loop should report again.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional

import numba
import numpy as np

__all__ = ["call_polled", "Throttle", "new_stop"]

#: seconds between two heartbeats while a kernel runs
POLL_INTERVAL = 0.1


def new_stop() -> np.ndarray:
    """A fresh one-element uint8 stop flag (0 = run, 1 = stop).

    Returns
    -------
    ndarray of uint8, shape (1,)
        The flag, 0.
    """
    return np.zeros(1, np.uint8)


def call_polled(kernel: Callable, args: tuple, stop: np.ndarray,
                tick: Optional[Callable[[], None]] = None,
                interval: float = POLL_INTERVAL):
    """``kernel(*args)``; with ``tick``, run it in a helper thread and call ``tick()`` periodically.

    ``tick()`` is called every ``interval`` seconds until the kernel returns. ``stop`` must
    be the flag array the kernel polls (it is one of ``args``). If ``tick`` raises,
    ``stop[0]`` is set to 1, the helper thread is joined and the exception is re-raised;
    an exception of the kernel itself is re-raised in the caller.

    Parameters
    ----------
    kernel : callable
        The (numba) kernel.
    args : tuple
        Its arguments.
    stop : ndarray of uint8, shape (1,)
        The flag the kernel polls.
    tick : callable, optional
        Called every ``interval`` seconds (e.g. progress and cancel checks).
    interval : float, default=POLL_INTERVAL
        Seconds between ticks.

    Returns
    -------
    object
        What the kernel returns.
    """
    if tick is None:
        return kernel(*args)
    n_threads = numba.get_num_threads()
    box: dict = {}

    def target():
        try:
            numba.set_num_threads(n_threads)
            box["value"] = kernel(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=target, name="featagg-kernel", daemon=True)
    worker.start()
    try:
        while True:
            worker.join(interval)
            if not worker.is_alive():
                break
            tick()
    except BaseException:
        stop[0] = 1
        worker.join()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


class Throttle:
    """``due()`` is True at most every ``interval`` seconds (and on the first call when
    ``first`` is True): lets a loop of cheap iterations report progress at a bounded rate
    instead of on every iteration."""

    def __init__(self, interval: float = 0.25, first: bool = False):
        self.interval = float(interval)
        self._last = -np.inf if first else time.perf_counter()

    def due(self) -> bool:
        """Whether ``interval`` seconds have passed since the last True (then restarts).

        Returns
        -------
        bool
            True at most once per interval.
        """
        now = time.perf_counter()
        if now - self._last >= self.interval:
            self._last = now
            return True
        return False
