"""load_categorical on small CSV / TSV / parquet tables."""
import io

import numpy as np
import pandas as pd
import pytest

from featagg_core.data import CategoricalData, DatasetError, load_categorical


def _named(raw, name):
    f = io.BytesIO(raw)
    f.name = name
    return f


CSV = b"""color,size,income,city
red,S,<=50K,Paris
blue,,>50K,Lyon
red,M,<=50K,
green,S,>50K,Paris
"""


def test_csv_two_valued_label_and_missing_values():
    d = load_categorical(_named(CSV, "t.csv"), label="income")
    assert isinstance(d, CategoricalData) and d.kind == "table"
    assert d.columns == ["color", "size", "city"]
    assert d.labels.dtype == np.int8 and d.labels.tolist() == [0, 1, 0, 1]  # '>50K' sorts last
    assert d.table["size"].tolist() == ["S", "<NA>", "M", "S"]
    assert d.table["city"].tolist() == ["Paris", "Lyon", "<NA>", "Paris"]
    e = load_categorical(_named(CSV, "t.csv"), label="income", positive="<=50K",
                         columns=["city"])
    assert e.labels.tolist() == [1, 0, 1, 0] and e.columns == ["city"]


def test_tsv_boolean_words_and_sniffed_separator():
    tsv = b"a\tb\ty\nx\t1\tyes\ny\t2\tno\nx\t3\tYES\n"
    d = load_categorical(_named(tsv, "t.tsv"), label="y")
    assert d.labels.tolist() == [1, 0, 1] and d.table["b"].tolist() == ["1", "2", "3"]
    e = load_categorical(_named(tsv, "t.dat"), label="y")  # separator sniffed
    assert e.labels.tolist() == [1, 0, 1]
    f = load_categorical(_named(b"click;u\n1;a\n0;b\n", "t.txt"))  # label found by name
    assert f.label_name == "click" and f.labels.tolist() == [1, 0]


def test_parquet(tmp_path):
    df = pd.DataFrame({"id": [10, 20, 10, None], "cat": ["a", None, "b", "a"],
                       "target": [0, 1, 1, 0]})
    p = tmp_path / "t.parquet"
    df.to_parquet(p)
    d = load_categorical(p, label="target")
    assert d.labels.tolist() == [0, 1, 1, 0]
    assert d.table["cat"].tolist() == ["a", "<NA>", "b", "a"]
    assert d.table["id"].tolist()[3] == "<NA>" and len(set(d.table["id"])) == 3


@pytest.mark.parametrize("raw,kw,needle", [
    (CSV, {"label": "nope"}, "no label column 'nope'"),
    (CSV, {"label": "color"}, "not binary.*row 4 brings a third value .green."),
    (CSV, {}, "label="),
    (CSV, {"label": "income", "columns": ["zip"]}, "no column 'zip'"),
    (b"a,y\nx,1\nz,\n", {"label": "y"}, "missing label in row 2"),
    (b"a,y\n\xff\xfe,1\n", {"label": "y"}, "line 2"),
    (b"", {"label": "y"}, "empty"),
    (b"a,y\nx,1,4,5\n", {"label": "y"}, "malformed"),
])
def test_bad_tables(raw, kw, needle):
    with pytest.raises(DatasetError, match=needle) as ei:
        load_categorical(_named(raw, "bad.csv"), **kw)
    assert "bad.csv" in str(ei.value)
