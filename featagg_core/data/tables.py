""":func:`load_categorical`: CSV / TSV / parquet (and npz) tables of categorical columns with
a binary label.
"""
from __future__ import annotations

import io

import numpy as np

from featagg_core.data._containers import CategoricalData, DatasetError
from featagg_core.utils.bounded import reason
from featagg_core.data._input import (
    _blank,
    _budget,
    _fail_for,
    _guard,
    _NamedBytes,
    _read_bytes,
    _stem,
    _suffix,
)
from featagg_core.data._checks import _check_declared
from featagg_core.data.npz import _load_npz_any
from featagg_core.utils.docstrings import fill_doc


_TRUE_WORDS = {"1", "true", "yes", "y", "t", "1.0", "+1", "pos", "positive"}


_FALSE_WORDS = {"0", "false", "no", "n", "f", "0.0", "-1", "neg", "negative"}


def _binary_labels(col, label: str, name: str, positive=None, threshold=None) -> np.ndarray:
    """Map a label column to int8 0/1.

    Rule: with ``positive=`` the rows equal to it (compared as text) are 1, the others 0;
    with ``threshold=`` the rows whose label, read as a number, is at least the threshold
    are 1 (a rating >= 4), the others 0 (a label that is no number is an error naming its
    row; both classes must occur); else values that all read as booleans (0/1, true/false, yes/no, t/f, y/n, +1/-1,
    case-insensitive) map naturally; else a column with exactly two distinct values maps
    the larger one in sorted text order to 1 (Adult: '<=50K' -> 0, '>50K' -> 1). Missing
    labels and a third value are errors naming the row.
    """
    import pandas as pd
    s = col.astype(object)
    miss = s.isna().to_numpy()
    if miss.any():
        r = int(np.flatnonzero(miss)[0])
        raise DatasetError(f"missing label in row {r + 1}", path=name, field=label)
    txt = pd.Series(s.astype(str).str.strip().to_numpy(), dtype=object)
    if threshold is not None and positive is not None:
        raise DatasetError("give positive= or threshold=, not both", path=name, field=label)
    if threshold is not None:
        num = pd.to_numeric(txt, errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(num))
        if bad.size:
            raise DatasetError(f"threshold={threshold!r} needs a numeric label column; row "
                               f"{int(bad[0]) + 1} has {txt.iloc[int(bad[0])]!r}", path=name,
                               field=label)
        y = (num >= float(threshold)).astype(np.int8)
        if y.all() or not y.any():
            raise DatasetError(f"threshold={threshold!r} puts every row in one class (the "
                               f"labels run from {num.min():g} to {num.max():g})", path=name,
                               field=label)
        return y
    if positive is not None:
        pos = str(positive).strip()
        if not (txt == pos).any():
            raise DatasetError(f"positive={positive!r} never occurs in the label column",
                               path=name, field=label)
        return (txt == pos).to_numpy().astype(np.int8)
    low = txt.str.lower()
    uniq = set(low.unique().tolist())
    if uniq <= (_TRUE_WORDS | _FALSE_WORDS):
        return low.isin(_TRUE_WORDS).to_numpy().astype(np.int8)
    vals = sorted(txt.unique().tolist())
    if len(vals) == 2:
        return (txt == vals[1]).to_numpy().astype(np.int8)
    if len(vals) == 1:
        raise DatasetError(f"label column has a single value {vals[0]!r}: pass positive= to "
                           f"say which value is the positive class", path=name, field=label)
    seen = pd.unique(txt)          # order of appearance: the third value is the culprit
    bad = int(np.flatnonzero((txt == seen[2]).to_numpy())[0])
    raise DatasetError(f"label column is not binary: {len(vals)} distinct values (e.g. "
                       f"{', '.join(map(repr, vals[:4]))}); row {bad + 1} brings a third "
                       f"value {seen[2]!r}; pass positive= (one value is the positive "
                       f"class) or threshold= (a number: rows at or above it are positive) "
                       f"to binarise", path=name,
                       field=label)


#: pandas' default missing-value spellings (``keep_default_na``), kept for compatibility
_NA_TEXT = frozenset(["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                      "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                      "nan", "null"])


def _read_delimited(text: str, sep: str, header: bool, src: str):
    """A CSV/TSV table as a DataFrame of one object block (cells str, missing = NaN).

    Parsed by Python's C ``csv`` module (quotes with doubled quotes, a quoted field may
    span lines, spaces after a separator skipped) following pandas' ``read_csv`` rules:
    blank lines are skipped, a header name repeated gets ``.1``, ``.2`` ..., an empty one
    ``Unnamed: i``, a row shorter than the header is padded with missing values, a longer
    one is an error naming its line, and pandas' NA spellings are missing values. Unlike
    pandas it builds one block and no per-column objects, so very wide tables stay cheap
    (measured in ``benchmarks/results/data_notes.md``)."""
    import csv
    import pandas as pd
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, quotechar='"',
                        doublequote=True, skipinitialspace=True, strict=False)
    rows, lines = [], []
    names = None
    try:
        for row in reader:
            if not row or (len(row) == 1 and not row[0]):
                continue                                  # blank line
            if names is None and header:
                names = row
                continue
            rows.append(row)
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise DatasetError(f"malformed table ({exc})", path=src, line=reader.line_num) from None
    if names is None:
        if not rows:
            raise DatasetError("empty file", path=src)
        names = [f"c{i}" for i in range(len(rows[0]))]
    w = len(names)
    if rows and len(rows[0]) == w + 1 and header:
        raise DatasetError("malformed table: the first row has more fields than the header",
                           path=src, line=lines[0])
    seen, out_names = {}, []
    for i, nm in enumerate(names):
        base = nm if nm != "" else f"Unnamed: {i}"
        cand, k = base, seen.get(base, 0)
        while cand in seen:
            k += 1
            cand = f"{base}.{k}"
        seen[base] = k
        seen[cand] = 0
        out_names.append(cand)
    arr = np.empty((len(rows), w), dtype=object)
    lengths = np.fromiter((len(r) for r in rows), np.int64, len(rows))
    if lengths.size and lengths.max() > w:
        q = int(np.flatnonzero(lengths > w)[0])
        raise DatasetError(f"malformed table (expected {w} fields in line {lines[q]}, saw "
                           f"{int(lengths[q])})", path=src, line=lines[q])
    full = lengths == w
    if full.all():
        if rows:
            arr[:] = rows
    else:
        for i, r in enumerate(rows):
            arr[i, :len(r)] = r
            arr[i, len(r):] = ""
    if arr.size:
        arr[np.frompyfunc(_NA_TEXT.__contains__, 1, 1)(arr).astype(bool)] = np.nan
    return pd.DataFrame(arr, columns=out_names, dtype=object, copy=False)


#: bytes the parquet reader holds per byte of a file's footer (its schema and row-group
#: index, parsed before anything else: 16 MB of footer declaring 10^6 columns took 1.4 GB)
PARQUET_FOOTER_FACTOR = 96
#: bytes a column costs whatever its rows (its schema entry, arrow and pandas objects)
COLUMN_BYTES = 4 << 10
#: bytes a parsed CSV cell costs (its text object, the row lists and the table's slot;
#: measured ~81 on 2-letter cells, benchmarks/results/fuzz.md)
CSV_CELL_BYTES = 96


def _check_parquet_size(raw: bytes, src: str) -> None:
    """Charge a parquet file's declared content to the load's budget before reading it:
    its footer (before it is parsed), then the uncompressed bytes its row groups declare,
    :data:`COLUMN_BYTES` per column (0 rows x 10^6 columns is no free table) and 64 bytes
    per cell (the text object each cell becomes). A few kB of dictionary- or
    run-length-encoded data can declare 10^9 rows; that is refused here, not discovered
    by running out of memory."""
    import pyarrow.parquet as pq
    fail = _fail_for(src)
    if len(raw) >= 12 and raw[-4:] == b"PAR1":
        footer = int.from_bytes(raw[-8:-4], "little")
        _budget().charge(PARQUET_FOOTER_FACTOR * min(footer, len(raw)),
                         f"the parquet file's schema ({footer:,} bytes of footer)", fail)
    try:
        meta = pq.ParquetFile(io.BytesIO(raw)).metadata
        rows, cols = int(meta.num_rows), int(meta.num_columns)
        declared = sum(int(meta.row_group(i).total_byte_size) for i in range(meta.num_row_groups))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds on bad input
        raise DatasetError(f"not a readable parquet file ({reason(exc)})",
                           path=src) from None
    _check_declared({"rows": rows, "columns": cols}, name=src)
    _budget().charge(max(declared, 0) + 64 * rows * max(cols, 1) + COLUMN_BYTES * cols,
                     f"the parquet table ({rows:,} rows x {cols:,} columns)", fail)


def _charge_csv_cells(raw: bytes, sep: str, src: str) -> None:
    """Charge the cells a CSV/TSV will parse into, counted before it is decoded: every
    separator and line end starts a cell (an upper bound: quoted separators count too),
    at :data:`CSV_CELL_BYTES` each (the columns are one block: a header of 10^5 names
    costs its cells, not 10^5 column objects)."""
    cells = raw.count(sep.encode()) + raw.count(b"\n") + 1
    _budget().charge(CSV_CELL_BYTES * cells, f"parsing the table's {cells:,} cells",
                     _fail_for(src))


def _as_text(sub):
    """The cells of DataFrame ``sub`` as one 2-D object array of text, missing values as
    ``"<NA>"``. Whole blocks at a time (a per-column loop pays pandas' overhead once per
    column, which dominates on very wide tables; ``benchmarks/results/data_notes.md``):
    string columns as they are, every other column through ``str`` of its Python value."""
    import pandas as pd
    na = sub.isna().to_numpy()
    dtypes = list(sub.dtypes)
    if sub.shape[1] and all(dt == object for dt in dtypes):
        arr = sub.to_numpy(dtype=object, copy=True)
        # cells that are not already text (parquet objects) go through str
        not_str = np.frompyfunc(lambda v: type(v) is not str, 1, 1)(arr).astype(bool) & ~na
        if not_str.any():
            arr[not_str] = np.frompyfunc(str, 1, 1)(arr[not_str])
    else:
        arr = np.empty(sub.shape, dtype=object)
        is_text = np.array([pd.api.types.is_string_dtype(dt) and dt != object
                            for dt in dtypes], bool)
        text, other = np.flatnonzero(is_text), np.flatnonzero(~is_text)
        if text.size:
            arr[:, text] = sub.iloc[:, text].to_numpy(dtype=object)
        vals = sub.iloc[:, other].astype(object).to_numpy(dtype=object)
        arr[:, other] = np.frompyfunc(str, 1, 1)(vals) if vals.size else vals
    if na.any():
        arr[na] = "<NA>"
    return arr


@_guard
@fill_doc
def load_categorical(path_or_file, label=None, columns=None, sep=None, *, positive=None,
                     threshold=None, header=True, name=None) -> CategoricalData:
    """Load a table of categorical columns with a binary label: CSV, TSV, parquet or the
    npz of :func:`save_npz`.

    ``label``: the label column (name, or position when ``header=False``); required unless
    the table has a single column named ``label``/``target``/``class``/``y``/``click``.
    ``columns``: the categorical columns to keep (default: all others). ``sep``: CSV
    separator (default: tab for .tsv/.tab, else sniffed between ',', '\\t' and ';' from
    the first line). Every value is kept as text (numbers as written; parquet numbers via
    ``str``); missing values (empty cells and pandas' default NA spellings such as
    ``NA``/``NaN``/``null``) become the token ``"<NA>"``. Labels follow
    :func:`_binary_labels` (``positive=`` picks the positive value). Files must be UTF-8.

    Parameters
    ----------
    path_or_file : str, os.PathLike or binary file-like
        The table file; a file-like object is named by its ``.name``.
    label : str or int, optional
        The label column: its name, or its position when ``header=False``.
    columns : sequence of str, optional
        The categorical columns to keep (default: all but the label).
    sep : str, optional
        The CSV separator (default: tab for .tsv/.tab, else sniffed).
    positive : object, optional
        The label value that is the positive class (compared as text).
    threshold : float, optional
        For a numeric label column (a rating): the rows at or above it are the positive
        class. Not with ``positive``.
    header : bool
        Whether the first row names the columns (else they are ``c0``, ``c1``, ...).
    name : str, optional
        The dataset's name (default: the file's stem); an npz keeps the name it stores.
    {load_limits}

    Returns
    -------
    CategoricalData
        The columns as text (missing = ``"<NA>"``) and int8 0/1 labels.

    Raises
    ------
    DatasetError
        For any malformed input: no or several label candidates, a label column that is
        not binary, missing or repeated columns, an npz of another kind.
    """
    import pandas as pd
    raw, src = _read_bytes(path_or_file)
    if _blank(raw):
        raise DatasetError("empty file", path=src)
    ext = _suffix(src)
    if raw[:4] == b"PK\x03\x04" or ext == ".npz":
        data = _load_npz_any(_NamedBytes(raw, src))
        if not isinstance(data, CategoricalData):
            raise DatasetError(f"npz holds a {data.kind} dataset, not a table", path=src,
                               field="kind")
        return data
    if raw[:4] == b"PAR1" or ext == ".parquet":
        _check_parquet_size(raw, src)
        try:
            df = pd.read_parquet(io.BytesIO(raw))
        except Exception as exc:  # noqa: BLE001
            raise DatasetError(f"not a readable parquet file ({reason(exc)})", path=src) from None
        if not header:
            df.columns = [f"c{i}" for i in range(df.shape[1])]
    else:
        if sep is None:
            if ext in (".tsv", ".tab"):
                sep = "\t"
            else:
                first = raw.split(b"\n", 1)[0]
                counts = {s: first.count(s.encode()) for s in (",", "\t", ";")}
                sep = max(counts, key=counts.get) if max(counts.values()) else ","
        _charge_csv_cells(raw, sep, src)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})",
                               path=src, line=raw[:exc.start].count(b"\n") + 1) from None
        df = _read_delimited(text, sep, header, src)
    df.columns = [str(c) for c in df.columns]
    if len(set(df.columns)) != len(df.columns):
        seen_cols = set()
        dup = next(c for c in df.columns if c in seen_cols or seen_cols.add(c))
        raise DatasetError(f"column {dup!r} appears twice", path=src, field=dup)
    if isinstance(label, int) and not header:
        label = f"c{label}"
    if label is None:
        cands = [c for c in df.columns if c.lower() in ("label", "target", "class", "y",
                                                        "click")]
        if len(cands) != 1:
            raise DatasetError("say which column is the binary label: label=... "
                               f"(columns: {', '.join(list(df.columns)[:12])})", path=src)
        label = cands[0]
    label = str(label)
    if label not in df.columns:
        raise DatasetError(f"no label column {label!r} (columns: "
                           f"{', '.join(list(df.columns)[:12])})", path=src, field=label)
    if len(df) == 0:
        raise DatasetError("the table has no rows", path=src)
    y = _binary_labels(df[label], label, src, positive, threshold)
    if columns is None:
        cols = [c for c in df.columns if c != label]
    else:
        cols = [str(c) for c in columns]
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise DatasetError(f"no column {missing[0]!r}", path=src, field=missing[0])
        if label in cols:
            raise DatasetError(f"the label {label!r} cannot also be a feature column",
                               path=src, field=label)
    if not cols:
        raise DatasetError("no categorical columns besides the label", path=src)
    out = pd.DataFrame(_as_text(df[cols]), columns=cols, index=pd.RangeIndex(len(df)),
                       dtype=object, copy=False)
    return CategoricalData(table=out, labels=y, label_name=label, name=name or _stem(src),
                           source=f"table: {src}")
