"""npz round trips and validation of malformed npz archives (featagg_core.data)."""
import io

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from featagg_core.data import (
    CategoricalData,
    DatasetError,
    GraphData,
    MultiLabelData,
    load_categorical,
    load_dataset,
    load_graph,
    save_npz,
)


def _ml(seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(25, 40, density=0.15, format="csr", dtype=np.float32, random_state=rng)
    X.data = rng.standard_normal(X.nnz).astype(np.float32)
    Y = (sp.random(25, 7, density=0.3, format="csr", random_state=rng) > 0).astype(np.float32)
    return MultiLabelData(X, Y, feature_names=[f"w{i}" for i in range(40)],
                          label_names=[f"tag_é{i}" for i in range(7)], X_test=X[:4],
                          Y_test=Y[:4], name="toy", source="unit test")


def _graph():
    rng = np.random.default_rng(1)
    A = sp.random(12, 12, density=0.3, format="csr", random_state=rng)
    A = ((A + A.T) > 0).astype(np.float32)
    X = sp.random(12, 5, density=0.4, format="csr", dtype=np.float32, random_state=rng)
    y = np.array([0, 1, 2, -1] * 3)
    return GraphData(A, X, y, feature_names=list("abcde"), class_names=["x", "y", "z"],
                     name="g")


def _same(a, b):
    return a.shape == b.shape and (a != b).nnz == 0 and a.dtype == np.float32


def test_multilabel_round_trip(tmp_path):
    d = _ml()
    p = tmp_path / "d.npz"
    save_npz(d, p)
    e = load_dataset(p)
    assert isinstance(e, MultiLabelData)
    assert _same(e.X, d.X) and _same(e.Y, d.Y)
    assert _same(e.X_test, d.X_test) and _same(e.Y_test, d.Y_test)
    assert e.feature_names == d.feature_names and e.label_names == d.label_names
    assert (e.name, e.source) == ("toy", "unit test")
    assert e.fingerprint == d.fingerprint
    # a binary file-like object with a .name, as Streamlit's UploadedFile
    buf = io.BytesIO(p.read_bytes())
    buf.name = "upload.npz"
    assert load_dataset(buf).fingerprint == d.fingerprint
    with np.load(p, allow_pickle=False) as z:  # no object arrays inside
        assert str(z["kind"]) == "multilabel" and z["feature_names"].dtype.kind == "U"


def test_graph_round_trip(tmp_path):
    g = _graph()
    p = tmp_path / "g.npz"
    save_npz(g, p)
    h = load_graph(p)
    assert isinstance(h, GraphData)
    assert _same(h.A, g.A) and _same(h.X, g.X)
    assert h.y.dtype == np.int64 and np.array_equal(h.y, g.y)
    assert h.class_names == ["x", "y", "z"] and h.feature_names == list("abcde")
    with pytest.raises(DatasetError, match="not a multi-label"):
        load_dataset(p)


def test_table_round_trip(tmp_path):
    t = pd.DataFrame({"a": ["x", "y", None, "x"], "b": ["1", "2", "3", "4"]})
    c = CategoricalData(t, np.array([0, 1, 1, 0], np.int8), label_name="lab", name="t")
    p = tmp_path / "t.npz"
    save_npz(c, p)
    e = load_categorical(p)
    assert e.columns == ["a", "b"] and e.table["a"].tolist() == ["x", "y", "<NA>", "x"]
    assert e.labels.tolist() == [0, 1, 1, 0] and e.label_name == "lab"


def test_atomic_write_leaves_no_temp(tmp_path):
    save_npz(_ml(), tmp_path / "d.npz")
    assert [p.name for p in tmp_path.iterdir()] == ["d.npz"]


def _write(tmp_path, **arrays):
    p = tmp_path / "bad.npz"
    np.savez(p, **arrays)
    return p


def _parts(prefix, M):
    M = sp.csr_matrix(M)
    return {f"{prefix}_data": M.data, f"{prefix}_indices": M.indices,
            f"{prefix}_indptr": M.indptr, f"{prefix}_shape": np.array(M.shape)}


def _good_ml():
    X = sp.csr_matrix(np.array([[1, 0, 2], [0, 3, 0]], np.float32))
    Y = sp.csr_matrix(np.array([[1, 0], [0, 1]], np.float32))
    return {"kind": np.array("multilabel"), **_parts("X", X), **_parts("Y", Y)}


BAD = {
    "no kind": (lambda a: a.pop("kind"), "kind"),
    "unknown kind": (lambda a: a.update(kind=np.array("tensor")), "kind"),
    "index out of range": (lambda a: a.update(X_indices=np.array([0, 5, 1])), "out of range"),
    "negative index": (lambda a: a.update(X_indices=np.array([0, -1, 1])), "out of range"),
    "indptr decreasing": (lambda a: a.update(X_indptr=np.array([0, 3, 2, 3])), "indptr"),
    "indptr wrong length": (lambda a: a.update(X_indptr=np.array([0, 3])), "indptr"),
    "nan value": (lambda a: a.update(X_data=np.array([1, np.nan, 3.0])), "non-finite"),
    "inf value": (lambda a: a.update(X_data=np.array([1, np.inf, 3.0])), "non-finite"),
    "non-binary Y": (lambda a: a.update(Y_data=np.array([1.0, 2.0])), "0/1"),
    "row mismatch": (lambda a: a.update(Y_shape=np.array([3, 2]),
                                        Y_indptr=np.array([0, 1, 2, 2])), "rows"),
    "missing part": (lambda a: a.pop("Y_indptr"), "Y_indptr"),
    "duplicate index": (lambda a: a.update(X_indices=np.array([0, 0, 1])), "twice"),
    "names wrong count": (lambda a: a.update(feature_names=np.array(["a"])), "feature_names"),
    "float indices": (lambda a: a.update(X_indices=np.array([0.0, 2.0, 1.0])), "integer"),
    "bad shape": (lambda a: a.update(X_shape=np.array([2])), "shape"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_multilabel_npz(tmp_path, case):
    arrays = _good_ml()
    load_dataset(_write(tmp_path, **arrays))  # the unmodified archive loads
    mutate, needle = BAD[case]
    mutate(arrays)
    with pytest.raises(DatasetError, match=needle) as ei:
        load_dataset(_write(tmp_path, **arrays))
    assert "bad.npz" in str(ei.value)


def test_asymmetric_graph_rejected(tmp_path):
    A = sp.csr_matrix(np.array([[0, 1], [0, 0]], np.float32))
    p = _write(tmp_path, kind=np.array("graph"), **_parts("A", A))
    with pytest.raises(DatasetError, match="symmetric"):
        load_graph(p)


def test_object_arrays_and_garbage_rejected(tmp_path):
    p = tmp_path / "obj.npz"
    np.savez(p, kind=np.array("multilabel"), evil=np.array([{"a": 1}], dtype=object))
    with pytest.raises(DatasetError, match="obj.npz"):
        load_dataset(p)
    q = tmp_path / "junk.npz"
    q.write_bytes(b"PK\x03\x04 this is not a zip")
    with pytest.raises(DatasetError, match="junk.npz"):
        load_dataset(q)
    e = tmp_path / "empty.npz"
    e.write_bytes(b"")
    with pytest.raises(DatasetError, match="empty"):
        load_dataset(e)
