"""XC text and svmlight readers/writers checked against sklearn and exact round trips."""
import io
import os

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.preprocessing import MultiLabelBinarizer

from featagg_core.data import (
    DatasetError,
    MultiLabelData,
    load_dataset,
    load_svmlight,
    load_xc,
    save_xc,
    warmup,
)

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def _random_xy(n=60, d=50, L=12, seed=0, extreme=False):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.2, format="csr", dtype=np.float32, random_state=rng)
    if extreme:
        # every exponent range float32 has, plus subnormals and awkward decimals
        mags = 10.0 ** rng.uniform(-44, 38, X.nnz)
        X.data = (np.sign(rng.standard_normal(X.nnz)) * mags).astype(np.float32)
        X.data[X.data == 0] = 1
        X.data[:4] = np.array([1e-45, 3.4028235e38, 0.1, 16777217], np.float32)[:min(4, X.nnz)]
    else:
        X.data = rng.standard_normal(X.nnz).astype(np.float32)
    Y = (sp.random(n, L, density=0.15, format="csr", random_state=rng) > 0).astype(np.float32)
    Y = Y.tolil()
    Y[3] = 0  # a row without labels
    Y = Y.tocsr()
    Y.eliminate_zeros()
    X = X.tolil()
    X[5] = 0  # a row without features
    X = X.tocsr()
    X.eliminate_zeros()
    return X, Y


def _eq(A, B):
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    return (A.shape == B.shape and np.array_equal(A.indptr, B.indptr)
            and np.array_equal(A.indices, B.indices)
            and np.array_equal(A.data.view(np.uint32), B.data.astype(np.float32).view(np.uint32)))


@pytest.mark.parametrize("extreme", [False, True])
def test_save_load_round_trip_bit_identical(tmp_path, extreme):
    X, Y = _random_xy(extreme=extreme, seed=3)
    p = tmp_path / "d.txt"
    save_xc((X, Y), p)
    d = load_xc(p)
    assert d.X.dtype == np.float32
    assert _eq(d.X, X) and _eq(d.Y, Y)
    assert p.read_bytes().split(b"\n", 1)[0] == b"%d %d %d" % (X.shape + (Y.shape[1],))
    # saving what we read gives the same bytes
    q = tmp_path / "e.txt"
    save_xc(d, q)
    assert q.read_bytes() == p.read_bytes()


def test_split_format_round_trip(tmp_path):
    X, Y = _random_xy(seed=4)
    save_xc((X, Y), tmp_path / "X.txt", labels_path=tmp_path / "Y.txt")
    assert (tmp_path / "Y.txt").read_bytes().split(b"\n", 1)[0] == b"60 12"
    d = load_xc(tmp_path / "X.txt", labels_path=tmp_path / "Y.txt")
    assert _eq(d.X, X) and _eq(d.Y, Y)
    with pytest.raises(DatasetError, match="labels_path"):
        load_xc(tmp_path / "X.txt")


def test_values_parse_like_strtod_then_float32():
    """Many spellings of numbers, each compared with Python's float() -> float32."""
    rng = np.random.default_rng(7)
    toks = ["1", "1.", ".5", "-0.25", "+3", "1e5", "1E-5", "2.5e+3", "0.000000000001234",
            "123456789012345678901234567890", "1.00000000000000000001", "4.9e-324",
            "3.4028234663852886e38", "0.1", "0.30000000000000004", "7e-46", "-0",
            "9007199254740993", "1.7976931348623157e308"]
    toks += [repr(float(v)) for v in rng.standard_normal(200) * 10.0 ** rng.integers(-30, 30, 200)]
    toks += ["%.17g" % v for v in rng.uniform(0, 1, 200)]
    with np.errstate(over="ignore"):
        toks = [t for t in toks if np.isfinite(np.float32(float(t)))]
    body = "\n".join(f"0 {i % 7}:{t}" for i, t in enumerate(toks))
    text = f"{len(toks)} 7 1\n{body}\n".encode()
    d = load_xc(io.BytesIO(text))
    got = d.X.toarray()[np.arange(len(toks)), np.arange(len(toks)) % 7]
    want = np.array([np.float32(float(t)) for t in toks], np.float32)
    assert np.array_equal(got.view(np.uint32)[want != 0], want.view(np.uint32)[want != 0])
    assert (got[want == 0] == 0).all()


def _svm_text(X, Y, zero_based):
    buf = io.BytesIO()
    dump_svmlight_file(X, Y.toarray().astype(np.int64), buf, zero_based=zero_based, multilabel=True,
                       comment="made by sklearn")
    return buf.getvalue()


@pytest.mark.parametrize("zero_based", [True, False])
def test_svmlight_matches_sklearn(tmp_path, zero_based):
    X, Y = _random_xy(seed=5)
    X = X.tolil()
    X[:, 0] = 0  # index 0 unused: 'auto' cannot tell 0-based files and shifts, as sklearn
    X = X.tocsr()
    X.eliminate_zeros()
    raw = _svm_text(X, Y, zero_based)
    raw += b"\n# a comment line\n   \n"
    p = tmp_path / "d.svm"
    p.write_bytes(raw)
    Xs, ys = load_svmlight_file(str(p), multilabel=True, zero_based="auto", dtype=np.float32)
    d = load_dataset(p)  # zero_based="auto" as sklearn
    assert isinstance(d, MultiLabelData)
    Ysk = MultiLabelBinarizer(classes=range(d.Y.shape[1])).fit_transform(
        [tuple(int(v) for v in t) for t in ys])
    assert _eq(d.X, Xs[:, :d.X.shape[1]]) and Xs.shape[1] == d.X.shape[1]
    assert np.array_equal(d.Y.toarray(), Ysk)


def test_svmlight_qid_and_train_test_shapes(tmp_path):
    tr = b"1,3 qid:1 1:0.5 4:2\n0 qid:2 2:1 # comment\n"
    te = b"2 7:1.25\n"
    (tmp_path / "tr.svm").write_bytes(tr)
    (tmp_path / "te.svm").write_bytes(te)
    d = load_dataset(tmp_path / "tr.svm", test=tmp_path / "te.svm")
    (Xa, ya), (Xb, yb) = [load_svmlight_file(str(tmp_path / f), multilabel=True,
                                             n_features=7, dtype=np.float32)
                          for f in ("tr.svm", "te.svm")]
    assert d.X.shape == (2, 7) and d.X_test.shape == (1, 7)
    assert _eq(d.X, Xa) and _eq(d.X_test, Xb)
    assert d.Y.toarray().tolist() == [[0, 1, 0, 1], [1, 0, 0, 0]]
    assert d.Y_test.toarray().tolist() == [[0, 0, 1, 0]]


def test_svmlight_options():
    f = io.BytesIO(b"0 1:1 3:2\n1 2:1\n")
    f.name = "x.libsvm"
    d = load_svmlight(f, zero_based=True, n_features=10, n_labels=5)
    assert d.X.shape == (2, 10) and d.Y.shape == (2, 5) and d.X[0, 1] == 1
    f.seek(0)
    with pytest.raises(DatasetError, match="out of range"):
        load_svmlight(f, zero_based=True, n_features=3)


def test_xc_blank_rows_and_trailing_blank_lines():
    text = b"4 3 2\n0 0:1\n\n 2:3.5\n1\n\n\n"
    d = load_xc(io.BytesIO(text))
    assert d.X.toarray().tolist() == [[1, 0, 0], [0, 0, 0], [0, 0, 3.5], [0, 0, 0]]
    assert d.Y.toarray().tolist() == [[1, 0], [0, 0], [0, 0], [0, 1]]


@pytest.mark.skipif(not os.path.isdir(os.path.join(DATA, "bibtex")), reason="no ../shared/data")
def test_bibtex_xc_equals_arff_and_sklearn():
    x = load_dataset(os.path.join(DATA, "bibtex", "xc_format", "train.txt"))
    a = load_dataset(os.path.join(DATA, "bibtex", "bibtex-train.arff"))
    assert x.X.shape == (4880, 1836) and x.Y.shape == (4880, 159)
    assert _eq(x.X, a.X) and _eq(x.Y, a.Y)
    with open(os.path.join(DATA, "bibtex", "xc_format", "train.txt"), "rb") as fh:
        fh.readline()
        Xs, _ = load_svmlight_file(fh, multilabel=True, zero_based=True, n_features=1836,
                                   dtype=np.float32)
    assert _eq(x.X, Xs)


def test_warmup_compiles_the_parsing_kernels():
    """``warmup()`` exists so a first upload does not wait for compilation: afterwards the
    parse and write kernels hold a compiled signature."""
    from featagg_core._kernels import parse as k
    warmup()
    for kernel in (k.parse_sparse_lines, k.parse_arff_data, k.write_sparse_lines,
                   k.parse_edge_lines, k.intern_tokens):
        assert kernel.signatures, kernel.py_func.__name__


def test_utf8_bom_and_crlf_accepted():
    d = load_xc(io.BytesIO(b"\xef\xbb\xbf2 3 2\r\n0 0:1\r\n1 2:0.5\r\n"))
    assert d.X.toarray().tolist() == [[1, 0, 0], [0, 0, 0.5]]
    assert d.Y.toarray().tolist() == [[1, 0], [0, 1]]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None, database=None)
@given(bits=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=60),
       seed=st.integers(0, 2**16))
def test_round_trip_any_float32_bit_pattern(tmp_path_factory, bits, seed):
    """Every finite non-zero float32 (subnormals included) survives save_xc -> load_xc."""
    vals = np.array(bits, np.uint32).view(np.float32)
    vals = vals[np.isfinite(vals) & (vals != 0)]
    if vals.size == 0:
        return
    rng = np.random.default_rng(seed)
    n, d = 7, 50
    rows = rng.integers(0, n, vals.size)
    cols = rng.choice(n * d, vals.size, replace=False) % d if vals.size <= d else \
        rng.integers(0, d, vals.size)
    X = sp.coo_matrix((vals, (rows, cols)), shape=(n, d)).tocsr()
    X.sum_duplicates()
    X.data = X.data.astype(np.float32)
    X.eliminate_zeros()
    X.data[~np.isfinite(X.data)] = 1
    Y = sp.csr_matrix((np.ones(n, np.float32), (np.arange(n), np.arange(n) % 3)), shape=(n, 3))
    p = tmp_path_factory.mktemp("rt") / "d.txt"
    save_xc((X, Y), p)
    d_ = load_xc(p)
    assert _eq(d_.X, X) and _eq(d_.Y, Y)
