"""The sparse-text layer shared by the XC, svmlight, ARFF and edge-list readers: the numba
tokeniser's results and error codes turned into :class:`DatasetError` messages, header
lines, the range / finiteness / duplicate checks that build a csr float32 with line
numbers, the writer's value formatting, and :func:`warmup` (compiles the parse kernels).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from featagg_core.data._containers import DatasetError
from featagg_core.data._input import _budget, _fail_for
from featagg_core.data._checks import _check_declared, _check_dim, _first_duplicate, _row_of_entry


_KERNEL_MESSAGES = {
    1: "expected 'index:value'",
    2: "negative feature index",
    3: "value is not a number",
    4: "NaN/inf value",
    5: "label is not a non-negative integer",
    6: "negative label",
    7: "index too large",
    8: "empty label in the label list (',,' or a trailing comma)",
    9: "sparse ARFF row must be enclosed in '{...}'",
    10: "wrong number of fields",
    11: "wrong number of fields (expected 'source target [weight]')",
    12: "node name longer than 256 bytes",
    13: "control character in a node name (binary file?)",
}


def _kernel_error(code: int, raw: bytes, name: str, line: int, pos: int) -> DatasetError:
    """Turn a kernel's (code, line, byte offset) into a DatasetError quoting the token."""
    pos = max(0, min(int(pos), len(raw)))
    msg = _KERNEL_MESSAGES.get(int(code), f"parse error {code}")
    if pos < len(raw) and raw[pos] >= 0x80:
        msg += f"; non-ASCII byte 0x{raw[pos]:02X} (wrong encoding? numbers must be ASCII)"
    else:
        end = pos
        while end < len(raw) and end - pos < 40 and raw[end] not in b" \t\r\n,{}":
            end += 1
        tok = raw[pos:end].decode("utf-8", "backslashreplace")
        msg += f", found {tok!r}" if tok else ", found end of line"
    return DatasetError(msg, path=name, line=int(line))


def _header_line(raw: bytes, name: str) -> tuple[str, int]:
    """First line as text and the offset of the byte after it."""
    nl = raw.find(b"\n")
    end = len(raw) if nl < 0 else nl + 1
    try:
        text = raw[:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"header is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                           path=name, line=1) from None
    return text, end


def _int_header(text: str):
    """The ints of a header line, or None when it is not a header of plain integers."""
    parts = text.split()
    if not parts or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    return [int(p) for p in parts]


class _Parsed:
    """Raw result of tokenising a sparse text file (before shape decisions)."""
    __slots__ = ("indptr", "indices", "values", "lab_ptr", "labels", "row_line", "n_rows",
                 "name")


def _tokenise(raw: bytes, name: str, start: int, first_line: int, allow_labels: bool,
              svmlight: bool) -> _Parsed:
    from featagg_core._kernels.parse import parse_sparse_lines
    buf = np.frombuffer(raw, dtype=np.uint8)
    nl, ncolon, ncomma = raw.count(b"\n", start), raw.count(b":", start), raw.count(b",", start)
    _budget().charge(40 * (nl + 2) + 16 * ncolon + 8 * ncomma, "parsing the rows",
                     _fail_for(name))
    (err, eline, epos, n_rows, indptr, indices, values, lab_ptr, labels, row_line, hard,
     n_hard) = parse_sparse_lines(buf, start, first_line, allow_labels, svmlight)
    if err:
        raise _kernel_error(err, raw, name, eline, epos)
    out = _Parsed()
    out.n_rows = int(n_rows)
    out.indptr = indptr[:n_rows + 1]
    nnz = int(out.indptr[-1])
    out.indices = indices[:nnz]
    out.values = values[:nnz]
    out.lab_ptr = lab_ptr[:n_rows + 1]
    out.labels = labels[:int(out.lab_ptr[-1])]
    out.row_line = row_line[:n_rows]
    out.name = name
    # the rare numbers beyond the exact fast path: Python's correctly rounded float()
    _fill_hard(out.values, hard, n_hard, raw)
    return out


def _fill_hard(values: np.ndarray, hard: np.ndarray, n_hard: int, raw: bytes) -> None:
    """Convert the rare numbers the kernel left to the exact slow path (more than 15-16
    significant digits or a decimal exponent beyond +-22) with Python's correctly rounded
    ``float`` -- the kernel already checked their syntax."""
    for slot, a, b in hard[:int(n_hard)].tolist():
        values[slot] = float(raw[a:b])


def _line_of_entry(parsed: _Parsed, ptr: np.ndarray, pos: int) -> int:
    return int(parsed.row_line[_row_of_entry(ptr, pos)])


def _finish_matrix(parsed: _Parsed, ptr, idx, vals, n_cols: int, *, what: str,
                   binary: bool = False) -> sp.csr_matrix:
    """Range / finiteness / duplicate checks with line numbers, then a csr float32."""
    name = parsed.name
    _check_dim(n_cols, what=f"number of {what}s", name=name)
    _check_declared({f"{what}s": n_cols}, name=name)
    if idx.size:
        hi = int(idx.max())
        if hi >= n_cols:
            p = int(np.flatnonzero(idx >= n_cols)[0])
            raise DatasetError(f"{what} index {int(idx[p])} out of range (the header says "
                               f"{n_cols} {what}s)" if n_cols >= 0 else
                               f"{what} index {int(idx[p])} out of range", path=name,
                               line=_line_of_entry(parsed, ptr, p))
        if int(idx.min()) < 0:
            p = int(np.flatnonzero(idx < 0)[0])
            raise DatasetError(f"negative {what} index {int(idx[p])} (after the 1-based "
                               f"shift)", path=name, line=_line_of_entry(parsed, ptr, p))
    if vals is None:
        data = np.ones(idx.shape[0], np.float32)
    else:
        with np.errstate(over="ignore"):
            data = vals.astype(np.float32)
        bad = ~np.isfinite(data)
        if bad.any():
            p = int(np.flatnonzero(bad)[0])
            raise DatasetError(f"value {float(vals[p])!r} does not fit in float32 ({what} "
                               f"{int(idx[p])})", path=name,
                               line=_line_of_entry(parsed, ptr, p))
        if binary:
            nb = (data != 0) & (data != 1)
            if nb.any():
                p = int(np.flatnonzero(nb)[0])
                raise DatasetError(f"labels must be 0/1, found {float(vals[p])!r}", path=name,
                                   line=_line_of_entry(parsed, ptr, p))
    n = ptr.shape[0] - 1
    idx_dtype = np.int32 if max(n, n_cols, idx.shape[0]) < 2**31 - 1 else np.int64
    M = sp.csr_matrix((data, idx.astype(idx_dtype), ptr.astype(idx_dtype)),
                      shape=(n, n_cols))
    r, c = _first_duplicate(M.indptr, M.indices)
    if r >= 0:
        raise DatasetError(f"duplicate {what} index {int(c)} on the line", path=name,
                           line=int(parsed.row_line[r]))
    M.sort_indices()
    if data.size and not data.all():
        M.eliminate_zeros()
    return M


def _trim_rows(parsed: _Parsed, n_expected: int) -> None:
    """XC files: every line is a row, but blank lines after the last row are tolerated."""
    if parsed.n_rows > n_expected:
        extra_feat = parsed.indptr[-1] - parsed.indptr[n_expected]
        extra_lab = parsed.lab_ptr[-1] - parsed.lab_ptr[n_expected]
        if extra_feat or extra_lab:
            raise DatasetError(f"the header says {n_expected} rows but there are more",
                               path=parsed.name, line=int(parsed.row_line[n_expected]))
        parsed.n_rows = n_expected
        parsed.indptr = parsed.indptr[:n_expected + 1]
        parsed.lab_ptr = parsed.lab_ptr[:n_expected + 1]
        parsed.row_line = parsed.row_line[:n_expected]
    if parsed.n_rows < n_expected:
        last = int(parsed.row_line[-1]) if parsed.n_rows else 1
        raise DatasetError(f"truncated file: the header says {n_expected} rows, found "
                           f"{parsed.n_rows}", path=parsed.name, line=last)


def _format_values(vals: np.ndarray):
    """Shortest round-trip text of float32 values (numpy's Dragon4 repr, computed once per
    distinct value); integers lose their '.0'. Returns (codes, bytes table, lengths)."""
    uniq, codes = np.unique(vals.astype(np.float32), return_inverse=True)
    if uniq.size == 0:
        return (np.zeros(0, np.int64), np.zeros((1, 1), np.uint8), np.zeros(1, np.int64))
    txt = uniq.astype("S")
    ends = np.char.endswith(txt, b".0")
    if ends.any():
        txt = txt.copy()
        txt[ends] = np.char.rstrip(np.char.rstrip(txt[ends], b"0"), b".")
    width = txt.dtype.itemsize
    table = np.frombuffer(txt.tobytes(), np.uint8).reshape(-1, width)
    lens = np.char.str_len(txt).astype(np.int64)
    return codes.astype(np.int64).ravel(), table, lens


def warmup() -> None:
    """Compile (or load from cache) the parsing kernels on tiny inputs."""
    from featagg_core._kernels import parse as k
    buf = np.frombuffer(b"1 0:1.5 2:2\n\n0,1 1:3e-1\n", np.uint8)
    k.parse_sparse_lines(buf, 0, 1, True, True)
    k.parse_sparse_lines(buf, 0, 1, True, False)
    k.parse_arff_data(np.frombuffer(b"{0 1,2 0.5}\n1,0,2\n", np.uint8), 0, 1)
    codes, table, lens = _format_values(np.array([1.5], np.float32))
    ip = np.array([0, 1], np.int64)
    k.write_sparse_lines(ip, np.array([0], np.int64), codes, table, lens, ip,
                         np.array([0], np.int64), True)
    eb = np.frombuffer(b"a b 1\n", np.uint8)
    out = k.parse_edge_lines(eb, 0, 1)
    k.intern_tokens(eb, out[4][:2], out[5][:2], 1)
