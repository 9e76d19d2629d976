"""The data-health alerts as the Triage and Data pages show them (no streamlit here).

Alerts are the JSON dicts of :meth:`featagg_core.health.Alert.to_dict` (the triage record
keeps them so), most serious first. The pages show a one-line count per severity, then one
row per alert: severity, what was found, how many, a few examples, what to do -- the
report's own wording (:func:`featagg_core.triage.report.alert_examples`), so the page, the
HTML report and the command line say the same thing.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import pandas as pd

from featagg_core.triage.report import alert_examples

__all__ = ["SEVERITY_ORDER", "sorted_alerts", "severity_counts", "counts_text",
           "alerts_frame", "SEVERITY_ICON"]

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
#: the icon shown before each severity
SEVERITY_ICON = {"error": "🔴", "warning": "🟠", "info": "🔵"}


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


def alerts_frame(alerts: Sequence[dict]) -> pd.DataFrame:
    """One row per alert, most serious first: severity (with its icon), the check, the
    count, what was found, a few examples and what to do.

    Parameters
    ----------
    alerts : sequence of dict
        Alerts as JSON dicts.

    Returns
    -------
    pandas.DataFrame
        Columns ``severity``, ``check``, ``count``, ``what was found``, ``examples``,
        ``what to do`` (strings but the count).
    """
    rows = [{"severity": f"{SEVERITY_ICON.get(a.get('severity'), '')} {a.get('severity')}",
             "check": str(a.get("type", "")).replace("_", " "),
             "count": int(a.get("count") or 0),
             "what was found": str(a.get("message", "")),
             "examples": alert_examples(a),
             "what to do": str(a.get("hint", ""))} for a in sorted_alerts(alerts)]
    return pd.DataFrame(rows, columns=["severity", "check", "count", "what was found",
                                       "examples", "what to do"])
