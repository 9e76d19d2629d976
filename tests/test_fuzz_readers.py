"""Property-based fuzzing of every reader: random bytes and mutated valid files (byte
flips, truncation, deleted / duplicated lines, inserted junk) must either load or raise
DatasetError -- never any other exception, never a crash."""
import io

import networkx as nx
import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from featagg_core.data import (
    CategoricalData,
    DatasetError,
    GraphData,
    MultiLabelData,
    load_categorical,
    load_dataset,
    load_graph,
    load_xc,
    save_npz,
    save_xc,
)

FUZZ = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _named(raw, name):
    f = io.BytesIO(raw)
    f.name = name
    return f


def _materialise():
    import os
    import tempfile
    rng = np.random.default_rng(0)
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        X = sp.random(6, 9, density=0.4, format="csr", dtype=np.float32, random_state=rng)
        X.data = np.round(rng.standard_normal(X.nnz), 3).astype(np.float32)
        Y = (sp.random(6, 4, density=0.4, format="csr", random_state=rng) > 0).astype(
            np.float32)
        p = os.path.join(tmp, "d.txt")
        save_xc((X, Y), p)
        files["xc"] = open(p, "rb").read()
        save_xc((X, Y), os.path.join(tmp, "X.txt"), labels_path=os.path.join(tmp, "Y.txt"))
        files["xc_X"] = open(os.path.join(tmp, "X.txt"), "rb").read()
        files["xc_Y"] = open(os.path.join(tmp, "Y.txt"), "rb").read()
        files["svm"] = files["xc"].split(b"\n", 1)[1].replace(b"\n", b" # c\n", 1)
        arff = [b"% c", b"@relation r", *[b"@attribute f%d numeric" % i for i in range(9)],
                *[b"@attribute 'l %d' {0,1}" % i for i in range(4)], b"@data"]
        rows = []
        for i in range(6):
            pairs = [f"{j} {X[i, j]:g}" for j in X[i].indices] + \
                    [f"{9 + j} 1" for j in Y[i].indices]
            rows.append(("{" + ", ".join(pairs) + "}").encode())
        files["arff_sparse"] = b"\n".join(arff + rows) + b"\n"
        dense = [",".join(f"{v:g}" for v in np.concatenate(
            [X[i].toarray().ravel(), Y[i].toarray().ravel()])).encode() for i in range(6)]
        files["arff_dense"] = b"\n".join(arff + dense) + b"\n"
        p = os.path.join(tmp, "m.npz")
        save_npz(MultiLabelData(X, Y, feature_names=list("abcdefghi")), p)
        files["npz_ml"] = open(p, "rb").read()
        A = sp.csr_matrix(((X @ X.T) != 0).astype(np.float32))
        A.setdiag(0)
        A.eliminate_zeros()
        save_npz(GraphData(A, X, np.arange(6) % 2), p)
        files["npz_graph"] = open(p, "rb").read()
        save_npz(CategoricalData(pd.DataFrame({"a": ["x", "y", "x"]}),
                                 np.array([0, 1, 1], np.int8)), p)
        files["npz_table"] = open(p, "rb").read()
    files["edges"] = b"# edges\nsource target weight\na b 1.5\nb,c\nc d 2\n% x\nd a\n"
    G = nx.karate_club_graph().subgraph(range(8)).copy()
    for v in G:
        G.nodes[v]["score"] = float(v % 3)
    b = io.BytesIO()
    nx.write_graphml(G, b)
    files["graphml"] = b.getvalue()
    files["gml"] = "\n".join(nx.generate_gml(G)).encode()
    b = io.BytesIO()
    scipy.io.savemat(b, {"network": sp.csc_matrix(A), "attributes": sp.csc_matrix(X),
                         "group": np.eye(2)[np.arange(6) % 2]})
    files["mat"] = b.getvalue()
    files["csv"] = b"a,b,y\nx,1,yes\nz,,no\nx,3,yes\n"
    b = io.BytesIO()
    pd.DataFrame({"a": ["x", "y", None], "y": [0, 1, 1]}).to_parquet(b)
    files["parquet"] = b.getvalue()
    return files


SEEDS = _materialise()
XML = b'<labels xmlns="http://mulan.sourceforge.net/labels">' + b"".join(
    b'<label name="l %d"></label>' % i for i in range(4)) + b"</labels>"

# reader name -> (seed key, callable(bytes) -> object)
READERS = {
    "xc": ("xc", lambda raw: load_xc(_named(raw, "d.txt"))),
    "xc_split": ("xc_X", lambda raw: load_xc(_named(raw, "X.txt"),
                                             labels_path=_named(SEEDS["xc_Y"], "Y.txt"))),
    "xc_split_labels": ("xc_Y", lambda raw: load_xc(_named(SEEDS["xc_X"], "X.txt"),
                                                    labels_path=_named(raw, "Y.txt"))),
    "dataset_txt": ("xc", lambda raw: load_dataset(_named(raw, "d.txt"))),
    "svmlight": ("svm", lambda raw: load_dataset(_named(raw, "d.svm"))),
    "arff_sparse": ("arff_sparse", lambda raw: load_dataset(_named(raw, "d.arff"),
                                                            xml=_named(XML, "d.xml"))),
    "arff_dense": ("arff_dense", lambda raw: load_dataset(_named(raw, "d.arff"), n_labels=4)),
    "arff_xml": ("arff_sparse", lambda raw: load_dataset(_named(SEEDS["arff_sparse"],
                                                                "d.arff"),
                                                         xml=_named(raw, "d.xml"))),
    "npz_multilabel": ("npz_ml", lambda raw: load_dataset(_named(raw, "d.npz"))),
    "npz_graph": ("npz_graph", lambda raw: load_graph(_named(raw, "g.npz"))),
    "npz_table": ("npz_table", lambda raw: load_categorical(_named(raw, "t.npz"))),
    "edge_list": ("edges", lambda raw: load_graph(_named(raw, "g.edges"))),
    "graphml": ("graphml", lambda raw: load_graph(_named(raw, "g.graphml"))),
    "gml": ("gml", lambda raw: load_graph(_named(raw, "g.gml"))),
    "mat": ("mat", lambda raw: load_graph(_named(raw, "g.mat"))),
    "csv": ("csv", lambda raw: load_categorical(_named(raw, "t.csv"), label="y")),
    "parquet": ("parquet", lambda raw: load_categorical(_named(raw, "t.parquet"), label="y")),
}
READERS["arff_xml"] = ("xml", READERS["arff_xml"][1])
SEEDS["xml"] = XML
# companion files of an edge list: node classes ("node class" lines) and node features
SEEDS["node_labels"] = b"a x\nb y\n# c\nd x\n"
SEEDS["node_features"] = b"4 3\n0:1 2:0.5\n\n1:2\n0:1\n"
READERS["graph_labels_file"] = ("node_labels", lambda raw: load_graph(
    _named(SEEDS["edges"], "g.edges"), labels=_named(raw, "labels.txt")))
READERS["graph_features_file"] = ("node_features", lambda raw: load_graph(
    _named(SEEDS["edges"], "g.edges"), features=_named(raw, "X.txt")))


def _accepts(reader, raw):
    try:
        reader(raw)
    except DatasetError:
        pass


@st.composite
def mutated(draw, seed: bytes):
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "delete_line", "dup_line", "insert",
                                   "byte"]))
        if not data:
            break
        if op == "flip":
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "byte":
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.sampled_from(b"0123456789:,{}-+.eE \n\t?#%\x00\xff<>[]\"'"))
        elif op == "truncate":
            del data[draw(st.integers(0, len(data) - 1)):]
        elif op in ("delete_line", "dup_line"):
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            if op == "delete_line":
                del lines[i]
            else:
                lines.insert(i, lines[i])
            data = bytearray(b"\n".join(lines))
        else:
            i = draw(st.integers(0, len(data)))
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


# rows (points, nodes or table rows) each unmutated seed holds, from how it was made above
SEED_ROWS = {"xc": 6, "xc_split": 6, "xc_split_labels": 6, "dataset_txt": 6, "svmlight": 6,
             "arff_sparse": 6, "arff_dense": 6, "arff_xml": 6, "npz_multilabel": 6,
             "npz_graph": 6, "npz_table": 3, "edge_list": 4, "graphml": 8, "gml": 8, "mat": 6,
             "csv": 3, "parquet": 3, "graph_labels_file": 4, "graph_features_file": 4}


def _rows(obj) -> int:
    if isinstance(obj, GraphData):
        return obj.A.shape[0]
    if isinstance(obj, CategoricalData):
        return len(obj.table)
    return obj.X.shape[0]


def test_seeds_load():
    """The unmutated seeds are valid and read as what was written (so the fuzzer starts
    from files the readers accept, not from files they already refuse)."""
    assert set(SEED_ROWS) == set(READERS)
    got = {name: _rows(reader(SEEDS[key])) for name, (key, reader) in READERS.items()}
    assert got == SEED_ROWS


@pytest.mark.parametrize("reader_name", sorted(READERS))
@FUZZ
@given(data=st.data())
def test_mutated_files(reader_name, data):
    key, reader = READERS[reader_name]
    _accepts(reader, data.draw(mutated(SEEDS[key])))


@pytest.mark.parametrize("reader_name", sorted(READERS))
@settings(max_examples=15, deadline=None, database=None)
@given(raw=st.binary(max_size=600))
def test_random_bytes(reader_name, raw):
    _accepts(READERS[reader_name][1], raw)
