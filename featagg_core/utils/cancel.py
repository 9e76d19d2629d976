"""Cooperative cancellation shared by every long fit (no streamlit, no mutable module state).

A fit never polls a global: whoever starts it (``experiment.run_pipeline``, the dashboard's
job runner, the CLI) hands it a ``progress`` callback, and that callback raises
:class:`Cancelled` once the user has asked to stop. Estimators therefore only have to

1. call their ``progress`` callback often (between kernel calls: per tree level, per node
   batch, per candidate, per sweep point; at least every ~0.5 s of work on large data),
2. let exceptions from it propagate (never swallow them), and
3. stop their worker threads promptly when one does (cancel pending futures instead of
   letting a ``ThreadPoolExecutor`` drain its queue).

Long numba kernels that cannot return between calls may also take a ``stop`` flag array
(``stop_flag(cancel)``) and look at it once per outer iteration: a write from another
Python thread is seen by a ``nogil`` kernel, so the kernel can return early and the caller
then raises :class:`Cancelled`.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from featagg_core.utils.docstrings import fill_doc

__all__ = ["Cancelled", "check_cancel", "cancelling_progress", "stop_flag"]


class Cancelled(Exception):
    """The user asked to stop this work (raised from a progress callback)."""


def check_cancel(cancel) -> None:
    """Raise :class:`Cancelled` if ``cancel`` is set.

    Parameters
    ----------
    cancel : threading.Event-like or None
        An object with ``is_set()``, or None (never set).

    Raises
    ------
    Cancelled
        When it is set.
    """
    if cancel is not None and cancel.is_set():
        raise Cancelled("cancelled")


@fill_doc
def cancelling_progress(progress: Optional[Callable] = None, cancel=None,
                        lo: float = 0.0, hi: float = 1.0) -> Callable[[float, str], None]:
    """A ``callback(fraction, message)`` that checks ``cancel``, then forwards the progress.

    It first checks ``cancel`` (raising :class:`Cancelled`), then forwards
    ``lo + fraction * (hi - lo)`` and the message to ``progress`` (when given). Use it to
    map one step's progress into a pipeline's range.

    Parameters
    ----------
    {progress}
    cancel : threading.Event-like, optional
        Checked on every call.
    lo, hi : float, default=0.0, 1.0
        The range of the step within the pipeline.

    Returns
    -------
    callable
        The callback.
    """
    def report(fraction: float = 0.0, message: str = "") -> None:
        check_cancel(cancel)
        if progress is not None:
            f = min(1.0, max(0.0, float(fraction)))
            progress(lo + f * (hi - lo), message)
    return report


def stop_flag(cancel=None) -> np.ndarray:
    """A one-element uint8 array a long numba kernel can poll (1 = stop).

    The caller sets ``flag[0] = 1`` when ``cancel`` is set (e.g. from its progress
    callback).

    Parameters
    ----------
    cancel : threading.Event-like, optional
        When already set, the flag starts at 1.

    Returns
    -------
    ndarray of uint8, shape (1,)
        The flag.
    """
    flag = np.zeros(1, np.uint8)
    if cancel is not None and cancel.is_set():
        flag[0] = 1
    return flag
