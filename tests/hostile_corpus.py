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
import math
import struct
import zipfile
import zlib
from typing import Dict, Iterator, List, Tuple

import numpy as np
import scipy.sparse as sp

ARTIFACT_CATEGORIES = ("bytes", "manifest", "forged", "zip")


# ============================================================================ models
@functools.lru_cache(maxsize=1)
def fit_models() -> Dict[str, object]:
    """One small fitted object of every artifact class (a few seconds; made once, treat as
    read-only)."""
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
    )
    from featagg_core.data.synthetic import (
        make_attributed_sbm,
        make_powerlaw_multilabel,
        make_zipf_categorical,
    )
    ml = make_powerlaw_multilabel(200, 60, 12, avg_labels=2, avg_features=8, random_state=3)
    X, Y = ml.X, ml.Y
    g = make_attributed_sbm(40, 2, p_in=0.3, p_out=0.03, n_informative=4, n_noise=6,
                            random_state=4)
    defrag = Defrag(d0=4, random_state=1).fit(X, Y)
    table = make_zipf_categorical(800, 40, random_state=5)
    values = table.table.iloc[:, 0].to_numpy()
    out = _fit_pipelines(ml, g, table)
    return {
        **out,
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


def _fit_pipelines(ml, g, table) -> Dict[str, object]:
    """Run pipelines (the "Pipeline" artifact class) when this featagg has the run model."""
    try:
        from featagg_core.experiment import make_split, run_pipeline
        from featagg_core.runs.pipeline import Pipeline  # noqa: F401
    except ImportError:
        return {}
    out = {}
    specs = {
        "Pipeline-classifier": (ml, {"impute": {"kind": "fiat"}, "defrag": {"d0": 4},
                                     "classifier": {"kind": "ktxmlc", "n_trees": 1,
                                                    "max_leaf_labels": 3},
                                     "rerank": {"kind": "refrag", "shortlist": 10}}),
        "Pipeline-per-tree": (ml, {"defrag": {"d0": 4, "per_tree": True},
                                   "classifier": {"kind": "ktxmlc", "n_trees": 2,
                                                  "max_leaf_labels": 3}}),
        "Pipeline-feature-clustering": (ml, {"feature_clustering": {
            "kind": "random_balanced", "n_clusters": 8}}),
        "Pipeline-selection": (g, {"feature_selection": {"kind": "variance", "d": 4}}),
        "Pipeline-vocabulary": (table, {"vocabulary": {"method": "submodular", "budget": 4}}),
    }
    for name, (data, spec) in specs.items():
        run = run_pipeline(data, make_split(data, random_state=0), spec)
        if run.status == "done":
            out[name] = run.pipeline
    return out


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
        elif name == "Pipeline":
            out += _use_pipeline(obj, rng, n)
        elif name == "VocabularyCompressor":
            vals = np.concatenate([obj.vocabulary_[:20].astype(object),
                                   np.array(["never-seen"], dtype=object)])
            out += [obj.transform(vals), obj.mapping_frame(), obj.to_json(), obj.p0_sorted_]
            if obj.method in ("submodular", "threshold") and len(obj.chosen_):
                out.append(obj.truncate(1).transform(vals))
        out += _use_views(obj, rng)
    return _digest(out)


def _use_pipeline(pipe, rng, n) -> list:
    import pandas as pd
    out = [pipe.kind, pipe.model_sizes()]
    if pipe.vocabulary is not None:
        cols = list(pipe.vocabulary.compressors)
        table = pd.DataFrame({c: np.resize(np.asarray(pipe.vocabulary.compressors[c]
                                                      .vocabulary_[:10], dtype=object), 12)
                              for c in cols})
        return out + [pipe.transform(table)]
    d = pipe.n_features_in_
    if d is None:
        return out
    X = _rand_csr(rng, n, d)
    if pipe.classifier is not None:
        out.append(pipe.predict_scores(X, k=5))
    out.append(pipe.transform(X))
    return out


def _use_views(obj, rng) -> list:
    """What the Export page does with an imported object: its view functions, and an
    evaluation on data of matching dimensions (a clear ValueError is a valid outcome)."""
    try:
        from featagg_app.views import export as ev
    except Exception:  # noqa: BLE001 - the app package is optional here
        return []
    if hasattr(obj, "artifact_manifest_"):   # run, not digested: it shows the free-text fields
        ev.manifest_summary(obj.artifact_manifest_)
    if hasattr(ev, "pipelines_from_import"):          # the run-model Export page
        return _use_pipeline_views(ev, obj, rng)
    out = [ev.describe(obj), ev.plain_exports("m", obj)]
    data = _data_for(obj, rng)
    if data is not None:
        try:
            out.append(ev.evaluate(obj, data, column="c" if data.kind == "table" else None))
        except ValueError as exc:     # a clear refusal is a valid outcome of evaluate
            out.append(("ValueError", str(exc)[:40]))
    return out


def _use_pipeline_views(ev, obj, rng) -> list:
    from featagg_core.experiment import evaluate, make_split
    out = []
    for key, pipe, note in ev.pipelines_from_import({"m": obj}, {}):
        if pipe is None:
            out.append(note[:40])
            continue
        out += [ev.pipeline_name(pipe), ev.describe_pipeline(pipe),
                ev.pipeline_exports(key, pipe)]
        data = _data_for_pipeline(pipe, rng)
        if data is None:
            continue
        try:
            out.append(evaluate(pipe, data, make_split(data, random_state=0), rows="test"))
        except ValueError as exc:
            out.append(("ValueError", str(exc)[:40]))
    return out


def _data_for_pipeline(pipe, rng):
    import pandas as pd

    from featagg_core.data import CategoricalData, GraphData, MultiLabelData
    if pipe.vocabulary is not None:
        cols = {c: np.resize(np.asarray(vc.vocabulary_[:10], dtype=object), 40)
                for c, vc in pipe.vocabulary.compressors.items()}
        return CategoricalData(table=pd.DataFrame(cols), labels=(np.arange(40) % 2)
                               .astype(np.int8), name="fuzz")
    d = pipe.n_features_in_
    if d is None:
        return None
    if pipe.kind == "feature_selection":
        nn = 30
        A = sp.random(nn, nn, density=0.15, random_state=1, format="csr")
        A = sp.csr_matrix(((A + A.T) > 0).astype(np.float32))
        return GraphData(A=A, X=_rand_csr(rng, nn, d), y=np.arange(nn) % 2, name="fuzz")
    L = int(pipe.n_labels_ or 4)
    Y = _rand_csr(rng, 30, L, per_row=2)
    Y.data[:] = 1
    return MultiLabelData(X=_rand_csr(rng, 30, d), Y=Y, name="fuzz")


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
    from featagg_core.artifacts.store import _state_digest
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
    for entry in entries:
        name, payload, size, stored = entry[:4]
        nb = name.encode()
        method = 0 if stored else 8
        crc = zlib.crc32(payload) if stored else (entry[4] if len(entry) > 4 else 0)
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
    n = len(entries)
    if n > 0xFFFF:                 # zip64 end records (the count no longer fits 16 bits)
        at = out.tell()
        out.write(struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, n, n,
                              len(body), start))
        out.write(struct.pack("<4sLQL", b"PK\x06\x07", 0, at, 1))
        n = 0xFFFF
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, n, n, len(body), start, 0))
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
    import inspect

    from featagg_core.artifacts.store import ArtifactError, is_bundle, load_artifact, load_bundle
    buf = io.BytesIO(blob)
    buf.name = "fuzz.fgz"
    lim = {"max_bytes": max_bytes} \
        if "max_bytes" in inspect.signature(load_artifact).parameters else {}

    def load():
        if is_bundle(buf):
            objs, _ = load_bundle(buf, **lim)
            return next(iter(objs.values()))
        return load_artifact(buf, **lim)

    return _open_and_use(load, ArtifactError, "load", use_model)


def _open_and_use(open_, expected, step: str, use) -> Tuple[str, str]:
    """(outcome, detail) of ``use(open_())``: the ``expected`` error's name and message when
    opening refuses the input, ``loaded`` and the use digest, or ``exception:<type>`` with
    the step (``step`` or "use") that raised anything else."""
    try:
        obj = open_()
    except expected as exc:
        return expected.__name__, str(exc)[:200]
    except Exception as exc:  # noqa: BLE001
        return f"exception:{type(exc).__name__}", f"{step}: {str(exc)[:200]}"
    try:
        return "loaded", use(obj)
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


# ============================================================================ readers
def _named(raw: bytes, name: str):
    f = io.BytesIO(raw)
    f.name = name
    return f


@functools.lru_cache(maxsize=1)
def reader_seeds() -> Dict[str, bytes]:
    """Small valid files of every format the readers take (made once)."""
    import os
    import tempfile

    import networkx as nx
    import pandas as pd
    import scipy.io

    from featagg_core.data import CategoricalData, GraphData, MultiLabelData, save_npz, save_xc
    rng = np.random.default_rng(0)
    f = {}
    X = sp.random(12, 15, density=0.3, format="csr", dtype=np.float32, random_state=rng)
    X.data = np.round(rng.standard_normal(X.nnz), 3).astype(np.float32)
    Y = (sp.random(12, 5, density=0.35, format="csr", random_state=rng) > 0).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "d.txt")
        save_xc((X, Y), p)
        f["xc"] = open(p, "rb").read()
        save_xc((X, Y), os.path.join(tmp, "X.txt"), labels_path=os.path.join(tmp, "Y.txt"))
        f["xc_X"] = open(os.path.join(tmp, "X.txt"), "rb").read()
        f["xc_Y"] = open(os.path.join(tmp, "Y.txt"), "rb").read()
        p = os.path.join(tmp, "m.npz")
        save_npz(MultiLabelData(X, Y, feature_names=[f"f{i}" for i in range(15)],
                                label_names=[f"l{i}" for i in range(5)]), p)
        f["npz_multilabel"] = open(p, "rb").read()
        A = sp.csr_matrix(((X @ X.T) != 0).astype(np.float32))
        A.setdiag(0)
        A.eliminate_zeros()
        save_npz(GraphData(A, X, np.arange(12) % 3, class_names=["a", "b", "c"]), p)
        f["npz_graph"] = open(p, "rb").read()
        save_npz(CategoricalData(pd.DataFrame({"a": ["x", "y", "x", "z"], "b": list("pqpq")}),
                                 np.array([0, 1, 1, 0], np.int8)), p)
        f["npz_table"] = open(p, "rb").read()
    f["svmlight"] = f["xc"].split(b"\n", 1)[1].replace(b"\n", b" # c\n", 1)
    head = [b"% c", b"@relation r", *[b"@attribute f%d numeric" % i for i in range(15)],
            *[b"@attribute 'l %d' {0,1}" % i for i in range(5)], b"@data"]
    rows = []
    for i in range(12):
        pairs = [f"{j} {X[i, j]:g}" for j in X[i].indices] + [f"{15 + j} 1" for j in Y[i].indices]
        rows.append(("{" + ", ".join(pairs) + "}").encode())
    f["arff_sparse"] = b"\n".join(head + rows) + b"\n"
    dense = [",".join(f"{v:g}" for v in np.concatenate([X[i].toarray().ravel(),
                                                        Y[i].toarray().ravel()])).encode()
             for i in range(12)]
    f["arff_dense"] = b"\n".join(head + dense) + b"\n"
    f["mulan_xml"] = (b'<?xml version="1.0" encoding="utf-8"?>\n'
                      b'<labels xmlns="http://mulan.sourceforge.net/labels">'
                      + b"".join(b'<label name="l %d"></label>' % i for i in range(5))
                      + b"</labels>\n")
    f["edgelist"] = b"# edges\nsource target weight\na b 1.5\nb,c\nc d 2\n% x\nd a\nd e 0.5\n"
    G = nx.karate_club_graph().subgraph(range(10)).copy()
    for v in G:
        G.nodes[v]["score"] = float(v % 3)
        G.nodes[v]["club"] = G.nodes[v].get("club", "x")
    b = io.BytesIO()
    nx.write_graphml(G, b)
    f["graphml"] = b.getvalue()
    f["gml"] = "\n".join(nx.generate_gml(G)).encode()
    for key, compress in (("mat", False), ("mat_compressed", True)):
        b = io.BytesIO()
        scipy.io.savemat(b, {"network": sp.csc_matrix(A), "attributes": sp.csc_matrix(X),
                             "group": np.eye(3)[np.arange(12) % 3], "other": np.arange(6.0)},
                         do_compression=compress)
        f[key] = b.getvalue()
    f["csv"] = b"a,b,y\nx,1,yes\nz,,no\nx,3,yes\n\"q,r\",4,no\n"
    f["tsv"] = b"a\tb\ty\nx\t1\t1\nz\t\t0\nx\t3\t1\n"
    b = io.BytesIO()
    pd.DataFrame({"a": ["x", "y", None, "x"], "n": [1.5, 2.0, None, 4.0],
                  "y": [0, 1, 1, 0]}).to_parquet(b)
    f["parquet"] = b.getvalue()
    f["node_labels"] = b"a x\nb y\n# c\nd x\ne y\n"
    f["node_features"] = b"5 3\n0:1 2:0.5\n\n1:2\n0:1\n2:3\n"
    b = io.BytesIO()
    np.save(b, np.arange(15.0).reshape(5, 3), allow_pickle=False)
    f["node_features_npy"] = b.getvalue()
    return f


#: format -> (seed key, kind, file name, how the seed is read: extras given as seed keys)
READER_FORMATS = {
    "xc": ("xc", "multilabel", "d.txt", {}),
    "xc_split": ("xc_X", "multilabel", "X.txt", {"labels_path": ("xc_Y", "Y.txt")}),
    "svmlight": ("svmlight", "multilabel", "d.svm", {}),
    "arff_sparse": ("arff_sparse", "multilabel", "d.arff", {"xml": ("mulan_xml", "d.xml")}),
    "arff_dense": ("arff_dense", "multilabel", "d.arff", {"n_labels": 5}),
    "mulan_xml": ("mulan_xml", "multilabel-xml", "d.xml", {}),
    "npz_multilabel": ("npz_multilabel", "multilabel", "d.npz", {}),
    "npz_graph": ("npz_graph", "graph", "g.npz", {}),
    "npz_table": ("npz_table", "table", "t.npz", {}),
    "edgelist": ("edgelist", "graph", "g.edges", {}),
    "graphml": ("graphml", "graph", "g.graphml", {}),
    "gml": ("gml", "graph", "g.gml", {}),
    "mat": ("mat", "graph", "g.mat", {}),
    "mat_compressed": ("mat_compressed", "graph", "g.mat", {}),
    "csv": ("csv", "table", "t.csv", {"label": "y"}),
    "tsv": ("tsv", "table", "t.tsv", {"label": "y"}),
    "parquet": ("parquet", "table", "t.parquet", {"label": "y"}),
    "node_labels": ("node_labels", "graph-labels", "labels.txt", {}),
    "node_features": ("node_features", "graph-features", "X.txt", {}),
    "node_features_npy": ("node_features_npy", "graph-features", "X.npy", {}),
}


def read_case(fmt: str, raw: bytes, max_bytes: int = 256 << 20, max_dim=None):
    """Read ``raw`` as format ``fmt`` with the dashboard's limits; returns the data."""
    from featagg_core.data import load_categorical, load_dataset, load_graph
    import inspect
    seeds = reader_seeds()
    _, kind, name, extra = READER_FORMATS[fmt]
    # an older featagg (the "before" column of the benchmark) has no load limits
    lim = {"max_bytes": max_bytes, "max_dim": max_dim} \
        if "max_bytes" in inspect.signature(load_dataset).parameters else {}
    kw = {}
    for k, v in extra.items():
        kw[k] = _named(seeds[v[0]], v[1]) if isinstance(v, tuple) else v
    if kind == "multilabel":
        return load_dataset(_named(raw, name), **kw, **lim)
    if kind == "multilabel-xml":
        return load_dataset(_named(seeds["arff_sparse"], "d.arff"), xml=_named(raw, name), **lim)
    if kind == "graph":
        return load_graph(_named(raw, name), **lim)
    if kind == "graph-labels":
        return load_graph(_named(seeds["edgelist"], "g.edges"), labels=_named(raw, name), **lim)
    if kind == "graph-features":
        return load_graph(_named(seeds["edgelist"], "g.edges"), features=_named(raw, name), **lim)
    label = kw.pop("label", None)
    return load_categorical(_named(raw, name), label=label, **lim)


def use_data(data) -> str:
    """What an upload triggers at once: the fingerprint and the Data page's statistics."""
    from featagg_app.views import data as dv
    out = [data.fingerprint]
    if data.kind == "multilabel":
        s = dv.multilabel_summary(data)
        freq = dv.column_counts(data.Y)
        out += [s, dv.head_size(freq), dv.top_items(freq, data.label_names, 15, "label", s["n"]),
                dv.top_items(dv.column_counts(data.X), data.feature_names, 15, "feature", s["n"])]
    elif data.kind == "graph":
        out.append(dv.graph_summary(data))
        if data.y is not None:
            out.append(dv.class_sizes(data.y, data.class_names))
    else:
        out += [dv.table_summary(data), dv.vocabulary_sizes(data)]
    return _digest(out)


def read_and_use(fmt: str, raw: bytes, max_bytes: int = 256 << 20) -> Tuple[str, str]:
    from featagg_core.data import DatasetError
    return _open_and_use(lambda: read_case(fmt, raw, max_bytes=max_bytes, max_dim=5_000_000),
                         DatasetError, "read", use_data)


_HOSTILE_TOKENS = [b"nan", b"inf", b"-inf", b"-1", b"-0", b"0", b"99999999999999999999",
                   b"1e400", b"2147483647", b"2147483648", b"-2147483649", b"0x10", b"", b":",
                   b"::", b"1:2:3", b"\x00", b"\xc3\xa9", b"\xff\xfe", b"a" * 300, b"1" * 400,
                   b"{", b"}", b"?", b",", b",,", b'"', b"<!ENTITY x 'y'>", b"&x;", b"<",
                   b"]]>", b"\t", b"\r", b"1e-400", b"1.7976931348623157e309", b"qid:3",
                   b"@data", b"@attribute z numeric", b"graph [", b"]", b"node [ id 0 ]"]


def mutate_bytes(raw: bytes, rng) -> Tuple[str, bytes]:
    """One random edit of a file (text and binary alike)."""
    b = bytearray(raw)
    how = int(rng.integers(10))
    if how == 0 and b:
        for _ in range(int(rng.integers(1, 6))):
            p = int(rng.integers(len(b)))
            b[p] = int(rng.integers(256))
        return "bytes changed", bytes(b)
    if how == 1:
        return "truncated", bytes(b[:int(rng.integers(len(b) + 1))])
    if how == 2:
        p = int(rng.integers(len(b) + 1))
        return "junk inserted", bytes(b[:p]) + rng.bytes(int(rng.integers(1, 40))) + bytes(b[p:])
    lines = raw.split(b"\n")
    if how == 3 and lines:
        i = int(rng.integers(len(lines)))
        lines.insert(i, lines[i])
        return "line duplicated", b"\n".join(lines)
    if how == 4 and len(lines) > 1:
        i, j = rng.integers(len(lines), size=2)
        lines[i], lines[j] = lines[j], lines[i]
        return "lines swapped", b"\n".join(lines)
    if how == 5 and lines:
        del lines[int(rng.integers(len(lines)))]
        return "line deleted", b"\n".join(lines)
    if how in (6, 7):
        import re
        toks = [m.span() for m in re.finditer(rb"[^\s,:{}\[\]<>=\"']+", raw)]
        if toks:
            a, e = toks[int(rng.integers(len(toks)))]
            t = _HOSTILE_TOKENS[int(rng.integers(len(_HOSTILE_TOKENS)))]
            return f"token -> {t[:12]!r}", raw[:a] + t + raw[e:]
    if how == 8:
        first, _, rest = raw.partition(b"\n")
        nums = [b"0", b"1", b"3", b"2147483647", b"2147483646", b"5000001", b"999999999999",
                b"-1"]
        parts = first.split()
        if parts:
            k = int(rng.integers(len(parts)))
            parts[k] = nums[int(rng.integers(len(nums)))]
            return "header edited", b" ".join(parts) + b"\n" + rest
    if how == 9:
        return "repeated", raw * int(rng.integers(2, 20))
    return "unchanged", raw


def mutate_archive(raw: bytes, rng) -> Tuple[str, bytes]:
    """Member-level edits of an npz: a member replaced by a hostile array, dropped,
    re-typed or re-shaped (checksums are not a thing in npz)."""
    try:
        members = _members(raw)
    except Exception:  # noqa: BLE001
        return mutate_bytes(raw, rng)
    names = [i.filename for i, _ in members]
    k = int(rng.integers(len(names)))
    how = int(rng.integers(6))
    out = [(i.filename, d) for i, d in members]
    if how == 0:
        del out[k]
        return f"member {names[k]} dropped", _zip(out)
    try:
        a = _load_npy(out[k][1])
    except Exception:  # noqa: BLE001
        return mutate_bytes(raw, rng)
    if how == 1 and a.dtype.kind in "iuf" and a.size:
        b = a.copy().ravel()
        if a.dtype.kind in "iu":
            info = np.iinfo(a.dtype)
            v = rng.choice([min(max(-1, info.min), info.max), info.max, info.min, 0,
                            min(2**31 - 1, info.max)])
        else:
            v = rng.choice([np.nan, np.inf, -1.0])
        b[int(rng.integers(b.size))] = v
        new = b.reshape(a.shape)
    elif how == 2:
        new = a.astype(np.float64) if a.dtype.kind in "iub" else np.zeros(a.shape, np.int64)
    elif how == 3:
        new = a.reshape(-1)[:-1] if a.size else np.zeros(3)
    elif how == 4:
        new = np.array([2**31 - 1, 2**31 - 1], np.int64)
    else:
        new = np.array("graph" if rng.random() < 0.5 else "table")
    out[k] = (out[k][0], _npy(new))
    return f"member {names[k]} replaced ({new.dtype} {new.shape})", _zip(out)


def reader_cases(rng, n: int) -> Iterator[Tuple[str, str, bytes]]:
    """``n`` (format, description, bytes): random edits of every format's seed."""
    seeds = reader_seeds()
    fmts = sorted(READER_FORMATS)
    for _ in range(n):
        fmt = fmts[int(rng.integers(len(fmts)))]
        raw = seeds[READER_FORMATS[fmt][0]]
        if fmt.startswith("npz") and rng.random() < 0.5:
            what, data = mutate_archive(raw, rng)
        else:
            what, data = mutate_bytes(raw, rng)
            if rng.random() < 0.3:
                what2, data = mutate_bytes(data, rng)
                what += "; " + what2
        yield fmt, what, data


# ============================================================================ crafted attacks
def _zeros_bomb_npy_member(size: int) -> Tuple[bytes, int]:
    """A raw-deflated .npy member of ``size`` bytes of zeros (float64) and its length."""
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "<f8", "fortran_order": False,
                                               "shape": (size // 8,)})
    data, total = _deflated_padding(hdr.getvalue(), size, b"", fill=b"\0")
    return data, total


def _npz_with(raw_npz: bytes, extra) -> bytes:
    """An npz: the stored members of ``raw_npz`` plus ``extra`` (name, deflated, size) members;
    a name already there is replaced."""
    keep = [(i.filename, d, len(d), "stored") for i, d in _members(raw_npz)
            if i.filename not in {e[0] for e in extra}]
    return _raw_deflated_zip(keep + [(e[0], e[1], e[2], None) + tuple(e[3:]) for e in extra])


def _mat_element(name: str, dense_shape=None, sparse=None, compressed_size=None) -> bytes:
    """One MAT v5 miMATRIX element (little endian): a double matrix of zeros of
    ``dense_shape`` (deflated, inflating to its full size) or a sparse one declaring
    ``sparse = (rows, cols)`` with no entries."""
    def sub(typ, payload):
        pad = -len(payload) % 8
        return struct.pack("<II", typ, len(payload)) + payload + b"\0" * pad
    nb = name.encode()
    if sparse is not None:
        M, N = sparse
        flags = sub(6, struct.pack("<II", 5, 0))
        dims = sub(5, struct.pack("<ii", M, N))
        body = flags + dims + sub(1, nb) + sub(5, b"") + sub(5, struct.pack("<i", 0) * 2) + sub(9, b"")
        return struct.pack("<II", 14, len(body)) + body
    r, c = dense_shape
    flags = sub(6, struct.pack("<II", 6, 0))
    dims = sub(5, struct.pack("<ii", r, c))
    nvals = r * c * 8
    head = flags + dims + sub(1, nb) + struct.pack("<II", 9, nvals)
    inner_len = len(head) + nvals
    comp_head = struct.pack("<II", 14, inner_len) + head
    data, _ = _deflated_padding(comp_head, nvals, b"", fill=b"\0")
    # zlib (not raw deflate) stream: header + raw + adler placeholder
    zstream = b"\x78\x9c" + data + b"\0\0\0\0"
    return struct.pack("<II", 15, len(zstream)) + zstream


def _mat_file(*elements) -> bytes:
    header = b"MATLAB 5.0 MAT-file, featagg hostile corpus".ljust(116, b" ")
    return header + b"\0" * 8 + struct.pack("<H", 0x0100) + b"IM" + b"".join(elements)


def reader_attacks(big: bool = True) -> List[dict]:
    """The attack classes of the hostile-input issue, as reader inputs. ``big`` gives the
    sizes of the issue's report (for the benchmark); otherwise small ones (for tests).
    Each: name, fmt, data, expect ("refused" or "loaded")."""
    seeds = reader_seeds()
    out = []
    # npz: an unused member that inflates to 512 MiB (must not be inflated at all)
    data, size = _zeros_bomb_npy_member(512 << 20)
    out.append(dict(name="npz: unused member inflating to 512 MiB", fmt="npz_multilabel",
                    data=_npz_with(seeds["npz_multilabel"], [("zzz_unused.npy", data, size)]),
                    expect="loaded"))
    # npz: a needed member that inflates beyond the budget
    size = (1 << 30) if big else (300 << 20)
    data, size = _zeros_bomb_npy_member(size)
    out.append(dict(name=f"npz: X_data inflating to {size >> 20} MiB", fmt="npz_multilabel",
                    data=_npz_with(seeds["npz_multilabel"], [("X_data.npy", data, size)]),
                    expect="refused"))
    # npz: a header declaring 128 GiB in a member of 100 bytes
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "<f4", "fortran_order": False,
                                               "shape": (1 << 35,)})
    lie = hdr.getvalue() + b"\0" * 64
    out.append(dict(name="npz: member header declaring 128 GiB", fmt="npz_multilabel",
                    data=_npz_with(seeds["npz_multilabel"],
                                   [("X_data.npy", zlib.compress(lie)[2:-4], len(lie),
                                     zlib.crc32(lie))]),
                    expect="refused"))
    # .mat: a compressed dense 'network' inflating to 1 GiB; an unused variable bomb
    n = 11585 if big else 6000
    out.append(dict(name=f".mat: network inflating to {n * n * 8 >> 20} MiB", fmt="mat",
                    data=_mat_file(_mat_element("network", dense_shape=(n, n))),
                    expect="refused"))
    good = seeds["mat"][128:]
    out.append(dict(name=f".mat: unused variable inflating to {n * n * 8 >> 20} MiB",
                    fmt="mat", data=_mat_file(good, _mat_element("junk", dense_shape=(n, n))),
                    expect="loaded"))
    out.append(dict(name=".mat: sparse network declaring 2^31-1 x 2^31-1", fmt="mat",
                    data=_mat_file(_mat_element("network", sparse=(2**31 - 1, 2**31 - 1))),
                    expect="refused"))
    # edge list: one 256-byte node name among many short edges
    n_edges = 600_000 if big else 60_000
    long = b"n" * 256
    body = b"".join(b"%d %d\n" % (i, i + 1) for i in range(n_edges))
    out.append(dict(name=f"edge list: {len(body) + 300 >> 20} MB, one 256-byte name",
                    fmt="edgelist", data=long + b" 0\n" + body, expect="loaded"))
    # XC header declaring d = L = 2^31 - 1 (40 bytes)
    out.append(dict(name="XC: 40-byte header declaring d = L = 2^31-1", fmt="xc",
                    data=b"1 2147483647 2147483647\n0 0:1\n", expect="refused"))
    # GML / GraphML: every node with its own attribute
    n = 20_000 if big else 3_000
    gml = ["graph [\n"] + [f'  node [ id {i} label "n{i}" a{i} 1 ]\n' for i in range(n)] + \
          [f"  edge [ source {i} target {i + 1} ]\n" for i in range(n - 1)] + ["]\n"]
    out.append(dict(name=f"GML: {n:,} nodes each with its own attribute", fmt="gml",
                    data="".join(gml).encode(), expect="loaded"))
    gm = ['<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">']
    gm += [f'<key id="k{i}" for="node" attr.name="a{i}" attr.type="double"/>' for i in range(n)]
    gm += ['<graph edgedefault="undirected">']
    gm += [f'<node id="n{i}"><data key="k{i}">1.0</data></node>' for i in range(n)]
    gm += [f'<edge source="n{i}" target="n{i + 1}"/>' for i in range(n - 1)] + ["</graph></graphml>"]
    out.append(dict(name=f"GraphML: {n:,} nodes each with its own attribute", fmt="graphml",
                    data="".join(gm).encode(), expect="loaded"))
    # MULAN XML: many labels, a duplicate at the end
    n = 60_000 if big else 20_000
    xml = (b'<labels xmlns="http://mulan.sourceforge.net/labels">'
           + b"".join(b'<label name="l%d"/>' % i for i in range(n)) + b'<label name="l7"/></labels>')
    out.append(dict(name=f"MULAN XML: {n:,} labels, a duplicate at the end", fmt="mulan_xml",
                    data=xml, expect="refused"))
    # CSV with 10^5 columns
    ncol = 100_000 if big else 20_000
    header = ",".join(f"c{i}" for i in range(ncol)) + ",y\n"
    rows = "".join(",".join("a" for _ in range(ncol)) + f",{r % 2}\n" for r in range(3))
    out.append(dict(name=f"CSV: {ncol:,} columns", fmt="csv", data=(header + rows).encode(),
                    expect="loaded"))
    # XML entities: UTF-16 with an entity, billion laughs, external entity
    evil = ('<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE l [<!ENTITY a "l 1">]>'
            '<labels xmlns="http://mulan.sourceforge.net/labels"><label name="&a;"/>'
            + "".join(f'<label name="l {i}"/>' for i in (0, 2, 3, 4)) + '</labels>')
    out.append(dict(name="MULAN XML in UTF-16 with an entity", fmt="mulan_xml",
                    data=evil.encode("utf-16"), expect="refused"))
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + "".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
                        for i in range(1, 10))
              + ']><graphml><graph><node id="&lol9;"/></graph></graphml>')
    for enc in ("utf-8", "utf-16"):
        out.append(dict(name=f"GraphML billion laughs ({enc})", fmt="graphml",
                        data=laughs.replace('version="1.0"?>',
                                            f'version="1.0" encoding="{enc}"?>').encode(enc),
                        expect="refused"))
    out.append(dict(name="GraphML external entity", fmt="graphml",
                    data=b'<?xml version="1.0"?><!DOCTYPE g [<!ENTITY x SYSTEM '
                         b'"file:///etc/passwd">]><graphml><graph><node id="&x;"/></graph>'
                         b'</graphml>', expect="refused"))
    # parquet: a few kB declaring 10^7 rows of one value
    import pandas as pd
    b = io.BytesIO()
    pd.DataFrame({"a": pd.Categorical(["x"] * (10_000_000 if big else 3_000_000)),
                  "y": np.zeros(10_000_000 if big else 3_000_000, np.int8)}).to_parquet(
        b, compression="zstd")
    out.append(dict(name="parquet: a few kB declaring 10^7 rows", fmt="parquet",
                    data=b.getvalue(), expect="refused"))
    return out


def artifact_attacks(big: bool = True) -> List[dict]:
    """The artifact attacks of the issue (name, data, expect="refused"); ``big`` makes the
    manifest bomb inflate to 3 GiB as in the issue (else 512 MiB)."""
    from featagg_core.artifacts.store import artifact_bytes
    models = fit_models()
    out = []
    blob = artifact_bytes(models["Defrag"])
    members = _members(blob)
    manifest = json.loads(dict((i.filename, d) for i, d in members)["manifest.json"])
    arrays = {i.filename[7:-4]: _load_npy(d) for i, d in members if i.filename.startswith("arrays/")}
    for k in (1, -5):
        m = copy.deepcopy(manifest)
        m["meta"]["n_clusters_"] = k
        out.append(dict(name=f"Defrag n_clusters_ = {k} (checksums recomputed)",
                        data=_rebuild(m, arrays, forge=True)))
    a2 = dict(arrays)
    a2["labels_"], a2["tree_order"] = arrays["tree_order"], arrays["labels_"]
    out.append(dict(name="Defrag labels_ and tree_order swapped with their entries",
                    data=_rebuild(manifest, a2, forge=True)))
    a3 = dict(arrays)
    left = arrays["tree_left"].copy()
    left[0] = 10**6
    a3["tree_left"] = left
    out.append(dict(name="Defrag tree child index outside the tree (SHA-256 recomputed)",
                    data=_rebuild(manifest, a3, forge=True)))
    a4 = dict(arrays)
    lab = arrays["labels_"].copy()
    lab[0] = 10**6
    a4["labels_"] = lab
    out.append(dict(name="Defrag cluster id beyond n_clusters (SHA-256 recomputed)",
                    data=_rebuild(manifest, a4, forge=True)))
    names = [(i.filename, d) for i, d in members]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out.append(dict(name="duplicate member name", data=_zip(names + [names[1]])))
    for method in (12, 14, 99):
        b = bytearray(_zip(names, zipfile.ZIP_DEFLATED))
        _patch_zip(b, lambda off, cd, m=method: struct.pack_into("<H", b, off + (10 if cd else 8), m))
        out.append(dict(name=f"compression method {method}", data=bytes(b)))
    b = bytearray(blob)
    _patch_zip(b, lambda off, cd: struct.pack_into(
        "<H", b, off + (8 if cd else 6), struct.unpack_from("<H", b, off + (8 if cd else 6))[0] | 1))
    out.append(dict(name="encryption flag", data=bytes(b)))
    deflated = bytearray(_zip(names, zipfile.ZIP_DEFLATED))
    p = deflated.find(b"arrays/")
    for q in range(p + 60, p + 90):
        deflated[q] ^= 0x5A
    out.append(dict(name="corrupt deflate stream (zlib.error)", data=bytes(deflated)))
    out.append(dict(name="manifest nested 100,000 deep (RecursionError)",
                    data=_zip([("manifest.json", _deep_json(100_000))] + names[1:])))
    m = copy.deepcopy(manifest)
    m["arrays"]["labels_"]["shape"] = [10**30]
    out.append(dict(name="array shape 10^30 (OverflowError)", data=_rebuild(m, arrays, forge=False)))
    ova = artifact_bytes(models["OneVsAll"])
    om = _members(ova)
    omf = json.loads(dict((i.filename, d) for i, d in om)["manifest.json"])
    oarr = {i.filename[7:-4]: _load_npy(d) for i, d in om if i.filename.startswith("arrays/")}
    omf["class"] = "KTXMLC"
    out.append(dict(name="OneVsAll with its class edited to KTXMLC (digest recomputed)",
                    data=_rebuild(omf, oarr, forge=True)))
    head = json.dumps(manifest).encode()[:-1] + b', "pad": "'
    data, total = _deflated_padding(head, (3 << 30) if big else (512 << 20), b'"}')
    out.append(dict(name=f"manifest deflate bomb ({len(data) / 2**20:.1f} MB -> "
                         f"{total >> 20:,} MiB)",
                    data=_raw_deflated_zip([("manifest.json", data, total, None)] +
                                           [(n, d, len(d), "stored") for n, d in names[1:]])))
    for o in out:
        o["expect"] = "refused"
    return out


# ============================================================================ isolation
class ForkServer:
    """Run one case per forked child of a process that has already imported numpy, scipy
    and featagg and compiled the kernels (a fresh Python per case would cost ~2 s).

    The child sets ``RLIMIT_AS`` (``mem_limit`` bytes above the parent's address space) and
    ``RLIMIT_CPU`` (``timeout`` CPU seconds), runs ``fn(*args) -> (outcome, detail)`` and
    writes the outcome and its peak RSS to a pipe; the parent kills it after
    ``wall_timeout`` seconds. Numba's
    thread pool is not fork-safe under OpenMP: create the server in a process whose
    threading layer is ``workqueue`` (``NUMBA_THREADING_LAYER=workqueue`` before numba is
    imported) with OpenMP limited to one thread (``OMP_NUM_THREADS=1``: scikit-learn's
    k-means pool would deadlock a child), which :func:`prepare_parent` checks."""

    def __init__(self, timeout: float = 5.0, mem_limit: int = 2 << 30,
                 wall_timeout: float = None):
        # ``timeout`` is CPU seconds (RLIMIT_CPU in the child: a busy shared machine must not
        # turn a slow-but-bounded input into a "hang"); ``wall_timeout`` (default 12x) catches
        # a child that blocks without using CPU
        self.timeout, self.mem_limit = timeout, mem_limit
        self.wall_timeout = wall_timeout if wall_timeout is not None else 12 * timeout

    @staticmethod
    def _status_kb(field: str) -> int:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def run(self, fn, *args) -> dict:
        import os
        import resource
        import select
        import signal
        import time
        base_rss = self._status_kb("VmRSS") * 1024
        vm = self._status_kb("VmSize") * 1024
        r, w = os.pipe()
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:                                   # child
            os.close(r)
            code = 0
            start_kb = self._status_kb("VmRSS")
            try:
                _, hard = resource.getrlimit(resource.RLIMIT_AS)
                limit = vm + self.mem_limit
                if hard != resource.RLIM_INFINITY:
                    limit = min(limit, hard)
                resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
                ru0 = resource.getrusage(resource.RUSAGE_SELF)
                resource.setrlimit(resource.RLIMIT_CPU,
                                   (int(math.ceil(ru0.ru_utime + ru0.ru_stime + self.timeout)),
                                    resource.RLIM_INFINITY))
                outcome, detail = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - report, never raise in the child
                outcome, detail = f"exception:{type(exc).__name__}", str(exc)[:200]
            try:
                growth = 1024 * (self._status_kb("VmHWM") - start_kb)
                msg = json.dumps({"outcome": outcome, "detail": detail,
                                  "peak_rss_growth": growth}).encode()
                view = memoryview(msg)
                while view:
                    n = os.write(w, view)
                    view = view[n:]
            except BaseException:  # noqa: BLE001
                code = 3
            os._exit(code)
        os.close(w)
        buf, timed_out = b"", False
        deadline = time.monotonic() + self.wall_timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                buf += chunk
        os.close(r)
        _, status, ru = os.wait4(pid, 0)
        seconds = time.perf_counter() - t0
        res = {"seconds": seconds, "cpu_s": ru.ru_utime + ru.ru_stime,
               "peak_rss_growth": max(0, ru.ru_maxrss * 1024 - base_rss)}
        if timed_out:
            res.update(outcome="hang", detail=f"killed after {self.wall_timeout:g} s wall")
        elif os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
            res.update(outcome="hang", detail=f"over {self.timeout:g} s of CPU")
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            res.update(outcome=f"crash:{signal.Signals(sig).name}", detail="")
        elif not buf:
            res.update(outcome=f"crash:exit{os.WEXITSTATUS(status)}", detail="")
        else:
            try:
                res.update(json.loads(buf))
            except ValueError:
                res.update(outcome="crash:garbled", detail=buf[:100].decode("latin1"))
        return res


def prepare_parent() -> None:
    """Make this process a safe fork server: numba's workqueue threading layer (fork-safe),
    every kernel compiled or loaded from cache, by a warm-up and one load and use of
    every artifact class and reader format."""
    import os
    import sys
    if "sklearn" in sys.modules and os.environ.get("OMP_NUM_THREADS") != "1":
        raise RuntimeError("set OMP_NUM_THREADS=1 before scikit-learn is imported (fork safety)")
    os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import numba
    numba.config.THREADING_LAYER = "workqueue"
    from importlib import import_module
    for mod in ("data", "agglomeration.defrag", "agglomeration.fiat", "agglomeration.refrag",
                "xmlc.ktxmlc", "graph.bmgufs", "vocab.compressor", "metrics"):
        m = import_module(f"featagg_core.{mod}")
        if hasattr(m, "warmup"):
            m.warmup()
    try:
        from featagg_core.artifacts.store import artifact_bytes
        for obj in fit_models().values():
            load_and_use(artifact_bytes(obj))
    except Exception:  # noqa: BLE001 - an older tree without these APIs: readers only
        pass
    for fmt in READER_FORMATS:
        read_and_use(fmt, reader_seeds()[READER_FORMATS[fmt][0]])


# ============================================================================ round 2
# The attacks of issue 33 ("every byte and second charged to the budget"): inputs under
# the upload / import caps whose cost was not charged before anything was allocated.

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def wide_parquet(n_cols: int) -> bytes:
    """R1: a parquet file of 0 rows and ``n_cols`` string columns, its thrift footer
    written by hand (pyarrow takes minutes to write one): 999,990 columns is 15.9 MB."""
    parts = [b"\x15", _zigzag(1), b"\x19"]                 # version; field 2: list
    n = n_cols + 1
    parts.append(bytes([0xFC]) + _varint(n) if n >= 15 else bytes([(n << 4) | 12]))
    parts.append(b"\x48" + _varint(6) + b"schema" + b"\x15" + _zigzag(n_cols) + b"\x00")
    parts += [b"\x15\x0c\x25\x02\x18" + _varint(len(nm)) + nm + b"\x25\x00\x00"
              for nm in (b"c%d" % i for i in range(n_cols))]
    parts.append(b"\x16" + _zigzag(0) + b"\x19\x0c\x00")   # num_rows 0, no row groups
    footer = b"".join(parts)
    return b"PAR1" + footer + struct.pack("<I", len(footer)) + b"PAR1"


def two_letter_csv(n_bytes: int, n_cols: int = 99) -> bytes:
    """R5: a CSV of 2-letter cells (``n_cols`` columns + a y/n label ``y``) of about
    ``n_bytes``, built as one byte array."""
    rng = np.random.default_rng(5)
    width = 3 * n_cols + 2
    rows = max(1, n_bytes // width)
    a = np.empty((rows, width), np.uint8)
    a[:, 0:3 * n_cols:3] = rng.integers(97, 107, size=(rows, n_cols), dtype=np.uint8)
    a[:, 1:3 * n_cols:3] = rng.integers(97, 107, size=(rows, n_cols), dtype=np.uint8)
    a[:, 2:3 * n_cols:3] = ord(",")
    a[:, 3 * n_cols] = np.where(rng.random(rows) < 0.5, ord("y"), ord("n"))
    a[:, 3 * n_cols + 1] = ord("\n")
    head = b",".join(b"c%d" % i for i in range(n_cols)) + b",y\n"
    return head + a.tobytes()


def big_graphml(n_nodes: int, n_edges: int) -> bytes:
    """R6: well-formed GraphML with ``n_nodes`` nodes and ``n_edges`` edges."""
    parts = [b'<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
             b'<graph edgedefault="undirected">']
    parts += [b'<node id="n%d"/>' % i for i in range(n_nodes)]
    parts += [b'<edge source="n%d" target="n%d"/>' % (i, i + 1) for i in range(n_edges)]
    parts.append(b"</graph></graphml>")
    return b"".join(parts)


def big_gml(n_nodes: int, n_edges: int) -> bytes:
    """R6: well-formed GML with ``n_nodes`` nodes and ``n_edges`` edges."""
    parts = [b"graph [\n"]
    parts += [b"  node [ id %d ]\n" % i for i in range(n_nodes)]
    parts += [b"  edge [ source %d target %d ]\n" % (i, i + 1) for i in range(n_edges)]
    parts.append(b"]\n")
    return b"".join(parts)


def kind_bomb_npz(size: int) -> bytes:
    """R8: a featagg npz (a valid multi-label one) whose ``kind.npy`` declares and
    inflates to ``size`` bytes."""
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "|u1", "fortran_order": False,
                                               "shape": (size,)})
    data, total = _deflated_padding(hdr.getvalue(), size, b"", fill=b"\0")
    return _npz_with(reader_seeds()["npz_multilabel"], [("kind.npy", data, total)])


def _tiny_artifact() -> bytes:
    from featagg_core.artifacts.store import artifact_bytes
    return artifact_bytes(fit_models()["Defrag"])


def many_artifact_bundle(n: int) -> bytes:
    """R2: a bundle of ``n`` copies of a tiny valid artifact (45,517 is 199 MB)."""
    blob = _tiny_artifact()
    names = [f"a{i}" for i in range(n)]
    index = json.dumps({"format": "featagg-bundle", "format_version": 1, "entries": names,
                        "info": {}}).encode()
    return _raw_deflated_zip([(f"artifacts/{k}.fgz", blob, len(blob), "stored")
                              for k in names] + [("bundle.json", index, len(index), "stored")])


def many_array_artifact(n: int) -> bytes:
    """R3: an artifact whose manifest declares ``n`` extra zero-length arrays, each one a
    member, the manifest's checksum recomputed."""
    import hashlib
    members = _members(_tiny_artifact())
    manifest = json.loads(dict((i.filename, d) for i, d in members)["manifest.json"])
    empty = _npy(np.zeros(0, np.int8))
    digest = hashlib.sha256(b"").hexdigest()
    for i in range(n):
        manifest["arrays"][f"z{i}"] = {"shape": [0], "dtype": "|i1", "sha256": digest}
    manifest["state_sha256"] = _state_digest(manifest)
    text = json.dumps(manifest).encode()
    entries = [("manifest.json", text, len(text), "stored")]
    entries += [(i.filename, d, len(d), "stored") for i, d in members
                if i.filename != "manifest.json"]
    entries += [(f"arrays/z{i}.npy", empty, len(empty), "stored") for i in range(n)]
    return _raw_deflated_zip(entries)


def whitespace_manifest_artifact(pad: int) -> bytes:
    """R4: a valid artifact whose manifest.json is ``pad`` bytes of whitespace around the
    real one (deflated: 60 MB is a 75 kB file)."""
    members = _members(_tiny_artifact())
    manifest = dict((i.filename, d) for i, d in members)["manifest.json"]
    data, total = _deflated_padding(manifest[:-1], pad, manifest[-1:], fill=b" ")
    crc = zlib.crc32(manifest[:-1] + b" " * pad + manifest[-1:])
    return _raw_deflated_zip([("manifest.json", data, total, None, crc)] +
                             [(i.filename, d, len(d), "stored") for i, d in members
                              if i.filename != "manifest.json"])


def round2_attacks(big: bool = True, bomb: int = 3 << 30) -> List[dict]:
    """The attacks R1-R6 and R8 of issue 33: family, name, the paths each is tried on
    (``upload``: the dashboard's readers with its limits; ``import``: the Export page's
    artifact / bundle import; ``cli``: ``featagg info`` / ``predict``; ``listing``: the
    data-folder listing), file name and bytes. ``big`` gives the issue's sizes (else 40 %
    of them); ``bomb`` is what the npz's kind.npy inflates to (3 GiB in the issue: 25 s
    to deflate, so the tests use less; the refusal comes from its declared size)."""
    s = 1.0 if big else 0.4
    out = [
        dict(family="R1 parquet 0 rows x many columns", name=f"parquet 0 x {int(999_990 * s):,}",
             fname="wide.parquet", fmt="parquet", paths=("upload", "cli"),
             make=lambda: wide_parquet(int(999_990 * s))),
        dict(family="R5 CSV of 2-letter cells", name=f"CSV {int(45 * s)} MB of 2-letter cells",
             fname="cells.csv", fmt="csv", paths=("upload", "cli"),
             make=lambda: two_letter_csv(int(45e6 * s))),
        dict(family="R6 big GraphML / GML", name=f"GraphML {int(1e6 * s):,} nodes",
             fname="big.graphml", fmt="graphml", paths=("upload", "cli"),
             make=lambda: big_graphml(int(1e6 * s), int(5e5 * s))),
        dict(family="R6 big GraphML / GML", name=f"GML {int(1e6 * s):,} nodes",
             fname="big.gml", fmt="gml", paths=("upload", "cli"),
             make=lambda: big_gml(int(1e6 * s), int(5e5 * s))),
        dict(family="R8 npz kind.npy bomb", name=f"npz kind.npy -> {bomb / 2**30:g} GiB",
             fname="bomb.npz", fmt="npz_multilabel", paths=("upload", "cli", "listing"),
             make=lambda: kind_bomb_npz(bomb)),
        dict(family="R2 bundle of many tiny artifacts",
             name=f"bundle of {int(45_517 * s):,} artifacts", fname="many.fgb",
             paths=("import", "cli"), make=lambda: many_artifact_bundle(int(45_517 * s))),
        dict(family="R3 manifest declaring many arrays",
             name=f"manifest with {int(550_000 * s):,} arrays", fname="arrays.fgz",
             paths=("import", "cli"), make=lambda: many_array_artifact(int(550_000 * s))),
        dict(family="R4 manifest of whitespace", name=f"manifest of {int(60 * s)} MB whitespace",
             fname="ws.fgz", paths=("import", "cli"),
             make=lambda: whitespace_manifest_artifact(int(60e6 * s))),
    ]
    return out


def _cli(argv) -> Tuple[str, str]:
    """Run the command line in this process: ("refused", its message) on exit 2,
    ("loaded", ...) on 0, ("exit<n>", stderr) otherwise."""
    import contextlib
    from featagg_core.cli.main import main
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main([str(a) for a in argv])
    lines = [ln for ln in err.getvalue().splitlines() if ln.startswith("featagg: error")]
    detail = lines[-1] if lines else err.getvalue()[-300:]
    return {0: "loaded", 2: "refused"}.get(code, f"exit{code}"), detail


def round2_write(case: dict, raw: bytes, folder: str) -> None:
    """Write the case's file into ``folder`` (in the fork server, before the children run:
    a child writing it would count the parent's copy of the bytes as its own RSS)."""
    import os
    if case.get("fname"):
        with open(os.path.join(folder, case["fname"]), "wb") as fh:
            fh.write(raw)


def round2_run(case: dict, path: str, raw: bytes, folder: str) -> Tuple[str, str]:
    """Try one round-2 attack on one path (in a forked child): (outcome, detail), outcome
    "refused" for a DatasetError / ArtifactError / exit status 2."""
    import os
    if path == "special":
        return _special(case["special"], folder)
    if path == "upload":
        if case["fmt"] in ("csv", "tsv", "parquet"):
            # what the sidebar does first with a table: propose its label column
            from featagg_app.intake.uploads import propose_label
            propose_label(case["fname"], raw)
        outcome, detail = read_and_use(case["fmt"], raw)
        return ("refused" if outcome == "DatasetError" else outcome), detail
    if path == "import":
        outcome, detail = load_and_use(raw, max_bytes=1 << 30)   # the Export page's default
        return ("refused" if outcome == "ArtifactError" else outcome), detail
    target = os.path.join(folder, case["fname"])
    if not os.path.exists(target):
        with open(target, "wb") as fh:
            fh.write(raw)
    if path == "listing":
        from featagg_core.data.cache import DataFolder
        files = DataFolder(folder).list_files()
        return "listed", f"{len(files)} files: " + ", ".join(f.relpath for f in files)[:150]
    if case["fname"].endswith((".fgz", ".fgb")):
        data = os.path.join(folder, "tiny.txt")
        if not os.path.exists(data):
            from featagg_core.data import save_xc
            from featagg_core.data.synthetic import make_powerlaw_multilabel
            save_xc(make_powerlaw_multilabel(20, 10, 3, random_state=0), data)
        return _cli(["predict", target, data])
    extra = ["--label", "y"] if case["fname"].endswith((".csv", ".parquet")) else []
    return _cli(["info", target, *extra])


def round2_cases(scales=(0.25, 0.5, 1.0), bombs=(1 << 30, 3 << 30)) -> Iterator[dict]:
    """Every round-2 family at several sizes (``scales`` of the issue's; ``bombs`` for the
    npz kind.npy), plus the families that are no budget: R7 (a non-UTF-8 name in the data
    folder), R9 (``--out`` a FIFO, and a device node when root), R10 (``--out`` an input)
    and R11 (a mapped cache truncated under the store). For the benchmark."""
    builders = {
        "R1 parquet 0 rows x many columns": ("parquet", "wide.parquet", ("upload", "cli"),
                                             lambda s: wide_parquet(int(999_990 * s)),
                                             lambda s: f"parquet 0 x {int(999_990 * s):,}"),
        "R2 bundle of many tiny artifacts": (None, "many.fgb", ("import", "cli"),
                                             lambda s: many_artifact_bundle(int(45_517 * s)),
                                             lambda s: f"bundle of {int(45_517 * s):,}"),
        "R3 manifest declaring many arrays": (None, "arrays.fgz", ("import", "cli"),
                                              lambda s: many_array_artifact(int(550_000 * s)),
                                              lambda s: f"{int(550_000 * s):,} arrays"),
        "R4 manifest of whitespace": (None, "ws.fgz", ("import", "cli"),
                                      lambda s: whitespace_manifest_artifact(int(60e6 * s)),
                                      lambda s: f"{int(60 * s)} MB of whitespace"),
        "R5 CSV of 2-letter cells": ("csv", "cells.csv", ("upload", "cli"),
                                     lambda s: two_letter_csv(int(45e6 * s)),
                                     lambda s: f"CSV {45 * s:g} MB"),
        "R6 big GraphML": ("graphml", "big.graphml", ("upload", "cli"),
                           lambda s: big_graphml(int(1e6 * s), int(5e5 * s)),
                           lambda s: f"GraphML {int(1e6 * s):,} nodes"),
        "R6 big GML": ("gml", "big.gml", ("upload", "cli"),
                       lambda s: big_gml(int(1e6 * s), int(5e5 * s)),
                       lambda s: f"GML {int(1e6 * s):,} nodes"),
    }
    for family, (fmt, fname, paths, make, name) in builders.items():
        for s in scales:
            yield dict(family=family, name=name(s), fmt=fmt, fname=fname, paths=paths,
                       make=functools.partial(make, s))
    for b in bombs:
        yield dict(family="R8 npz kind.npy bomb", name=f"kind.npy -> {b / 2**30:g} GiB",
                   fmt="npz_multilabel", fname="bomb.npz", paths=("upload", "cli", "listing"),
                   make=functools.partial(kind_bomb_npz, b))
    for special, family, name in [
            ("r7", "R7 non-UTF-8 name in the data folder", "bad\\xff\\xfe.txt beside 2 files"),
            ("r9", "R9 --out a FIFO or device", "compress --out FIFO / device"),
            ("r10", "R10 --out an input", "agglomerate / compress --out input"),
            ("r11", "R11 mapped cache truncated", "store.get after truncate")]:
        yield dict(family=family, name=name, special=special, paths=("special",),
                   make=lambda: b"")


def _special(kind: str, folder: str) -> Tuple[str, str]:
    """R7 / R9 / R10 / R11 in a forked child: ("refused" | "listed" | "reopened", detail)
    when handled, anything else when not."""
    import os
    import stat
    from featagg_core.data import save_xc
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    data = os.path.join(folder, "in.txt")
    save_xc(make_powerlaw_multilabel(300 if kind == "r11" else 60, 40, 5, random_state=0),
            data)
    if kind == "r7":
        from featagg_core.data.cache import DataFolder
        with open(os.path.join(os.fsencode(folder), b"bad\xff\xfe.txt"), "wb") as fh:
            fh.write(b"3 2 1\n0 0:1\n")
        skipped = []
        files = DataFolder(folder).list_files(skipped=skipped)
        names = [f.relpath for f in files]
        for n in names:
            n.encode("utf-8")
        ok = "in.txt" in names and skipped == ["bad\\xff\\xfe.txt"]
        return ("listed" if ok else "wrong"), f"listed {names}, left out {skipped}"
    if kind == "r9":
        fifo = os.path.join(folder, "fifo")
        os.mkfifo(fifo)
        targets = [fifo]
        if os.geteuid() == 0:
            dev = os.path.join(folder, "null")
            os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            targets.append(dev)
        out = []
        for t in targets:
            before = os.lstat(t)
            outcome, detail = _cli(["agglomerate", data, "--d0", "3", "--out", t])
            after = os.lstat(t)
            if outcome != "refused" or (before.st_ino, before.st_mode) != \
                    (after.st_ino, after.st_mode):
                return "wrong", f"{t}: {outcome} {detail}"
            out.append(detail)
        return "refused", " | ".join(out)
    if kind == "r10":
        before = open(data, "rb").read()
        outcome, detail = _cli(["agglomerate", data, "--d0", "3", "--out", data])
        if outcome != "refused" or open(data, "rb").read() != before:
            return "wrong", f"{outcome} {detail}"
        return "refused", detail
    if kind == "r11":
        import featagg_core.data.mapped_npz as mn
        from featagg_core.data.cache import DataFolder, DatasetStore
        mn.COPY_MAX_BYTES = 0
        f = DataFolder(folder, convert_min_bytes=1)
        store = DatasetStore(1 << 30)
        key = f.cache_key("in.txt")
        first = store.get(key, lambda: f.load("in.txt"))
        total = float(first.X.data.sum())
        with open(f.cache_location("in.txt"), "r+b") as fh:
            fh.truncate(4096)
        again = store.get(key, lambda: f.load("in.txt"))
        ok = again is not first and float(again.X.data.sum()) == total
        return ("reopened" if ok else "wrong"), f"dropped {store.dropped_changed}"
    return "wrong", kind
