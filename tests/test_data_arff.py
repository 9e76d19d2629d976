"""MULAN ARFF (sparse and dense) with its XML label header."""
import io
import os

import numpy as np
import pytest

from featagg_core.data import DatasetError, load_arff, load_dataset

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")

XML = b"""<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="lab b"></label>
<label name="labA"><label name="labC"></label></label>
</labels>
"""

# labels in the middle (labA), quoted names, a numeric-coded nominal feature, comments
HEADER = b"""% a MULAN file
@relation toy

@attribute f0 numeric
@attribute labA {0,1}
@attribute 'word one' real
@ATTRIBUTE "x\\"y" {0,1,2}
@attribute 'lab b' {0,1}
@attribute labC {0,1}
@attribute f4 integer

@data
"""
# dense expected rows: features f0, word one, x"y, f4 ; labels labA, lab b, labC (file order)
X_WANT = np.array([[1.5, 0, 2, 0], [0, 0, 0, 0], [0, -3e-2, 1, 7], [0, 0, 0, 0]], np.float32)
Y_WANT = np.array([[1, 0, 1], [0, 0, 0], [0, 1, 1], [1, 1, 0]], np.float32)

SPARSE = HEADER + b"""{0 1.5,1 1,3 2,5 1}
{}
% comment inside data
{2 -3e-2, 3 1, 4 1, 5 1, 6 7}
{1 1,4 1}
"""
DENSE = HEADER + b"""1.5,1,0,2,0,1,0
0,0,0,0,0,0,0

0,0,-3e-2,1,1,1,7
?,1,0,0,1,0,0
"""


def _named(raw, name):
    f = io.BytesIO(raw)
    f.name = name
    return f


@pytest.mark.parametrize("body", [SPARSE, DENSE], ids=["sparse", "dense"])
def test_hand_written_with_xml(body):
    d = load_dataset(_named(body, "toy.arff"), xml=_named(XML, "toy.xml"))
    assert d.feature_names == ["f0", "word one", 'x"y', "f4"]
    assert d.label_names == ["labA", "lab b", "labC"]
    assert np.array_equal(d.X.toarray(), X_WANT)
    assert np.array_equal(d.Y.toarray(), Y_WANT)
    assert d.X.dtype == np.float32 and d.Y.dtype == np.float32


def test_xml_found_beside_the_file_and_n_labels(tmp_path):
    (tmp_path / "toy-train.arff").write_bytes(SPARSE)
    (tmp_path / "toy.xml").write_bytes(XML)
    d = load_dataset(tmp_path / "toy-train.arff")
    assert d.label_names == ["labA", "lab b", "labC"]
    # without XML: the last n attributes are labels (f4 = 7 is then not a 0/1 label)
    with pytest.raises(DatasetError, match=r"line 16: labels must be 0/1, found 7\.0"):
        load_arff(_named(SPARSE, "toy.arff"), n_labels=2)
    e = load_arff(_named(SPARSE.replace(b", 6 7}", b"}"), "toy.arff"), n_labels=2)
    assert e.label_names == ["labC", "f4"] and len(e.feature_names) == 5
    assert e.Y.toarray().tolist() == [[1, 0], [0, 0], [1, 0], [0, 0]]
    with pytest.raises(DatasetError, match="labels"):
        load_arff(_named(SPARSE, "toy.arff"))  # upload, no XML, no n_labels


def test_meka_relation_option():
    raw = SPARSE.replace(b"@relation toy", b"@relation 'toy: -C 2'").replace(b"{0 1.5,", b"{0 1,")
    d = load_arff(_named(raw, "toy.arff"))
    assert d.label_names == ["f0", "labA"]  # MEKA: -C 2 = the first two attributes
    assert d.feature_names == ["word one", 'x"y', "lab b", "labC", "f4"]


def test_dtd_in_xml_refused():
    evil = b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa">]><labels><label name="&a;"/></labels>'
    with pytest.raises(DatasetError, match="DTD"):
        load_arff(_named(SPARSE, "toy.arff"), xml=_named(evil, "evil.xml"))


@pytest.mark.skipif(not os.path.isfile(os.path.join(DATA, "bibtex", "bibtex-train.arff")),
                    reason="no ../shared/data/bibtex")
def test_bibtex():
    d = load_dataset(os.path.join(DATA, "bibtex", "bibtex-train.arff"),
                     test=os.path.join(DATA, "bibtex", "bibtex-test.arff"))
    assert d.X.shape == (4880, 1836) and d.Y.shape == (4880, 159)
    assert d.X_test.shape == (2515, 1836) and d.Y_test.shape == (2515, 159)
    assert d.feature_names[:4] == ["0", "000", "02", "05"]
    assert d.label_names[0] == "TAG_2005" and len(set(d.label_names)) == 159
    # independent check of a few rows against the raw text
    with open(os.path.join(DATA, "bibtex", "bibtex-train.arff"), "rb") as fh:
        lines = fh.read().split(b"@data", 1)[1].strip().split(b"\n")
    for r in (0, 1, 4879):
        pairs = [p.split() for p in lines[r].strip()[1:-1].split(b",")]
        attrs = sorted(int(a) for a, _ in pairs)
        got = sorted(d.X[r].indices.tolist() + (d.Y[r].indices + 1836).tolist())
        assert got == attrs
