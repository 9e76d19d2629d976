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

The raw planetoid files are Python pickles; they are read here, once, from the trusted
shared copy with a *restricted* unpickler that only admits numpy/scipy array classes and
plain containers. Nothing in featagg_core ever unpickles anything. The script checks every
conversion (shapes, split agreement with the MULAN ARFF rows, symmetry, class counts) and
fails loudly if the input differs from what sample_data/README.md documents.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import io
import os
import pickle
import re
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from featagg_core.data import GraphData, MultiLabelData, save_npz  # noqa: E402


# ---------------------------------------------------------------------------
# raw-format helpers (used only by this one-off conversion)
# ---------------------------------------------------------------------------

def read_xc(path):
    """Extreme Classification Repository text file -> (X csr, Y csr)."""
    with open(path, encoding="utf-8") as fh:
        n, d, L = (int(t) for t in fh.readline().split())
        lab_rows, lab_cols, f_rows, f_cols, f_vals = [], [], [], [], []
        for i, line in enumerate(fh):
            line = line.rstrip("\n")
            head, _, rest = line.partition(" ")
            if ":" in head:                     # no labels on this line
                head, rest = "", line
            labs = [int(t) for t in head.split(",") if t]
            lab_rows += [i] * len(labs)
            lab_cols += labs
            for tok in rest.split():
                j, v = tok.split(":")
                f_rows.append(i)
                f_cols.append(int(j))
                f_vals.append(float(v))
    assert i + 1 == n, (path, i + 1, n)
    X = sp.csr_matrix((np.asarray(f_vals, np.float32), (f_rows, f_cols)), shape=(n, d))
    Y = sp.csr_matrix((np.ones(len(lab_rows), np.float32), (lab_rows, lab_cols)),
                      shape=(n, L))
    return X, Y


_ATTR = re.compile(r"@attribute\s+('(?:[^'\\]|\\.)*'|\"[^\"]*\"|\S+)\s+(.*)$", re.I)


def read_sparse_arff(path, n_labels):
    """MULAN sparse ARFF with the labels as the last ``n_labels`` attributes ->
    (X csr, Y csr, feature names, label names)."""
    names, rows, cols, vals = [], [], [], []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            s = line.strip()
            if s.lower().startswith("@attribute"):
                m = _ATTR.match(s)
                nm = m.group(1)
                if nm[0] in "'\"":
                    nm = nm[1:-1].replace("\\'", "'")
                names.append(nm)
            elif s.lower().startswith("@data"):
                break
        i = 0
        for line in fh:
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            assert s[0] == "{" and s[-1] == "}", s[:50]
            for tok in s[1:-1].split(","):
                tok = tok.strip()
                if not tok:
                    continue
                j, v = tok.split()
                rows.append(i)
                cols.append(int(j))
                vals.append(float(v))
            i += 1
    D = len(names)
    M = sp.csr_matrix((np.asarray(vals, np.float32), (rows, cols)), shape=(i, D))
    d = D - n_labels
    X, Y = M[:, :d].tocsr(), M[:, d:].tocsr()
    X.eliminate_zeros()
    Y.eliminate_zeros()
    return X, Y, names[:d], names[d:]


def read_mulan_xml(path):
    root = ET.parse(path).getroot()
    return [el.attrib["name"] for el in root.iter() if el.tag.endswith("label")]


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


class _PlanetoidUnpickler(pickle.Unpickler):
    """Admits only the classes a planetoid file needs (numpy arrays, scipy csr/csc,
    defaultdict/list/dict)."""
    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"): ("numpy", "_reconstruct"),
        ("numpy", "ndarray"): None,
        ("numpy", "dtype"): None,
        ("numpy.core.multiarray", "scalar"): ("numpy", "scalar"),
        ("scipy.sparse.csr", "csr_matrix"): ("scipy.sparse", "csr_matrix"),
        ("scipy.sparse.csc", "csc_matrix"): ("scipy.sparse", "csc_matrix"),
        ("collections", "defaultdict"): None,
        ("copy_reg", "_reconstructor"): ("copyreg", "_reconstructor"),
        ("copyreg", "_reconstructor"): None,
        ("__builtin__", "object"): ("builtins", "object"),
        ("builtins", "object"): None,
        ("__builtin__", "list"): ("builtins", "list"),
        ("builtins", "list"): None,
    }

    def find_class(self, module, name):
        key = (module, name)
        if key not in self._ALLOWED:
            raise pickle.UnpicklingError(f"planetoid file refers to {module}.{name}: "
                                         f"not allowed")
        target = self._ALLOWED[key] or key
        if target == ("numpy", "_reconstruct"):
            from numpy._core.multiarray import _reconstruct
            return _reconstruct
        if target == ("numpy", "scalar"):
            from numpy._core.multiarray import scalar
            return scalar
        if target == ("numpy", "ndarray"):
            return np.ndarray
        if target == ("numpy", "dtype"):
            return np.dtype
        if target == ("scipy.sparse", "csr_matrix"):
            return sp.csr_matrix
        if target == ("scipy.sparse", "csc_matrix"):
            return sp.csc_matrix
        if target == ("collections", "defaultdict"):
            return collections.defaultdict
        if target == ("copyreg", "_reconstructor"):
            import copyreg
            return copyreg._reconstructor
        if target == ("builtins", "object"):
            return object
        if target == ("builtins", "list"):
            return list
        raise pickle.UnpicklingError(f"{module}.{name}")


def _unpickle(path):
    with open(path, "rb") as fh:
        return _PlanetoidUnpickler(io.BytesIO(fh.read()), encoding="latin1").load()


def read_planetoid(folder, name):
    """Planetoid files -> (A csr symmetric without self loops, X csr, y with -1 unknown,
    number of isolated test nodes that got GCN's fix)."""
    p = lambda suffix: os.path.join(folder, f"ind.{name}.{suffix}")  # noqa: E731
    x, y, tx, ty, allx, ally, graph = (_unpickle(p(s)) for s in
                                       ("x", "y", "tx", "ty", "allx", "ally", "graph"))
    test_idx = np.loadtxt(p("test.index"), dtype=np.int64)
    test_range = np.sort(test_idx)
    n_fixed = 0
    tx, ty = sp.csr_matrix(tx), np.asarray(ty)
    if name == "citeseer":
        # GCN (Kipf & Welling) fix: some test ids are isolated nodes missing from tx/ty;
        # give them zero feature rows and zero label rows (here: class -1)
        full = np.arange(test_range.min(), test_range.max() + 1)
        n_fixed = full.shape[0] - test_range.shape[0]
        tx_ext = sp.lil_matrix((full.shape[0], tx.shape[1]), dtype=np.float32)
        tx_ext[test_range - test_range.min(), :] = tx
        tx = tx_ext.tocsr()
        ty_ext = np.zeros((full.shape[0], ty.shape[1]))
        ty_ext[test_range - test_range.min(), :] = ty
        ty = ty_ext
    X = sp.vstack([sp.csr_matrix(allx), tx]).tolil()
    X[test_idx, :] = X[test_range, :]
    X = sp.csr_matrix(X, dtype=np.float32)
    Yoh = np.vstack([np.asarray(ally), ty])
    Yoh[test_idx, :] = Yoh[test_range, :]
    yv = np.where(Yoh.sum(1) > 0, Yoh.argmax(1), -1).astype(np.int64)
    n = X.shape[0]
    src, dst = [], []
    for u, nbrs in graph.items():
        for v in nbrs:
            src.append(int(u))
            dst.append(int(v))
    src, dst = np.asarray(src), np.asarray(dst)
    assert max(src.max(), dst.max()) < n
    A = sp.csr_matrix((np.ones(2 * src.shape[0], np.float32), (np.r_[src, dst], np.r_[dst, src])),
                      shape=(n, n))
    A.setdiag(0)
    A.eliminate_zeros()
    A.data[:] = 1.0
    return A, X, yv, n_fixed


# ---------------------------------------------------------------------------
# the datasets
# ---------------------------------------------------------------------------

def make_bibtex(src, out):
    arff_tr = read_sparse_arff(os.path.join(src, "bibtex", "bibtex-train.arff"), 159)
    arff_te = read_sparse_arff(os.path.join(src, "bibtex", "bibtex-test.arff"), 159)
    feat_names, label_names = arff_tr[2], arff_tr[3]
    assert arff_te[2] == feat_names and arff_te[3] == label_names
    assert read_mulan_xml(os.path.join(src, "bibtex", "bibtex.xml")) == label_names
    Xtr, Ytr = read_xc(os.path.join(src, "bibtex", "xc_repo_split", "train.txt"))
    Xte, Yte = read_xc(os.path.join(src, "bibtex", "xc_repo_split", "test.txt"))
    for M in (Xtr, Xte):
        M.eliminate_zeros()
    assert Xtr.shape == (4880, 1836) and Xte.shape == (2515, 1836)
    assert Ytr.shape == (4880, 159) and Yte.shape == (2515, 159)
    # the XC-repo split holds exactly the MULAN points (same feature/label numbering)
    assert (row_keys(Xtr, Ytr) + row_keys(Xte, Yte)
            == row_keys(arff_tr[0], arff_tr[1]) + row_keys(arff_te[0], arff_te[1]))
    data = MultiLabelData(
        X=Xtr, Y=Ytr, X_test=Xte, Y_test=Yte, feature_names=feat_names,
        label_names=[s[4:] if s.startswith("TAG_") else s for s in label_names],
        name="bibtex",
        source=("MULAN bibtex (tsoumakas/mulan@43f63890 data/multi-label/bibtex) in the "
                "XC-repo/DEFRAG train/test split (purushottamkar/defrag@684540e7 "
                "sandbox/bibtex); Katakis, Tsoumakas, Vlahavas, ECML/PKDD 2008 Discovery "
                "Challenge"))
    save_npz(data, os.path.join(out, "bibtex.npz"))
    return data


def make_delicious(src, out):
    Xtr, Ytr, fn, ln = read_sparse_arff(os.path.join(src, "delicious", "delicious-train.arff"),
                                        983)
    Xte, Yte, fn2, ln2 = read_sparse_arff(os.path.join(src, "delicious",
                                                       "delicious-test.arff"), 983)
    assert fn == fn2 and ln == ln2
    assert read_mulan_xml(os.path.join(src, "delicious", "delicious.xml")) == ln
    assert Xtr.shape == (12920, 500) and Xte.shape == (3185, 500)
    # agrees with the XC-format copy of the same split
    Xc, Yc = read_xc(os.path.join(src, "delicious", "xc_format", "train.txt"))
    Xc.eliminate_zeros()
    assert row_keys(Xc, Yc) == row_keys(Xtr, Ytr)
    data = MultiLabelData(
        X=Xtr, Y=Ytr, X_test=Xte, Y_test=Yte, feature_names=fn,
        label_names=[s[4:] if s.startswith("TAG_") else s for s in ln], name="delicious",
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
    A, X, y, n_fixed = read_planetoid(os.path.join(src, name), name)
    expect = {"cora": (2708, 1433, 7, 0), "citeseer": (3327, 3703, 6, 15)}[name]
    assert (X.shape[0], X.shape[1], int(y.max()) + 1, n_fixed) == expect, \
        (X.shape, y.max(), n_fixed)
    if name == "citeseer":
        assert (y == -1).sum() == 15
        assert X[y == -1].nnz == 0
    assert (A != A.T).nnz == 0
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
    m = scipy.io.loadmat(os.path.join(src, "blogcatalog", "BlogCatalog.mat"))
    A = sp.csr_matrix(m["Network"], dtype=np.float32)
    assert (A != A.T).nnz == 0
    A.setdiag(0)
    A.eliminate_zeros()
    assert set(np.unique(A.data)) == {1.0}
    X = sp.csr_matrix(m["Attributes"], dtype=np.float32)
    lab = np.asarray(m["Label"]).ravel().astype(np.int64)
    assert lab.min() == 1 and lab.max() == 6
    data = GraphData(
        A=A, X=X, y=lab - 1, class_names=[f"group {i}" for i in range(1, 7)],
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
