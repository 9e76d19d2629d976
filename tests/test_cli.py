"""Command line: the same numbers as the library, artifacts that reload, exit code 2 with a
one-line message on bad input."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from featagg_core import KTXMLC, Defrag, VocabularyCompressor, load_artifact, metrics
from featagg_core.__main__ import main
from featagg_core.cli.main import build_parser
from featagg_core.data import save_npz
from featagg_core.experiment import make_split
from featagg_core.data.samples import load_sample
from featagg_core.data.synthetic import (
    make_attributed_sbm,
    make_powerlaw_multilabel,
    make_zipf_categorical,
)

ROOT = Path(__file__).resolve().parents[1]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


@pytest.mark.parametrize("one_vs_all", [None, "never"])
def test_train_matches_library_on_bibtex(capsys, tmp_path, one_vs_all):
    data = load_sample("bibtex")
    # 2 trees of 4 leaf clusters: the library's default (one_vs_all="auto") keeps one flat
    # tree instead, --one-vs-all never the two trees
    params = dict(n_clusters=4, n_trees=2, max_leaf_labels=40, C=0.5, beam_width=10,
                  random_state=7)
    flag = [] if one_vs_all is None else ["--one-vs-all", one_vs_all]
    code, out, err = run_cli(capsys, "train", "sample:bibtex", "--n-clusters", 4,
                             "--n-trees", 2, "--max-leaf-labels", 40, "--seed", 7,
                             *flag, "--out", tmp_path / "m.fgb")
    assert code == 0, err
    assert "training KTXMLC" in err  # progress goes to stderr
    if one_vs_all is not None:
        params["one_vs_all"] = one_vs_all
    model = KTXMLC(**params).fit(data.X, data.Y)
    assert len(model.trees_) == (2 if one_vs_all == "never" else 1)
    scores = model.predict_scores(data.X_test, k=5)
    inv = metrics.inverse_propensity(data.Y)
    for k in (1, 3, 5):
        assert out["metrics"][f"P@{k}"] == pytest.approx(
            metrics.precision_at_k(data.Y_test, scores, k), abs=1e-12)
        assert out["metrics"][f"PSP@{k}"] == pytest.approx(
            metrics.psprecision_at_k(data.Y_test, scores, k, inv), abs=1e-12)
    assert out["metrics"]["P@1"] > 0.5  # a broken model cannot reach this on Bibtex

    # evaluate on the saved bundle gives the same numbers again
    code, ev, err = run_cli(capsys, "evaluate", tmp_path / "m.fgb", "sample:bibtex")
    assert code == 0, err
    assert ev["metrics"] == out["metrics"]


def test_train_refrag_tunes_by_default_and_alpha_fixes_it(capsys, tmp_path):
    """`train --refrag` tunes alpha, gamma and beta on validation rows as the dashboard
    does (issue 30); `--alpha` fixes alpha (gamma 1, beta 0.5 unless --gamma)."""
    from featagg_core.agglomeration.refrag_choice import TUNE_GRID
    common = ["train", "sample:bibtex", "--form", "flat", "--defrag", 16, "--refrag",
              "--shortlist", 20, "--seed", 1]
    code, tuned, err = run_cli(capsys, *common, "--out", tmp_path / "a.fgz")
    assert code == 0, err
    assert "REFRAG tuned" in tuned["name"]
    rr = load_artifact(tmp_path / "a.fgz").reranker
    assert rr.alpha in TUNE_GRID["alpha"] and rr.gamma in TUNE_GRID["gamma"]
    assert rr.propensity_exponent in TUNE_GRID["propensity_exponent"]
    code, fixed, err = run_cli(capsys, *common, "--alpha", 0.7, "--out", tmp_path / "b.fgz")
    assert code == 0, err
    assert "REFRAG tuned" not in fixed["name"]
    rr = load_artifact(tmp_path / "b.fgz").reranker
    assert (rr.alpha, rr.gamma, rr.propensity_exponent) == (0.7, 1.0, 0.5)
    assert fixed["base_metrics"] == tuned["base_metrics"]   # the same classifier


def test_agglomerate_writes_artifact_and_csv(capsys, tmp_path):
    data = load_sample("bibtex")
    code, out, err = run_cli(capsys, "agglomerate", "sample:bibtex", "--d0", 16,
                             "--representation", "X", "--seed", 3,
                             "--out", tmp_path / "d.fgz", "--clusters-csv", tmp_path / "c.csv")
    assert code == 0, err
    ref = Defrag(d0=16, representation="X", random_state=3).fit(data.X)
    assert out["n_clusters"] == ref.n_clusters_
    assert out["clustering_error"] == pytest.approx(ref.clustering_error_)
    np.testing.assert_array_equal(load_artifact(tmp_path / "d.fgz").labels_, ref.labels_)
    rows = (tmp_path / "c.csv").read_text().splitlines()
    assert rows[0] == "feature,cluster" and len(rows) == data.X.shape[1] + 1
    assert [int(r.split(",")[1]) for r in rows[1:]] == list(ref.labels_)


def test_compress_matches_library(capsys, tmp_path):
    table = make_zipf_categorical(4000, 300, n_columns=2, random_state=2)
    df = table.table.copy()
    df["clicked"] = table.labels
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, out, err = run_cli(capsys, "compress", path, "--label", "clicked", "--budget", 12,
                             "--out", tmp_path / "map.json")
    assert code == 0, err
    # the table has no test part: the CLI fits on the training rows of the default split
    # (a random 20 % held out, rows depending only on the number of rows and the seed)
    train = make_split(table).train
    for col_out, col in zip(out["columns"], table.table.columns):
        ref = VocabularyCompressor(12).fit(table.table[col].astype(str).to_numpy()[train],
                                           table.labels[train])
        assert col_out["I(Z;C)"] == pytest.approx(ref.mutual_information_, rel=1e-12)
    mapping = json.loads((tmp_path / "map.json").read_text())["mappings"]
    assert set(mapping) == set(table.table.columns)


def test_compress_binarises_a_rating_with_positive_or_threshold(capsys, tmp_path):
    """A label with five values (a rating): refused with a message naming the command's
    own --positive / --threshold (never the library's positive=), then compressed with
    either, each equal to the library fitted on the labels made by hand."""
    table = make_zipf_categorical(3000, 200, n_columns=2, random_state=4)
    rng = np.random.default_rng(4)
    rating = np.clip(np.round(2.5 + 2 * table.labels + rng.normal(0, 1, 3000)), 1, 5)
    df = table.table.copy()
    df["rating"] = rating.astype(int)
    path = tmp_path / "ratings.csv"
    df.to_csv(path, index=False)
    code, out, err = run_cli(capsys, "compress", path, "--label", "rating", "--budget", 8)
    assert code == 2 and "--positive VALUE" in err and "--threshold T" in err, err
    assert "positive=" not in err and "threshold=" not in err
    train = make_split(table).train
    for flag, value, y in (("--threshold", 4, (rating >= 4)), ("--positive", 5, rating == 5)):
        code, out, err = run_cli(capsys, "compress", path, "--label", "rating", flag, value,
                                 "--budget", 8)
        assert code == 0, err
        y = y.astype(np.int8)
        for col_out, col in zip(out["columns"], table.table.columns):
            ref = VocabularyCompressor(8).fit(table.table[col].astype(str).to_numpy()[train],
                                              y[train])
            assert col_out["I(Z;C)"] == pytest.approx(ref.mutual_information_, rel=1e-12)
    code, out, err = run_cli(capsys, "compress", path, "--label", "rating", "--threshold", 9)
    assert code == 2 and "--threshold 9" in err and "one class" in err, err
    with pytest.raises(SystemExit) as stop:           # argparse: one or the other
        run_cli(capsys, "compress", path, "--label", "rating", "--threshold", 4,
                "--positive", 5)
    assert stop.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_select_features_on_graph(capsys, tmp_path):
    g = make_attributed_sbm(120, 3, p_in=0.2, p_out=0.01, n_informative=8, n_noise=24,
                            random_state=1)
    save_npz(g, tmp_path / "g.npz")
    # no --n-blocks: k is the number of node classes
    code, out, err = run_cli(capsys, "select-features", tmp_path / "g.npz",
                             "--n-candidates", 2, "--max-iter", 40, "--gamma", 0.5, "--d", 8,
                             "--out", tmp_path / "b.fgz")
    assert code == 0, err
    assert len(out["selected"]) <= 8
    assert out["selected"] == [int(j) for j in load_artifact(tmp_path / "b.fgz").select(8)]
    assert "clustering" in out
    # without classes and without --n-blocks the eigengap rule picks k (and says so)
    from featagg_core.data import GraphData
    save_npz(GraphData(A=g.A, X=g.X, y=None), tmp_path / "noy.npz")
    code, out, err = run_cli(capsys, "select-features", tmp_path / "noy.npz",
                             "--n-candidates", 1, "--max-iter", 20, "--d", 8)
    assert code == 0, err
    assert len(out["selected"]) == 8


@pytest.mark.parametrize("argv, message", [
    (["info", "/no/such/file.txt"], "no such file"),
    (["compress", "{csv}"], "needs --label"),
    (["info", "{bad}"], "bad.txt"),
    (["evaluate", "{bad}", "sample:bibtex"], "not a featagg"),
    (["agglomerate", "sample:cora"], "expected a multilabel dataset"),
    (["info", "sample:nope"], "nope"),
])
def test_bad_input_exits_2_with_one_line(capsys, tmp_path, argv, message):
    (tmp_path / "bad.txt").write_text("3 4 2\n0 1:1\n")  # truncated XC file
    (tmp_path / "t.csv").write_text("a,b\n1,0\n")
    argv = [a.format(bad=tmp_path / "bad.txt", csv=tmp_path / "t.csv") for a in argv]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert lines[-1].startswith("featagg: error:") and message in lines[-1]


def test_real_process_exit_code_and_help():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "featagg_core", "info", "/nope.txt"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "featagg: error: /nope.txt: no such file"
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, sp in sub.choices.items():
        for action in sp._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"{name} {action.option_strings} has no help text"


def test_evaluate_reads_old_bundles_and_refuses_other_datasets(capsys, tmp_path):
    from featagg_core import Refrag
    from featagg_core.artifacts.store import save_bundle
    from featagg_core.experiment import as_pipeline, evaluate
    data = load_sample("bibtex")
    # a bundle as the old `train --defrag 8 --refrag` wrote it
    defrag = Defrag(d0=8).fit(data.X, data.Y)
    model = KTXMLC(n_trees=1, max_leaf_labels=40, n_clusters=4).fit(defrag.transform(data.X),
                                                                    data.Y)
    refrag = Refrag().fit(data.X, data.Y, defrag)
    save_bundle({"defrag": defrag, "model": model, "refrag": refrag}, tmp_path / "old.fgb",
                info={"method": "KTXMLC", "shortlist": 50, "k": 5})
    code, ev, err = run_cli(capsys, "evaluate", tmp_path / "old.fgb", "sample:bibtex")
    assert code == 0, err
    pipe = as_pipeline({"defrag": defrag, "model": model, "refrag": refrag}, {"shortlist": 50})
    S = refrag.rerank(data.X_test, model.predict_scores(defrag.transform(data.X_test), k=50), k=5)
    assert ev["metrics"]["P@1"] == pytest.approx(metrics.precision_at_k(data.Y_test, S, 1),
                                                 abs=1e-12)
    flat = evaluate(pipe, data, make_split(data))
    assert ev["metrics"]["PSP@5"] == pytest.approx(flat["PSP@5"], abs=1e-12)
    assert ev["base_metrics"]["P@5"] == pytest.approx(flat["base P@5"], abs=1e-12)
    # a model of another dataset: one clear line, exit 2
    small = make_powerlaw_multilabel(120, 40, 10, random_state=0)
    save_npz(small, tmp_path / "small.npz")
    code, out, err = run_cli(capsys, "train", tmp_path / "small.npz", "--n-trees", 1,
                             "--out", tmp_path / "small.fgz")
    assert code == 0, err
    assert out["evaluated_on"] == "test" and out["split"]["how"] == "random"
    assert out["split"]["n_test"] == 24          # no test part: 20 % of the rows, held out
    code = main(["evaluate", str(tmp_path / "small.fgz"), "sample:bibtex"])
    _, err = capsys.readouterr()
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("featagg: error:") and "fitted on 40 features" in last


def test_ctrl_c_cancels_cleanly(tmp_path):
    import signal
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "model.fgz"
    proc = subprocess.Popen([sys.executable, "-m", "featagg_core", "train", "sample:bibtex",
                             "--n-trees", "10", "--defrag", "4", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "training KTXMLC" in line:
            proc.send_signal(signal.SIGINT)
            break
    rest_out, rest_err = proc.communicate(timeout=300)
    err = "".join(seen) + rest_err
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "featagg: cancelled"
    assert rest_out == "" and not out.exists()
    assert not [p for p in tmp_path.iterdir()]          # no temporary file left behind
