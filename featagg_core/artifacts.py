"""Export and import of fitted objects: one zip file, npz-style arrays + a JSON manifest.

Format (``format_version`` 1)
-----------------------------
A zip archive (stored, not compressed: the arrays are mostly incompressible floats and
this keeps loading a plain read) holding

* ``manifest.json`` – ``format`` ("featagg-artifact"), ``format_version``, ``class``
  (a short name from :data:`ARTIFACT_CLASSES`), ``params`` (``get_params()``), ``meta``
  (the estimator's JSON-serialisable fitted scalars), ``arrays`` (name → shape, dtype and
  SHA-256 of the raw bytes), ``library`` versions, ``dataset_fingerprint``, ``metrics``
  and ``created`` (UTC, ISO 8601);
* ``arrays/<name>.npy`` – one ``.npy`` file per array, written and read with
  ``allow_pickle=False``.

Loading never unpickles and never imports a module named by the file: the class is looked
up in the fixed table :data:`ARTIFACT_CLASSES`. Every array is checked against the manifest
(presence, shape, dtype, checksum) before the estimator is rebuilt, so truncated, tampered
or mismatched files are refused with an :class:`ArtifactError` that says what is wrong.

Estimators take part through two methods (see docs/CONVENTIONS.md)::

    obj._artifact_state() -> (meta: dict, arrays: dict[str, np.ndarray])
    cls._from_artifact_state(params, meta, arrays) -> fitted estimator
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import zipfile
from importlib import import_module
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _EXPORTS

FORMAT = "featagg-artifact"
FORMAT_VERSION = 1

#: short class name -> module holding it (taken from the package's export table). Only these
#: classes can be loaded.
ARTIFACT_CLASSES: Dict[str, str] = {
    name: _EXPORTS[name]
    for name in ("Defrag", "Fiat", "Refrag", "KTXMLC", "OneVsAll", "DefragKTXMLC", "BlockModel",
                 "BMGUFS", "VocabularyCompressor", "Pipeline")}

# Refuse archives whose declared content is absurdly large before reading it (zip bombs).
_MAX_MEMBER_BYTES = 4 << 30
_ALLOWED_KINDS = set("biuf")  # bool, signed/unsigned int, float: no object / string arrays


class ArtifactError(ValueError):
    """An artifact file is not one featagg can load: the message says why."""


def _library_versions() -> Dict[str, str]:
    import numba
    import scipy
    import sklearn

    from . import __version__
    return {"featagg": __version__, "numpy": np.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__, "numba": numba.__version__}


def _class_name(obj) -> str:
    name = type(obj).__name__
    if name not in ARTIFACT_CLASSES or ARTIFACT_CLASSES[name] != type(obj).__module__:
        raise ArtifactError(
            f"cannot save an object of type {type(obj).__module__}.{name}: only "
            f"{', '.join(sorted(ARTIFACT_CLASSES))} are featagg artifacts")
    if not hasattr(obj, "_artifact_state"):
        raise ArtifactError(f"{name} does not implement _artifact_state()")
    return name


def _sha256(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"value of type {type(value).__name__} is not JSON-serialisable")


def artifact_bytes(obj, *, dataset_fingerprint: Optional[str] = None,
                   metrics: Optional[Dict[str, Any]] = None) -> bytes:
    """Serialise a fitted estimator to the bytes of an artifact file (for downloads)."""
    name = _class_name(obj)
    try:
        meta, arrays = obj._artifact_state()
    except AttributeError as exc:  # typically: not fitted yet
        raise ArtifactError(f"cannot save {name}: {exc}") from exc
    params = obj.get_params(deep=False)
    checked: Dict[str, np.ndarray] = {}
    for key, arr in arrays.items():
        arr = np.asarray(arr)
        if arr.dtype.kind not in _ALLOWED_KINDS:
            raise ArtifactError(f"array {key!r} of {name} has dtype {arr.dtype}; "
                                "artifacts hold numeric arrays only")
        checked[key] = np.ascontiguousarray(arr)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "class": name,
        "params": params,
        "meta": meta,
        "arrays": {k: {"shape": list(a.shape), "dtype": a.dtype.str, "sha256": _sha256(a)}
                   for k, a in checked.items()},
        "library": _library_versions(),
        "dataset_fingerprint": dataset_fingerprint,
        "metrics": metrics or {},
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        manifest_text = json.dumps(manifest, default=_json_default, indent=1, sort_keys=True)
    except TypeError as exc:
        raise ArtifactError(f"cannot save {name}: parameters or state are not "
                            f"JSON-serialisable ({exc})") from exc
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("manifest.json", manifest_text)
        for key, arr in checked.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, arr, allow_pickle=False)
            zf.writestr(f"arrays/{key}.npy", member.getvalue())
    return buf.getvalue()


def save_artifact(obj, path, *, dataset_fingerprint: Optional[str] = None,
                  metrics: Optional[Dict[str, Any]] = None) -> None:
    """Save a fitted estimator to ``path`` (a file path or a writable binary file object).

    A path is written atomically (temporary file in the same folder, then ``os.replace``),
    so an interrupted save never leaves a half-written artifact behind.
    """
    data = artifact_bytes(obj, dataset_fingerprint=dataset_fingerprint, metrics=metrics)
    if hasattr(path, "write"):
        path.write(data)
        return
    _atomic_write_bytes(path, data)


def _atomic_write_bytes(path, data: bytes) -> None:
    """Atomic write (temporary file beside ``path`` + ``os.replace``), as the data writers do."""
    from .data import _atomic_write
    _atomic_write(path, lambda fh: fh.write(data))


def _read_source(path_or_file) -> Tuple[bytes, str]:
    if hasattr(path_or_file, "read"):
        name = getattr(path_or_file, "name", "<uploaded artifact>")
        data = path_or_file.getvalue() if hasattr(path_or_file, "getvalue") else path_or_file.read()
        return bytes(data), str(name)
    path = os.fspath(path_or_file)
    try:
        with open(path, "rb") as fh:
            return fh.read(), path
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read artifact ({exc.strerror or exc})") from exc


def read_manifest(path_or_file) -> Dict[str, Any]:
    """The checked manifest of an artifact, without rebuilding the estimator."""
    manifest, _ = _open_checked(path_or_file)
    return manifest


def _open_zip(path_or_file, what: str) -> Tuple[zipfile.ZipFile, str]:
    """The input as an open zip archive (and its printable name); refuses empty files,
    non-zip or truncated data and members too large to be real (zip bombs)."""
    data, where = _read_source(path_or_file)
    if not data:
        raise ArtifactError(f"{where}: the file is empty")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ArtifactError(f"{where}: not a featagg {what} (not a zip archive, or truncated)")
    for info in zf.infolist():
        if info.file_size > _MAX_MEMBER_BYTES:
            zf.close()
            raise ArtifactError(f"{where}: member {info.filename} is implausibly large")
    return zf, where


def _read_json_member(zf: zipfile.ZipFile, member: str, where: str, missing: str) -> Any:
    """Parse the JSON member ``member``; ``missing`` is the message when it is absent."""
    if member not in zf.namelist():
        raise ArtifactError(f"{where}: {missing}")
    try:
        return json.loads(zf.read(member).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, zipfile.BadZipFile, EOFError) as exc:
        raise ArtifactError(f"{where}: {member} is not valid JSON ({exc})") from exc


def _open_checked(path_or_file) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    zf, where = _open_zip(path_or_file, "artifact")
    with zf:
        names = set(zf.namelist())
        manifest = _read_json_member(zf, "manifest.json", where, "manifest.json is missing")
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ArtifactError(f"{where}: manifest does not describe a featagg artifact")
        version = manifest.get("format_version")
        if version != FORMAT_VERSION:
            raise ArtifactError(f"{where}: unsupported artifact format version {version!r} "
                                f"(this featagg reads version {FORMAT_VERSION})")
        cls_name = manifest.get("class")
        if cls_name not in ARTIFACT_CLASSES:
            raise ArtifactError(f"{where}: unknown artifact class {cls_name!r}")
        for key in ("params", "meta", "arrays"):
            if not isinstance(manifest.get(key), dict):
                raise ArtifactError(f"{where}: manifest field {key!r} is missing or malformed")
        arrays: Dict[str, np.ndarray] = {}
        for key, spec in manifest["arrays"].items():
            member = f"arrays/{key}.npy"
            if member not in names:
                raise ArtifactError(f"{where}: array {key!r} is missing from the archive")
            try:
                arr = np.lib.format.read_array(io.BytesIO(zf.read(member)), allow_pickle=False)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
                raise ArtifactError(f"{where}: array {key!r} is unreadable ({exc})") from exc
            try:
                shape, dtype, digest = tuple(spec["shape"]), np.dtype(spec["dtype"]), spec["sha256"]
            except (KeyError, TypeError) as exc:
                raise ArtifactError(f"{where}: manifest entry for array {key!r} is malformed") from exc
            if arr.shape != shape:
                raise ArtifactError(f"{where}: array {key!r} has shape {arr.shape}, "
                                    f"manifest says {shape}")
            if arr.dtype != dtype:
                raise ArtifactError(f"{where}: array {key!r} has dtype {arr.dtype}, "
                                    f"manifest says {dtype}")
            if _sha256(arr) != digest:
                raise ArtifactError(f"{where}: array {key!r} does not match its checksum "
                                    "(the file was modified or damaged)")
            arrays[key] = arr
    return manifest, arrays


def load_artifact(path_or_file):
    """Load a fitted estimator saved by :func:`save_artifact`.

    Parameters
    ----------
    path_or_file : str, os.PathLike or binary file object (e.g. a Streamlit upload)

    Returns
    -------
    The fitted estimator; its manifest is attached as ``artifact_manifest_``.

    Raises
    ------
    ArtifactError
        When the file is not a featagg artifact, has an unknown format version or
        class, or any array is missing, mis-shaped, of the wrong dtype or tampered with.
    """
    manifest, arrays = _open_checked(path_or_file)
    cls_name = manifest["class"]
    cls = getattr(import_module(ARTIFACT_CLASSES[cls_name]), cls_name)
    try:
        obj = cls._from_artifact_state(manifest["params"], manifest["meta"], arrays)
    except ArtifactError:
        raise
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise ArtifactError(f"artifact of class {cls_name} is inconsistent: {exc}") from exc
    obj.artifact_manifest_ = manifest
    return obj


BUNDLE_FORMAT = "featagg-bundle"


def bundle_bytes(objects: Dict[str, Any], *, info: Optional[Dict[str, Any]] = None,
                 dataset_fingerprint: Optional[str] = None) -> bytes:
    """Several fitted objects in one zip: ``bundle.json`` + one artifact file per name.

    ``objects`` maps a role or run name (letters, digits, ``-_.``) to a fitted estimator;
    ``info`` is any JSON-serialisable description (e.g. the run registry).
    """
    import re
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, obj in objects.items():
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", key):
                raise ArtifactError(f"bundle entry name {key!r} must be 1-100 letters, digits, '-', '_' or '.'")
            zf.writestr(f"artifacts/{key}.fgz",
                        artifact_bytes(obj, dataset_fingerprint=dataset_fingerprint))
        index = {"format": BUNDLE_FORMAT, "format_version": FORMAT_VERSION,
                 "entries": list(objects), "info": info or {}}
        zf.writestr("bundle.json", json.dumps(index, default=_json_default, indent=1))
    return buf.getvalue()


def save_bundle(objects: Dict[str, Any], path, **kw) -> None:
    """Write :func:`bundle_bytes` to ``path`` atomically (see :func:`save_artifact`)."""
    _atomic_write_bytes(path, bundle_bytes(objects, **kw))


def is_bundle(path_or_file) -> bool:
    """True when the file is a bundle (has ``bundle.json``), False for a single artifact."""
    data, _ = _read_source(path_or_file)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return "bundle.json" in zf.namelist()
    except zipfile.BadZipFile:
        return False


def load_bundle(path_or_file) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Load a bundle: returns (objects by name, info). Each entry is checked as in
    :func:`load_artifact`."""
    zf, where = _open_zip(path_or_file, "bundle")
    with zf:
        index = _read_json_member(zf, "bundle.json", where,
                                  "bundle.json is missing (is this a single artifact?)")
        if not isinstance(index, dict) or index.get("format") != BUNDLE_FORMAT:
            raise ArtifactError(f"{where}: bundle.json does not describe a featagg bundle")
        if index.get("format_version") != FORMAT_VERSION:
            raise ArtifactError(f"{where}: unsupported bundle format version "
                                f"{index.get('format_version')!r}")
        objects = {}
        for key in index.get("entries", []):
            member = f"artifacts/{key}.fgz"
            if member not in zf.namelist():
                raise ArtifactError(f"{where}: entry {key!r} is missing from the bundle")
            entry = io.BytesIO(zf.read(member))
            entry.name = f"{where}:{key}"
            objects[key] = load_artifact(entry)
    return objects, index.get("info", {})
