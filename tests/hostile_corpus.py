"""Hostile inputs for featagg's artifact loader and dataset readers.

Shared by the tests (small samples: ``tests/test_hostile_*.py``) and by the big sweep in
``benchmarks/fuzz_bench.py``. Everything is generated from a seed; nothing is stored.

Artifacts: :func:`fit_models` fits one small object of every artifact class;
:func:`tampered_artifacts` yields ``(category, description, bytes)`` edits of a saved one:

* ``bytes``    -- damage to the file (flipped, cut, inserted bytes), nothing recomputed;
* ``manifest`` -- a field of manifest.json edited, its checksum ``state_sha256`` left as it
                  was (a person editing the file);
* ``forged``   -- the same edits, or arrays replaced, swapped, re-shaped or re-typed,
                  with every SHA-256 recomputed (an attacker who read the format);
* ``zip``      -- archive-level tricks: duplicate members, unknown compression method,
                  encryption flag, deflate bombs in the manifest or an array, deep JSON.

:func:`use_model` exercises every method a page or the CLI calls on a loaded object, on
inputs built from the object's own declared dimensions, and returns a digest of the
results. The acceptance rule (:func:`judge_artifact`): a tampered file must be refused
with ``ArtifactError`` or load into a model equal to the original (``bytes``, ``manifest``
and ``zip``) -- for ``forged`` files, whose content is new but consistent, that every use
runs without any exception.

Readers: :func:`reader_cases` yields ``(format, description, kind, file name, bytes,
extras)`` in 16 formats: valid seeds mutated at random plus crafted attacks.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import io
import json
import struct
import zipfile
import zlib
from typing import Dict, Iterator, List, Tuple

import numpy as np
import scipy.sparse as sp

ARTIFACT_CATEGORIES = ("bytes", "manifest", "forged", "zip")


# ============================================================================ models
def fit_models() -> Dict[str, object]:
    """One small fitted object of every artifact class (a few seconds)."""
    from featagg_core import (BMGUFS, KTXMLC, BlockModel, Defrag, DefragKTXMLC, Fiat,
                              OneVsAll, Refrag, VocabularyCompressor)
    from featagg_core.synthetic import (make_attributed_sbm, make_powerlaw_multilabel,
                                        make_zipf_categorical)
    ml = make_powerlaw_multilabel(200, 60, 12, avg_labels=2, avg_features=8, random_state=3)
    X, Y = ml.X, ml.Y
    g = make_attributed_sbm(40, 2, p_in=0.3, p_out=0.03, n_informative=4, n_noise=6,
                            random_state=4)
    defrag = Defrag(d0=4, random_state=1).fit(X, Y)
    table = make_zipf_categorical(800, 40, random_state=5)
    values = table.table.iloc[:, 0].to_numpy()
    return {
        "Defrag": defrag,
        "KTXMLC": KTXMLC(n_clusters=3, n_trees=2, max_leaf_labels=3, random_state=2).fit(X, Y),
        "OneVsAll": OneVsAll().fit(X, Y),
        "DefragKTXMLC": DefragKTXMLC(d0=4, per_tree=True, n_trees=2, max_leaf_labels=3).fit(X, Y),
        "Fiat": Fiat(defrag).fit(X),
        "Refrag": Refrag().fit(X, Y, defrag),
        "BlockModel": BlockModel(n_blocks=2, n_iter=10, random_state=0).fit(g.A),
        "BMGUFS": BMGUFS(n_blocks=2, n_candidates=2, max_iter=10, random_state=0).fit(g.A, g.X),
        "VocabularyCompressor": VocabularyCompressor(budget=5).fit(values, table.labels),
        "VocabularyCompressor-frequency": VocabularyCompressor(budget=5, method="frequency")
        .fit(values, table.labels),
    }


def _rand_csr(rng, n, d, per_row=5) -> sp.csr_matrix:
    if d <= 0:
        return sp.csr_matrix((n, max(d, 0)), dtype=np.float32)
    k = min(per_row, d)
    rows = np.repeat(np.arange(n), k)
    cols = np.concatenate([rng.choice(d, k, replace=False) if d < 1 << 20 else
                           np.unique(rng.integers(0, d, k)) for _ in range(n)])
    rows = rows[:cols.size]
    return sp.csr_matrix((rng.random(cols.size).astype(np.float32) + 0.1, (rows, cols)),
                         shape=(n, d))


def _digest(parts) -> str:
    h = hashlib.sha1()

    def feed(x):
        if x is None:
            h.update(b"N")
        elif sp.issparse(x):
            x = sp.csr_matrix(x)
            feed(np.asarray(x.shape))
            for a in (x.indptr, x.indices, x.data):
                feed(np.asarray(a))
        elif isinstance(x, np.ndarray):
            h.update(repr((x.shape, str(x.dtype))).encode())
            h.update(np.ascontiguousarray(x).tobytes() if x.dtype != object
                     else repr(x.tolist()).encode())
        elif isinstance(x, dict):
            for k in sorted(x, key=str):
                h.update(repr(k).encode())
                feed(x[k])
        elif isinstance(x, (list, tuple)):
            h.update(b"[")
            for y in x:
                feed(y)
            h.update(b"]")
        elif hasattr(x, "to_numpy") and hasattr(x, "columns"):
            feed({c: x[c].to_numpy() for c in x.columns})
        else:
            h.update(repr(x).encode())
    feed(parts)
    return h.hexdigest()


def use_model(obj) -> str:
    """Run what the pages and the CLI run on a loaded object, on inputs shaped by the
    object's own declared dimensions; the digest of every result."""
    import warnings
    rng = np.random.default_rng(0)
    name = type(obj).__name__
    out: List = []
    n = 12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "Defrag":
            X = _rand_csr(rng, n, obj.n_features_in_)
            out += [obj.transform(X), obj.transform(X, aggregation="avg"),
                    obj.membership_matrix(), obj.cluster_members(0),
                    obj.tree_.to_plotly(max_depth=3), obj.tree_.leaves()]
        elif name in ("KTXMLC", "OneVsAll"):
            X = _rand_csr(rng, n, obj.n_features_in_)
            out += [obj.predict_scores(X, k=5), obj.tree_nodes(0)["n_labels"],
                    obj.model_size_bytes_]
        elif name == "DefragKTXMLC":
            X = _rand_csr(rng, n, obj.n_features_in_)
            out += [obj.predict_scores(X, k=5), obj.transform(X), obj.model_size_bytes_]
        elif name == "Fiat":
            out.append(obj.transform(_rand_csr(rng, n, obj.n_features_in_)))
        elif name == "Refrag":
            X = _rand_csr(rng, n, obj.n_features_in_)
            S = _rand_csr(rng, n, obj.n_labels_, per_row=8)
            out += [obj.rerank(X, S, k=5), obj.label_weights()]
        elif name == "BlockModel":
            out += [obj.labels_, obj.M_, obj.rre_]
        elif name == "BMGUFS":
            k = max(1, min(5, obj.n_nonzero_))
            out += [obj.select(k), obj.transform(_rand_csr(rng, n, obj.n_features_in_), k),
                    obj.block_model_.labels_]
        elif name == "VocabularyCompressor":
            vals = np.concatenate([obj.vocabulary_[:20].astype(object),
                                   np.array(["never-seen"], dtype=object)])
            out += [obj.transform(vals), obj.mapping_frame(), obj.to_json(), obj.p0_sorted_]
            if obj.method in ("submodular", "threshold") and len(obj.chosen_):
                out.append(obj.truncate(1).transform(vals))
        out += _use_views(obj, rng)
    return _digest(out)


def _use_views(obj, rng) -> list:
    """The Export page's view functions on the object (evaluated on matching data)."""
    try:
        from featagg_app import export_view as ev
    except Exception:  # noqa: BLE001 - the app package is optional here
        return []
    out = [ev.describe(obj), ev.plain_exports("m", obj)]
    if hasattr(obj, "artifact_manifest_"):   # run, not digested: it shows the free-text fields
        ev.manifest_summary(obj.artifact_manifest_)
    data = _data_for(obj, rng)
    if data is not None:
        try:
            out.append(ev.evaluate(obj, data, column="c" if data.kind == "table" else None))
        except ValueError as exc:     # a clear refusal is a valid outcome of evaluate
            out.append(("ValueError", str(exc)[:40]))
    return out


def _data_for(obj, rng):
    from featagg_core.data import CategoricalData, GraphData, MultiLabelData
    name = type(obj).__name__
    if name in ("Defrag", "KTXMLC", "OneVsAll", "DefragKTXMLC", "Fiat", "Refrag"):
        d = int(obj.n_features_in_)
        L = int(getattr(obj, "n_labels_", 4))
        Y = _rand_csr(rng, 16, L, per_row=2)
        Y.data[:] = 1
        return MultiLabelData(X=_rand_csr(rng, 16, d), Y=Y, name="fuzz")
    if name in ("BlockModel", "BMGUFS"):
        nn = int(obj.labels_.shape[0] if name == "BlockModel"
                 else obj.block_model_.labels_.shape[0])
        f = int(getattr(obj, "n_features_in_", 3))
        A = sp.random(nn, nn, density=min(1.0, 4.0 / max(nn, 1)), random_state=1, format="csr")
        A = ((A + A.T) > 0).astype(np.float32)
        return GraphData(A=sp.csr_matrix(A), X=_rand_csr(rng, nn, f),
                         y=np.arange(nn) % 2, name="fuzz")
    if name == "VocabularyCompressor":
        import pandas as pd
        vals = np.asarray(obj.vocabulary_[:30], dtype=object)
        return CategoricalData(table=pd.DataFrame({"c": np.resize(vals, 40)}),
                               labels=(np.arange(40) % 2).astype(np.int8), name="fuzz")
    return None


# ============================================================================ tampering
def _members(blob: bytes) -> List[Tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return [(i, zf.read(i.filename)) for i in zf.infolist()]


def _zip(members, compression=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return buf.getvalue()


def _npy(arr) -> bytes:
    b = io.BytesIO()
    np.lib.format.write_array(b, np.ascontiguousarray(arr), allow_pickle=False)
    return b.getvalue()


def _load_npy(raw: bytes):
    return np.lib.format.read_array(io.BytesIO(raw), allow_pickle=False)


def _state_digest(manifest) -> str:
    from featagg_core.artifacts import _state_digest
    return _state_digest(manifest)


def _rebuild(manifest, arrays: Dict[str, np.ndarray], forge: bool) -> bytes:
    """An artifact file from a manifest and arrays; ``forge`` recomputes every checksum."""
    manifest = copy.deepcopy(manifest)
    if forge and isinstance(manifest.get("arrays"), dict):
        for key, arr in arrays.items():
            spec = manifest["arrays"].get(key)
            if isinstance(spec, dict):
                spec["shape"] = list(arr.shape)
                spec["dtype"] = arr.dtype.str
                spec["sha256"] = hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()
    if forge and "state_sha256" in manifest:
        try:
            manifest["state_sha256"] = _state_digest(manifest)
        except Exception:  # noqa: BLE001 - unhashable edits: keep the old digest
            pass
    members = [("manifest.json", json.dumps(manifest).encode())]
    members += [(f"arrays/{k}.npy", _npy(a)) for k, a in arrays.items()]
    return _zip(members)


def _leaves(obj, path=()):
    """Paths of every scalar / list leaf of a JSON document (lists also as a whole)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(obj, list):
        yield path
        for i, v in enumerate(obj[:6]):
            yield from _leaves(v, path + (i,))
    else:
        yield path


def _set(doc, path, value):
    cur = doc
    for p in path[:-1]:
        cur = cur[p]
    if value is _DELETE:
        if isinstance(cur, dict):
            del cur[path[-1]]
        else:
            cur.pop(path[-1])
    else:
        cur[path[-1]] = value


def _get(doc, path):
    cur = doc
    for p in path:
        cur = cur[p]
    return cur


_DELETE = object()


def _hostile_values(v, rng):
    base = [0, 1, -1, -5, 2, 2**31 - 1, 2**31, 2**63, -2**63, 10**30, 0.5, -0.0, 1e308,
            float("nan"), float("inf"), True, False, None, "", "x" * 40, [], {}, [1, 2],
            {"a": 1}, _DELETE]
    if isinstance(v, bool):
        base += [not v]
    elif isinstance(v, int):
        base += [v + 1, v - 1, 2 * v, -v, v // 2, v * 1000]
    elif isinstance(v, float):
        base += [v * 2, -v, v + 1e-9, 0.0]
    elif isinstance(v, str):
        base += [v + "x", v.upper(), "XY", "X", "sum", "avg", "input", "joint", "KTXMLC",
                 "OneVsAll", "Defrag", v[:-1]]
    elif isinstance(v, list):
        base += [v[:-1], v + v[-1:], v[::-1], [v], [None] * len(v)]
    return base[int(rng.integers(len(base)))]


def tampered_artifacts(blob: bytes, rng, n: int) -> Iterator[Tuple[str, str, bytes]]:
    """``n`` tampered versions of the artifact ``blob`` (mixed categories)."""
    members = _members(blob)
    manifest = json.loads(dict((i.filename, d) for i, d in members)["manifest.json"])
    arrays = {i.filename[len("arrays/"):-len(".npy")]: _load_npy(d)
              for i, d in members if i.filename.startswith("arrays/")}
    gens = [_t_bytes, _t_manifest, _t_forged_manifest, _t_forged_array, _t_zip]
    weights = np.array([0.15, 0.2, 0.25, 0.3, 0.1])
    for _ in range(n):
        g = gens[int(rng.choice(len(gens), p=weights))]
        yield g(blob, members, manifest, arrays, rng)


def _t_bytes(blob, members, manifest, arrays, rng):
    b = bytearray(blob)
    how = int(rng.integers(4))
    if how == 0:
        for _ in range(int(rng.integers(1, 8))):
            p = int(rng.integers(len(b)))
            b[p] ^= 1 << int(rng.integers(8))
        return "bytes", "flipped bits", bytes(b)
    if how == 1:
        return "bytes", "truncated", bytes(b[:int(rng.integers(len(b)))])
    if how == 2:
        p = int(rng.integers(len(b)))
        return "bytes", "inserted bytes", bytes(b[:p] + rng.bytes(int(rng.integers(1, 64))) + b[p:])
    # flip a byte inside one member's data (the zip stays readable: the CRC catches it)
    names = [i.filename for i, _ in members]
    k = int(rng.integers(len(names)))
    out = []
    for i, d in members:
        if i.filename == names[k] and d:
            d = bytearray(d)
            d[int(rng.integers(len(d)))] ^= 0xFF
            d = bytes(d)
        out.append((i.filename, d))
    return "bytes", f"member {names[k]} damaged, zip rewritten", _zip(out)


def _edit_manifest(manifest, rng):
    m = copy.deepcopy(manifest)
    paths = [p for p in _leaves(m) if p and p[0] != "state_sha256"]
    path = paths[int(rng.integers(len(paths)))]
    old = _get(m, path)
    new = _hostile_values(old, rng)
    try:
        _set(m, path, new)
    except (KeyError, IndexError, TypeError):
        pass
    return m, f"{'/'.join(map(str, path))}: {str(old)[:20]!r} -> {str(new)[:20] if new is not _DELETE else 'deleted'}"


def _t_manifest(blob, members, manifest, arrays, rng):
    m, what = _edit_manifest(manifest, rng)
    return "manifest", what, _rebuild(m, arrays, forge=False)


def _t_forged_manifest(blob, members, manifest, arrays, rng):
    m, what = _edit_manifest(manifest, rng)
    if rng.random() < 0.15:
        m["class"] = str(rng.choice(["KTXMLC", "OneVsAll", "Defrag", "DefragKTXMLC", "Fiat",
                                     "Refrag", "BlockModel", "BMGUFS", "VocabularyCompressor"]))
        what += f"; class -> {m['class']}"
    return "forged", what, _rebuild(m, arrays, forge=True)


def _t_forged_array(blob, members, manifest, arrays, rng):
    arrays = dict(arrays)
    keys = sorted(arrays)
    key = keys[int(rng.integers(len(keys)))]
    a = arrays[key]
    how = int(rng.integers(9))
    if how == 0 and a.size:
        lo = float(a.min()) if a.dtype.kind != "b" else 0
        hi = float(a.max()) if a.dtype.kind != "b" else 1
        span = max(hi - lo, 1.0)
        vals = rng.uniform(lo - span, hi + span, a.shape)
        new = vals.astype(a.dtype) if a.dtype.kind != "f" else vals.astype(a.dtype)
        what = "random values around the range"
    elif how == 1 and a.size:
        new = a.copy().ravel()
        new[int(rng.integers(new.size))] = rng.choice([-5, -1, 0, 1, 2**31 - 1, a.size,
                                                       a.size + 1]) if a.dtype.kind in "iu" \
            else rng.choice([np.nan, np.inf, -1.0, 1e30])
        new = new.reshape(a.shape).astype(a.dtype)
        what = "one entry set to a hostile value"
    elif how == 2:
        new = a[..., ::-1].copy() if a.ndim else a
        what = "reversed"
    elif how == 3 and a.ndim:
        new = a[:-1] if a.shape[0] else np.zeros((1,) + a.shape[1:], a.dtype)
        what = "one entry removed"
    elif how == 4 and a.ndim:
        new = np.concatenate([a, a[-1:] if a.shape[0] else np.zeros((1,) + a.shape[1:], a.dtype)])
        what = "one entry added"
    elif how == 5:
        new = a.astype(np.int32 if a.dtype.kind == "f" else np.float32)
        what = f"dtype {a.dtype} -> {new.dtype}"
    elif how == 6 and len(keys) > 1:
        other = keys[int(rng.integers(len(keys)))]
        arrays[key], arrays[other] = arrays[other], arrays[key]
        return "forged", f"arrays {key} and {other} swapped", _rebuild(manifest, arrays, True)
    elif how == 7:
        new = np.zeros_like(a)
        what = "all zeros"
    else:
        new = rng.permutation(a.ravel()).reshape(a.shape) if a.size else a
        what = "shuffled"
    arrays[key] = np.asarray(new)
    return "forged", f"array {key}: {what}", _rebuild(manifest, arrays, forge=True)


def _deep_json(depth: int) -> bytes:
    return b'{"format": "featagg-artifact", "x": ' + b"[" * depth + b"]" * depth + b"}"


def _t_zip(blob, members, manifest, arrays, rng):
    how = int(rng.integers(7))
    names = [(i.filename, d) for i, d in members]
    if how == 0:
        k = int(rng.integers(len(names)))
        dup = names[k]
        with_dup = names + [(dup[0], names[int(rng.integers(len(names)))][1])]
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "zip", f"duplicate member {dup[0]}", _zip(with_dup)
    if how == 1:
        b = bytearray(_zip(names, zipfile.ZIP_DEFLATED))
        method = int(rng.choice([1, 6, 9, 12, 14, 93, 98, 99]))
        _patch_zip(b, lambda off, cd: struct.pack_into("<H", b, off + (10 if cd else 8), method))
        return "zip", f"compression method {method}", bytes(b)
    if how == 2:
        b = bytearray(blob)
        _patch_zip(b, lambda off, cd: struct.pack_into(
            "<H", b, off + (8 if cd else 6),
            struct.unpack_from("<H", b, off + (8 if cd else 6))[0] | 1))
        return "zip", "encryption flag set", bytes(b)
    if how == 3:
        size = int(rng.choice([64 << 20, 300 << 20, 1 << 30]))
        head = json.dumps(manifest).encode()[:-1] + b', "pad": "'
        data, total = _deflated_padding(head, size, b'"}')
        return "zip", f"manifest deflate bomb ({size >> 20} MiB)", _raw_deflated_zip(
            [("manifest.json", data, total, None)] +
            [(n, d, len(d), "stored") for n, d in names if n != "manifest.json"])
    if how == 4:
        depth = int(rng.choice([100, 5000, 100000]))
        return "zip", f"manifest nested {depth} deep", _zip([("manifest.json", _deep_json(depth))] +
                                                             [x for x in names if x[0] != "manifest.json"])
    if how == 5:
        # an array member whose .npy header declares far more than the member holds
        key = sorted(arrays)[int(rng.integers(len(arrays)))]
        hdr = io.BytesIO()
        np.lib.format.write_array_header_1_0(hdr, {"descr": "<f8", "fortran_order": False,
                                                   "shape": (1 << 34,)})
        out = [(n, hdr.getvalue() + b"\0" * 64 if n == f"arrays/{key}.npy" else d)
               for n, d in names]
        return "zip", f"array {key}: header declares 128 GiB", _zip(out)
    # an extra, unrelated member that would inflate to a lot
    size = 512 << 20
    data, total = _deflated_padding(b"", size, b"", fill=b"\0")
    return "zip", "extra member: 512 MiB deflate bomb", _raw_deflated_zip(
        [(n, d, len(d), "stored") for n, d in names] + [("arrays/zzz_extra.bin", data, total, None)])


@functools.lru_cache(maxsize=8)
def _padding_stream(size: int, fill: bytes) -> Tuple[bytes, bytes]:
    """A raw deflate stream of ``size`` bytes of ``fill`` (split as body, final flush), made
    once per size: the bombs are a few hundred kB that inflate to hundreds of MiB."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = fill * (1 << 24)
    body = b"".join(comp.compress(chunk) for _ in range(size >> 24))
    body += comp.compress(fill * (size & ((1 << 24) - 1)))
    return body + comp.flush(zlib.Z_SYNC_FLUSH), b""


def _deflated_padding(head: bytes, size: int, tail: bytes, fill: bytes = b" "):
    """A raw deflate stream of head + size x fill + tail, and its inflated length."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = comp.compress(head) + comp.flush(zlib.Z_SYNC_FLUSH)
    middle, _ = _padding_stream(size, fill)
    comp2 = zlib.compressobj(9, zlib.DEFLATED, -15)
    last = comp2.compress(tail) + comp2.flush()
    return first + middle + last, len(head) + size + len(tail)


def _raw_deflated_zip(entries) -> bytes:
    """A zip from (name, payload, uncompressed size, 'stored' or None=deflated raw payload);
    the CRC of a bomb is left 0 (it is never reached by a bounded reader)."""
    out = io.BytesIO()
    cd = io.BytesIO()
    for name, payload, size, stored in entries:
        nb = name.encode()
        method = 0 if stored else 8
        crc = zlib.crc32(payload) if stored else 0
        off = out.tell()
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0, crc,
                              len(payload), size, len(nb), 0))
        out.write(nb)
        out.write(payload)
        cd.write(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc,
                             len(payload), size, len(nb), 0, 0, 0, 0, 0, off))
        cd.write(nb)
    start = out.tell()
    body = cd.getvalue()
    out.write(body)
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                          len(body), start, 0))
    return out.getvalue()


def _patch_zip(b: bytearray, patch) -> None:
    """Apply ``patch(offset, is_central)`` to every local and central header of zip ``b``."""
    pos = 0
    while True:
        p = b.find(b"PK\x03\x04", pos)
        if p < 0:
            break
        patch(p, False)
        pos = p + 4
    pos = 0
    while True:
        p = b.find(b"PK\x01\x02", pos)
        if p < 0:
            break
        patch(p, True)
        pos = p + 4


def load_and_use(blob: bytes, max_bytes: int = 256 << 20) -> Tuple[str, str]:
    """(outcome, detail): ``ArtifactError`` or ``loaded`` with the use digest; any other
    exception as ``exception:<type>``."""
    from featagg_core.artifacts import ArtifactError, is_bundle, load_artifact, load_bundle
    buf = io.BytesIO(blob)
    buf.name = "fuzz.fgz"
    try:
        if is_bundle(buf):
            objs, _ = load_bundle(buf, max_bytes=max_bytes)
            obj = next(iter(objs.values()))
        else:
            obj = load_artifact(buf, max_bytes=max_bytes)
    except ArtifactError as exc:
        return "ArtifactError", str(exc)[:200]
    except Exception as exc:  # noqa: BLE001
        return f"exception:{type(exc).__name__}", f"load: {str(exc)[:200]}"
    try:
        return "loaded", use_model(obj)
    except Exception as exc:  # noqa: BLE001
        return f"exception:{type(exc).__name__}", f"use: {str(exc)[:200]}"


def judge_artifact(category: str, outcome: str, detail: str, original_digest: str) -> str:
    """'ok' or the reason the outcome breaks the rule (see the module docstring)."""
    if outcome == "ArtifactError":
        return "ok"
    if outcome == "loaded":
        if category == "forged" or detail == original_digest:
            return "ok"
        return "loaded a different model from a file that is not consistently forged"
    return outcome
