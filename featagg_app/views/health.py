"""The data-health alerts as the Triage and Data pages show them (no streamlit here).

Alerts are the JSON dicts of :meth:`featagg_core.health.Alert.to_dict` (the triage record
keeps them so), most serious first. The pages show a one-line count per severity, then one
row per alert: severity, what was found, how many, a few examples, what to do -- the
report's own wording (:func:`featagg_core.triage.report.alert_examples`), so the page, the
HTML report and the command line say the same thing.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

__all__ = ["SEVERITY_ORDER", "sorted_alerts", "severity_counts", "counts_text",
           "SEVERITY_COLOUR"]

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
#: the colour each severity is written in (Streamlit's markdown colours; no emoji: a
#: browser without an emoji font draws empty boxes)
SEVERITY_COLOUR = {"error": "red", "warning": "orange", "info": "blue"}


def sorted_alerts(alerts: Sequence[dict]) -> List[dict]:
    """The alerts most serious first (error, warning, info; the checks' order within).

    Parameters
    ----------
    alerts : sequence of dict
        Alerts as JSON dicts.

    Returns
    -------
    list of dict
        The same dicts, sorted.
    """
    return sorted(alerts, key=lambda a: SEVERITY_ORDER.get(a.get("severity"), 3))


def severity_counts(alerts: Sequence[dict]) -> Dict[str, int]:
    """How many alerts of each severity.

    Parameters
    ----------
    alerts : sequence of dict
        Alerts as JSON dicts.

    Returns
    -------
    dict of str to int
        ``{"error": n, "warning": n, "info": n}``.
    """
    return {s: sum(a.get("severity") == s for a in alerts) for s in SEVERITY_ORDER}


def counts_text(alerts: Sequence[dict]) -> str:
    """One line: "1 error, 2 warnings, 3 infos" (or that nothing was found).

    Parameters
    ----------
    alerts : sequence of dict
        Alerts as JSON dicts.

    Returns
    -------
    str
        The line.
    """
    c = severity_counts(alerts)
    parts = [f"{n} {s}{'' if n == 1 else 's'}" for s, n in c.items() if n]
    return ", ".join(parts) if parts else "no alert: the health checks found nothing"
