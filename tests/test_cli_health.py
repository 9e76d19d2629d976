"""``featagg health``: exit 0 whatever it finds, the alerts in plain words most serious
first, the JSON document of the contract, one-line errors for unreadable input."""
import json

import numpy as np
import scipy.sparse as sp

from featagg_core.__main__ import main
from featagg_core.data import MultiLabelData, save_npz


def _data_with_leak():
    rng = np.random.default_rng(0)
    X = sp.random(120, 300, density=0.05, random_state=1, format="csr", dtype=np.float32)
    X.data[:] = rng.uniform(0.5, 2, X.nnz)
    Y = sp.csr_matrix((rng.random((120, 5)) < 0.3).astype(np.float32))
    X = sp.vstack([X, X[3]], format="csr")                 # row 120 repeats row 3
    Y = sp.vstack([Y, Y[3]], format="csr")
    Xt = sp.vstack([X[10], X[50:60]], format="csr")        # test row 0 = training row 10
    Yt = sp.vstack([Y[10], Y[50:60]], format="csr")
    return MultiLabelData(X, Y, X_test=Xt, Y_test=Yt, name="leaky")


def test_health_cli_text_and_json(tmp_path, capsys):
    path = tmp_path / "leaky.npz"
    data = _data_with_leak()
    save_npz(data, path)
    out_json = tmp_path / "alerts.json"
    code = main(["health", str(path), "--json", str(out_json), "--no-label-errors"])
    out, err = capsys.readouterr()
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Data health of leaky: 1 error(s)")
    assert lines[1].startswith("[ERROR]")                  # most serious first
    assert "What to do:" in out
    doc = json.loads(out_json.read_text())
    types = {a["type"]: a for a in doc["alerts"]}
    for a in doc["alerts"]:
        assert {"type", "severity", "count", "rows", "test_rows", "message", "hint",
                "truncated"} <= set(a)
    ov = types["train_test_overlap"]
    assert 0 in ov["test_rows"] and 10 in ov["rows"]
    assert types["duplicate_rows"]["rows"] == [120]
    sev = [a["severity"] for a in doc["alerts"]]
    assert sev == sorted(sev, key=("error", "warning", "info").index)


def test_health_cli_clean_sample_exits_zero(capsys):
    code = main(["health", "sample:cora"])
    out, _ = capsys.readouterr()
    assert code == 0 and out.startswith("Data health of")


def test_health_cli_numeric_label_offers_thresholds(tmp_path, capsys):
    p = tmp_path / "ratings.csv"
    rows = ["user,movie,rating"] + [f"u{i % 7},m{i % 11},{1 + i % 5}" for i in range(60)]
    p.write_text("\n".join(rows) + "\n")
    code = main(["health", str(p), "--label", "rating"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "numeric values" in out and "'rating' >= 3" in out


def test_health_cli_bad_file_is_one_line(tmp_path, capsys):
    p = tmp_path / "broken.npz"
    p.write_bytes(b"not a zip")
    code = main(["health", str(p)])
    _, err = capsys.readouterr()
    # stderr: the "[featagg] reading …" progress line, then the error on one line
    errors = [ln for ln in err.splitlines() if not ln.startswith("[featagg] ")]
    assert code == 2 and len(errors) == 1 and errors[0].startswith("featagg: ")
    assert "broken.npz" in errors[0] and "Traceback" not in err


def test_health_cli_numeric_label_runs_the_other_table_checks(tmp_path, capsys):
    # 'user' is an ID (60 values in 60 rows); 'movie' is not; ratings 1-5, median 3
    p = tmp_path / "ratings.csv"
    rows = ["user,movie,rating"] + [f"id{i},m{i % 11},{1 + i % 5}" for i in range(60)]
    p.write_text("\n".join(rows) + "\n")
    out_json = tmp_path / "h.json"
    code = main(["health", str(p), "--label", "rating", "--json", str(out_json)])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "'rating' >= 3 (the median" in out and "read 'rating' >= 3 as the positive" in out
    assert "ID-like): 'user' (60 values in 60 rows)" in out
    doc = json.loads(out_json.read_text())
    by = {a["type"]: a for a in doc["alerts"]}
    assert by["numeric_label"]["thresholds"] == [3.0, 4.0, 2.0]
    assert by["numeric_label"]["checked_with_threshold"] == 3.0
    assert by["id_columns"]["examples"] == ["user"]
    # the table without an ID column: thresholds still offered, no ID-like alert
    q = tmp_path / "plain.csv"
    q.write_text("\n".join(["movie,rating"] + [f"m{i % 11},{1 + i % 5}" for i in range(60)])
                 + "\n")
    assert main(["health", str(q), "--label", "rating"]) == 0
    out, _ = capsys.readouterr()
    assert "numeric values" in out and "ID-like" not in out
