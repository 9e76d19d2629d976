"""The dashboard's words: how a duration, a name typed by a person and an error are shown.

Every page and widget shows a duration with ``featagg_core.runs.estimate.format_seconds``
("under a second", "12 s", "4 min", "1.5 h"; the same words as the CLI's estimates) and an
estimate with :func:`approx_seconds`; text that came from a person or a file goes through
:func:`md_escape`; an exception reaches the browser only through :func:`show_error` (its
message, never a traceback).
"""
from __future__ import annotations

import logging
from typing import Optional

import streamlit as st

from featagg_core.runs.estimate import format_seconds

_log = logging.getLogger("featagg_app")

_MD_SPECIAL = "\\`*[]<>$~|"  # not "_": intraword underscores stay literal in CommonMark


def approx_seconds(seconds: Optional[float]) -> str:
    """"about 12 s" ("under a second"), or "not known yet" when there is no estimate (the
    server is still compiling the kernels it needs, or the spec is not one it can
    estimate)."""
    if seconds is None:
        return "not known yet"
    text = format_seconds(seconds)
    return text if text == "under a second" else f"about {text}"


def md_escape(text: str) -> str:
    """Escape markdown (and Streamlit's $…$ LaTeX) so a file name or message shows as typed."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in str(text))


def error_message(exc: BaseException) -> str:
    """The text :func:`show_error` shows for ``exc`` (no markdown escaping): the message of a
    DatasetError / ValueError, else a generic line naming the exception type."""
    if isinstance(exc, ValueError):  # DatasetError is a ValueError
        return str(exc) or type(exc).__name__
    if isinstance(exc, MemoryError):
        return "Not enough memory for this operation; try a smaller dataset or setting."
    return (f"Something went wrong ({type(exc).__name__}: {exc}). The details are in the "
            f"server log.")


def show_error(exc: BaseException, context: Optional[str] = None) -> None:
    """Show ``exc`` in the page with ``st.error`` — the message only, never a traceback.
    DatasetError/ValueError messages are shown as they are; anything else is logged on the
    server (with its traceback) and shown as a short generic line."""
    if not isinstance(exc, ValueError):
        _log.error("featagg: unexpected error", exc_info=exc)
    msg = md_escape(error_message(exc))
    st.error(f"{md_escape(context)}: {msg}" if context else msg, icon="⚠️")
