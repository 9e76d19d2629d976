"""numba kernels for the text readers and writers of :mod:`featagg_core.data`.

Every kernel takes numpy arrays (the raw bytes of a file as ``uint8``) and returns
arrays; errors are reported as integer codes plus the line number and byte offset,
and turned into :class:`~featagg_core.data.DatasetError` messages by the caller.
"""
import numpy as np
from numba import njit

from featagg_core._kernels._common import (
    count_bytes,
    is_ws as _is_ws,
    mix64 as _mix_hash,
    next_line,
    skip_ws,
)


# ---------------------------------------------------------------------------
# error codes (turned into messages by featagg_core.data)
# ---------------------------------------------------------------------------
OK = 0
ERR_TOKEN = 1          # expected "index:value"
ERR_NEG_INDEX = 2      # negative feature index
ERR_NUMBER = 3         # value is not a number
ERR_NONFINITE = 4      # nan / inf literal
ERR_LABEL = 5          # label is not a non-negative integer
ERR_NEG_LABEL = 6      # negative label
ERR_BIG_INDEX = 7      # index does not fit
ERR_EMPTY_LABEL = 8    # ",," or a trailing comma in the label list
ERR_ARFF_BRACE = 9     # sparse ARFF row not enclosed in {...}
ERR_ARFF_FIELDS = 10   # dense ARFF row with the wrong number of fields
ERR_EDGE_FIELDS = 11   # edge list line with too few / too many fields
ERR_TOKEN_LONG = 12    # node name longer than the limit
ERR_CONTROL = 13       # control character in a node name

_BIG = 1 << 53

# 10**0 .. 10**22 are exact in float64 (Clinger's fast path)
_P10 = np.array([10.0 ** i for i in range(23)], dtype=np.float64)


@njit(cache=True)
def _is_digit(c):
    return 48 <= c <= 57


@njit(cache=True)
def _lower(c):
    if 65 <= c <= 90:
        return c + 32
    return c


@njit(cache=True)
def _is_word(buf, p, end, word):
    """True when buf[p:end] equals the lower-case ASCII ``word`` ignoring case."""
    if end - p != word.shape[0]:
        return False
    for k in range(word.shape[0]):
        if _lower(buf[p + k]) != word[k]:
            return False
    return True


_NAN = np.frombuffer(b"nan", dtype=np.uint8).copy()
_INF = np.frombuffer(b"inf", dtype=np.uint8).copy()
_INFINITY = np.frombuffer(b"infinity", dtype=np.uint8).copy()


@njit(cache=True)
def parse_float(buf, p, end, stops):
    """Parse a decimal float starting at ``buf[p]``; the number ends at ``end`` or at the
    first byte for which ``stops[byte]`` is true.

    Returns ``(status, value, p_after)``: status 0 = parsed exactly (Clinger's fast path:
    at most 15-16 significant digits and a power of ten up to 22, one correctly rounded
    IEEE operation), 1 = valid syntax that needs the exact slow path (done by the caller
    with Python's correctly rounded ``float``), 2 = not a number, 4 = a nan/inf literal.
    Accepted syntax: ``[+-]digits[.digits][(e|E)[+-]digits]`` with digits on at least
    one side of the point (as ``strtod``, without hex, nan or inf).
    """
    start = p
    neg = False
    if p < end and (buf[p] == 43 or buf[p] == 45):
        neg = buf[p] == 45
        p += 1
    mant = np.uint64(0)
    nsig = 0
    exp10 = 0
    ndig = 0
    truncated = False
    while p < end and _is_digit(buf[p]):
        d = buf[p] - 48
        ndig += 1
        if nsig == 0 and d == 0:
            pass
        elif nsig < 19:
            mant = mant * np.uint64(10) + np.uint64(d)
            nsig += 1
        else:
            exp10 += 1
            if d != 0:
                truncated = True
        p += 1
    if p < end and buf[p] == 46:
        p += 1
        while p < end and _is_digit(buf[p]):
            d = buf[p] - 48
            ndig += 1
            if nsig == 0 and d == 0:
                exp10 -= 1
            elif nsig < 19:
                mant = mant * np.uint64(10) + np.uint64(d)
                nsig += 1
                exp10 -= 1
            elif d != 0:
                truncated = True
            p += 1
    if ndig == 0:
        # maybe a nan/inf literal: scan the word
        q = start
        if q < end and (buf[q] == 43 or buf[q] == 45):
            q += 1
        r = q
        while r < end and not stops[buf[r]]:
            r += 1
        if _is_word(buf, q, r, _NAN) or _is_word(buf, q, r, _INF) or \
                _is_word(buf, q, r, _INFINITY):
            return 4, 0.0, r
        return 2, 0.0, p
    if p < end and (buf[p] == 101 or buf[p] == 69):
        p += 1
        eneg = False
        if p < end and (buf[p] == 43 or buf[p] == 45):
            eneg = buf[p] == 45
            p += 1
        if not (p < end and _is_digit(buf[p])):
            return 2, 0.0, p
        e = 0
        while p < end and _is_digit(buf[p]):
            if e < 100000000:
                e = e * 10 + (buf[p] - 48)
            p += 1
        exp10 += -e if eneg else e
    if p < end and not stops[buf[p]]:
        return 2, 0.0, p
    if mant == 0:
        return 0, (-0.0 if neg else 0.0), p
    if (not truncated) and mant <= np.uint64(_BIG) and -22 <= exp10 <= 22:
        v = float(mant)
        if exp10 >= 0:
            v = v * _P10[exp10]
        else:
            v = v / _P10[-exp10]
        return 0, (-v if neg else v), p
    return 1, 0.0, p


@njit(cache=True)
def _push_hard(hard, k, slot, start, end):
    """Append (slot, start, end) as row ``k`` of the (m, 3) int64 array ``hard``, doubling
    it when full; returns the (possibly new) array."""
    if k >= hard.shape[0]:
        bigger = np.empty((2 * hard.shape[0], 3), np.int64)
        bigger[:hard.shape[0]] = hard
        hard = bigger
    hard[k, 0] = slot
    hard[k, 1] = start
    hard[k, 2] = end
    return hard


@njit(cache=True)
def _stop_table(extra):
    """Byte classes that end a number: whitespace, end of line, and the ``extra`` bytes."""
    t = np.zeros(256, np.bool_)
    t[32] = True
    t[9] = True
    t[13] = True
    t[10] = True
    t[11] = True
    t[12] = True
    for k in range(extra.shape[0]):
        t[extra[k]] = True
    return t


@njit(cache=True)
def _parse_index(buf, p, end, neg_err, bad_err):
    """A non-negative decimal integer at ``buf[p:end]`` (an index or a label).

    Returns ``(err, value, p after)``: ``neg_err`` at a ``-`` and ``bad_err`` when no digit
    stands at ``p`` (``p`` unchanged), ERR_BIG_INDEX once the value exceeds ``_BIG``
    (reading stops there), else OK."""
    if p < end and buf[p] == 45:
        return neg_err, 0, p
    if not (p < end and _is_digit(buf[p])):
        return bad_err, 0, p
    v = 0
    while p < end and _is_digit(buf[p]) and v <= _BIG:
        v = v * 10 + (buf[p] - 48)
        p += 1
    if v > _BIG:
        return ERR_BIG_INDEX, v, p
    return OK, v, p


@njit(cache=True)
def _arff_value(buf, p, end, stops):
    """An ARFF value: ``?`` (missing, NaN) or a number; same statuses as parse_float."""
    if p < end and buf[p] == 63:
        return 0, np.nan, p + 1
    return parse_float(buf, p, end, stops)


@njit(cache=True, nogil=True)
def parse_sparse_lines(buf, start, first_line, allow_labels, svmlight):
    """Tokenise XC / svmlight text: one row per line, ``[l1,l2,...] i:v i:v ...``.

    ``allow_labels``: a line may start with a comma-separated label list (a first token
    with no ':'). ``svmlight``: blank lines and ``#`` comments are skipped and ``qid:n``
    tokens ignored (as sklearn does); otherwise (XC) every line is a row, an empty line
    being a row with no labels and no features.

    Returns ``(err, err_line, err_pos, n_rows, indptr, indices, values, lab_ptr, labels,
    row_line, hard, n_hard)``; values that need the exact slow path hold 0 and are listed
    as rows ``(slot, byte start, byte end)`` of ``hard`` for the caller to convert.
    """
    n = buf.shape[0]
    nl, ncolon, ncomma = count_bytes(buf, start, 58, 44)
    max_rows = nl + 1
    indptr = np.zeros(max_rows + 1, np.int64)
    indices = np.empty(ncolon, np.int64)
    values = np.empty(ncolon, np.float64)
    lab_ptr = np.zeros(max_rows + 1, np.int64)
    labels = np.empty(ncomma + max_rows, np.int64)
    row_line = np.empty(max_rows, np.int64)
    hard = np.empty((16, 3), np.int64)
    stops = _stop_table(np.zeros(0, np.uint8))
    n_hard = 0
    nnz = 0
    nlab = 0
    row = 0
    line = first_line
    pos = start
    p = start
    err = OK
    cut = 35 if svmlight else -1                     # svmlight: "#" starts a comment
    while pos < n:
        eol, end, p, blank = next_line(buf, pos, cut, -1, -1)
        if blank and svmlight:
            pos = eol + 1
            line += 1
            continue
        row_line[row] = line
        if allow_labels and p < end:
            q = p
            has_colon = False
            while q < end and not _is_ws(buf[q]):
                if buf[q] == 58:
                    has_colon = True
                    break
                q += 1
            while not has_colon:                     # the label list "l1,l2,..."
                if p >= end or _is_ws(buf[p]) or buf[p] == 44:
                    err = ERR_EMPTY_LABEL
                    break
                if buf[p] == 45:
                    err = ERR_NEG_LABEL
                    break
                if buf[p] == 43:
                    p += 1
                err, v, p = _parse_index(buf, p, end, ERR_LABEL, ERR_LABEL)
                if err:
                    break
                if p < end and buf[p] == 46:      # "3.0" as sklearn writes float labels
                    p += 1
                    while p < end and buf[p] == 48:
                        p += 1
                labels[nlab] = v
                nlab += 1
                if p < end and buf[p] == 44:
                    p += 1
                    continue
                if not (p >= end or _is_ws(buf[p])):
                    err = ERR_LABEL
                break
            if err:
                break
        while True:                                  # the "i:v" tokens
            p = skip_ws(buf, p, end)
            if p >= end:
                break
            c = buf[p]
            if svmlight and c == 113 and p + 3 < end and buf[p + 1] == 105 and \
                    buf[p + 2] == 100 and buf[p + 3] == 58:
                p += 4
                while p < end and not _is_ws(buf[p]):
                    p += 1
                continue
            err, idx, p = _parse_index(buf, p, end, ERR_NEG_INDEX, ERR_TOKEN)
            if err:
                break
            if not (p < end and buf[p] == 58):
                err = ERR_TOKEN
                break
            p += 1
            # the number field stays inline in each of the three loops: a shared helper
            # was slower (benchmarks/results/kernel_helpers_number_field.md)
            vstart = p
            st, val, p = parse_float(buf, p, end, stops)
            if st == 2 or st == 4:
                err = ERR_NUMBER if st == 2 else ERR_NONFINITE
                p = vstart
                break
            if st == 1:
                hard = _push_hard(hard, n_hard, nnz, vstart, p)
                n_hard += 1
            indices[nnz] = idx
            values[nnz] = val
            nnz += 1
        if err:
            break
        indptr[row + 1] = nnz
        lab_ptr[row + 1] = nlab
        row += 1
        pos = eol + 1
        line += 1
    return (err, line, p, row, indptr, indices, values, lab_ptr, labels, row_line, hard,
            n_hard)


@njit(cache=True)
def _n_digits(v):
    k = 1
    while v >= 10:
        v //= 10
        k += 1
    return k


@njit(cache=True)
def _put_int(out, o, v):
    k = _n_digits(v)
    for j in range(k - 1, -1, -1):
        out[o + j] = 48 + v % 10
        v //= 10
    return o + k


@njit(cache=True, nogil=True)
def write_sparse_lines(x_indptr, x_indices, val_code, val_bytes, val_len, y_indptr,
                       y_indices, with_labels):
    """Format rows as XC text lines ``l1,l2 i:v i:v`` (or ``i:v i:v`` when
    ``with_labels`` is false). ``val_bytes[val_code[p]]`` (``val_len`` bytes) is the text of
    the p-th value. Two passes: the exact size, then the bytes. Returns a uint8 array."""
    n = x_indptr.shape[0] - 1
    size = 0
    for r in range(n):
        if with_labels:
            for q in range(y_indptr[r], y_indptr[r + 1]):
                size += _n_digits(y_indices[q]) + 1
        for p in range(x_indptr[r], x_indptr[r + 1]):
            size += _n_digits(x_indices[p]) + 2 + val_len[val_code[p]]
        size += 1
    out = np.empty(size, np.uint8)
    o = 0
    for r in range(n):
        if with_labels:
            for q in range(y_indptr[r], y_indptr[r + 1]):
                if q > y_indptr[r]:
                    out[o] = 44
                    o += 1
                o = _put_int(out, o, y_indices[q])
        first = not with_labels
        for p in range(x_indptr[r], x_indptr[r + 1]):
            if not first:
                out[o] = 32
                o += 1
            first = False
            o = _put_int(out, o, x_indices[p])
            out[o] = 58
            o += 1
            c = val_code[p]
            for k in range(val_len[c]):
                out[o + k] = val_bytes[c, k]
            o += val_len[c]
        out[o] = 10
        o += 1
    return out[:o]


@njit(cache=True, nogil=True)
def parse_arff_data(buf, start, first_line):
    """Tokenise the ``@data`` section of an ARFF file, sparse (``{i v, j w}``) and dense
    (``v1,v2,...``) rows alike (Weka allows both). Blank lines and ``%`` comments are
    skipped. Missing values ``?`` become NaN; zeros of dense rows are not stored.

    Returns ``(err, err_line, err_pos, n_rows, indptr, attr, values, row_line, n_fields,
    hard, n_hard)`` where ``attr`` holds attribute indices and ``n_fields[r]`` the number
    of fields of a dense row r (-1 for sparse rows).
    """
    n = buf.shape[0]
    nl, ncomma, _ = count_bytes(buf, start, 44, -1)
    max_rows = nl + 1
    cap = ncomma + max_rows
    indptr = np.zeros(max_rows + 1, np.int64)
    attr = np.empty(cap, np.int64)
    values = np.empty(cap, np.float64)
    row_line = np.empty(max_rows, np.int64)
    n_fields = np.empty(max_rows, np.int64)
    hard = np.empty((16, 3), np.int64)
    n_hard = 0
    stops = _stop_table(np.array([44, 125], np.uint8))
    nnz = 0
    row = 0
    line = first_line
    pos = start
    p = start
    err = OK
    while pos < n:
        eol, end, p, skip = next_line(buf, pos, -1, 37, -1)     # "%" comments
        if skip:
            pos = eol + 1
            line += 1
            continue
        row_line[row] = line
        sparse = buf[p] == 123
        closed = False
        n_fields[row] = -1
        if sparse:
            p += 1
            p = skip_ws(buf, p, end)
            closed = p < end and buf[p] == 125
            if closed:
                p += 1
        k = 0
        while not (sparse and closed):
            p = skip_ws(buf, p, end)
            idx = k
            if sparse:
                err, idx, p = _parse_index(buf, p, end, ERR_NEG_INDEX, ERR_TOKEN)
                if err:
                    break
                if not (p < end and _is_ws(buf[p])):
                    err = ERR_TOKEN
                    break
                p = skip_ws(buf, p, end)
            vstart = p
            st, val, p = _arff_value(buf, p, end, stops)
            if st == 2 or st == 4:
                err = ERR_NUMBER if st == 2 else ERR_NONFINITE
                p = vstart
                break
            if st == 1:
                hard = _push_hard(hard, n_hard, nnz, vstart, p)
                n_hard += 1
            if sparse or st == 1 or val != 0.0:
                attr[nnz] = idx
                values[nnz] = val
                nnz += 1
            k += 1
            p = skip_ws(buf, p, end)
            if p < end and buf[p] == 44:
                p += 1
                continue
            if sparse:
                if p < end and buf[p] == 125:
                    p += 1
                    break
                err = ERR_ARFF_BRACE
                break
            if p < end:
                err = ERR_NUMBER
            else:
                n_fields[row] = k
            break
        if err:
            break
        if sparse:
            p = skip_ws(buf, p, end)
            if p < end:
                err = ERR_ARFF_BRACE
                break
        indptr[row + 1] = nnz
        row += 1
        pos = eol + 1
        line += 1
    return (err, line, p, row, indptr, attr, values, row_line, n_fields, hard, n_hard)


@njit(cache=True, nogil=True)
def parse_edge_lines(buf, start, first_line):
    """Tokenise an edge list: one edge per line, ``u v [w]`` separated by whitespace and/or
    one comma; blank lines and lines starting with ``#`` or ``%`` are skipped.

    Returns ``(err, err_line, err_pos, n_edges, tok_start, tok_end, weight, edge_line,
    all_int, int_id, hard, n_hard)``; ``tok_*`` hold the byte spans of the two node names
    of each edge (2 per edge), ``int_id`` their values when every name is a plain
    non-negative integer of at most 18 digits (``all_int``), ``weight`` is 1 when absent.
    """
    n = buf.shape[0]
    nl, _, _ = count_bytes(buf, start, -1, -1)
    cap = nl + 1
    tok_start = np.empty(2 * cap, np.int64)
    tok_end = np.empty(2 * cap, np.int64)
    int_id = np.empty(2 * cap, np.int64)
    weight = np.empty(cap, np.float64)
    edge_line = np.empty(cap, np.int64)
    hard = np.empty((16, 3), np.int64)
    n_hard = 0
    all_int = True
    stops = _stop_table(np.array([44], np.uint8))
    ne = 0
    line = first_line
    pos = start
    p = start
    err = OK
    while pos < n:
        eol, end, p, skip = next_line(buf, pos, -1, 35, 37)     # "#" and "%" comments
        if skip:
            pos = eol + 1
            line += 1
            continue
        edge_line[ne] = line
        for f in range(3):
            if f > 0:                                # separator: blanks and/or one comma
                p = skip_ws(buf, p, end)
                if p < end and buf[p] == 44:
                    p += 1
                    p = skip_ws(buf, p, end)
            if f == 2:
                if p >= end:
                    weight[ne] = 1.0
                    break
                vstart = p
                st, val, p = parse_float(buf, p, end, stops)
                if st == 2 or st == 4:
                    err = ERR_NUMBER if st == 2 else ERR_NONFINITE
                    p = vstart
                    break
                if st == 1:
                    hard = _push_hard(hard, n_hard, ne, vstart, p)
                    n_hard += 1
                weight[ne] = val
                p = skip_ws(buf, p, end)
                if p < end:
                    err = ERR_EDGE_FIELDS
                break
            if p >= end or buf[p] == 44:
                err = ERR_EDGE_FIELDS
                break
            s = p
            v = 0
            digits = True
            while p < end and not _is_ws(buf[p]) and buf[p] != 44:
                c = buf[p]
                if c < 32 or c == 127:
                    err = ERR_CONTROL
                    break
                if digits and _is_digit(c) and p - s < 18:
                    v = v * 10 + (c - 48)
                else:
                    digits = False
                p += 1
            if err:
                break
            if p - s > 256:
                err = ERR_TOKEN_LONG
                p = s
                break
            if not digits:
                all_int = False
            tok_start[2 * ne + f] = s
            tok_end[2 * ne + f] = p
            int_id[2 * ne + f] = v
        if err:
            break
        ne += 1
        pos = eol + 1
        line += 1
    return (err, line, p, ne, tok_start, tok_end, weight, edge_line, all_int, int_id, hard,
            n_hard)


@njit(cache=True, nogil=True)
def intern_tokens(buf, tok_start, tok_end, seed):
    """Number byte-span tokens by order of first appearance.

    An open-addressing hash table (FNV-1a over the token's bytes, seeded with ``seed`` so
    that colliding names cannot be prepared in advance, then splitmix64) maps each distinct
    token to its id; equal hashes are confirmed by comparing bytes. Memory is O(number of
    tokens) whatever their length, time O(total token bytes) expected.

    Returns ``(ids, first)``: the id of every token and, per id, the index of the token
    where it first appears.
    """
    m = tok_start.shape[0]
    size = 2
    while size < 2 * m:
        size *= 2
    mask = np.uint64(size - 1)
    table = np.full(size, -1, np.int64)
    first = np.empty(m, np.int64)
    ids = np.empty(m, np.int64)
    n_unique = 0
    for i in range(m):
        s = tok_start[i]
        e = tok_end[i]
        h = np.uint64(14695981039346656037) ^ np.uint64(seed)
        for q in range(s, e):
            h = (h ^ np.uint64(buf[q])) * np.uint64(1099511628211)
        slot = _mix_hash(h) & mask
        while True:
            u = table[slot]
            if u < 0:
                table[slot] = n_unique
                first[n_unique] = i
                ids[i] = n_unique
                n_unique += 1
                break
            j = first[u]
            s2 = tok_start[j]
            if tok_end[j] - s2 == e - s:
                same = True
                for q in range(e - s):
                    if buf[s + q] != buf[s2 + q]:
                        same = False
                        break
                if same:
                    ids[i] = u
                    break
            slot = (slot + np.uint64(1)) & mask
    return ids, first[:n_unique].copy()
