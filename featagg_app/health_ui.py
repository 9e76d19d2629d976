"""The data-health section the Data and Triage pages open with.

The cheap checks (duplicates, overlap, empty rows, unused features and labels, drift, the
graph and table checks; :func:`featagg_core.health.check` without label errors) run inline
once per dataset fingerprint and split, and are kept in ``st.session_state`` (a rerun, a
widget change, a visit to the other page reuse them). The label-error check trains the
default classifier once per fold, so it runs on the server's job runner
(:func:`featagg_app.runs_ui.page_result`, docs/RUN_MODEL.md) when the user asks for it,
and its alerts then replace the cheap ones (they include them).
"""
from __future__ import annotations

from typing import List, Optional

import streamlit as st

from featagg_app import runs_ui
from featagg_app.text import md_escape
from featagg_app.views import health as hv
from featagg_core.triage.report import alert_examples

__all__ = ["cheap_alerts", "show_alerts", "health_section"]

_CACHE = "_health_alerts"
#: datasets whose alerts a session keeps (switching back and forth costs nothing)
_KEEP = 4


def _key(data, split, label_errors: bool) -> tuple:
    return (data.fingerprint, None if split is None else split.split_id, bool(label_errors))


def cheap_alerts(data, split) -> List[dict]:
    """The alerts of every check but the label errors, computed once per (dataset, split)
    in this session.

    Parameters
    ----------
    data : MultiLabelData, GraphData or CategoricalData
        The session's dataset.
    split : Split or None
        Its split (None: only the checks of the training rows).

    Returns
    -------
    list of dict
        The alerts' JSON, most serious first.
    """
    from featagg_core.health import check
    cache = st.session_state.setdefault(_CACHE, {})
    key = _key(data, split, False)
    if key not in cache:
        with st.spinner("Checking the data's health…"):
            cache[key] = [a.to_dict() for a in check(data, split, label_errors=False)]
        while len(cache) > _KEEP:
            cache.pop(next(iter(cache)))
    return cache[key]


def show_alerts(alerts: Optional[List[dict]], *, why: str = "", heading: str = "Data health",
                note: str = "") -> None:
    """The alerts, most serious first: a count per severity, then one expander per alert
    (its severity in colour and its message as the title; examples and what to do inside).

    Parameters
    ----------
    alerts : list of dict or None
        The alerts' JSON; None when the checks did not run (``why`` says why).
    why : str, default=""
        Why there are no alerts to show.
    heading : str, default="Data health"
        The subheader.
    note : str, default=""
        A caption under the counts (e.g. whether label errors were looked for).
    """
    st.subheader(heading)
    if alerts is None:
        st.caption(f"Not checked: {md_escape(why)}")
        return
    st.markdown(f"**{hv.counts_text(alerts)}**" + (" (most serious first)" if alerts else ""))
    if note:
        st.caption(note)
    for a in hv.sorted_alerts(alerts):
        sev = str(a.get("severity", ""))
        label = (f":{hv.SEVERITY_COLOUR.get(sev, 'gray')}[**{sev}**] · "
                 f"{md_escape(str(a.get('message', '')))}")
        with st.expander(label, expanded=False):
            ex = alert_examples(a)
            st.markdown(f"**Check:** {str(a.get('type', '')).replace('_', ' ')} · "
                        f"**count:** {int(a.get('count') or 0):,}"
                        + (f"\n\n**Examples:** {md_escape(ex)}" if ex else "")
                        + f"\n\n**What to do:** {md_escape(str(a.get('hint', '')))}")


def health_section(page: str, data, split) -> List[dict]:
    """The Data page's section: the cheap alerts at once, and a button that looks for
    label errors on the job runner (multi-label data); shows them, returns what it showed.

    Parameters
    ----------
    page : str
        The page's id (its job slot lives in its namespace).
    data : MultiLabelData, GraphData or CategoricalData
        The session's dataset.
    split : Split or None
        Its split.

    Returns
    -------
    list of dict
        The alerts shown.
    """
    try:
        alerts = cheap_alerts(data, split)
    except Exception as exc:  # noqa: BLE001 - the message, never a traceback
        show_alerts(None, why=f"the checks failed ({exc})")
        return []
    note, btn = "", f"{page}_health_label_errors"
    if data.kind == "multilabel":
        def work(progress, cancel, data=data, split=split):
            from featagg_core.health import check
            progress(0.0, "looking for label errors (the classifier on every fold)")
            return [a.to_dict() for a in check(data, split)]
        # a button's value is in the session state on the rerun its press caused, before
        # it is drawn: the job is queued here and the button drawn under the alerts
        full = runs_ui.page_result(page, "health", _key(data, split, True), "Label errors",
                                   work, pressed=bool(st.session_state.get(btn)))
        if full is not None:
            alerts, note = full, ("Label errors looked for: out-of-fold scores of the "
                                  "default classifier on the training rows.")
        else:
            note = ("Label errors not looked for yet: that trains the classifier once per "
                    "fold of the training rows (the button below).")
    show_alerts(alerts, note=note)
    if data.kind == "multilabel" and full is None:
        st.button("Look for label errors", key=btn,
                  disabled=runs_ui.running_job(page, "health") is not None,
                  help="trains the default classifier on 5 folds of the training rows and "
                       "flags the labels its out-of-fold scores disagree with most")
    return alerts
