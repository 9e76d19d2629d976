"""Triage page (AppTest): a triage of a small dataset runs as a job, its runs land in the
registry, the verdict and tables are the record's, and both downloads are offered."""
from page_util import click, ok, runs

from featagg_core.data.synthetic import make_powerlaw_multilabel


def test_triage_page_runs_and_offers_the_report(app_for):
    data = make_powerlaw_multilabel(200, 80, 12, random_state=2, test_size=0.25)
    at = app_for("triage", data)
    at.run()
    ok(at)
    assert any("Run the triage" in b.label for b in at.button)
    at.select_slider(key="tri_budget").set_value(120)
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
