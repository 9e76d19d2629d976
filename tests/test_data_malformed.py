"""A table of malformed inputs: each must raise DatasetError naming the file and the line
(or field) and the problem."""
import io
import re
import zipfile

import pytest

from featagg_core.utils.bounded import reason
from featagg_core.data import DatasetError, load_categorical, load_dataset, load_graph, load_xc
from featagg_core.data.samples import sample_path

ARFF_HEAD = b"@relation r\n@attribute a numeric\n@attribute b numeric\n@attribute L {0,1}\n@data\n"

CASES = [
    # (id, loader, file name, content, kwargs, regex the message must match)
    ("xc truncated", load_xc, "d.txt", b"3 3 1\n0 0:1\n0 1:1\n", {},
     r"line 3: truncated file: the header says 3 rows, found 2"),
    ("xc extra rows", load_xc, "d.txt", b"1 3 1\n0 0:1\n0 1:1\n", {},
     r"line 3: the header says 1 rows but there are more"),
    ("xc bad header", load_xc, "d.txt", b"a b c\n0 0:1\n", {}, r"line 1: header must be"),
    ("xc header 4 ints", load_xc, "d.txt", b"1 2 3 4\n0 0:1\n", {}, r"line 1: header"),
    ("xc index out of range", load_xc, "d.txt", b"2 3 1\n0 0:1\n0 5:1\n", {},
     r"line 3: feature index 5 out of range"),
    ("xc negative index", load_xc, "d.txt", b"1 3 1\n0 -1:1\n", {},
     r"line 2: negative feature index"),
    ("xc label out of range", load_xc, "d.txt", b"1 3 2\n0,2 0:1\n", {},
     r"line 2: label index 2 out of range"),
    ("xc negative label", load_xc, "d.txt", b"1 3 2\n-1 0:1\n", {}, r"line 2: negative label"),
    ("xc nan", load_xc, "d.txt", b"1 3 1\n0 0:1 1:nan\n", {}, r"line 2: NaN/inf value"),
    ("xc inf", load_xc, "d.txt", b"1 3 1\n0 1:-Infinity\n", {}, r"line 2: NaN/inf value"),
    ("xc float32 overflow", load_xc, "d.txt", b"1 3 1\n0 1:1e39\n", {},
     r"line 2: value 1e\+39 does not fit in float32"),
    ("xc duplicate index", load_xc, "d.txt", b"2 3 1\n0 0:1\n0 1:1 2:1 1:2\n", {},
     r"line 3: duplicate feature index 1"),
    ("xc duplicate label", load_xc, "d.txt", b"1 3 3\n1,2,1 0:1\n", {},
     r"line 2: duplicate label index 1"),
    ("xc empty label", load_xc, "d.txt", b"1 3 3\n1,,2 0:1\n", {}, r"line 2: empty label"),
    ("xc trailing comma", load_xc, "d.txt", b"1 3 3\n1, 0:1\n", {}, r"line 2: empty label"),
    ("xc truncated token", load_xc, "d.txt", b"1 3 1\n0 0:", {},
     r"line 2: value is not a number"),
    ("xc missing colon", load_xc, "d.txt", b"1 3 1\n0 0:1 2\n", {},
     r"line 2: expected 'index:value'"),
    ("xc bad number", load_xc, "d.txt", b"2 3 1\n\n0 0:1.2.3\n", {},
     r"line 3: value is not a number"),
    ("xc latin-1 byte", load_xc, "d.txt", b"1 3 1\n0 0:1 1:\xe9\n", {},
     r"line 2: .*non-ASCII byte 0xE9"),
    ("xc empty", load_xc, "d.txt", b"", {}, r"d.txt: empty file"),
    ("xc whitespace only", load_xc, "d.txt", b" \n\n", {}, r"empty file"),
    ("xc split needs labels", load_xc, "d.txt", b"1 3\n0:1\n", {}, r"line 1: .*labels_path"),
    ("svm bad token", load_dataset, "d.svm", b"1 1:1\n2 1:1 x\n", {},
     r"line 2: expected 'index:value', found 'x'"),
    ("svm zero in 1-based", load_dataset, "d.svm", b"1 1:1\n\n2 0:1\n", {"zero_based": False},
     r"line 3: feature index 0 in a 1-based file"),
    ("svm float label", load_dataset, "d.svm", b"1.5 1:1\n", {}, r"line 1: label is not"),
    ("svm utf16", load_dataset, "d.svm", "1 1:1\n".encode("utf-16"), {}, r"line 1: "),
    ("arff dense fields", load_dataset, "d.arff", ARFF_HEAD + b"1,2,0\n1,2\n", {"n_labels": 1},
     r"line 7: dense row has 2 fields, expected 3"),
    ("arff sparse index", load_dataset, "d.arff", ARFF_HEAD + b"{0 1}\n{5 1}\n", {"n_labels": 1},
     r"line 7: attribute index 5 out of range"),
    ("arff non-binary label", load_dataset, "d.arff", ARFF_HEAD + b"{0 1,2 2}\n",
     {"n_labels": 1}, r"line 6: labels must be 0/1, found 2.0"),
    ("arff missing label", load_dataset, "d.arff", ARFF_HEAD + b"1,2,?\n", {"n_labels": 1},
     r"line 6: missing value '\?' for label 'L'"),
    ("arff open brace", load_dataset, "d.arff", ARFF_HEAD + b"{0 1, 1 2\n", {"n_labels": 1},
     r"line 6: sparse ARFF row must be enclosed"),
    ("arff duplicate attr", load_dataset, "d.arff", ARFF_HEAD + b"{0 1, 0 2}\n",
     {"n_labels": 1}, r"line 6: attribute index 0 appears twice"),
    ("arff no data", load_dataset, "d.arff", b"@relation r\n@attribute a numeric\n", {},
     r"no @data line"),
    ("arff string attr", load_dataset, "d.arff",
     b"@relation r\n@attribute s string\n@data\n", {}, r"line 2: attribute 's' has type"),
    ("arff nan", load_dataset, "d.arff", ARFF_HEAD + b"1,NaN,1\n", {"n_labels": 1},
     r"line 6: NaN/inf value"),
    ("edges one field", load_graph, "g.txt", b"a b\nc\n", {},
     r"line 2: wrong number of fields \(expected 'source target \[weight\]'\)"),
    ("edges four fields", load_graph, "g.txt", b"a b 1 2\n", {}, r"line 1: wrong number"),
    ("edges bad weight", load_graph, "g.txt", b"a b\nb c heavy\n", {},
     r"line 2: value is not a number"),
    ("edges negative weight", load_graph, "g.txt", b"a b 1\nb c -2\n", {},
     r"line 2: edge weight -2.0 is not a finite non-negative"),
    ("edges nan weight", load_graph, "g.txt", b"a b nan\n", {}, r"line 1: NaN/inf"),
    ("edges only comments", load_graph, "g.txt", b"# nothing\n", {}, r"no edges"),
    ("graphml garbage", load_graph, "g.graphml", b"<graphml><graph>", {}, r"malformed GraphML"),
    ("gml garbage", load_graph, "g.gml", b"graph [ node [ id 0 ", {}, r"malformed GML"),
    ("mat garbage", load_graph, "g.mat", b"MATLAB 5.0 MAT-file garbage", {},
     r"MATLAB"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed(case):
    _, loader, fname, raw, kw, pattern = case
    f = io.BytesIO(raw)
    f.name = fname
    with pytest.raises(DatasetError, match=pattern) as ei:
        loader(f, **kw)
    assert str(ei.value).startswith(fname)
    assert isinstance(ei.value, ValueError)


def test_huge_claimed_dimensions_are_refused():
    for raw in (b"1 99999999999 1\n0 0:1\n", b"1 3 99999999999\n0 0:1\n"):
        f = io.BytesIO(raw)
        f.name = "big.txt"
        with pytest.raises(DatasetError, match="line 1: a header count = 99999999999 exceeds"):
            load_xc(f)
    f = io.BytesIO(b"0 99999999999:1\n")
    f.name = "big.svm"
    with pytest.raises(DatasetError, match="exceeds the supported maximum"):
        load_dataset(f)


def test_binary_edge_list_message():
    f = io.BytesIO(b"a b\n\x00\x01 c\n")
    f.name = "g.txt"
    with pytest.raises(DatasetError, match=r"g.txt, line 2: control character in a node name"):
        load_graph(f)


# A refusal built on a library's exception quotes what the library said about the file, not
# the exception's class: "ArrowInvalid" or "BadZipFile" tells an uploader nothing.
_CLASS_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception|Invalid|ZipFile)\b")


def _damaged_bibtex_npz() -> bytes:
    """The bundled Bibtex npz with 30 bytes inside X_data's deflated stream overwritten: the
    zip directory is intact, so the refusal comes from inflating the member (a CRC check)."""
    raw = bytearray(open(sample_path("bibtex"), "rb").read())
    info = zipfile.ZipFile(io.BytesIO(bytes(raw))).getinfo("X_data.npy")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra) + 300
    raw[start:start + 30] = b"\xa5" * 30
    return bytes(raw)


LIBRARY_REFUSALS = [
    # (id, loader, file name, content, what the library's own text says)
    ("graphml", load_graph, "g.graphml", b"<graphml><graph>", r"no element found"),
    ("gml", load_graph, "g.gml", b"graph [ node [ id 0 ", r"expected '\]'"),
    ("parquet", load_categorical, "t.parquet", b"PAR1garbagegarbagePAR1", r"footer"),
    ("npz member", load_dataset, "b.npz", None,
     r"field X_data: member 'X_data.npy' is damaged \(its checksum does not match"),
]


@pytest.mark.parametrize("case", LIBRARY_REFUSALS, ids=[c[0] for c in LIBRARY_REFUSALS])
def test_a_library_refusal_quotes_its_text_without_the_class_name(case):
    _, loader, fname, raw, library_text = case
    f = io.BytesIO(_damaged_bibtex_npz() if raw is None else raw)
    f.name = fname
    with pytest.raises(DatasetError, match=library_text) as ei:
        loader(f)
    assert str(ei.value).startswith(fname)
    assert not _CLASS_NAME.search(str(ei.value)), str(ei.value)


def test_reason_keeps_a_message_and_words_the_ones_without_one():
    assert reason(ValueError("  bad\n   footer  ")) == "bad footer"
    assert reason(KeyError("network")) == "its content does not follow the format"
    assert reason(EOFError()) == "it ends too early"
    long_text = reason(ValueError("x" * 1000))
    assert len(long_text) == 300 and long_text.endswith("...")


def test_a_plain_scipy_npz_is_refused_in_the_users_terms():
    """An .npz from ``scipy.sparse.save_npz`` is not a dataset: the refusal says what the
    file is not and what to upload instead, without naming a Python function (a browser
    user reads it on the upload form)."""
    import numpy as np
    import scipy.sparse as sp

    f = io.BytesIO()
    sp.save_npz(f, sp.identity(3, format="csr", dtype=np.float32))
    f.seek(0)
    f.name = "matrix.npz"
    with pytest.raises(DatasetError) as ei:
        load_dataset(f)
    text = str(ei.value)
    assert text.startswith("matrix.npz") and "not a featagg dataset file" in text
    assert "other formats listed" in text
    assert not re.search(r"save_npz|\w+\(\)|_\w+_", text), text
