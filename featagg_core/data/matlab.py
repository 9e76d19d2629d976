"""MATLAB v5/v7 ``.mat`` graphs: the file's structure walked and the chosen variables
validated (and charged to the load's budget) before ``scipy.io.loadmat`` sees them.
"""
from __future__ import annotations

import io

import numpy as np
import scipy.sparse as sp

from featagg_core.data._containers import DatasetError
from featagg_core.utils.bounded import reason
from featagg_core.data._input import _budget, _fail_for
from featagg_core.data._checks import _check_declared, _MAX_DIM
from featagg_core.data._graph_parts import (_classes_from_values, _file_edges,
                                            _matrix_from_any, _undirected)


_MAT_KEYS = {
    "A": ("network", "a", "adj", "adjacency", "net", "graph", "w"),
    "X": ("attributes", "features", "x", "attr", "feature"),
    "y": ("group", "label", "labels", "y", "gnd", "class", "classes"),
}


_MI_DTYPE = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8",
             12: "i8", 13: "u8"}


_MX_NUMERIC = set(range(6, 16))     # double, single, int8 ... uint64


_MX_SPARSE = 5


_MX_KIND = {1: "cell array", 2: "struct", 3: "object", 4: "char array", 16: "function",
            17: "opaque object"}


def _mat_sub(buf: bytes, off: int, endian: str, name: str, var: str):
    """One sub-element of a MAT v5 matrix: (type, data bytes, next offset), bounds-checked."""
    import struct
    if off + 8 > len(buf):
        raise DatasetError("truncated matrix element", path=name, field=var)
    w, n = struct.unpack_from(endian + "II", buf, off)
    if w >> 16:                                   # small data element: 4 bytes of payload
        typ, n = w & 0xFFFF, w >> 16
        if n > 4:
            raise DatasetError("corrupt small data element", path=name, field=var)
        return typ, buf[off + 4:off + 4 + n], off + 8
    typ = w
    end = off + 8 + n
    if end > len(buf):
        raise DatasetError("sub-element runs past the end of its matrix", path=name,
                           field=var)
    return typ, buf[off + 8:end], end + (-n % 8)


def _mat_array(typ: int, data: bytes, endian: str, name: str, var: str, what: str):
    if typ not in _MI_DTYPE:
        raise DatasetError(f"{what}: unsupported data type {typ}", path=name, field=var)
    dt = np.dtype(_MI_DTYPE[typ]).newbyteorder(endian)
    if len(data) % dt.itemsize:
        raise DatasetError(f"{what}: byte count is not a multiple of the item size",
                           path=name, field=var)
    return np.frombuffer(data, dt)


def _mat_matrix_header(body: bytes, endian: str, name: str):
    """(variable name, class, dims, is_complex, offset after the name) of a miMATRIX body;
    only its first bytes are needed (the name comes before the data)."""
    import struct
    typ, data, off = _mat_sub(body, 0, endian, name, "?")
    if typ != 6 or len(data) != 8:
        raise DatasetError("matrix without array flags", path=name)
    flags, _nzmax = struct.unpack(endian + "II", data)
    cls, is_complex = flags & 0xFF, bool(flags & 0x800)
    typ, data, off = _mat_sub(body, off, endian, name, "?")
    dims = _mat_array(typ, data, endian, name, "?", "dimensions")
    typ, data, off = _mat_sub(body, off, endian, name, "?")
    try:
        var = bytes(data).decode("ascii")
    except UnicodeDecodeError:
        raise DatasetError("variable name is not ASCII", path=name) from None
    return var, cls, dims, is_complex, off


def _mat_check_matrix(body: bytes, endian: str, name: str):
    """(variable name, class, problem or None) for one miMATRIX body. Numeric and sparse
    matrices are checked completely: dimensions against the number of values, and for
    sparse ones row indices within range and column pointers non-decreasing and within
    the number of stored entries -- scipy.io's C reader trusts these and can crash on a
    corrupt file, so nothing reaches it unchecked. Declared dimensions are checked
    against the load's budget (see :func:`_check_declared`)."""
    var, cls, dims, is_complex, off = _mat_matrix_header(body, endian, name)
    if dims.size < 2 or (dims < 0).any():
        return var, cls, f"bad dimensions {dims.tolist()}"
    if (dims.astype(np.int64) > _MAX_DIM).any():
        return var, cls, f"dimensions {dims.tolist()} exceed {_MAX_DIM}"
    if cls not in _MX_NUMERIC and cls != _MX_SPARSE:
        return var, cls, None
    _check_declared({f"{var} rows": int(dims[0]),
                     f"{var} columns": int(np.prod(dims[1:].astype(np.int64)))},
                    name=name, field=var)
    n_parts = 2 if is_complex else 1
    if cls == _MX_SPARSE:
        if dims.size != 2:
            return var, cls, "a sparse matrix must be 2-D"
        M, N = int(dims[0]), int(dims[1])
        typ, data, off = _mat_sub(body, off, endian, name, var)
        ir = _mat_array(typ, data, endian, name, var, "row indices")
        typ, data, off = _mat_sub(body, off, endian, name, var)
        jc = _mat_array(typ, data, endian, name, var, "column pointers")
        if jc.size < N + 1:
            return var, cls, f"{jc.size} column pointers for {N} columns"
        jc = jc[:N + 1].astype(np.int64)
        if jc[0] != 0 or (np.diff(jc) < 0).any() or jc[-1] > ir.size:
            return var, cls, "column pointers are not a valid sparse structure"
        nnz = int(jc[-1])
        if nnz and (ir[:nnz].min() < 0 or ir[:nnz].max() >= M):
            return var, cls, "row index out of range"
        for _ in range(n_parts):
            typ, data, off = _mat_sub(body, off, endian, name, var)
            pr = _mat_array(typ, data, endian, name, var, "values")
            if pr.size < nnz:
                return var, cls, f"{pr.size} values for {nnz} entries"
        # what the graph is built from: (row, column, value) per entry, then a sort
        _budget().charge(_MAT_BYTES_PER_VALUE * nnz, f"matrix {var}", _fail_for(name, field=var))
        return var, cls, None
    count = int(np.prod(dims.astype(np.int64)))
    for _ in range(n_parts):
        typ, data, off = _mat_sub(body, off, endian, name, var)
        pr = _mat_array(typ, data, endian, name, var, "values")
        if pr.size != count:
            return var, cls, f"{pr.size} values for dimensions {dims.tolist()}"
    # a dense matrix is read as an array, then turned into (row, column, value) entries
    _budget().charge(_MAT_BYTES_PER_VALUE * count, f"matrix {var}", _fail_for(name, field=var))
    return var, cls, None


#: bytes charged per stored value of a chosen .mat variable on top of its own bytes: scipy's
#: copy, the (row, column, value) triplets and the sort that builds the graph from them
_MAT_BYTES_PER_VALUE = 32


_MAT_PEEK = 4096


def _mat_variables(raw: bytes, name: str):
    """Walk a MAT v5/v7 file: {variable: (class, element start, element end, compressed)}.

    Only the first bytes of a compressed element are inflated (to read its variable name
    and class); whole elements are inflated later, for the variables a graph needs, by
    :func:`_mat_element_body`."""
    import struct
    import zlib
    if len(raw) < 128:
        raise DatasetError("too short for a MATLAB file", path=name)
    endian = {b"IM": "<", b"MI": ">"}.get(raw[126:128])
    if endian is None:
        raise DatasetError("not a MATLAB v5/v7 file (v4 and v7.3/HDF5 are not supported)",
                           path=name)
    out, pos = {}, 128
    while pos < len(raw):
        if pos + 8 > len(raw):
            raise DatasetError(f"truncated data element at byte {pos}", path=name)
        typ, n = struct.unpack_from(endian + "II", raw, pos)
        end = pos + 8 + n
        if end > len(raw):
            raise DatasetError(f"data element at byte {pos} runs past the end of the file",
                               path=name)
        if typ == 15:
            try:
                head = zlib.decompressobj().decompress(raw[pos + 8:end], _MAT_PEEK)
            except zlib.error as exc:
                raise DatasetError(f"corrupt compressed element at byte {pos} ({exc})",
                                   path=name) from None
            if len(head) < 8:
                raise DatasetError(f"corrupt compressed element at byte {pos}", path=name)
            ityp, _inn = struct.unpack_from(endian + "II", head, 0)
            if ityp != 14:
                raise DatasetError(f"corrupt compressed element at byte {pos}", path=name)
            mhead = head[8:]
        elif typ == 14:
            mhead = raw[pos + 8:min(end, pos + 8 + _MAT_PEEK)]
        else:
            raise DatasetError(f"unexpected data element type {typ} at byte {pos}",
                               path=name)
        if mhead:
            try:
                var, cls, _dims, _cplx, _off = _mat_matrix_header(mhead, endian, name)
            except DatasetError as exc:
                raise DatasetError(f"matrix at byte {pos}: {exc.reason} (or a variable name "
                                   "too long to read)", path=name) from None
            out[var] = (cls, pos, end, typ == 15)
        pos = end
    return out, endian


def _mat_element_body(raw: bytes, pos: int, end: int, compressed: bool, endian: str,
                      name: str, var: str) -> bytes:
    """The miMATRIX body of the element at ``raw[pos:end]``; a compressed one is inflated
    only after its declared size was charged to the load's budget, and never beyond it."""
    import struct
    import zlib
    if not compressed:
        return raw[pos + 8:end]
    d = zlib.decompressobj()
    try:
        head = d.decompress(raw[pos + 8:end], 8)
        _ityp, inn = struct.unpack_from(endian + "II", head, 0)
        _budget().charge(inn, f"variable {var} (compressed)", _fail_for(name, field=var))
        body = d.decompress(d.unconsumed_tail, inn)
    except zlib.error as exc:
        raise DatasetError(f"corrupt compressed element at byte {pos} ({exc})",
                           path=name, field=var) from None
    if len(body) != inn:
        raise DatasetError(f"compressed element at byte {pos} holds {len(body)} bytes but "
                           f"declares {inn}", path=name, field=var)
    return body


def _load_mat(raw: bytes, name: str, self_loops: bool):
    """Read the graph variables of a MAT v5/v7 file. The file's structure is walked and
    the chosen variables validated first (see ``_mat_check_matrix``); only then are those
    elements handed to ``scipy.io.loadmat`` (which never unpickles). Returns A, X, y,
    feature names (None), class names and the adjacency's file counts (``_file_edges``)."""
    import scipy.io
    if raw[:128].find(b"MATLAB 7.3") >= 0 or raw[:8] == b"\x89HDF\r\n\x1a\n":
        raise DatasetError("MATLAB v7.3 (HDF5) files are not supported: save with -v7",
                           path=name)
    variables, endian = _mat_variables(raw, name)
    lower = {k.lower(): k for k in variables}

    def pick(role):
        for cand in _MAT_KEYS[role]:
            if cand in lower:
                return lower[cand]
        return None

    ka, kx, ky = pick("A"), pick("X"), pick("y")
    if ka is None:
        raise DatasetError(f"no adjacency matrix: expected one of "
                           f"{', '.join(_MAT_KEYS['A'])} (any case), found "
                           f"{', '.join(sorted(lower.values())[:20]) or 'nothing'}", path=name)
    chosen = [k for k in (ka, kx, ky) if k is not None]
    import struct
    elements = []
    for k in chosen:
        cls, pos, end, compressed = variables[k]
        if cls in _MX_KIND:
            raise DatasetError(f"{k} is a {_MX_KIND[cls]}, not a numeric matrix", path=name,
                               field=k)
        if cls not in _MX_NUMERIC and cls != _MX_SPARSE:
            raise DatasetError(f"{k} has unsupported MATLAB class {cls}", path=name, field=k)
        body = _mat_element_body(raw, pos, end, compressed, endian, name, k)
        _var, _cls, problem = _mat_check_matrix(body, endian, name)
        if problem:
            raise DatasetError(f"{k}: {problem}", path=name, field=k)
        # handed to scipy uncompressed, so it does not inflate the element a second time
        elements.append(struct.pack(endian + "II", 14, len(body)) + body
                        + b"\0" * (-len(body) % 8))
    clean = raw[:128] + b"".join(elements)
    del elements
    try:
        m = scipy.io.loadmat(io.BytesIO(clean), squeeze_me=False, struct_as_record=True)
    except Exception as exc:  # noqa: BLE001 - scipy raises many kinds on bad input
        raise DatasetError(f"not a readable MATLAB file ({reason(exc)})",
                           path=name) from None
    del clean
    missing = [k for k in chosen if k not in m]
    if missing:
        raise DatasetError(f"variable {missing[0]} could not be read", path=name,
                           field=missing[0])

    def numeric(key):
        v = m[key]
        if sp.issparse(v):
            return sp.csr_matrix(v)
        v = np.asarray(v)
        if v.dtype == object or not (np.issubdtype(v.dtype, np.number) or v.dtype == bool):
            raise DatasetError(f"{key} is not a numeric matrix ({v.dtype})", path=name,
                               field=key)
        if v.ndim != 2:
            raise DatasetError(f"{key} must be 2-D, got shape {v.shape}", path=name,
                               field=key)
        return v

    A = numeric(ka)
    if A.shape[0] != A.shape[1]:
        raise DatasetError(f"{ka} must be square, got {A.shape}", path=name, field=ka)
    n = A.shape[0]
    Ac = sp.coo_matrix(A)
    A = _undirected(Ac.row, Ac.col, Ac.data.astype(np.float64), n, self_loops=self_loops,
                    name=f"{name} ({ka})")
    # a matrix lists each entry once (duplicates only from a sparse matrix's repeated
    # entries); its asymmetric entries are the one-way edges
    file_edges = _file_edges(Ac.row, Ac.col, n, directed=True, w=Ac.data)
    if kx is not None:
        Xv = numeric(kx)
        if Xv.shape[0] != n and Xv.shape[1] == n:
            raise DatasetError(f"{kx} has shape {Xv.shape}: expected nodes as rows "
                               f"({n} x d)", path=name, field=kx)
        X = _matrix_from_any(sp.csr_matrix(Xv), n, name, kx)
    else:
        X = sp.csr_matrix((n, 0), dtype=np.float32)
    y = class_names = None
    if ky is not None:
        G = numeric(ky)
        if sp.issparse(G):
            G = G.toarray() if min(G.shape) == 1 else G
        if min(G.shape) == 1 and max(G.shape) == n:
            y, class_names = _classes_from_values(np.asarray(G).ravel(), name, ky)
        elif G.shape[0] == n:
            Gc = sp.csr_matrix(G)
            Gc.eliminate_zeros()
            if Gc.nnz and not (Gc.data == 1).all():
                raise DatasetError(f"{ky} must be a one-hot 0/1 matrix or a vector",
                                   path=name, field=ky)
            Gc.sort_indices()
            cnt = np.diff(Gc.indptr)
            y = np.full(n, -1, np.int64)
            has = cnt > 0
            y[has] = Gc.indices[Gc.indptr[:-1][has]]      # lowest class of each row
            class_names = [str(i) for i in range(G.shape[1])]
        else:
            raise DatasetError(f"{ky} has shape {G.shape}, expected {n} x c or a vector of "
                               f"{n}", path=name, field=ky)
    return A, X, y, None, class_names, file_edges
