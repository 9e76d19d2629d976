"""The data folder (featagg_core.data.cache): safe paths, the listing, the memory-mapped npz
cache against a fresh parse, its refresh, its fallback location, the shared store, and the
fingerprint memo the pages rely on."""
import os
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core.data import DatasetError, load_dataset, save_xc
from featagg_core.data.cache import (
    CACHE_DIR_NAME,
    DataFolder,
    DatasetStore,
    data_nbytes,
    open_npz_cache,
    write_npz_cache,
)
from featagg_core.data.synthetic import make_powerlaw_multilabel


@pytest.fixture
def folder(tmp_path):
    """A data folder: an XC train/test pair, an ARFF without XML, one with its XML, a CSV,
    a nested file, a hidden file, a symlink inside and one leading out."""
    root = tmp_path / "data"
    (root / "corel5k").mkdir(parents=True)
    (root / "deep" / "er").mkdir(parents=True)
    d = make_powerlaw_multilabel(400, 60, 12, random_state=3, test_size=0.25)
    save_xc(d, root / "bibtex_train.txt")
    save_xc((d.X_test, d.Y_test), root / "bibtex_test.txt")
    arff = ["@relation tiny", "@attribute f0 numeric", "@attribute f1 numeric",
            "@attribute a {0,1}", "@attribute b {0,1}", "@data", "1,2,0,1", "0,3,1,1",
            "2,0,1,0"]
    (root / "corel5k" / "train.arff").write_text("\n".join(arff) + "\n")
    (root / "scene.arff").write_text("\n".join(arff) + "\n")
    (root / "scene.xml").write_text('<?xml version="1.0"?><labels xmlns="http://mulan.'
                                    'sourceforge.net/labels"><label name="a"/>'
                                    '<label name="b"/></labels>')
    (root / "clicks.csv").write_text("city,clicked\na,1\nb,0\na,1\nc,0\n")
    save_xc(d, root / "deep" / "er" / "nested.txt")
    (root / ".hidden.txt").write_text("3 2 1\n")
    (root / "notes.md").write_text("not a dataset")
    outside = tmp_path / "secret.txt"
    save_xc(d, outside)
    os.symlink(outside, root / "leak.txt")
    os.symlink(root / "bibtex_test.txt", root / "alias.txt")
    return root, d


def test_resolve_refuses_paths_out_of_the_folder(folder):
    root, _ = folder
    f = DataFolder(str(root))
    assert f.resolve("bibtex_train.txt") == os.path.realpath(root / "bibtex_train.txt")
    assert f.resolve("alias.txt") == os.path.realpath(root / "bibtex_test.txt")
    for bad in ["../secret.txt", "corel5k/../../secret.txt", str(root / "clicks.csv"),
                "/etc/passwd", "leak.txt", ".hidden.txt", "corel5k", "", "missing.txt",
                "a\x00b", "corel5k\\train.arff", f"{CACHE_DIR_NAME}/x.npz", "./clicks.csv",
                "C:/x.txt"]:
        with pytest.raises(DatasetError) as err:
            f.resolve(bad)
        # the message names what the person asked for, never the server path
        assert str(root) not in str(err.value) or bad.startswith(str(root))
        assert "not a file of the data folder" in str(err.value)


def test_listing_kinds_companions_and_what_is_left_out(folder):
    root, _ = folder
    files = {e.relpath: e for e in DataFolder(str(root)).list_files()}
    assert sorted(files) == ["alias.txt", "bibtex_test.txt", "bibtex_train.txt",
                             "clicks.csv", "corel5k/train.arff", "deep/er/nested.txt",
                             "scene.arff"]
    assert files["clicks.csv"].kind == "table"
    assert files["corel5k/train.arff"].kind == "multilabel"
    assert dict(files["bibtex_train.txt"].companions) == {"test": "bibtex_test.txt"}
    assert dict(files["scene.arff"].companions) == {"xml": "scene.xml"}
    assert files["corel5k/train.arff"].companions == ()
    assert "(+ test part)" in files["bibtex_train.txt"].label
    assert files["bibtex_train.txt"].size == (root / "bibtex_train.txt").stat().st_size
    shallow = {e.relpath for e in DataFolder(str(root)).list_files(max_depth=2)}
    assert "deep/er/nested.txt" not in shallow and "corel5k/train.arff" in shallow


def _mapped(a) -> bool:
    """True when ``a`` is a view of a memory-mapped file."""
    import mmap
    while a is not None:
        if isinstance(a, (np.memmap, mmap.mmap)):
            return True
        a = getattr(a, "base", None)
    return False


def _same(a, b):
    for attr in ("X", "Y", "X_test", "Y_test"):
        A, B = getattr(a, attr), getattr(b, attr)
        assert (A is None) == (B is None), attr
        if A is not None:
            assert A.shape == B.shape and A.dtype == B.dtype, attr
            assert abs(A - B).max() == 0 if A.nnz else B.nnz == 0, attr


def test_cache_matches_a_fresh_parse_is_mapped_and_reused(folder, monkeypatch):
    root, d = folder
    # a cache up to COPY_MAX_BYTES is read into memory (a truncated mapping is a SIGBUS);
    # this one stands for a large file: mapped
    monkeypatch.setattr("featagg_core.data.mapped_npz.COPY_MAX_BYTES", 0)
    f = DataFolder(str(root), convert_min_bytes=1)
    data = f.load("bibtex_train.txt")
    ref = load_dataset(str(root / "bibtex_train.txt"), test=str(root / "bibtex_test.txt"))
    _same(data, ref)
    assert data.name == "bibtex_train.txt" and str(root) not in data.source
    cache = root / CACHE_DIR_NAME / "bibtex_train.txt.npz"
    assert cache.is_file() and f.cache_location("bibtex_train.txt") == str(cache)
    assert not data.X.data.flags.writeable           # mapped read-only, shared safely
    assert _mapped(data.X.indices) and _mapped(data.X.data)   # (Y is under a page: read)
    assert data.fingerprint == ref.fingerprint
    # a second open maps the cache: no reader runs
    import featagg_core.data as fd
    written = cache.stat().st_mtime_ns
    monkeypatch.setattr(fd, "load_dataset", lambda *a, **k: pytest.fail("parsed again"))
    again = f.load("bibtex_train.txt")
    _same(again, ref)
    assert cache.stat().st_mtime_ns == written           # not rewritten either


def test_cache_is_rebuilt_when_the_source_or_its_companion_changes(folder):
    root, d = folder
    f = DataFolder(str(root), convert_min_bytes=1)
    f.load("bibtex_train.txt")
    cache = root / CACHE_DIR_NAME / "bibtex_train.txt.npz"
    first = cache.stat().st_mtime_ns
    d2 = make_powerlaw_multilabel(100, 60, 12, random_state=9)
    save_xc((d2.X, d2.Y), root / "bibtex_test.txt")       # the test part changed
    data = f.load("bibtex_train.txt")
    assert data.X_test.shape[0] == 100 and cache.stat().st_mtime_ns != first
    time.sleep(0.01)
    save_xc(d2, root / "bibtex_train.txt")                # the source changed
    data = f.load("bibtex_train.txt")
    assert data.X.shape[0] == 100


def test_damaged_cache_is_rebuilt_never_trusted(folder):
    root, _ = folder
    f = DataFolder(str(root), convert_min_bytes=1)
    f.load("bibtex_train.txt")
    cache = root / CACHE_DIR_NAME / "bibtex_train.txt.npz"
    raw = cache.read_bytes()
    cache.write_bytes(raw[: len(raw) // 2])               # truncated
    data = f.load("bibtex_train.txt")
    _same(data, load_dataset(str(root / "bibtex_train.txt"),
                             test=str(root / "bibtex_test.txt")))
    assert cache.stat().st_size == len(raw)


def test_read_only_folder_caches_under_the_user_cache(folder, tmp_path):
    root, _ = folder
    (root / CACHE_DIR_NAME).write_text("a file where the cache folder would go")
    user = tmp_path / "usercache"
    f = DataFolder(str(root), cache_dir=str(user), convert_min_bytes=1)
    data = f.load("bibtex_train.txt")
    made = list(user.iterdir())
    assert len(made) == 1 and made[0].name.endswith("-bibtex_train.txt.npz")
    assert f.cache_location("bibtex_train.txt") == str(made[0])
    assert not data.X.data.flags.writeable


def test_arff_companion_xml_options_and_reader_messages(folder):
    root, _ = folder
    f = DataFolder(str(root))
    scene = f.load("scene.arff")                           # scene.xml beside it
    assert scene.Y.shape == (3, 2) and list(scene.label_names) == ["a", "b"]
    with pytest.raises(DatasetError, match="cannot tell which attributes are labels") as err:
        f.load("corel5k/train.arff")
    assert str(root) not in str(err.value) and "corel5k/train.arff" in str(err.value)
    arff = f.load("corel5k/train.arff", options={"n_labels": 2})
    assert arff.X.shape == (3, 2) and arff.Y.toarray().tolist() == [[0, 1], [1, 1], [1, 0]]
    assert arff.name == "corel5k/train.arff"
    table = f.load("clicks.csv", options={"label": "clicked"})
    assert table.labels.tolist() == [1, 0, 1, 0]


def test_npz_cache_round_trip_and_refusals(tmp_path):
    d = make_powerlaw_multilabel(50, 30, 5, random_state=1, test_size=0.2)
    d.feature_names = [f"w{j}" for j in range(30)]
    path = str(tmp_path / "c.npz")
    write_npz_cache(d, path, {"source": ["x", 1, 2]})
    got, meta = open_npz_cache(path)
    _same(got, d)
    assert got.feature_names == d.feature_names and meta["source"] == ["x", 1, 2]
    np.savez_compressed(path, meta=np.array('{"version": 1}'))
    with pytest.raises(ValueError, match="compressed"):
        open_npz_cache(path)
    assert data_nbytes(d) >= d.X.data.nbytes + d.X.indices.nbytes + d.X.indptr.nbytes


def test_store_loads_each_key_once_and_stays_within_its_bytes():
    calls = []

    def loader(key, size):
        def load():
            calls.append(key)
            time.sleep(0.05)
            return make_powerlaw_multilabel(size, 20, 4, random_state=0)
        return load

    one = make_powerlaw_multilabel(200, 20, 4, random_state=0)
    store = DatasetStore(max_bytes=int(2.5 * data_nbytes(one)))
    out = []
    threads = [threading.Thread(target=lambda: out.append(store.get("a", loader("a", 200))))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["a"] and all(o is out[0] for o in out)
    store.get("b", loader("b", 200))
    store.get("a", loader("a", 200))                      # a is now the most recent
    store.get("c", loader("c", 200))                      # over the bound: b goes
    assert calls == ["a", "b", "c"] and store.peek("b") is None
    assert store.peek("a") is out[0] and store.nbytes <= store.max_bytes
    big = store.get("big", loader("big", 5000))           # alone over the bound: kept
    assert store.peek("big") is big and len(store) == 1


def test_fingerprint_is_hashed_once_and_follows_replaced_fields():
    from featagg_core.data import MultiLabelData
    d = make_powerlaw_multilabel(300, 40, 6, random_state=2)
    fp = d.fingerprint
    # a new object with equal contents hashes afresh to the same value (the names are part
    # of the fingerprint, so they are copied too)
    fresh = MultiLabelData(X=d.X.copy(), Y=d.Y.copy(), feature_names=d.feature_names,
                           label_names=d.label_names)
    assert fresh.fingerprint == fp
    assert d.fingerprint is fp                            # the memo, not a new hash
    d.X = sp.csr_matrix(d.X * 2)
    assert d.fingerprint != fp
    X = d.X
    X.data[X.data > 0] = 0
    X.eliminate_zeros()                                   # nnz changed in place
    assert d.fingerprint != fp


# ------------------------------------------------------------ hostile folders (issue 33)
def test_small_cache_is_read_not_mapped(folder):
    root, d = folder
    data = DataFolder(str(root), convert_min_bytes=1).load("bibtex_train.txt")
    assert not _mapped(data.X.indices) and not _mapped(data.X.data)
    assert not data.X.data.flags.writeable
    from featagg_core.data.mapped_npz import mapped_file_changed
    assert mapped_file_changed(data) is None


def test_listing_survives_names_that_are_not_utf8(folder):
    """R7: a file named with bytes that are not UTF-8 is left out (its name escaped in
    ``skipped``), every other file is still listed and opens."""
    root, d = folder
    bad = os.path.join(os.fsencode(str(root)), b"bad\xff\xfe.txt")
    with open(bad, "wb") as fh:
        fh.write(b"3 2 1\n")
    os.mkdir(os.path.join(os.fsencode(str(root)), b"dir\xff"))
    f = DataFolder(str(root))
    skipped = []
    files = f.list_files(skipped=skipped)
    rels = [e.relpath for e in files]
    assert "bibtex_train.txt" in rels and "clicks.csv" in rels
    for r in rels:
        r.encode("utf-8")                 # every listed name can go to a browser
    assert "bad\\xff\\xfe.txt" in skipped and "dir\\xff/" in skipped
    assert f.load("clicks.csv", options={"label": "clicked"}).n_rows == 4


def test_listing_never_inflates_an_npz_member(folder):
    """R8: an npz whose kind.npy inflates to 1 GiB is classified from its member names
    alone: listed in well under a second, its kind.npy never read (a reader that opened it
    would fail here: the member's checksum is wrong)."""
    import time
    import hostile_corpus as hc
    root, d = folder
    (root / "bomb.npz").write_bytes(hc.kind_bomb_npz(1 << 30))
    t0 = time.process_time()
    files = {e.relpath: e for e in DataFolder(str(root)).list_files()}
    assert time.process_time() - t0 < 2.0
    assert files["bomb.npz"].kind == "multilabel" and "bibtex_train.txt" in files
    (root / "bomb.npz").write_bytes(b"PK\x05\x06" + b"\0" * 18)        # empty zip: no kind
    assert "bomb.npz" not in {e.relpath for e in DataFolder(str(root)).list_files()}


_TRUNCATE_CHILD = """
import os, sys, numpy as np
import featagg_core.data.mapped_npz as mn
from featagg_core.data.cache import DataFolder, DatasetStore
from featagg_core.data import DatasetError
mn.COPY_MAX_BYTES = 0                      # map it, as a cache of a large file is
root = sys.argv[1]
f = DataFolder(root, convert_min_bytes=1)
store = DatasetStore(1 << 30)
key = f.cache_key("big.txt")
data = store.get(key, lambda: f.load("big.txt"))
def mapped(a):
    import mmap
    while a is not None:
        if isinstance(a, (np.memmap, mmap.mmap)):
            return True
        a = getattr(a, "base", None)
    return False
assert mapped(data.X.indices) and mn.mapped_source(data) is not None
cache = f.cache_location("big.txt")
before = float(data.X.data.sum())
with open(cache, "r+b") as fh:              # cut it under the mapping
    fh.truncate(4096)
assert mn.mapped_file_changed(data) is not None
print("changed:", mn.mapped_file_changed(data))
again = store.get(key, lambda: f.load("big.txt"))   # dropped and opened afresh
assert again is not data and store.dropped_changed == 1
print("sum", float(again.X.data.sum()) == before)
"""


def test_truncated_mapped_cache_is_detected_not_a_sigbus(tmp_path):
    """R11: the cache file of a kept, memory-mapped dataset truncated under the server:
    the store notices (size/mtime re-checked before it hands the dataset out), drops it
    and opens the file again; the process is not killed by SIGBUS (-7)."""
    import subprocess
    import sys
    from hostile_helpers import PY, child_env
    root = tmp_path / "data"
    root.mkdir()
    d = make_powerlaw_multilabel(4000, 3000, 50, random_state=2)
    save_xc(d, root / "big.txt")
    out = subprocess.run([PY, "-c", _TRUNCATE_CHILD, str(root)], capture_output=True,
                         text=True, timeout=300, env=child_env())
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "changed: the data cache file was cut" in out.stdout and "sum True" in out.stdout


def test_listing_names_a_wide_table_npz_from_its_directory(tmp_path, monkeypatch):
    """An npz of more members than the listing parses with zipfile (a table of one member
    per column) is still listed, its kind found in the directory's bytes."""
    import pandas as pd
    import featagg_core.data.npz as npz_mod
    from featagg_core.data import CategoricalData, save_npz
    monkeypatch.setattr(npz_mod, "_KIND_MAX_MEMBERS", 50)
    t = pd.DataFrame({f"c{i}": ["a", "b"] for i in range(80)})
    save_npz(CategoricalData(table=t, labels=np.array([0, 1], np.int8), label_name="y",
                             name="w"), tmp_path / "wide.npz")
    save_npz(make_powerlaw_multilabel(30, 10, 3, random_state=0), tmp_path / "ml.npz")
    kinds = {e.relpath: e.kind for e in DataFolder(str(tmp_path)).list_files()}
    assert kinds == {"wide.npz": "table", "ml.npz": "multilabel"}
