"""Hostile input, the pieces: every artifact class has declared checks; an edited manifest
is refused while informational edits load equal; the load budget (``max_bytes``,
``FEATAGG_MAX_LOAD_MB``, ``max_dim``) refuses before inflating; only the npz members a
layout needs are read; the linear readers read what the old ones did; fingerprints cover
names (twin uploads in two sessions keep their own names); the server's address; the
CLI's one-line failures. The attack classes are in ``test_hostile_attacks.py``, the
artifact fuzz in ``test_hostile_artifact_fuzz.py``."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from hostile_helpers import PY, ROOT, TESTS

os.environ.setdefault("FEATAGG_WARMUP", "0")


def test_every_artifact_class_has_declared_checks():
    from featagg_core.artifacts.checks.table import CHECKS
    from featagg_core.artifacts.store import ARTIFACT_CLASSES
    assert set(ARTIFACT_CLASSES) <= set(CHECKS)


def test_edited_manifest_is_refused_but_informational_edits_load_equal():
    sys.path.insert(0, str(TESTS))
    import hostile_corpus as hc

    from featagg_core import Defrag, load_artifact
    from featagg_core.artifacts.store import ArtifactError, artifact_bytes
    X = sp.random(30, 20, density=0.3, format="csr", random_state=0, dtype=np.float32)
    model = Defrag(d0=4, representation="X").fit(X)
    blob = artifact_bytes(model)
    members = hc._members(blob)
    manifest = json.loads(dict((i.filename, d) for i, d in members)["manifest.json"])
    arrays = {i.filename[7:-4]: hc._load_npy(d) for i, d in members
              if i.filename.startswith("arrays/")}

    def load(m, forge=False):
        buf = io.BytesIO(hc._rebuild(m, arrays, forge=forge))
        buf.name = "m.fgz"
        return load_artifact(buf)

    m = json.loads(json.dumps(manifest))
    m["params"]["d0"] = 5
    with pytest.raises(ArtifactError, match="state_sha256"):
        load(m)
    m = json.loads(json.dumps(manifest))
    m["created"] = "1999-01-01T00:00:00+00:00"
    m["metrics"] = {"P@1": 0.99}
    again = load(m)
    np.testing.assert_array_equal(again.transform(X).toarray(), model.transform(X).toarray())
    m = json.loads(json.dumps(manifest))
    m["meta"]["n_clusters_"] = 1                     # forged: digest recomputed
    with pytest.raises(ArtifactError, match="labels_|n_clusters_"):
        load(m, forge=True)


def test_forged_selection_pipeline_feature_count_is_checked():
    """A feature-selection run whose n_features_in_ is forged (every digest recomputed)
    to disagree with its ranking used to load and raise IndexError in transform (found by
    benchmarks/fuzz_bench.py); the selected columns are bounded by the features too."""
    sys.path.insert(0, str(TESTS))
    import hostile_corpus as hc

    from featagg_core import load_artifact
    from featagg_core.artifacts.store import ArtifactError, artifact_bytes
    from featagg_core.experiment import make_split, run_pipeline
    from featagg_core.data.synthetic import make_attributed_sbm
    g = make_attributed_sbm(40, 2, p_in=0.3, p_out=0.03, n_informative=4, n_noise=6,
                            random_state=4)
    run = run_pipeline(g, make_split(g, random_state=0),
                       {"feature_selection": {"kind": "variance", "d": 4}})
    assert run.status == "done", run
    members = hc._members(artifact_bytes(run.pipeline))
    manifest = json.loads(dict((i.filename, d) for i, d in members)["manifest.json"])
    arrays = {i.filename[7:-4]: hc._load_npy(d) for i, d in members
              if i.filename.startswith("arrays/")}

    def load(m, arrs):
        buf = io.BytesIO(hc._rebuild(m, arrs, forge=True))
        buf.name = "p.fgz"
        return load_artifact(buf)
    assert load(manifest, arrays).transform(g.X).shape == (40, 4)
    for d in (0, 3, 11):
        m = json.loads(json.dumps(manifest))
        m["meta"]["n_features_in_"] = d
        with pytest.raises(ArtifactError, match="selector ranks 10 features"):
            load(m, arrays)
    bad = dict(arrays, selected=np.array([0, 1, 10], np.int64))
    with pytest.raises(ArtifactError, match="selected.*10 features"):
        load(manifest, bad)


def test_artifact_budget_refuses_before_inflating():
    from featagg_core import Defrag, load_artifact
    from featagg_core.artifacts.store import ArtifactError, artifact_bytes
    X = sp.random(300, 2000, density=0.05, format="csr", random_state=0, dtype=np.float32)
    blob = artifact_bytes(Defrag(d0=4, representation="X").fit(X))
    buf = io.BytesIO(blob)
    buf.name = "m.fgz"
    with pytest.raises(ArtifactError, match="max_bytes"):
        load_artifact(buf, max_bytes=20_000)
    buf.seek(0)
    assert load_artifact(buf, max_bytes=10 << 20).n_features_in_ == 2000


# ---------------------------------------------------------------------------- reader budget
def _npz_bytes(data) -> bytes:
    import tempfile

    from featagg_core.data import save_npz
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "d.npz")
        save_npz(data, p)
        return open(p, "rb").read()


def test_reader_budget_option_and_environment(monkeypatch):
    from featagg_core.data import DatasetError, MultiLabelData, load_dataset
    X = sp.csr_matrix(np.ones((400, 300), np.float32))          # compresses very well
    Y = sp.csr_matrix(np.eye(400, 3, dtype=np.float32))
    raw = _npz_bytes(MultiLabelData(X=X, Y=Y))

    def named():
        f = io.BytesIO(raw)
        f.name = "d.npz"
        return f
    with pytest.raises(DatasetError, match=r"X_data.*max_bytes"):
        load_dataset(named(), max_bytes=200_000)
    assert load_dataset(named(), max_bytes=10 << 20).X.nnz == 400 * 300
    monkeypatch.setenv("FEATAGG_MAX_LOAD_MB", "0.2")
    with pytest.raises(DatasetError, match="max_bytes"):
        load_dataset(named())
    monkeypatch.delenv("FEATAGG_MAX_LOAD_MB")
    with pytest.raises(DatasetError, match="limited to 100"):
        load_dataset(named(), max_dim=100)


def test_only_the_members_a_layout_needs_are_read():
    """An npz member the layout does not name is never inflated: replacing it by garbage
    that is not even valid deflate changes nothing."""
    sys.path.insert(0, str(TESTS))
    import hostile_corpus as hc

    from featagg_core.data import MultiLabelData, load_dataset
    X = sp.random(20, 10, density=0.3, format="csr", random_state=1, dtype=np.float32)
    Y = sp.csr_matrix(np.eye(20, 4, dtype=np.float32))
    raw = hc._npz_with(_npz_bytes(MultiLabelData(X=X, Y=Y)),
                       [("zzz.npy", b"\xff" * 100, (1 << 32) - 1)])
    f = io.BytesIO(raw)
    f.name = "d.npz"
    d = load_dataset(f)
    np.testing.assert_array_equal(d.X.toarray(), X.toarray())


def test_edge_list_names_interned_by_first_appearance():
    """The hash-table interning numbers names exactly as sorting by first appearance does,
    long names and colliding prefixes included."""
    from featagg_core.data import load_graph
    rng = np.random.default_rng(0)
    pool = ["n" * 256, "n" * 255, "a", "b", "ab", "ba", "é", "x" * 100] + \
        [f"v{i}" for i in range(300)]
    edges = [(pool[i], pool[j]) for i, j in rng.integers(len(pool), size=(2000, 2))]
    raw = "".join(f"{u} {v}\n" for u, v in edges).encode()
    f = io.BytesIO(raw)
    f.name = "g.edges"
    g = load_graph(f, node_ids="appearance", labels=io.BytesIO(
        "".join(f"{u} {k % 2}\n" for k, u in enumerate(dict.fromkeys(
            x for e in edges for x in e))).encode()))
    order = list(dict.fromkeys(x for e in edges for x in e))
    index = {s: i for i, s in enumerate(order)}
    A = np.zeros((len(order), len(order)))
    for u, v in edges:
        if u != v:
            A[index[u], index[v]] = A[index[v], index[u]] = 1
    np.testing.assert_array_equal(g.A.toarray(), A)
    assert g.y.tolist() == [k % 2 for k in range(len(order))]


def test_wide_csv_and_attribute_per_node_graphs_read_the_same_as_before():
    """The one-pass readers give what the per-column / per-attribute ones gave (brute
    force on small inputs)."""
    from featagg_core.data import load_categorical, load_graph
    header = ",".join(f"c{i}" for i in range(50)) + ",y\n"
    rows = "".join(",".join("" if (i + r) % 7 == 0 else f"v{(i * r) % 5}" for i in range(50))
                   + f",{r % 2}\n" for r in range(6))
    f = io.BytesIO((header + rows).encode())
    f.name = "t.csv"
    t = load_categorical(f, label="y")
    for i in (0, 3, 49):
        want = ["<NA>" if (i + r) % 7 == 0 else f"v{(i * r) % 5}" for r in range(6)]
        assert t.table[f"c{i}"].tolist() == want
    gml = "graph [\n" + "".join(f'  node [ id {i} label "n{i}" a{i % 4} {i + 1} ]\n'
                                for i in range(12)) + \
        "".join(f"  edge [ source {i} target {i + 1} ]\n" for i in range(11)) + "]\n"
    f = io.BytesIO(gml.encode())
    f.name = "g.gml"
    g = load_graph(f)
    assert g.feature_names == ["a0", "a1", "a2", "a3"]
    want = np.zeros((12, 4))
    for i in range(12):
        want[i, i % 4] = i + 1
    np.testing.assert_array_equal(g.X.toarray(), want)


# ---------------------------------------------------------------------------- caches
def _twins():
    from featagg_core.data import CategoricalData, GraphData, MultiLabelData
    X = sp.random(30, 12, density=0.3, format="csr", random_state=2, dtype=np.float32)
    Y = sp.csr_matrix((np.random.default_rng(3).random((30, 5)) < 0.4).astype(np.float32))
    a = MultiLabelData(X=X, Y=Y, label_names=[f"alpha{j}" for j in range(5)], name="a")
    b = MultiLabelData(X=X.copy(), Y=Y.copy(), label_names=[f"beta{j}" for j in range(5)],
                       name="b")
    import pandas as pd
    t1 = CategoricalData(pd.DataFrame({"u": list("xyxy")}), np.array([0, 1, 0, 1], np.int8))
    t2 = CategoricalData(pd.DataFrame({"v": list("xyxy")}), np.array([0, 1, 0, 1], np.int8))
    A = sp.csr_matrix(np.ones((3, 3)) - np.eye(3))
    g1 = GraphData(A=A, X=sp.csr_matrix((3, 0)), y=np.array([0, 1, 1]), class_names=["p", "q"])
    g2 = GraphData(A=A, X=sp.csr_matrix((3, 0)), y=np.array([0, 1, 1]), class_names=["r", "s"])
    return (a, b), (t1, t2), (g1, g2)


def test_fingerprints_cover_names():
    for one, two in _twins():
        assert one.fingerprint != two.fingerprint
        assert one.fingerprint == type(one)(**{k: getattr(one, k) for k in
                                               one.__dataclass_fields__ if k != "kind"}).fingerprint


def test_twin_uploads_in_two_sessions_keep_their_own_names(app_for, monkeypatch):
    """Two sessions upload the same numbers with different label names: each Data page
    shows its own names (the page's cache is keyed on the fingerprint, names included).

    The sessions run one after the other against one cache store, as two visitors of one
    server share it. (Two AppTests in threads are not a test of that: each run swaps the
    process-wide ``Runtime._instance`` in and out, so one run can end the other's.)"""
    from streamlit.runtime.caching.storage.dummy_cache_storage import \
        MemoryCacheStorageManager
    from streamlit.testing.v1 import app_test

    shared = MemoryCacheStorageManager()
    monkeypatch.setattr(app_test, "MemoryCacheStorageManager", lambda: shared)
    (a, b), _, _ = _twins()

    def names_shown(data):
        at = app_for("data", data, timeout=120)
        at.run()
        shown = set()
        for df in at.dataframe:
            v = df.value
            if "label" in v.columns:
                shown |= set(map(str, v["label"]))
        return shown

    for data, prefix in ((a, "alpha"), (b, "beta"), (a, "alpha")):
        shown = names_shown(data)
        assert shown and all(s.startswith(prefix) for s in shown), (data.name, shown)


# ---------------------------------------------------------------------------- server, CLI
def test_server_listens_on_localhost_unless_public():
    from featagg_app.server import serve
    text = (ROOT / ".streamlit" / "config.toml").read_text()
    assert 'address = "127.0.0.1"' in text
    assert "only (this machine)" in serve.listen_banner(["--server.port", "8501"])
    assert "PUBLIC" in serve.listen_banner(["--server.address", "0.0.0.0"])
    script = (ROOT / "scripts" / "dashboard.sh").read_text()
    assert 'ADDRESS="127.0.0.1"' in script and '--public) ADDRESS="0.0.0.0"' in script


def _cli(*args, cwd):
    out = subprocess.run([PY, "-m", "featagg_core", *args], cwd=cwd, capture_output=True,
                         text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    errors = [ln for ln in out.stderr.splitlines() if not ln.startswith("[featagg]")]
    return out.returncode, errors


def test_cli_failures_exit_2_with_one_line(tmp_path):
    from featagg_core import Defrag
    from featagg_core.artifacts.store import save_artifact
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04junk")
    X = sp.random(20, 10, density=0.3, format="csr", random_state=0, dtype=np.float32)
    save_artifact(Defrag(d0=4, representation="X").fit(X), tmp_path / "d.fgz")
    blob = (tmp_path / "d.fgz").read_bytes()
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        members = [(i.filename, zf.read(i.filename)) for i in zf.infolist()]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, d in members:
            zf.writestr(n, d.replace(b'"n_clusters_": ', b'"n_clusters_": -') if n ==
                        "manifest.json" else d)
    (tmp_path / "bad.fgz").write_bytes(buf.getvalue())
    cases = [("info", "junk.npz"), ("agglomerate", "sample:bibtex", "--d0", "1e11"),
             ("agglomerate", "sample:bibtex", "--d0", "100000000000"),
             ("train", "sample:bibtex", "--k", "1000000"),
             ("compress", "sample:adult", "--budget", "1000000000"),
             ("evaluate", "bad.fgz", "sample:bibtex"), ("predict", "d.fgz", "sample:bibtex")]
    for args in cases:
        code, errors = _cli(*args, cwd=tmp_path)
        assert code == 2, (args, code, errors)
        assert len(errors) == 1 and errors[0].startswith("featagg: error:"), (args, errors)
    code, errors = _cli("agglomerate", "sample:bibtex", "--d0", "1e11", cwd=tmp_path)
    assert "[1, 1,000,000]" in errors[0]
