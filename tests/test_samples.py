"""Bundled samples: the registry, every sample's documented shape and content, caching,
errors; and (when ../shared/data is present) that the committed files are exactly what
scripts/make_samples.py produces and agree with an independent reader of the raw files."""
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core.data import samples
from featagg_core.data import CategoricalData, GraphData, MultiLabelData
from featagg_core.data.samples import list_samples, load_sample

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared", "data")

REAL = ["bibtex", "delicious", "cora", "citeseer", "blogcatalog", "adult",
        "amazon_employee_access"]
SYNTH = ["synthetic-multilabel", "synthetic-graph", "synthetic-table"]


def test_registry():
    names = [s.name for s in list_samples()]
    assert names == REAL + SYNTH
    assert [s.name for s in list_samples("graph")] == ["cora", "citeseer", "blogcatalog",
                                                       "synthetic-graph"]
    assert {s.kind for s in list_samples("table")} == {"table"}
    for s in list_samples():
        assert s.title and s.description and s.shape_text
    assert samples.default_sample("multilabel") == "bibtex"
    assert samples.default_sample("graph") == "cora"
    assert samples.default_sample("table") == "adult"
    with pytest.raises(ValueError, match="kind"):
        list_samples("images")
    with pytest.raises(ValueError, match="unknown sample 'nope'.*bibtex"):
        load_sample("nope")


def test_sample_files_small():
    total = sum(os.path.getsize(samples.sample_path(n)) for n in REAL)
    assert total < 15e6
    assert samples.sample_path("synthetic-graph") is None


def test_kinds_match_and_cached():
    for s in list_samples():
        d = load_sample(s.name)
        assert d.kind == s.kind
        assert d.name == s.name
        assert load_sample(s.name) is d            # cached, same object


def test_bibtex():
    d = load_sample("bibtex")
    assert isinstance(d, MultiLabelData)
    assert d.X.shape == (4880, 1836) and d.Y.shape == (4880, 159)
    assert d.X_test.shape == (2515, 1836) and d.Y_test.shape == (2515, 159)
    assert d.X.nnz == 334668
    assert len(d.feature_names) == 1836 and d.feature_names[:3] == ["0", "000", "02"]
    assert len(d.label_names) == 159 and d.label_names[:2] == ["2005", "2006"]
    assert "algorithms" in d.label_names
    # every point has at least one tag (MULAN bibtex)
    assert np.diff(d.Y.indptr).min() >= 1


def test_delicious():
    d = load_sample("delicious")
    assert d.X.shape == (12920, 500) and d.Y.shape == (12920, 983)
    assert d.X_test.shape == (3185, 500)
    assert d.label_names[:2] == [".imported", ".net"]
    assert d.feature_names[0] == "_qacct"
    # many labels per point, on average ~19
    assert 15 < d.Y.nnz / d.Y.shape[0] < 25


@pytest.mark.parametrize("name,n,edges,d,nnz,sizes", [
    ("cora", 2708, 5278, 1433, 49216, [351, 217, 418, 818, 426, 298, 180]),
    ("citeseer", 3327, 4552, 3703, 105165, [249, 590, 668, 701, 596, 508]),
    ("blogcatalog", 5196, 171743, 8189, 369435, [885, 777, 921, 858, 892, 863]),
])
def test_graphs(name, n, edges, d, nnz, sizes):
    g = load_sample(name)
    assert isinstance(g, GraphData)
    assert g.A.shape == (n, n) and g.X.shape == (n, d)
    assert (g.A != g.A.T).nnz == 0 and g.A.diagonal().sum() == 0
    assert g.A.nnz == 2 * edges and g.X.nnz == nnz
    assert np.bincount(g.y[g.y >= 0]).tolist() == sizes
    assert len(g.class_names) == len(sizes)


def test_citeseer_isolated_nodes():
    g = load_sample("citeseer")
    unknown = np.flatnonzero(g.y == -1)
    assert unknown.size == 15
    assert g.X[unknown].nnz == 0
    assert np.diff(g.X.indptr)[g.y >= 0].min() > 0      # everyone else has features
    if os.path.isdir(SHARED):
        # they are exactly the ids in the test range that test.index leaves out
        idx = np.loadtxt(os.path.join(SHARED, "citeseer", "ind.citeseer.test.index"),
                         dtype=np.int64)
        gap = np.setdiff1d(np.arange(idx.min(), idx.max() + 1), idx)
        assert np.array_equal(gap, unknown)


@pytest.mark.parametrize("name,label,rows,cols,pos", [
    ("adult", "income_gt_50K", 48842, 8, 11687),
    ("amazon_employee_access", "ACTION", 32769, 9, 30872),
])
def test_tables(name, label, rows, cols, pos):
    t = load_sample(name)
    assert isinstance(t, CategoricalData)
    assert t.table.shape == (rows, cols) and label not in t.table.columns
    assert t.label_name == label
    assert t.labels.dtype == np.int8 and int(t.labels.sum()) == pos
    if name == "amazon_employee_access":
        assert t.table["RESOURCE"].nunique() == 7518
        assert t.table["MGR_ID"].nunique() == 4243
    else:
        assert t.table["gender"].nunique() == 2


def test_synthetic_samples_are_fixed():
    from featagg_core.data import synthetic
    m = load_sample("synthetic-multilabel")
    assert m.X.shape == (3750, 5000) and m.X_test.shape == (1250, 5000)
    assert m.Y.shape[1] == 500
    again = synthetic.make_powerlaw_multilabel(5000, 5000, 500, avg_labels=4.0,
                                               avg_features=40.0, feature_clusters=100,
                                               test_size=0.25, random_state=0)
    assert again.fingerprint == m.fingerprint
    g = load_sample("synthetic-graph")
    assert g.A.shape == (1000, 1000) and g.X.shape == (1000, 200)
    t = load_sample("synthetic-table")
    assert t.table.shape == (50000, 2)


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/data is not available")
def test_make_samples_reproduces_committed_files(tmp_path):
    """Re-running the conversion gives byte-identical content (as loaded)."""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_samples.py"),
                        "--src", SHARED, "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    from featagg_core import data
    for n in ("bibtex", "delicious"):
        a = data.load_dataset(str(tmp_path / f"{n}.npz"))
        assert a.fingerprint == load_sample(n).fingerprint
    for n in ("cora", "citeseer", "blogcatalog"):
        a = data.load_graph(str(tmp_path / f"{n}.npz"))
        assert a.fingerprint == load_sample(n).fingerprint
    import pandas as pd
    for n in ("adult", "amazon_employee_access"):
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / f"{n}.parquet"),
                                      pd.read_parquet(samples.sample_path(n)))


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/data is not available")
def test_bibtex_matches_raw_files_via_library_reader():
    """Independent check: the library's own XC reader on the raw XC-repo split files."""
    from featagg_core import data
    raw = data.load_xc(os.path.join(SHARED, "bibtex", "xc_repo_split", "train.txt"))
    d = load_sample("bibtex")
    assert (raw.X != d.X).nnz == 0 and (raw.Y != d.Y).nnz == 0
    raw_t = data.load_xc(os.path.join(SHARED, "bibtex", "xc_repo_split", "test.txt"))
    assert (raw_t.X != d.X_test).nnz == 0 and (raw_t.Y != d.Y_test).nnz == 0


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/data is not available")
def test_blogcatalog_matches_mat():
    import scipy.io
    m = scipy.io.loadmat(os.path.join(SHARED, "blogcatalog", "BlogCatalog.mat"))
    g = load_sample("blogcatalog")
    A = sp.csr_matrix(m["Network"])
    A.setdiag(0)
    A.eliminate_zeros()
    assert (A != g.A).nnz == 0
    assert (sp.csr_matrix(m["Attributes"]) != g.X).nnz == 0
    assert np.array_equal(np.asarray(m["Label"]).ravel() - 1, g.y)
