"""``--scheduler`` on the command line: the same models as without it, clear refusals."""
import json

import numpy as np
import pytest

from featagg_core import Defrag, load_artifact
from featagg_core.__main__ import main
from featagg_core.data import save_npz
from featagg_core.distributed import vocabulary_distributed
from featagg_core.synthetic import make_powerlaw_multilabel, make_zipf_categorical

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


@pytest.fixture(scope="module")
def small_npz(tmp_path_factory):
    data = make_powerlaw_multilabel(800, 120, 60, random_state=3, test_size=0.25)
    path = tmp_path_factory.mktemp("cli") / "small.npz"
    save_npz(data, str(path))
    return path, data


def test_agglomerate_on_serial_scheduler_equals_local_fit(capsys, tmp_path, small_npz):
    path, data = small_npz
    code, out, err = run_cli(capsys, "agglomerate", path, "--d0", 4, "--seed", 2,
                             "--scheduler", "serial", "--out", tmp_path / "d.fgz")
    assert code == 0, err
    assert "on the Dask scheduler serial" in err
    ref = Defrag(d0=4, random_state=2).fit(data.X, data.Y)
    assert np.array_equal(load_artifact(str(tmp_path / "d.fgz")).labels_, ref.labels_)
    assert out["clustering_error"] == ref.clustering_error_


def test_train_on_serial_scheduler_gives_the_same_metrics(capsys, small_npz):
    path, _ = small_npz
    args = ("train", path, "--n-trees", 1, "--max-leaf-labels", 15, "--defrag", 4)
    code, local, err = run_cli(capsys, *args)
    assert code == 0, err
    code, dist, err = run_cli(capsys, *args, "--scheduler", "serial")
    assert code == 0, err
    assert dist["metrics"] == local["metrics"]
    code, _, err = run_cli(capsys, "train", path, "--method", "ova", "--scheduler", "serial")
    assert code == 2 and "one-vs-all has no distributed twin" in err


def test_compress_on_serial_scheduler_needs_threshold(capsys, tmp_path):
    data = make_zipf_categorical(2000, 60, n_columns=2, random_state=1)
    path = tmp_path / "t.csv"
    table = data.table.copy()
    table["y"] = data.labels
    table.to_csv(path, index=False)
    code, out, err = run_cli(capsys, "compress", path, "--label", "y", "--budget", 6,
                             "--method", "threshold", "--scheduler", "serial")
    assert code == 0, err
    for c in out["columns"]:
        ref = vocabulary_distributed("serial", data.table[c["column"]].astype(str).to_numpy(),
                                     data.labels, 6, epsilon=0.05)
        assert c["I(Z;C)"] == ref.mutual_information_ < c["I(X;C)"]
    code, _, err = run_cli(capsys, "compress", path, "--label", "y", "--scheduler", "serial")
    assert code == 2 and "only --method threshold" in err
