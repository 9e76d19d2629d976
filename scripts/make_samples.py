"""Convert the raw datasets in ../shared/data into the bundled sample_data/ files.

Usage:  .venv/bin/python scripts/make_samples.py [--src ../shared/data] [--out sample_data]

Outputs (all safe to load: npz read with allow_pickle=False, parquet):

  bibtex.npz        multilabel, XC-repo (DEFRAG) split, word feature names, tag label names
  delicious.npz     multilabel, MULAN split, word feature names, tag label names
  cora.npz          graph (planetoid, GCN's ordering of the test nodes)
  citeseer.npz      graph (planetoid, GCN's fix: isolated test nodes get zero features, y=-1)
  blogcatalog.npz   graph (attributed BlogCatalog .mat; self loops removed)
  adult.parquet                   8 categorical columns + income_gt_50K (0/1)
  amazon_employee_access.parquet  9 categorical id columns (as strings) + ACTION (0/1)

Reading goes through the library's own readers (featagg_core.data: load_xc, load_arff,
load_graph, planetoid_to_npz); the raw planetoid files are Python pickles, which
planetoid_to_npz opens with a restricted unpickler (numpy/scipy arrays and plain containers
only) from the trusted shared copy. The bundled outputs never need unpickling. The script
checks every conversion (shapes, split agreement with the MULAN ARFF rows, the XC copy of
Delicious, the raw .mat matrices, symmetry, class counts, GCN's Citeseer gap) and fails
loudly if the input differs from what sample_data/README.md documents.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import os
import sys

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from featagg_core.data import (
    GraphData,
    MultiLabelData,
    load_arff,
    load_graph,
    load_xc,
    planetoid_to_npz,
    save_npz,
)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def row_keys(X, Y):
    """A hash of every row of (X, Y): to compare two splits as multisets of points."""
    X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
    X.sort_indices()
    Y.sort_indices()
    out = []
    for i in range(X.shape[0]):
        h = hashlib.sha1()
        h.update(X.indices[X.indptr[i]:X.indptr[i + 1]].astype(np.int64).tobytes())
        h.update(X.data[X.indptr[i]:X.indptr[i + 1]].astype(np.float32).tobytes())
        h.update(b"|")
        h.update(Y.indices[Y.indptr[i]:Y.indptr[i + 1]].astype(np.int64).tobytes())
        out.append(h.hexdigest())
    return collections.Counter(out)


def strip_tag(names):
    return [s[4:] if s.startswith("TAG_") else s for s in names]


# ---------------------------------------------------------------------------
# the datasets
# ---------------------------------------------------------------------------

def make_bibtex(src, out):
    base = os.path.join(src, "bibtex")
    xml = os.path.join(base, "bibtex.xml")
    arff_tr = load_arff(os.path.join(base, "bibtex-train.arff"), xml=xml)
    arff_te = load_arff(os.path.join(base, "bibtex-test.arff"), xml=xml)
    assert arff_te.feature_names == arff_tr.feature_names
    assert arff_te.label_names == arff_tr.label_names
    tr = load_xc(os.path.join(base, "xc_repo_split", "train.txt"))
    te = load_xc(os.path.join(base, "xc_repo_split", "test.txt"))
    assert tr.X.shape == (4880, 1836) and te.X.shape == (2515, 1836)
    assert tr.Y.shape == (4880, 159) and te.Y.shape == (2515, 159)
    # the XC-repo split holds exactly the MULAN points (same feature/label numbering)
    assert (row_keys(tr.X, tr.Y) + row_keys(te.X, te.Y)
            == row_keys(arff_tr.X, arff_tr.Y) + row_keys(arff_te.X, arff_te.Y))
    data = MultiLabelData(
        X=tr.X, Y=tr.Y, X_test=te.X, Y_test=te.Y, feature_names=arff_tr.feature_names,
        label_names=strip_tag(arff_tr.label_names), name="bibtex",
        source=("MULAN bibtex (tsoumakas/mulan@43f63890 data/multi-label/bibtex) in the "
                "XC-repo/DEFRAG train/test split (purushottamkar/defrag@684540e7 "
                "sandbox/bibtex); Katakis, Tsoumakas, Vlahavas, ECML/PKDD 2008 Discovery "
                "Challenge"))
    save_npz(data, os.path.join(out, "bibtex.npz"))
    return data


def make_delicious(src, out):
    base = os.path.join(src, "delicious")
    xml = os.path.join(base, "delicious.xml")
    tr = load_arff(os.path.join(base, "delicious-train.arff"), xml=xml)
    te = load_arff(os.path.join(base, "delicious-test.arff"), xml=xml)
    assert te.feature_names == tr.feature_names and te.label_names == tr.label_names
    assert tr.X.shape == (12920, 500) and te.X.shape == (3185, 500)
    assert tr.Y.shape[1] == 983
    # agrees with the XC-format copy of the same split
    xc = load_xc(os.path.join(base, "xc_format", "train.txt"))
    assert row_keys(xc.X, xc.Y) == row_keys(tr.X, tr.Y)
    data = MultiLabelData(
        X=tr.X, Y=tr.Y, X_test=te.X, Y_test=te.Y, feature_names=tr.feature_names,
        label_names=strip_tag(tr.label_names), name="delicious",
        source=("MULAN delicious (tsoumakas/mulan@43f63890 data/multi-label/delicious), "
                "MULAN train/test split; Tsoumakas, Katakis, Vlahavas, MMD'08"))
    save_npz(data, os.path.join(out, "delicious.npz"))
    return data


# class sizes of the original LINQS Cora / CiteSeer data (Sen et al. 2008)
PLANETOID_CLASS_SIZES = {
    "cora": {298: "Case_Based", 418: "Genetic_Algorithms", 818: "Neural_Networks",
             426: "Probabilistic_Methods", 217: "Reinforcement_Learning",
             180: "Rule_Learning", 351: "Theory"},
    "citeseer": {596: "Agents", 249: "AI", 701: "DB", 668: "IR", 590: "ML", 508: "HCI"},
}


def make_planetoid(src, out, name):
    g = planetoid_to_npz(os.path.join(src, name, f"ind.{name}"))
    A, X, y = g.A, g.X, g.y
    expect = {"cora": (2708, 1433, 7, 0), "citeseer": (3327, 3703, 6, 15)}[name]
    assert (X.shape[0], X.shape[1], int(y.max()) + 1, int((y < 0).sum())) == expect, \
        (X.shape, y.max(), (y < 0).sum())
    if name == "citeseer":
        # GCN's fix: the ids of the test range missing from test.index
        idx = np.loadtxt(os.path.join(src, name, f"ind.{name}.test.index"), dtype=np.int64)
        gap = np.setdiff1d(np.arange(idx.min(), idx.max() + 1), idx)
        assert np.array_equal(np.flatnonzero(y < 0), gap)
        assert X[gap].nnz == 0
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0
    # planetoid stores classes as one-hot columns without names; every class has a
    # different size, so matching the sizes with the original LINQS class sizes names them
    sizes = np.bincount(y[y >= 0])
    names = [PLANETOID_CLASS_SIZES[name][int(s)] for s in sizes]
    data = GraphData(
        A=A, X=X, y=y, name=name, class_names=names,
        source=(f"planetoid {name} (kimiyoung/planetoid@af6abf46 data/ind.{name}.*; same "
                f"bytes as tkipf/gcn); Sen et al., AI Magazine 2008; split files from Yang, "
                f"Cohen, Salakhutdinov, ICML 2016"))
    save_npz(data, os.path.join(out, f"{name}.npz"))
    return data


def make_blogcatalog(src, out):
    path = os.path.join(src, "blogcatalog", "BlogCatalog.mat")
    g = load_graph(path)                     # Network/Attributes/Label; self loops dropped
    m = scipy.io.loadmat(path)               # cross-check against the raw matrices
    raw = sp.csr_matrix(m["Network"])
    assert raw.diagonal().sum() == 5196 and (raw != raw.T).nnz == 0
    raw.setdiag(0)
    raw.eliminate_zeros()
    assert (raw != g.A).nnz == 0 and g.A.diagonal().sum() == 0
    assert (sp.csr_matrix(m["Attributes"]) != g.X).nnz == 0
    lab = np.asarray(m["Label"]).ravel().astype(np.int64)
    assert lab.min() == 1 and lab.max() == 6 and np.array_equal(g.y, lab - 1)
    data = GraphData(
        A=g.A, X=g.X, y=g.y, class_names=[f"group {i}" for i in range(1, 7)],
        name="blogcatalog",
        source=("attributed BlogCatalog (xhuang31/NEEC_MATLAB@4a07093a BlogCatalog.mat); "
                "Huang, Li, Hu, WSDM 2017"))
    save_npz(data, os.path.join(out, "blogcatalog.npz"))
    return data


ADULT_CATEGORICAL = ["workclass", "education", "marital-status", "occupation",
                     "relationship", "race", "gender", "native-country"]


def make_adult(src, out):
    df = pd.read_parquet(os.path.join(src, "adult", "adult.parquet.brotli"))
    assert df.shape == (48842, 15)
    assert set(df["income"].unique()) == {"<=50K", ">50K"}
    t = df[ADULT_CATEGORICAL].astype(str).copy()
    t["income_gt_50K"] = (df["income"] == ">50K").astype(np.int8)
    t.to_parquet(os.path.join(out, "adult.parquet"), index=False, compression="zstd")
    return t


def make_amazon(src, out):
    df = pd.read_csv(os.path.join(src, "amazon_employee_access", "train.csv"))
    assert df.shape == (32769, 10) and set(df["ACTION"].unique()) == {0, 1}
    t = df.drop(columns=["ACTION"]).astype(str)
    t["ACTION"] = df["ACTION"].astype(np.int8)
    t.to_parquet(os.path.join(out, "amazon_employee_access.parquet"), index=False,
                 compression="zstd")
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(HERE)
    ap.add_argument("--src", default=os.path.join(root, "..", "shared", "data"))
    ap.add_argument("--out", default=os.path.join(root, "sample_data"))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for label, fn in [("bibtex", lambda: make_bibtex(args.src, args.out)),
                      ("delicious", lambda: make_delicious(args.src, args.out)),
                      ("cora", lambda: make_planetoid(args.src, args.out, "cora")),
                      ("citeseer", lambda: make_planetoid(args.src, args.out, "citeseer")),
                      ("blogcatalog", lambda: make_blogcatalog(args.src, args.out)),
                      ("adult", lambda: make_adult(args.src, args.out)),
                      ("amazon_employee_access", lambda: make_amazon(args.src, args.out))]:
        d = fn()
        if isinstance(d, MultiLabelData):
            desc = (f"train {d.X.shape[0]} x {d.X.shape[1]} (nnz {d.X.nnz}), "
                    f"test {d.X_test.shape[0]}, labels {d.Y.shape[1]}")
        elif isinstance(d, GraphData):
            desc = (f"{d.A.shape[0]} nodes, {d.A.nnz // 2} edges, {d.X.shape[1]} features "
                    f"(nnz {d.X.nnz}), {int(d.y.max()) + 1} classes, "
                    f"{int((d.y < 0).sum())} unknown")
        else:
            desc = f"{d.shape[0]} rows x {d.shape[1] - 1} columns + label"
        print(f"{label:24s} {desc}")


if __name__ == "__main__":
    main()
