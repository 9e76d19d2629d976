"""The data folder's cache file (:mod:`featagg_core.data.cache`): an uncompressed npz whose
members are memory-mapped in place, written atomically and checked whole when opened.
"""
from __future__ import annotations

import json
import os
import zipfile
from typing import Dict, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from featagg_core.data._containers import MultiLabelData
from featagg_core.data._input import _atomic_write

#: format version of the cache files (a file of another version is rebuilt)
CACHE_VERSION = 1
_SPARSE_PARTS = ("data", "indices", "indptr", "shape")


def _csr_members(prefix: str, M) -> dict:
    M = sp.csr_matrix(M)
    if not M.has_canonical_format:
        M = M.copy()
        M.sum_duplicates()
    idx = np.int64 if M.nnz >= 2**31 or max(M.shape) >= 2**31 else np.int32
    return {f"{prefix}_data": np.asarray(M.data, np.float32),
            f"{prefix}_indices": np.asarray(M.indices, idx),
            f"{prefix}_indptr": np.asarray(M.indptr, idx),
            f"{prefix}_shape": np.asarray(M.shape, np.int64)}


def write_npz_cache(data: MultiLabelData, path: str, meta: dict) -> None:
    """Write ``data`` (with ``meta``, a JSON-able dict) to ``path`` as an uncompressed npz
    that :func:`open_npz_cache` maps, atomically (temporary file in the same folder, fsync,
    ``os.replace``).

    Parameters
    ----------
    data : MultiLabelData
        The dataset (training and test parts, names).
    path : str
        The cache file to write.
    meta : dict
        JSON-able facts to record (the sources' sizes and times, the options); the cache
        version is added.

    Raises
    ------
    OSError
        When the file cannot be written (nothing is left behind).
    """
    arrays = {"meta": np.array(json.dumps(dict(meta, version=CACHE_VERSION))),
              "name": np.array(str(data.name or "")),
              "source": np.array(str(data.source or ""))}
    arrays.update(_csr_members("X", data.X))
    arrays.update(_csr_members("Y", data.Y))
    if data.X_test is not None and data.Y_test is not None:
        arrays.update(_csr_members("X_test", data.X_test))
        arrays.update(_csr_members("Y_test", data.Y_test))
    for key in ("feature_names", "label_names"):
        names = getattr(data, key)
        if names is not None:
            arrays[key] = (np.asarray([str(s) for s in names], dtype=np.str_) if len(names)
                           else np.zeros(0, "U1"))
    _atomic_write(path, lambda fh: np.savez(fh, **arrays))


#: a cache file up to this size is read into memory instead of being mapped: a mapped file
#: truncated under the process (another server rebuilding it by hand, a full disk, an
#: operator's ``truncate``) kills it with SIGBUS on the next access, a copy cannot
COPY_MAX_BYTES = 64 << 20


def _file_signature(fh) -> tuple:
    st = os.fstat(fh.fileno())
    return (int(st.st_dev), int(st.st_ino), int(st.st_size), int(st.st_mtime_ns))


def mapped_source(data) -> Optional[tuple]:
    """``(path, signature)`` of the file whose arrays ``data`` maps, or None when it maps
    none (read or copied into memory).

    Parameters
    ----------
    data : MultiLabelData
        A dataset from :func:`open_npz_cache` (any object is accepted).

    Returns
    -------
    tuple or None
        ``(path, (dev, inode, size, mtime_ns))`` as it was when mapped.
    """
    return getattr(data, "_featagg_mapped", None)


def mapped_file_changed(data) -> Optional[str]:
    """Whether the file ``data``'s arrays are mapped from changed since it was mapped
    (another size, modification time or inode, or gone): then using the arrays could read
    past the end of a truncated file, which kills the process (SIGBUS).

    Parameters
    ----------
    data : MultiLabelData
        A dataset from :func:`open_npz_cache` (any object is accepted).

    Returns
    -------
    str or None
        What changed, in words; None when nothing did or nothing is mapped.
    """
    src = mapped_source(data)
    if src is None:
        return None
    path, sig = src
    try:
        with open(path, "rb") as fh:
            now = _file_signature(fh)
    except OSError:
        return "the data cache file is gone"
    if now[2] < sig[2]:
        return f"the data cache file was cut from {sig[2]:,} to {now[2]:,} bytes"
    if now != sig:
        return "the data cache file was rewritten"
    return None


def _member_arrays(path: str) -> Dict[str, np.ndarray]:
    """Every ``.npy`` member of the uncompressed npz ``path``, mapped read-only (numeric)
    or read (strings; a file of at most :data:`COPY_MAX_BYTES` is read whole). The key
    ``None`` holds the file's signature when anything is mapped. Raises ValueError when
    the file is not such an archive."""
    out = {}
    with open(path, "rb") as fh, zipfile.ZipFile(fh) as zf:
        sig = _file_signature(fh)
        copy_all = sig[2] <= COPY_MAX_BYTES
        mapped = False
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                raise ValueError(f"unexpected member {info.filename!r}")
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"member {info.filename!r} is compressed")
            fh.seek(info.header_offset)
            local = fh.read(30)
            if len(local) != 30 or local[:4] != b"PK\x03\x04":
                raise ValueError(f"bad local header of {info.filename!r}")
            n_name = int.from_bytes(local[26:28], "little")
            n_extra = int.from_bytes(local[28:30], "little")
            start = info.header_offset + 30 + n_name + n_extra
            fh.seek(start)
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise ValueError(f"npy version {version} of {info.filename!r}")
            if dtype.hasobject or fortran:
                raise ValueError(f"member {info.filename!r} holds objects or is Fortran-ordered")
            offset = fh.tell()
            count = int(np.prod(shape, dtype=np.int64))
            if offset - start + count * dtype.itemsize != info.file_size:
                raise ValueError(f"member {info.filename!r} has the wrong size")
            key = info.filename[:-4]
            if offset + count * dtype.itemsize > sig[2]:
                raise ValueError(f"member {info.filename!r} runs past the end of the file")
            if copy_all or dtype.kind in "US" or count == 0 or dtype.itemsize * count < 1 << 12:
                fh.seek(offset)
                raw = fh.read(count * dtype.itemsize)
                if len(raw) != count * dtype.itemsize:
                    raise ValueError(f"member {info.filename!r} is truncated")
                arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
                out[key] = arr.copy() if dtype.kind in "US" else arr
            else:
                out[key] = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)
                mapped = True
        if mapped:
            out[None] = sig
    return out


def _mapped_csr(z: dict, prefix: str, binary: bool = False) -> Optional[sp.csr_matrix]:
    keys = [f"{prefix}_{p}" for p in _SPARSE_PARTS]
    if not any(k in z for k in keys):
        return None
    data, indices, indptr, shape = (z[k] for k in keys)
    n, m = (int(s) for s in np.asarray(shape).ravel())
    if indptr.shape != (n + 1,) or indices.shape != data.shape or indices.ndim != 1:
        raise ValueError(f"{prefix}: inconsistent shapes")
    nnz = indices.shape[0]
    if int(indptr[0]) != 0 or int(indptr[-1]) != nnz or (n and np.any(np.diff(indptr) < 0)):
        raise ValueError(f"{prefix}: bad indptr")
    if nnz and (int(indices.min()) < 0 or int(indices.max()) >= m):
        raise ValueError(f"{prefix}: column index out of range")
    if binary and nnz and not np.all(data == 1):
        raise ValueError(f"{prefix}: labels are not 0/1")
    M = sp.csr_matrix((data, indices, indptr), shape=(n, m), copy=False)
    # the conversion wrote canonical matrices (sorted, no duplicates); trusting that flag
    # keeps scipy from sorting in place, which a read-only mapping would refuse
    M.has_sorted_indices = True
    M.has_canonical_format = True
    return M


def open_npz_cache(path: str) -> Tuple[MultiLabelData, dict]:
    """Open a cache written by :func:`write_npz_cache`: ``(data, meta)`` with every large
    array a read-only ``np.memmap`` of the file.

    Parameters
    ----------
    path : str
        The cache file.

    Returns
    -------
    data : MultiLabelData
        The dataset, its arrays mapped read-only (small ones read).
    meta : dict
        What :func:`write_npz_cache` recorded, with ``version``.

    Raises
    ------
    ValueError
        When the file is not a whole cache of this version (the caller rebuilds it).
    OSError
        When the file cannot be opened.
    """
    z = _member_arrays(path)
    sig = z.pop(None, None)
    try:
        meta = json.loads(str(z["meta"][()]))
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"no readable meta ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("version") != CACHE_VERSION:
        raise ValueError("another cache version")
    X, Y = _mapped_csr(z, "X"), _mapped_csr(z, "Y", binary=True)
    if X is None or Y is None or X.shape[0] != Y.shape[0]:
        raise ValueError("X/Y missing or of different lengths")
    Xt, Yt = _mapped_csr(z, "X_test"), _mapped_csr(z, "Y_test", binary=True)
    if (Xt is None) != (Yt is None) or (Xt is not None and (
            Xt.shape[0] != Yt.shape[0] or Xt.shape[1] != X.shape[1]
            or Yt.shape[1] != Y.shape[1])):
        raise ValueError("test part inconsistent")
    names = {}
    for key, size in (("feature_names", X.shape[1]), ("label_names", Y.shape[1])):
        if key in z:
            if z[key].shape != (size,):
                raise ValueError(f"{key}: wrong length")
            names[key] = [str(s) for s in z[key].tolist()]
    data = MultiLabelData(X=X, Y=Y, X_test=Xt, Y_test=Yt, name=str(z["name"][()]),
                          source=str(z["source"][()]), **names)
    if sig is not None:
        data._featagg_mapped = (path, sig)
    return data, meta
