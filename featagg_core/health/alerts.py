"""The :class:`Alert` a data-health check returns, the severity order and the JSON form.

An alert names one problem of the data in the user's terms: its ``type`` (a stable
identifier, e.g. ``duplicate_rows``), its ``severity`` (``error`` -- the numbers shown are
wrong until it is fixed, e.g. test rows leaked into training; ``warning`` -- likely to
hurt; ``info`` -- worth knowing), how many rows / features / labels it concerns, *all*
row indices for the row-level types (0-based, training rows in ``rows``, test rows in
``test_rows``; a list longer than :data:`MAX_LIST` is cut and ``truncated`` set), a few
named examples, one sentence saying what was found and a hint saying what to do.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["Alert", "SEVERITIES", "MAX_LIST", "sort_alerts", "alerts_to_json", "format_alerts"]

#: severities, most serious first (the order alerts are listed in)
SEVERITIES = ("error", "warning", "info")

#: the longest ``rows`` / ``test_rows`` list an alert's JSON carries (``truncated`` beyond)
MAX_LIST = 100_000


@dataclass
class Alert:
    """One data-health finding.

    Parameters
    ----------
    type : str
        Stable identifier of the check (``duplicate_rows``, ``train_test_overlap`` ...).
    severity : str
        ``"error"``, ``"warning"`` or ``"info"``.
    count : int
        How many rows (or features, labels, columns, edges) the finding concerns.
    message : str
        What was found, one sentence in the user's terms.
    hint : str
        What to do about it.
    rows : numpy.ndarray, optional
        0-based training-row indices concerned (all of them for the row-level types).
    test_rows : numpy.ndarray, optional
        0-based test-row indices concerned.
    examples : list, optional
        A few names (features, labels, columns, values) or row ids to show.
    extra : dict, optional
        Further JSON-able fields of the check (pairs, thresholds, frequencies ...).
    """
    type: str
    severity: str
    count: int
    message: str
    hint: str
    rows: Optional[np.ndarray] = None
    test_rows: Optional[np.ndarray] = None
    examples: List[Any] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """The alert as a JSON-able dict.

        Returns
        -------
        dict
            ``type``, ``severity``, ``count``, ``rows``, ``test_rows`` (lists of ints, at
            most :data:`MAX_LIST` each), ``truncated`` (True when a list was cut),
            ``message``, ``hint``, ``examples`` and the check's extra fields.
        """
        out: Dict[str, Any] = {"type": self.type, "severity": self.severity,
                               "count": int(self.count)}
        truncated = False
        for key in ("rows", "test_rows"):
            v = getattr(self, key)
            if v is None:
                out[key] = []
                continue
            v = np.asarray(v, dtype=np.int64)
            if v.size > MAX_LIST:
                truncated = True
                v = v[:MAX_LIST]
            out[key] = v.tolist()
        out["truncated"] = truncated
        out["message"] = self.message
        out["hint"] = self.hint
        out["examples"] = [_jsonable(e) for e in self.examples]
        for k, v in self.extra.items():
            out[k] = _jsonable(v)
        return out


def _jsonable(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


def sort_alerts(alerts: Sequence[Alert]) -> List[Alert]:
    """Alerts by severity (error, warning, info), then by count (largest first), then type.

    Parameters
    ----------
    alerts : sequence of Alert
        The alerts.

    Returns
    -------
    list of Alert
        The sorted alerts.
    """
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(alerts, key=lambda a: (rank.get(a.severity, len(SEVERITIES)),
                                         -int(a.count), a.type))


def alerts_to_json(alerts: Sequence[Alert]) -> Dict[str, Any]:
    """The JSON document of a list of alerts.

    Parameters
    ----------
    alerts : sequence of Alert
        The alerts (kept in the given order).

    Returns
    -------
    dict
        ``{"alerts": [alert.to_dict(), ...]}``.
    """
    return {"alerts": [a.to_dict() for a in alerts]}


def format_alerts(alerts: Sequence[Alert]) -> str:
    """The alerts as plain text, one paragraph each (severity, message, what to do).

    Parameters
    ----------
    alerts : sequence of Alert
        The alerts (kept in the given order).

    Returns
    -------
    str
        The text ("No problems found." when there are none).
    """
    if not alerts:
        return "No problems found."
    lines = []
    for a in alerts:
        lines.append(f"[{a.severity.upper()}] {a.message}")
        if a.examples:
            shown = ", ".join(str(e) for e in a.examples[:5])
            lines.append(f"    e.g. {shown}")
        lines.append(f"    What to do: {a.hint}")
    return "\n".join(lines)


def dumps(alerts: Sequence[Alert]) -> str:
    """:func:`alerts_to_json` as a JSON string.

    Parameters
    ----------
    alerts : sequence of Alert
        The alerts.

    Returns
    -------
    str
        The JSON text.
    """
    return json.dumps(alerts_to_json(alerts), indent=1)
