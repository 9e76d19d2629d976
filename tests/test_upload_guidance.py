"""Uploads in the dashboard's words: every reader message of featagg_core.data translated
(no API keyword left), an ARFF without its XML loads once the number of label columns is
given, a table's only 0/1 column is proposed as its label, and an upload keeps its name."""
import ast
import io
import re
from pathlib import Path

import pandas as pd
import pytest

from featagg_app.intake import guidance
from featagg_app.intake.uploads import UploadError, propose_label, read_upload

ROOT = Path(__file__).resolve().parents[1]
_KEYWORD = re.compile(r"\b[a-z_]+=")
ARFF = ("@relation tiny\n@attribute f0 numeric\n@attribute f1 numeric\n"
        "@attribute a {0,1}\n@attribute b {0,1}\n@data\n1,2,0,1\n0,3,1,1\n2,0,1,0\n")


def _reader_messages():
    """Every DatasetError message of featagg_core/data/*.py (the readers' package), its
    f-string holes filled the way the readers fill them (numbers, repr'd names)."""
    sources = sorted((ROOT / "featagg_core" / "data").glob("*.py"))
    nodes = [n for src in sources for n in ast.walk(ast.parse(src.read_text()))]
    out = []
    for node in nodes:
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "DatasetError" \
                and node.args:
            arg = node.args[0]
            pieces = arg.values if isinstance(arg, ast.JoinedStr) else [arg]
            text = []
            for p in pieces:
                if isinstance(p, ast.Constant):
                    text.append(str(p.value))
                elif isinstance(p, ast.FormattedValue):
                    text.append("'v'" if p.conversion == ord("r") else "7")
            out.append("".join(text))
    return out


def test_no_reader_message_reaches_the_browser_with_an_api_keyword():
    msgs = _reader_messages()
    assert len(msgs) > 100
    with_keywords = [m for m in msgs if _KEYWORD.search(m)]
    assert len(with_keywords) >= 8               # the sweep sees the readers' phrasings
    for m in msgs:
        out = guidance.ui_message(m)
        assert not _KEYWORD.search(out), (m, out)
        assert "pass " not in out, (m, out)


def test_known_messages_read_as_the_ui_says():
    m = ("x.arff: cannot tell which attributes are labels: pass xml= (MULAN label file) "
         "or n_labels= (the last attributes)")
    assert guidance.ui_message(m) == (
        "x.arff: this ARFF file does not say which attributes are labels: add its MULAN XML "
        "label header, or give the number of label columns at the end of each row")
    assert guidance.needed_option(m) == "n_labels"
    assert guidance.ui_message("t.arff: n_labels=5 but the file has 3 attributes") == \
        "t.arff: 5 label columns were asked for, but the file has only 3 attributes"
    m = "t.csv: say which column is the binary label: label=... (columns: a, b)"
    assert guidance.ui_message(m) == "t.csv: say which column is the binary 0/1 label (columns: a, b)"
    assert guidance.needed_option(m) == "label"
    assert guidance.needed_option("t.csv: empty file") is None


def test_arff_without_xml_loads_with_the_label_count_and_keeps_its_name():
    with pytest.raises(UploadError) as err:
        read_upload("multilabel", "train.arff", ARFF.encode())
    assert err.value.needs == "n_labels"
    assert "xml=" not in str(err.value) and "n_labels" not in str(err.value)
    assert str(err.value).startswith("train.arff: this ARFF file does not say")
    data = read_upload("multilabel", "train.arff", ARFF.encode(), n_labels=2)
    assert data.name == "train.arff"
    assert data.X.toarray().tolist() == [[1, 2], [0, 3], [2, 0]]
    assert data.Y.toarray().tolist() == [[0, 1], [1, 1], [1, 0]]
    with pytest.raises(UploadError, match="5 label columns were asked for"):
        read_upload("multilabel", "train.arff", ARFF.encode(), n_labels=5)
    xc = b"2 3 2\n0 0:1 2:2\n1 1:1\n"
    assert read_upload("multilabel", "train.txt", xc).name == "train.txt"


def _csv(df):
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue().encode()


def test_a_tables_only_binary_column_is_proposed_as_its_label():
    t = pd.DataFrame({"city": list("abcab"), "clicked": [1, 0, 1, 1, 0], "n": [3, 1, 0, 1, 2]})
    raw = _csv(t)
    assert propose_label("clicks.csv", raw) == "clicked"
    with pytest.raises(UploadError) as err:
        read_upload("table", "clicks.csv", raw)
    assert err.value.needs == "label" and "label=" not in str(err.value)
    data = read_upload("table", "clicks.csv", raw, label="clicked")
    assert data.labels.tolist() == [1, 0, 1, 1, 0] and data.name == "clicks.csv"
    # the reader finds a column named "label" itself: nothing to propose
    assert propose_label("t.csv", _csv(t.rename(columns={"clicked": "label"}))) is None
    # two 0/1 columns, or none: no guess
    assert propose_label("t.csv", _csv(t.assign(n=[0, 1, 1, 0, 0]))) is None
    assert propose_label("t.csv", _csv(t.drop(columns="clicked"))) is None
    assert propose_label("t.tsv", _csv(t).replace(b",", b"\t")) == "clicked"
    assert propose_label("t.csv", b"\xff\xfe garbage") is None
