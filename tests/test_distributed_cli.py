"""``--scheduler`` on the command line: the runs go through the Dask twins and give the
same models and numbers as without it; methods without a twin are refused clearly."""
import json

import numpy as np
import pytest

from featagg_core.distributed import defrag as dist_defrag
from featagg_core.distributed import ktxmlc as dist_ktxmlc
from featagg_core.distributed import vocab as dist_vocab
from featagg_core import load_artifact
from featagg_core.__main__ import main
from featagg_core.data import load_categorical, save_npz
from featagg_core.experiment import make_split
from featagg_core.runs.split import take_rows
from featagg_core.data.synthetic import make_powerlaw_multilabel, make_zipf_categorical

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


@pytest.fixture
def calls(monkeypatch):
    """Counts the twins' calls (the CLI reaches them through the run model's steps, which
    import each twin from its module when a scheduler is given)."""
    seen = {"defrag": 0, "ktxmlc": 0, "vocabulary": 0}
    for module, name, key in ((dist_defrag, "defrag_distributed", "defrag"),
                              (dist_ktxmlc, "ktxmlc_distributed", "ktxmlc"),
                              (dist_vocab, "vocabulary_distributed", "vocabulary")):
        real = getattr(module, name)

        def spy(*a, _real=real, _key=key, **kw):
            seen[_key] += 1
            return _real(*a, **kw)
        monkeypatch.setattr(module, name, spy)
    return seen


@pytest.fixture(scope="module")
def small_npz(tmp_path_factory):
    data = make_powerlaw_multilabel(800, 120, 60, random_state=3, test_size=0.25)
    path = tmp_path_factory.mktemp("cli") / "small.npz"
    save_npz(data, str(path))
    return path


def test_agglomerate_on_serial_scheduler_equals_local_run(capsys, tmp_path, small_npz, calls):
    args = ("agglomerate", small_npz, "--d0", 4, "--seed", 2)
    code, local, err = run_cli(capsys, *args, "--out", tmp_path / "a.fgz")
    assert code == 0, err and calls["defrag"] == 0
    code, out, err = run_cli(capsys, *args, "--scheduler", "serial", "--out", tmp_path / "b.fgz")
    assert code == 0, err
    assert calls["defrag"] == 1 and "on the Dask scheduler serial" in err
    assert np.array_equal(load_artifact(str(tmp_path / "a.fgz")).labels_,
                          load_artifact(str(tmp_path / "b.fgz")).labels_)
    assert out["clustering_error"] == local["clustering_error"]
    assert out["metrics"] == local["metrics"]


def test_train_on_serial_scheduler_gives_the_same_metrics(capsys, small_npz, calls):
    args = ("train", small_npz, "--n-trees", 1, "--max-leaf-labels", 15, "--defrag", 4)
    code, local, err = run_cli(capsys, *args)
    assert code == 0, err
    code, out, err = run_cli(capsys, *args, "--scheduler", "serial")
    assert code == 0, err
    assert calls["defrag"] == 1 and calls["ktxmlc"] == 1
    for key in ("P@1", "P@3", "P@5", "PSP@5", "coverage@5"):
        assert out["metrics"][key] == local["metrics"][key]
    code, _, err = run_cli(capsys, "train", small_npz, "--method", "ova", "--scheduler", "serial")
    assert code == 2 and "one-vs-all has no distributed twin" in err


def test_compress_on_serial_scheduler_runs_the_distributed_thresholding(capsys, tmp_path,
                                                                         calls):
    data = make_zipf_categorical(2000, 60, n_columns=2, random_state=1)
    path = tmp_path / "t.csv"
    table = data.table.copy()
    table["y"] = data.labels
    table.to_csv(path, index=False)
    code, out, err = run_cli(capsys, "compress", path, "--label", "y", "--budget", 6,
                             "--method", "threshold", "--scheduler", "serial")
    assert code == 0, err
    assert calls["vocabulary"] == 2 and out["method"] == "threshold (distributed)"
    loaded = load_categorical(str(path), label="y")
    train = take_rows(loaded, make_split(loaded, test_size=0.2, random_state=0), "train")
    for c in out["columns"]:
        ref = dist_vocab.vocabulary_distributed("serial", train.table[c["column"]].to_numpy(),
                                                train.labels, 6, epsilon=0.05)
        assert c["I(Z;C)"] == ref.mutual_information_ < c["I(X;C)"]
    assert 0 <= out["metrics"]["test"]["MI loss"] <= 1
    code, _, err = run_cli(capsys, "compress", path, "--label", "y", "--scheduler", "serial")
    assert code == 2 and "only --method threshold" in err


def test_dashboard_sidebar_says_where_fits_run(monkeypatch):
    """With FEATAGG_DASK_SCHEDULER set the sidebar says where fits run; unset, nothing."""
    import os
    from pathlib import Path
    from streamlit.testing.v1 import AppTest
    os.environ.setdefault("FEATAGG_WARMUP", "0")
    app = str(Path(__file__).resolve().parents[1] / "app.py")
    monkeypatch.delenv("FEATAGG_DASK_SCHEDULER", raising=False)
    at = AppTest.from_file(app, default_timeout=120).run()
    assert not any("Dask" in c.value for c in at.sidebar.caption)
    monkeypatch.setenv("FEATAGG_DASK_SCHEDULER", "serial")
    at = AppTest.from_file(app, default_timeout=120).run()
    assert any("Dask code path in this process" in c.value for c in at.sidebar.caption)
    monkeypatch.setenv("FEATAGG_DASK_SCHEDULER", "tcp://127.0.0.1:9")
    at = AppTest.from_file(app, default_timeout=120).run()
    assert any("cannot be reached" in w.value for w in at.sidebar.warning)
