"""Triage page (AppTest): a triage of a small dataset runs as a job, its runs land in the
registry, the verdict and tables are the record's, and both downloads are offered."""
from page_util import click, ok, runs, widget

from featagg_core.data.synthetic import make_powerlaw_multilabel


def test_triage_page_runs_and_offers_the_report(app_for):
    data = make_powerlaw_multilabel(200, 80, 12, random_state=2, test_size=0.25)
    at = app_for("triage", data)
    at.run()
    ok(at)
    assert any("Run the triage" in b.label for b in at.button)
    widget(at.select_slider, "tri_budget").set_value(120)
    click(at, "tri_run")
    ok(at)
    record = at.session_state["featagg.pages"]["triage"]["record"]
    text = " ".join(m.value for m in at.markdown)
    for v in record["verdict"][:3]:
        assert v.split(":")[0] in text
    done = [r for r in runs(at) if r.status == "done"]
    assert {r.run_id for r in done} >= {s["run_id"] for s in record["budget"]["steps"]
                                         if s["status"] == "done"}
    assert any("KTXMLC" in r.name for r in done)
    labels = [b.proto.label for b in at.get("download_button")]
    assert any("HTML" in x for x in labels) and any("JSON" in x for x in labels)
    tables = [t.value for t in at.table]
    assert any("P@1 kept" in t.columns for t in tables)


def test_triage_page_opens_with_the_health_alerts_then_the_recommendation(app_for):
    """Before a run: the cheap health checks, most serious first. After: the record's
    recommendation, then its alerts (the same, plus label errors when the budget allowed),
    then the verdict."""
    import scipy.sparse as sp
    from featagg_core.data import MultiLabelData
    base = make_powerlaw_multilabel(200, 80, 12, random_state=2, test_size=0.25)
    X = sp.vstack([base.X, base.X[:3]]).tocsr()           # 3 rows repeated
    Y = sp.vstack([base.Y, base.Y[:3]]).tocsr()
    data = MultiLabelData(X=X, Y=Y, X_test=base.X_test, Y_test=base.Y_test,
                          feature_names=base.feature_names, label_names=base.label_names,
                          name="repeats")
    at = app_for("triage", data)
    at.run()
    ok(at)
    heads = [h.value for h in at.subheader]
    assert heads[0] == "Data health"
    import re
    sev = [m.group(1) for e in at.expander
           for m in [re.match(r"^:\w+\[\*\*(error|warning|info)\*\*\] · ", e.label)] if m]
    assert sev and sev == sorted(sev, key={"error": 0, "warning": 1, "info": 2}.get)
    assert any("repeat" in e.label or "duplicate" in e.label for e in at.expander)
    widget(at.select_slider, "tri_budget").set_value(120)
    click(at, "tri_run")
    ok(at)
    record = at.session_state["featagg.pages"]["triage"]["record"]
    heads = [h.value for h in at.subheader]
    assert heads[:3] == ["Recommendation", "Data health", "Verdict"]
    from featagg_app.text import md_escape
    assert at.info[0].value == md_escape(record["recommendation"]["text"])
    types = [a["type"] for a in record["health"]["alerts"]]
    assert "duplicate_rows" in types
    dup = next(a for a in record["health"]["alerts"] if a["type"] == "duplicate_rows")
    from featagg_core.runs.split import make_split
    split = make_split(data, **record["reproduce"]["split"])
    seen = set(split.train.tolist()) | set(split.valid.tolist())
    n = base.X.shape[0]             # rows n..n+2 repeat rows 0..2: flagged when both train
    assert sorted(dup["rows"]) == [n + i for i in range(3) if i in seen and n + i in seen]
