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
    # the graph's bottom line names a selector and d (or all features), from the table
    sel = [r for r in rep.record["experiments"][0]["tables"]["selection"] if "ACC" in r]
    best = max(sel, key=lambda r: r["ACC"])
    text = rep.record["recommendation"]["text"]
    assert (f"d = {best['d']} features with {best['method']}" in text
            if best["method"] != "all features" else text.startswith("Keep all")), text
    # a section in the report is never also "not in this report" (the smaller protocol,
    # planned only when the larger does not fit, is not missing)
    titles = {e["title"] for e in rep.record["experiments"]}
    missing = " ".join(v for v in rep.record["verdict"] if v.startswith("Not in this report"))
    assert not any(T._step_title(s) in missing for s in rep.record["budget"]["steps"]
                   if s["status"] == "done"), missing
    assert isinstance(rep.record["health"]["alerts"], list)
    assert titles
    rng = np.random.default_rng(0)
    a = rng.integers(0, 30, 2000)
    t = CategoricalData(table=pd.DataFrame({"a": a.astype(str),
                                            "b": rng.integers(0, 4, 2000).astype(str)}),
                        labels=(rng.random(2000) < rng.random(30)[a]).astype(np.int8),
                        label_name="y", name="t")
    rep = T.run_triage(t, budget_s=600, speed=speed)
    kinds = [e["kind"] for e in rep.record["experiments"]]
    assert kinds[0] == "vocabulary"
    assert rep.record["recommendation"]["text"].startswith("Compress every column to m = ")
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
    # the command prints what the page shows first: the recommendation and the alerts
    assert summary["recommendation"] == rec["recommendation"]["text"] != ""
    assert [a["type"] for a in summary["alerts"]] == [a["type"] for a in
                                                      rec["health"]["alerts"]]
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


# ----------------------------------------------------------------------------- honest timings
def _sleeper(seconds, cold=0.0):
    """A "fit" that sleeps ``seconds`` (``cold`` more on its first call: compilation)."""
    import time
    calls = []

    def fit():
        time.sleep(seconds + (cold if not calls else 0.0))
        calls.append(1)
    fit.calls = calls
    return fit


def test_a_fit_of_known_length_is_timed_once_or_repeated_to_cover_0_2_s():
    from featagg_core.utils.timing import MIN_TOTAL_S, time_fit
    slow = time_fit(_sleeper(0.25))
    assert slow.repeats == 1 and 0.25 <= slow.seconds < 0.4 and not slow.too_fast
    short = time_fit(_sleeper(0.04))
    # 0.04 s a fit: repeated until the repeats add up to 0.2 s (5 fits, 6 on jitter)
    assert 5 <= short.repeats <= 6 and short.total >= MIN_TOTAL_S
    assert 0.04 <= short.seconds < 0.08 and len(short.cpu) == short.repeats
    assert all(c < 0.02 for c in short.cpu)          # sleeping costs no CPU
    # a fit already made (>= 0.2 s) is not run again
    fit = _sleeper(1.0)
    again = time_fit(fit, first=(0.3, 0.29))
    assert not fit.calls and again.wall == (0.3,) and again.cpu == (0.29,)


def test_compilation_is_not_timed():
    from featagg_core.utils.timing import time_fit
    fit = _sleeper(0.05, cold=0.5)
    t = time_fit(fit, warm=fit)
    assert max(t.wall) < 0.2 and 0.05 <= t.seconds < 0.1
    assert len(fit.calls) == t.repeats + 1           # the warm call, untimed


def test_a_fast_function_is_too_fast_to_time():
    from featagg_core.utils.timing import compare, time_fit
    fast = time_fit(lambda: sum(range(10)))
    assert fast.too_fast and fast.text() == "too fast to time"
    claim = compare(fast, time_fit(_sleeper(0.25)))
    assert claim.kind == "too_fast" and math.isnan(claim.ratio)
    assert "too fast to time" in claim.text() and "×" not in claim.text()


def test_speed_ups_only_outside_the_spread():
    from featagg_core.utils.timing import compare, time_fit
    a, b = time_fit(_sleeper(0.06)), time_fit(_sleeper(0.06))
    same = compare(a, b)
    assert same.kind == "same" and "no measurable difference" in same.text()
    assert "×" not in same.text()
    slow, fast = time_fit(_sleeper(0.3)), time_fit(_sleeper(0.06))
    claim = compare(slow, fast)
    assert claim.kind == "faster" and 3.5 < claim.ratio < 5.5
    assert claim.text().startswith(f"trains {claim.ratio:.1f}× faster")
    assert compare(fast, slow).kind == "slower"
    # one timing each, 10 % apart: within the assumed noise, so no claim
    from featagg_core.utils.timing import Timing
    assert compare(Timing((1.0,)), Timing((0.9,))).kind == "same"
    assert compare(Timing((1.0,)), Timing((0.5,))).kind == "faster"


def test_tradeoff_claims_follow_the_timings_and_one_model_is_reported_once():
    """Hand-made rows and timings: a DEFRAG row whose spread is clear of the raw one gets
    its ratio, an overlapping one "no measurable difference"; KTXMLC rows equal to
    One-vs-all's (one flat tree) are named as such and the verdict reports them once."""
    from featagg_core.runs.experiments.multilabel import _relative, _tradeoff_summary
    from featagg_core.utils.timing import Timing

    def row(kind, d0, p1, secs):
        name = {"ktxmlc": "KTXMLC", "ova": "One-vs-all"}[kind]
        return {"kind": kind, "classifier": name, "d0": d0, "status": "done", "P@1": p1,
                "P@5": p1 / 2, "features": 100 if d0 is None else 20, "model_bytes": 10,
                "train_s": secs}
    rows = [row("ova", None, 0.60, 1.0), row("ova", 8, 0.595, 0.3),
            row("ova", 16, 0.594, 0.95)]
    timings = {0: Timing((1.0, 1.02, 0.98)), 1: Timing((0.3, 0.31, 0.29)),
               2: Timing((0.95, 0.97, 0.93))}
    _relative(rows, timings)
    assert rows[1]["speed"] == f"{1.0 / 0.3:.1f}× faster"
    assert abs(rows[1]["speed-up"] - 1.0 / 0.3) < 1e-9
    assert rows[2]["speed"] == "no measurable difference" and math.isnan(rows[2]["speed-up"])
    _, verdict = _tradeoff_summary(rows, ["ova"], False)
    assert "no measurable difference" in verdict[0] and "d0 = 16" in verdict[0]
    kt = [dict(r, kind="ktxmlc", classifier="KTXMLC", **{"same model as": "One-vs-all"})
          for r in rows]
    _relative(kt, timings)
    _, verdict = _tradeoff_summary(kt + rows, ["ktxmlc", "ova"], False)
    assert sum("KTXMLC" in v for v in verdict) == 1 and "one flat tree" in verdict[0]


def test_no_claim_from_timings_under_0_2_s(report):
    """The fixture's set has 360 rows: every fit is a few milliseconds. A row is timed
    until its repeats cover 0.2 s or said to be too fast; no sentence claims a speed-up
    or a slow-down unless both timings behind it cover 0.2 s."""
    rec = report.record
    exp = next(e for e in rec["experiments"] if e["kind"] == "defrag_tradeoff")
    rows = [r for r in exp["tables"]["rows"] if r.get("status") == "done"]
    raw = {r["kind"]: r for r in rows if r["d0"] is None}
    for r in rows:
        assert r["fits timed"] >= 1 and r["train_min_s"] <= r["train_s"] <= r["train_max_s"]
        sp = r.get("speed", "")
        if sp.endswith("faster") or sp.endswith("slower"):
            ref = raw["ktxmlc" if r["kind"] == "per_tree" else r["kind"]]
            assert r["train_total_s"] >= 0.2 and ref["train_total_s"] >= 0.2
        elif r["d0"] is not None:
            assert sp in ("no measurable difference", "too fast to time")
    claims = [v for v in rec["verdict"] if "× faster" in v or "× slower" in v]
    for v in claims:
        assert any(r.get("speed", "") in v for r in rows if r.get("speed", "").endswith(
            ("faster", "slower"))), v
    assert "0.0 s vs 0.0 s" not in " ".join(rec["verdict"])


def test_the_same_triage_twice_gives_the_same_recommendation(data, report, speed):
    again = T.run_triage(data, budget_s=600, speed=speed, source="synthetic")
    a, b = report.record["recommendation"], again.record["recommendation"]
    assert a["text"] == b["text"] and a["choice"] == b["choice"]
    assert a["choice"]["seeds"] >= 3 and len(a["evidence"]["raw"]) >= 3
    assert a["text"].startswith("Train ") and "validation P@1" in a["text"]


def test_the_recommendation_follows_the_validation_rows(data, report):
    """Recomputed by hand from the runs: the raw classifier with the higher validation
    P@1 and DEFRAG at the largest d0 keeping 98 % of it over the seeds."""
    from featagg_core.triage.recommend import KEEP_P1
    rec = report.record["recommendation"]
    ev = rec["evidence"]
    trade = next(e for e in report.experiments if e.kind == "defrag_tradeoff")
    raws = [(r, run) for r, run in zip(trade.tables["rows"], trade.runs)
            if r["d0"] is None and r["kind"] != "per_tree" and not r.get("same model as")]
    best = max(raws, key=lambda p: p[1].metrics["valid"]["P@1"])
    assert rec["choice"]["classifier"] == best[0]["kind"]
    assert ev["raw"][0] == best[1].metrics["valid"]["P@1"]
    keeps = bool(ev["defrag"]) and np.mean(ev["defrag"]) >= KEEP_P1 * np.mean(ev["raw"])
    assert (rec["choice"]["features"] == "defrag") == keeps


def test_the_offline_report_opens_with_the_recommendation_and_the_alerts(data, report,
                                                                         speed):
    """The HTML report: the recommendation, then the health alerts (most serious first,
    each with its count as in the JSON), then the verdict; a replay gives the same alerts."""
    import html as _html
    rec = report.record
    alerts = rec["health"]["alerts"]
    assert alerts, "the synthetic set has unused features at least"
    order = {"error": 0, "warning": 1, "info": 2}
    assert [order[a["severity"]] for a in alerts] == sorted(order[a["severity"]]
                                                            for a in alerts)
    page = render_html(rec)
    body = page.split("<body>")[1]
    i_rec, i_health, i_verdict = (body.index("<h2>Recommendation</h2>"),
                                  body.index("<h2>Data health</h2>"),
                                  body.index("<h2>Verdict</h2>"))
    assert i_rec < i_health < i_verdict
    assert _html.escape(rec["recommendation"]["text"]) in body
    pos = [body.index(f'data-alert="{a["type"]}"') for a in alerts]
    assert pos == sorted(pos)
    for i, a in enumerate(alerts):
        assert f'data-path="health/alerts/{i}/count" data-value="{a["count"]!r}"' in body
        assert _html.escape(a["message"]) in body and _html.escape(a["hint"]) in body
    again = T.run_triage(data, replay=json.loads(json.dumps(rec)), speed=speed)
    assert json.dumps(again.record["health"]["alerts"]) == json.dumps(rec["health"]["alerts"])



def test_without_validation_rows_the_recommendation_says_it_rests_on_the_test_rows(data,
                                                                                   speed):
    split = make_split(data, valid_size=0.0, random_state=0)
    rep = T.run_triage(data, budget_s=600, split=split, speed=speed)
    rec = rep.record["recommendation"]
    assert rec["evidence"]["metric"] == "test P@1" and "test P@1 is" in rec["text"]
    assert "no validation rows" in rec["text"]
    trade = next(e for e in rep.experiments if e.kind == "defrag_tradeoff")
    first = {r["kind"]: run for r, run in zip(trade.tables["rows"], trade.runs)
             if r["d0"] is None}
    assert rec["evidence"]["raw"][0] == first[rec["choice"]["classifier"]].metrics["test"]["P@1"]


def test_claims_are_made_on_cpu_seconds_when_both_fits_have_them():
    """A loaded machine stretches the wall time of the faster fit (2.0 s wall) though it
    did half the work (0.25 vs 0.5 CPU s): the claim follows the CPU seconds and says so;
    a fit that mostly waits (a sleep) is judged on its wall time."""
    from featagg_core.utils.timing import Timing, compare, time_fit
    claim = compare(Timing((1.0,), (0.5,)), Timing((2.0,), (0.25,)))
    assert claim.kind == "faster" and claim.basis == "CPU" and claim.ratio == 2.0
    assert claim.text() == "trains 2.0× faster (CPU 0.50 s → 0.25 s)"
    assert compare(Timing((1.0,), (0.5,)), Timing((2.0,))).basis == "wall"

    def burn():                                   # about 0.1 s of CPU
        import time as _t
        end = _t.process_time() + 0.1
        while _t.process_time() < end:
            pass
    busy = time_fit(burn)
    assert sum(busy.cpu) >= 0.1 * busy.repeats and not busy.too_fast
    same = compare(busy, time_fit(burn))           # two equal CPU-bound fits
    assert same.basis == "CPU" and same.kind == "same"
    assert compare(busy, time_fit(_sleeper(0.3))).basis == "wall"
