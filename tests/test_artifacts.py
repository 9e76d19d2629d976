"""Artifacts: every fitted type round-trips with identical predictions; damaged, tampered,
truncated or foreign files are refused with a clear message; writes are atomic."""
import io
import json
import os
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core import (
    BMGUFS,
    KTXMLC,
    BlockModel,
    Defrag,
    DefragKTXMLC,
    Fiat,
    OneVsAll,
    Refrag,
    VocabularyCompressor,
    load_artifact,
    save_artifact,
)
from featagg_core.artifacts.store import (
    ArtifactError,
    artifact_bytes,
    bundle_bytes,
    is_bundle,
    load_bundle,
    read_manifest,
    save_bundle,
)
from featagg_core.data.synthetic import (
    make_attributed_sbm,
    make_powerlaw_multilabel,
    make_zipf_categorical,
)


@pytest.fixture(scope="module")
def ml():
    data = make_powerlaw_multilabel(600, 300, 40, avg_labels=3, avg_features=15,
                                    random_state=3, test_size=0.25)
    return data


@pytest.fixture(scope="module")
def graph():
    return make_attributed_sbm(150, 3, p_in=0.15, p_out=0.01, n_informative=10, n_noise=30,
                               random_state=4)


@pytest.fixture(scope="module")
def fitted(ml, graph):
    """One fitted object of every artifact class, with a function giving its predictions."""
    X, Y, Xt = ml.X, ml.Y, ml.X_test
    defrag = Defrag(d0=4, representation="XY", random_state=1).fit(X, Y)
    kt = KTXMLC(n_clusters=3, n_trees=2, max_leaf_labels=8, random_state=2).fit(X, Y)
    ova = OneVsAll().fit(X, Y)
    pipe = DefragKTXMLC(d0=4, per_tree=True, n_trees=2, max_leaf_labels=8).fit(X, Y)
    fiat = Fiat(defrag).fit(X)
    refrag = Refrag().fit(X, Y, defrag)
    base = kt.predict_scores(Xt, k=20)
    bm = BlockModel(n_blocks=3, n_iter=30, random_state=0).fit(graph.A)
    bmg = BMGUFS(n_blocks=3, n_candidates=2, max_iter=30, random_state=0).fit(graph.A, graph.X)
    table = make_zipf_categorical(3000, 200, random_state=5)
    values = table.table.iloc[:, 0].to_numpy()
    vc = VocabularyCompressor(budget=10).fit(values, table.labels)
    unseen = np.concatenate([values[:50], np.array(["never-seen-value"], dtype=object)])
    return {
        "Defrag": (defrag, lambda m: m.transform(Xt).toarray()),
        "KTXMLC": (kt, lambda m: m.predict_scores(Xt, k=5).toarray()),
        "OneVsAll": (ova, lambda m: m.predict_scores(Xt, k=5).toarray()),
        "DefragKTXMLC": (pipe, lambda m: m.predict_scores(Xt, k=5).toarray()),
        "Fiat": (fiat, lambda m: m.transform(Xt).toarray()),
        "Refrag": (refrag, lambda m: m.rerank(Xt, base, k=5).toarray()),
        "BlockModel": (bm, lambda m: np.concatenate([m.labels_, m.M_.ravel(), [m.rre_]])),
        "BMGUFS": (bmg, lambda m: np.concatenate([m.scores_, m.select(5)])),
        "VocabularyCompressor": (vc, lambda m: m.transform(unseen)),
    }


CLASSES = ["Defrag", "KTXMLC", "OneVsAll", "DefragKTXMLC", "Fiat", "Refrag", "BlockModel", "BMGUFS",
           "VocabularyCompressor"]


@pytest.mark.parametrize("name", CLASSES)
def test_round_trip_predicts_identically(fitted, name, tmp_path):
    obj, predict = fitted[name]
    path = tmp_path / f"{name}.fgz"
    save_artifact(obj, path, dataset_fingerprint="abc", metrics={"P@1": 0.5})
    loaded = load_artifact(path)
    assert type(loaded) is type(obj)
    assert loaded.get_params(deep=False).keys() == obj.get_params(deep=False).keys()
    np.testing.assert_array_equal(predict(loaded), predict(obj))
    manifest = read_manifest(path)
    assert manifest["class"] == name
    assert manifest["dataset_fingerprint"] == "abc"
    assert manifest["metrics"] == {"P@1": 0.5}
    assert "numpy" in manifest["library"]


def _rewrite(data: bytes, edit) -> bytes:
    """Copy a zip, passing each member's (name, bytes) through ``edit`` (None drops it)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            res = edit(info.filename, src.read(info.filename))
            if res is not None:
                dst.writestr(info.filename, res)
    return out.getvalue()


@pytest.fixture()
def defrag_bytes(fitted):
    return artifact_bytes(fitted["Defrag"][0])


def _load_bytes(data):
    buf = io.BytesIO(data)
    buf.name = "model.fgz"
    return load_artifact(buf)


def test_tampered_array_is_refused(defrag_bytes):
    first = next(n for n in zipfile.ZipFile(io.BytesIO(defrag_bytes)).namelist()
                 if n.startswith("arrays/"))

    def flip(name, payload):
        if name != first:
            return payload
        b = bytearray(payload)
        b[-1] ^= 0x01  # last byte of the data section: shape and dtype stay valid
        return bytes(b)
    with pytest.raises(ArtifactError, match="checksum"):
        _load_bytes(_rewrite(defrag_bytes, flip))


def test_truncated_file_is_refused(defrag_bytes):
    with pytest.raises(ArtifactError, match="zip|truncated|unreadable"):
        _load_bytes(defrag_bytes[: len(defrag_bytes) // 2])


def test_empty_and_foreign_files_are_refused(tmp_path):
    with pytest.raises(ArtifactError, match="empty"):
        _load_bytes(b"")
    with pytest.raises(ArtifactError, match="not a featagg artifact") as refused:
        _load_bytes(b"PK\x03\x04 definitely not a zip")
    # in the words of the person who chose the file: no Python exception names, and
    # the refusal is not said twice ("not a featagg artifact: not a readable featagg …")
    text = str(refused.value)
    assert text.endswith("not a featagg artifact: not a zip archive, or cut short"), text
    assert "Error" not in text and "BadZip" not in text
    with pytest.raises(ArtifactError, match="cannot read"):
        load_artifact(tmp_path / "missing.fgz")


def _edit_manifest(data, change):
    def edit(name, payload):
        if name == "manifest.json":
            m = json.loads(payload)
            change(m)
            return json.dumps(m).encode()
        return payload
    return _rewrite(data, edit)


def test_unknown_version_class_and_shape_are_refused(defrag_bytes):
    with pytest.raises(ArtifactError, match="format version 99"):
        _load_bytes(_edit_manifest(defrag_bytes, lambda m: m.update(format_version=99)))
    with pytest.raises(ArtifactError, match="unknown artifact class 'os.system'"):
        _load_bytes(_edit_manifest(defrag_bytes, lambda m: m.update({"class": "os.system"})))

    def bad_shape(m):
        key = next(iter(m["arrays"]))
        m["arrays"][key]["shape"] = [7, 7, 7]
    with pytest.raises(ArtifactError, match="shape"):
        _load_bytes(_edit_manifest(defrag_bytes, bad_shape))

    def bad_dtype(m):
        key = next(iter(m["arrays"]))
        m["arrays"][key]["dtype"] = "<c16"
    with pytest.raises(ArtifactError, match="dtype"):
        _load_bytes(_edit_manifest(defrag_bytes, bad_dtype))


def test_missing_array_and_manifest_are_refused(defrag_bytes):
    first = next(n for n in zipfile.ZipFile(io.BytesIO(defrag_bytes)).namelist()
                 if n.startswith("arrays/"))
    with pytest.raises(ArtifactError, match="missing"):
        _load_bytes(_rewrite(defrag_bytes, lambda n, p: None if n == first else p))
    with pytest.raises(ArtifactError, match="manifest.json is missing"):
        _load_bytes(_rewrite(defrag_bytes, lambda n, p: None if n == "manifest.json" else p))


def test_pickled_object_array_is_refused(defrag_bytes):
    """An .npy holding a pickled object array is never unpickled."""
    first = next(n for n in zipfile.ZipFile(io.BytesIO(defrag_bytes)).namelist()
                 if n.startswith("arrays/"))
    evil = io.BytesIO()
    np.save(evil, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ArtifactError, match="unreadable"):
        _load_bytes(_rewrite(defrag_bytes, lambda n, p: evil.getvalue() if n == first else p))


def test_unfitted_and_foreign_objects_cannot_be_saved(tmp_path):
    with pytest.raises(ArtifactError):
        save_artifact(Defrag(), tmp_path / "x.fgz")
    with pytest.raises(ArtifactError, match="only"):
        save_artifact(sp.eye(3), tmp_path / "y.fgz")
    assert not os.listdir(tmp_path)


def test_save_is_atomic(fitted, tmp_path, monkeypatch):
    """A save that fails half-way leaves the previous file intact and no temporary file."""
    obj = fitted["Defrag"][0]
    path = tmp_path / "model.fgz"
    save_artifact(obj, path)
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        save_artifact(fitted["KTXMLC"][0], path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.fgz"]


def test_bundle_round_trip(fitted, tmp_path):
    objs = {"defrag": fitted["Defrag"][0], "model": fitted["KTXMLC"][0]}
    path = tmp_path / "b.fgb"
    save_bundle(objs, path, info={"runs": [{"run_id": "x"}]})
    assert is_bundle(path) and not is_bundle(io.BytesIO(artifact_bytes(objs["defrag"])))
    loaded, info = load_bundle(path)
    assert info == {"runs": [{"run_id": "x"}]}
    for key, (obj, predict) in (("defrag", fitted["Defrag"]), ("model", fitted["KTXMLC"])):
        np.testing.assert_array_equal(predict(loaded[key]), predict(obj))
    with pytest.raises(ArtifactError, match="entry name"):
        bundle_bytes({"../evil": objs["defrag"]})


def test_damaged_bundles_are_refused(fitted, tmp_path):
    data = bundle_bytes({"defrag": fitted["Defrag"][0]})
    with pytest.raises(ArtifactError, match="empty"):
        load_bundle(io.BytesIO(b""))
    with pytest.raises(ArtifactError, match="not a featagg bundle"):
        load_bundle(io.BytesIO(data[: len(data) // 3]))
    with pytest.raises(ArtifactError, match="bundle.json is missing"):
        load_bundle(io.BytesIO(artifact_bytes(fitted["Defrag"][0])))
    with pytest.raises(ArtifactError, match="bundle.json is not valid JSON"):
        load_bundle(io.BytesIO(_rewrite(data, lambda n, p: b"{" if n == "bundle.json" else p)))
