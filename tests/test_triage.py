"""The triage: its raw-vs-DEFRAG numbers equal the pipelines run by hand, a replay gives
the same numbers, the HTML shows exactly the JSON's numbers and needs no network, a step
that overruns its deadline is stopped and reported, graphs and tables get their own
battery, and the command line speaks in its own options."""
import html.parser
import json
import math

import numpy as np
import pandas as pd
import pytest

from featagg_core.triage import battery as T
from featagg_core.data import CategoricalData
from featagg_core.experiment import make_split, run_pipeline
from featagg_core.triage.report import format_value, render_html, write_report
from featagg_core.data.synthetic import make_attributed_sbm, make_powerlaw_multilabel


@pytest.fixture(scope="module")
def speed():
    from featagg_core.runs.estimate import default_speed
    return default_speed()


@pytest.fixture(scope="module")
def data():
    return make_powerlaw_multilabel(360, 150, 25, random_state=1, test_size=0.25)


@pytest.fixture(scope="module")
def report(data, speed):
    return T.run_triage(data, budget_s=600, speed=speed, source="synthetic")


def _resolve(record, path):
    node = record
    for part in path.split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def test_raw_vs_defrag_numbers_equal_run_pipeline_by_hand(data, report):
    rec = report.record
    split = make_split(data, **{k: v for k, v in rec["reproduce"]["split"].items()})
    assert split.split_id == rec["split"]["split_id"]
    exp = next(e for e in rec["experiments"] if e["kind"] == "defrag_tradeoff")
    kinds = {(r["kind"], r["d0"]) for r in exp["tables"]["rows"]}
    assert ("ktxmlc", None) in kinds and ("ktxmlc", 8) in kinds and ("ova", None) in kinds
    plan = {(s.get("kind"), s.get("d0")): s for s in rec["reproduce"]["plan"]
            if s["step"] == "tradeoff"}
    for row in exp["tables"]["rows"]:
        fresh = run_pipeline(data, split, plan[(row["kind"], row["d0"])]["spec"])
        for key in ("P@1", "P@3", "P@5", "PSP@1", "PSP@5", "coverage@5"):
            assert row[key] == fresh.metrics["test"][key], (row["run"], key)
    ref = next(e for e in rec["experiments"] if e["kind"] == "refrag_tuning")
    assert ref["tables"]["rows"][0]["P@5"] >= ref["tables"]["rows"][0]["base P@5"] - 0.05


def test_the_record_is_strict_json_and_reproducible(data, report, speed):
    rec = report.record
    text = json.dumps(rec, allow_nan=False)                  # every number finite or null
    assert rec["dataset"]["fingerprint"] == data.fingerprint
    assert {"seed", "split", "versions", "plan", "command"} <= set(rec["reproduce"])
    again = T.run_triage(data, replay=json.loads(text), speed=speed)
    a = {r["run"]: r for e in rec["experiments"] for r in e["tables"].get("rows", [])
         if "run" in r}
    b = {r["run"]: r for e in again.record["experiments"]
         for r in e["tables"].get("rows", []) if "run" in r}
    assert a.keys() == b.keys() and a
    for name in a:
        for key in ("P@1", "P@5", "PSP@5", "coverage@5"):
            if key in a[name]:
                assert a[name][key] == b[name][key], (name, key)
    assert again.record["split"]["split_id"] == rec["split"]["split_id"]
    assert again.record["reproduce"]["replayed"] is True


class _Nums(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.spans, self._open, self.srcs = [], None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "span" and a.get("class") == "num":
            self._open = [a["data-path"], a["data-value"], ""]
        for key in ("src", "href"):
            if a.get(key):
                self.srcs.append(a[key])

    def handle_data(self, d):
        if self._open is not None:
            self._open[2] += d

    def handle_endtag(self, tag):
        if tag == "span" and self._open is not None:
            self.spans.append(tuple(self._open))
            self._open = None


def test_html_numbers_are_the_json_numbers_and_it_needs_no_network(report, tmp_path):
    rec = report.record
    paths = write_report(rec, tmp_path / "r.html", tmp_path / "r.json")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    back = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert back == json.loads(json.dumps(rec)) and set(paths) == {"html", "json"}
    p = _Nums()
    p.feed(page)
    assert len(p.spans) > 50
    for path, value, text in p.spans:
        v = _resolve(back, path)
        assert repr(v) == value, path
        assert text == format_value(path.rsplit("/", 1)[-1], v), path
    assert not p.srcs                                   # no <script src>, <link href>, <img>
    assert page.count('class="fig"') >= 3 and "Plotly.newPlot" in page
    assert "cdn.plot.ly/plotly" not in page.split("<body>")[1]
    for verdict in rec["verdict"]:
        assert verdict.replace("&", "&amp;").replace("<", "&lt;") in page


def test_a_step_that_overruns_is_stopped_and_reported(data, speed, monkeypatch):
    monkeypatch.setattr(T, "MIN_STEP_S", 0.0)
    monkeypatch.setattr(T, "OVERRUN", 1e-6)               # every deadline already passed
    rep = T.run_triage(data, budget_s=600, speed=speed)
    steps = rep.record["budget"]["steps"]
    ran = [s for s in steps if s["status"] != "skipped"]
    # the pair the verdict is about (raw KTXMLC, DEFRAG d0 = 8) is stopped only at the
    # overall deadline; every other step at its own
    assert [bool(s["must"]) for s in steps[:2]] == [True, True]
    assert all(s["status"] == "done" for s in steps[:2])
    rest = [s for s in ran if not s.get("must")]
    assert rest and all(s["status"] == "stopped" for s in rest)
    assert all("over its time share" in (s["why"] or "") for s in rest)
    assert any(v.startswith("Not in this report") for v in rep.record["verdict"])


def test_a_small_budget_plans_fewer_steps(data, speed):
    rep = T.run_triage(data, budget_s=1.0, speed=speed)
    steps = rep.record["budget"]["steps"]
    # the first step is planned whatever its estimate, but never starts past the deadline
    assert steps[0]["status"] in ("done", "stopped", "skipped")
    assert all(s["status"] == "skipped" for s in steps[1:])
    assert rep.record["verdict"][-1].startswith("Not in this report")


def test_graph_and_table_batteries(speed):
    g = make_attributed_sbm(200, 3, p_in=0.15, p_out=0.01, n_informative=10, n_noise=30,
                            random_state=3)
    rep = T.run_triage(g, budget_s=600, speed=speed)
    kinds = [e["kind"] for e in rep.record["experiments"]]
    assert kinds[0] == "bmgufs_protocol" and rep.record["dataset"]["stats"]["nodes"] == 200
    page = render_html(rep.record)
    assert 'data-figure="exp0-selection"' in page
    rng = np.random.default_rng(0)
    a = rng.integers(0, 30, 2000)
    t = CategoricalData(table=pd.DataFrame({"a": a.astype(str),
                                            "b": rng.integers(0, 4, 2000).astype(str)}),
                        labels=(rng.random(2000) < rng.random(30)[a]).astype(np.int8),
                        label_name="y", name="t")
    rep = T.run_triage(t, budget_s=600, speed=speed)
    kinds = [e["kind"] for e in rep.record["experiments"]]
    assert kinds[0] == "vocabulary"
    cols = rep.record["experiments"][0]["tables"]["columns"]
    assert cols[-1]["column"] == "total" and not math.isnan(cols[-1]["held-out MI loss"])
    # the verdict on the exact DP says the worst ratio, or that it matches when it does
    vocab = rep.record["experiments"][0]
    worst = min(r["ratio"] for r in vocab["tables"]["dp_ratio"])
    line = next(v for v in vocab["verdict"] if "exact DP" in v)
    if worst >= 0.99995:
        assert "matches the optimum on every one of them" in line, line
    else:
        assert f"reaches at least {worst:.4f} of the optimum" in line, line
    # the page's tables name their columns in words
    from featagg_app.views import triage as tv
    curve = next(e for e in rep.record["experiments"] if e["kind"] == "budget_curve")
    assert "fit time" in tv.summary_frame(curve).columns
    assert not any(c.endswith("_s") for c in tv.summary_frame(curve).columns)


# ----------------------------------------------------------------------------- CLI
def _dense_arff(path, n=150, d=6, L=3, seed=0, with_xml=False):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)).round(3)
    Y = (X[:, :L] + 0.3 * rng.random((n, L)) > 0.6).astype(int)
    Y[Y.sum(1) == 0, 0] = 1
    lines = ["@relation toy"] + [f"@attribute f{j} numeric" for j in range(d)] + \
        [f"@attribute l{j} {{0,1}}" for j in range(L)] + ["@data"]
    lines += [",".join([*map(str, X[i]), *map(str, Y[i])]) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    if with_xml:
        (path.parent / f"{path.stem}.labels.xml").write_text(
            '<?xml version="1.0"?><labels xmlns="http://mulan.sourceforge.net/labels">' +
            "".join(f'<label name="l{j}"></label>' for j in range(L)) + "</labels>")
    return path


PY_TERMS = ("xml=", "n_labels=", "label=")


def test_cli_speaks_in_its_own_options(tmp_path, capsys):
    from featagg_core.__main__ import main
    arff = _dense_arff(tmp_path / "toy.arff")
    code = main(["triage", str(arff), "--out", str(tmp_path / "r.html"), "--budget-s", "60"])
    err = capsys.readouterr().err
    assert code == 2 and "--label-columns" in err and "--labels-xml" in err
    assert not any(t in err for t in PY_TERMS), err
    code = main(["triage", str(arff), "--label-columns", "3", "--out",
                 str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"),
                 "--budget-s", "120"])
    out = capsys.readouterr()
    assert code == 0, out.err
    summary = json.loads(out.out)
    assert summary["report"].endswith("r.html") and summary["status"] == "done"
    rec = json.loads((tmp_path / "r.json").read_text())
    assert rec["dataset"]["stats"]["labels"] == 3 and rec["split"]["how"] == "random"
    import re
    visible = re.sub(r"<script.*?</script>", "", (tmp_path / "r.html").read_text(),
                     flags=re.S)                           # the page, not plotly.js
    text = out.out + out.err + visible
    assert not any(t in text for t in PY_TERMS)
    xml = _dense_arff(tmp_path / "toy2.arff", with_xml=True)
    code = main(["triage", str(xml), "--labels-xml", str(tmp_path / "toy2.labels.xml"),
                 "--out", str(tmp_path / "r2.html"), "--budget-s", "120"])
    assert code == 0, capsys.readouterr().err


def test_skipped_steps_are_taken_when_the_first_ones_ran_faster(data, speed, monkeypatch):
    monkeypatch.setattr(T, "_estimate", lambda *a, **k: 40.0)      # far too pessimistic
    rep = T.run_triage(data, budget_s=150, speed=speed)
    steps = rep.record["budget"]["steps"]
    added = [s for s in steps if (s["why"] or "").startswith("added while running")]
    assert steps[0]["status"] == "done" and added
    assert all(s["status"] == "done" for s in added)
    # the plan alone (70 % of 150 s at 40 s a step) had room for two steps
    assert sum(s["status"] == "done" for s in steps) > 2


def test_the_block_model_chart_spans_the_candidates_rre():
    """Candidate block models on a sparse graph differ in the third decimal of their RRE
    (Cora: 0.9953-0.9960): an axis from 0 to 1 draws ten equal bars. The report's chart
    spans the values instead, every bar inside it and labelled with its value."""
    from featagg_core.triage.report import experiment_figures
    rre = [0.9955, 0.9953, 0.9960, 0.9954]
    exp = {"kind": "bmgufs_protocol",
           "tables": {"selection": [], "block_models": [
               {"candidate": c, "RRE": v, "chosen": c == 1} for c, v in enumerate(rre)]}}
    (fid, _, fig), = experiment_figures(exp)
    assert fid == "rre"
    lo, hi = fig["layout"]["yaxis"]["range"]
    assert lo < min(rre) and hi > max(rre)
    # the spread of the values fills at least half of the axis (an axis from 0: 0.07 %)
    assert (max(rre) - min(rre)) / (hi - lo) >= 0.5
    assert fig["data"][0]["text"] == ["0.9955", "0.9953", "0.9960", "0.9954"]
    assert fig["data"][0]["marker"]["color"][1] != fig["data"][0]["marker"]["color"][0]


def test_the_d0_chart_says_when_ktxmlc_kept_one_flat_tree():
    """Bibtex's 159 labels fit two leaf clusters inside the beam, so KTXMLC trains one flat
    tree and its P@1 at every d0 equals One-vs-all's: the caption says why one curve is
    hidden. With different numbers it does not."""
    from featagg_core.triage.report import experiment_figures

    def rows(tree_p1):
        out = []
        for kind, name, p1 in (("ktxmlc", "KTXMLC", tree_p1), ("ova", "One-vs-all",
                                                               [0.64, 0.60, 0.56])):
            for d0, p in zip((None, 4, 8), p1):
                out.append({"kind": kind, "classifier": name, "d0": d0, "P@1": p,
                            "train_s": 0.3, "status": "done"})
        return {"kind": "defrag_tradeoff", "tables": {"rows": out}}

    same = {fid: cap for fid, cap, _ in experiment_figures(rows([0.64, 0.60, 0.56]))}
    assert "KTXMLC kept one flat tree" in same["d0_curve"]
    other = {fid: cap for fid, cap, _ in experiment_figures(rows([0.65, 0.61, 0.55]))}
    assert "flat tree" not in other["d0_curve"]


def test_time_chart_labels_do_not_overlap():
    """Runs that take the same time printed their "d0=…" labels on top of each other. Each
    shown label's centre now keeps a gap to every other (checked here in data units against
    the placement rule by hand), a label repeating the one on the same spot is left off,
    and every label stays in the hover."""
    from featagg_core.triage.report import _LABEL_GAP, _LABEL_SLOTS, experiment_figures

    out = []
    for kind, name in (("ktxmlc", "KTXMLC"), ("ova", "One-vs-all")):
        # KTXMLC kept one flat tree: the same points as One-vs-all's
        # (One-vs-all a little faster at d0=16, as on Bibtex)
        for d0, p, s in ((None, 0.64, 0.30), (4, 0.62, 0.30), (8, 0.615, 0.30),
                         (16, 0.56, 0.31 if kind == "ktxmlc" else 0.30), (32, 0.50, 0.90)):
            out.append({"kind": kind, "classifier": name, "d0": d0, "P@1": p,
                        "train_s": s, "status": "done"})
    figs = {fid: fig for fid, _, fig in
            experiment_figures({"kind": "defrag_tradeoff", "tables": {"rows": out}})}
    traces = [t for t in figs["d0_time"]["data"] if t.get("hovertext")]
    assert len(traces) == 2
    all_x = [x for t in figs["d0_time"]["data"] for x in t["x"]]
    all_y = [y for t in figs["d0_time"]["data"] for y in t["y"]]
    sx, sy = max(all_x) - min(all_x), max(all_y) - min(all_y)
    offset = {pos: (dx, dy) for pos, dx, dy in _LABEL_SLOTS}
    shown = []
    for t in traces:
        assert t["hovertext"] == [f"d0={d}" for d in (4, 8, 16, 32)]
        for x, y, text, pos in zip(t["x"], t["y"], t["text"], t["textposition"]):
            if text:
                dx, dy = offset[pos]
                shown.append((x / sx + dx, y / sy + dy, text))
    # the second trace repeats the first on the same spots, or close by: none of its
    # labels is shown
    assert [v for v in traces[1]["text"] if v] == []
    # d0=4 and d0=8 (same time, 0.005 apart) both show, on different sides
    assert sorted(s[2] for s in shown) == ["d0=16", "d0=32", "d0=4", "d0=8"]
    assert traces[0]["textposition"][:2] == ["top center", "bottom center"]
    for i, a in enumerate(shown):
        for b in shown[i + 1:]:
            assert abs(a[0] - b[0]) >= _LABEL_GAP[0] or abs(a[1] - b[1]) >= _LABEL_GAP[1]
