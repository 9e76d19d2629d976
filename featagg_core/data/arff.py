"""MULAN ARFF (sparse and dense rows) with its XML label header: :func:`load_arff`.
"""
from __future__ import annotations

import os
import re

import numpy as np

from featagg_core.utils.bounded import parse_xml_safely
from featagg_core.data._containers import DatasetError, MultiLabelData
from featagg_core.data._input import _blank, _budget, _fail_for, _guard, _read_bytes, _stem
from featagg_core.data._checks import _first_duplicate
from featagg_core.data._text import (
    _fill_hard,
    _finish_matrix,
    _kernel_error,
    _line_of_entry,
    _Parsed,
)
from featagg_core.utils.docstrings import fill_doc


_DATA_RE = re.compile(rb"(?im)^[ \t]*@data[ \t]*\r?$")


def _parse_label_xml(xml, arff_name: str) -> list:
    """The ``<label name=...>`` names of a MULAN label file (nested ones included), in
    document order: one expat pass (DTDs refused), duplicates found with a set."""
    raw, name = _read_bytes(xml)
    if _blank(raw):
        raise DatasetError("empty label XML file", path=name)
    names, seen = [], set()

    def start(tag, attrs):
        if tag.rsplit("}", 1)[-1] != "label":
            return
        label = attrs.get("name")
        if label is None:
            raise DatasetError("a <label> element has no name attribute", path=name)
        if label in seen:
            raise DatasetError(f"label {label!r} is named twice", path=name)
        seen.add(label)
        names.append(label)

    parse_xml_safely(raw, _fail_for(name), start=start)
    if not names:
        raise DatasetError("no <label name=...> elements in the label XML", path=name)
    return names


def _arff_name(text: str, name: str, line: int) -> tuple[str, str]:
    """Split '<name> <rest>' where name may be quoted ('...' or "...", backslash escapes)."""
    text = text.lstrip()
    if not text:
        raise DatasetError("@attribute without a name", path=name, line=line)
    q = text[0]
    if q in "'\"":
        out, i = [], 1
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            if c == q:
                return "".join(out), text[i + 1:]
            out.append(c)
            i += 1
        raise DatasetError("unterminated quoted attribute name", path=name, line=line)
    m = re.match(r"([^\s{]+)(.*)$", text, re.S)
    return m.group(1), m.group(2)


def _parse_arff_header(raw: bytes, name: str):
    """(relation, [(attr name, kind, nominal values)], data offset, data first line)."""
    if _blank(raw):
        raise DatasetError("empty file", path=name)
    m = _DATA_RE.search(raw)
    if m is None:
        raise DatasetError("no @data line (not an ARFF file?)", path=name)
    try:
        head = raw[:m.start()].decode("utf-8")
    except UnicodeDecodeError as exc:
        ln = raw[:exc.start].count(b"\n") + 1
        raise DatasetError(f"header is not valid UTF-8 ({exc.reason})", path=name,
                           line=ln) from None
    relation, attrs = "", []
    seen = set()
    for ln, line in enumerate(head.split("\n"), start=1):
        s = line.strip()
        if not s or s.startswith("%"):
            continue
        low = s.lower()
        if low.startswith("@relation"):
            relation = s[9:].strip().strip("'\"")
        elif low.startswith("@attribute"):
            aname, rest = _arff_name(s[10:], name, ln)
            t = rest.strip()
            tl = t.lower()
            if tl in ("numeric", "real", "integer"):
                attrs.append((aname, "numeric", None))
            elif t.startswith("{"):
                if not t.endswith("}"):
                    raise DatasetError(f"attribute {aname!r}: nominal list not closed with "
                                       f"'}}'", path=name, line=ln)
                vals = [v.strip().strip("'\"") for v in t[1:-1].split(",")]
                attrs.append((aname, "nominal", vals))
            elif tl.startswith(("string", "date", "relational")):
                raise DatasetError(f"attribute {aname!r} has type {t.split()[0]}; only "
                                   f"numeric and numeric-coded nominal attributes are "
                                   f"supported", path=name, line=ln)
            else:
                raise DatasetError(f"attribute {aname!r}: unknown type {t[:30]!r}",
                                   path=name, line=ln)
            if aname in seen:
                raise DatasetError(f"attribute {aname!r} declared twice", path=name, line=ln)
            seen.add(aname)
        elif low.startswith("@end"):
            continue
        else:
            raise DatasetError(f"unexpected header line {s[:40]!r}", path=name, line=ln)
    if not attrs:
        raise DatasetError("no @attribute declarations", path=name)
    nl = raw.find(b"\n", m.end())
    start = len(raw) if nl < 0 else nl + 1
    first_line = raw[:m.start()].count(b"\n") + 2
    return relation, attrs, start, first_line


def _arff_label_mask(attrs, relation, name, xml, n_labels, path_or_file):
    names = [a[0] for a in attrs]
    n_attr = len(attrs)
    is_label = np.zeros(n_attr, bool)
    if xml is None and n_labels is None and isinstance(path_or_file, (str, os.PathLike)):
        p = os.fspath(path_or_file)
        folder, base = os.path.split(p)
        stem = os.path.splitext(base)[0]
        cands = [stem]
        m = re.match(r"^(.*?)[-_.](train|test|trn|tst)$", stem, re.I)
        if m:
            cands.append(m.group(1))
        for c in cands:
            q = os.path.join(folder, c + ".xml")
            if os.path.isfile(q):
                xml = q
                break
    if xml is not None:
        lab = _parse_label_xml(xml, name)
        pos = {a: i for i, a in enumerate(names)}
        missing = [l for l in lab if l not in pos]
        if missing:
            raise DatasetError(f"label {missing[0]!r} of the XML is not an attribute of the "
                               f"ARFF file", path=name, field=missing[0])
        is_label[[pos[l] for l in lab]] = True
    elif n_labels is not None:
        k = int(n_labels)
        if not 0 < k < n_attr:
            raise DatasetError(f"n_labels={k} but the file has {n_attr} attributes",
                               path=name)
        is_label[n_attr - k:] = True
    else:
        m = re.search(r"-C\s+(-?\d+)", relation)
        if m is None:
            raise DatasetError("cannot tell which attributes are labels: pass xml= (MULAN "
                               "label file) or n_labels= (the last attributes)", path=name)
        k = int(m.group(1))
        if k == 0 or abs(k) >= n_attr:
            raise DatasetError(f"MEKA option -C {k} does not fit {n_attr} attributes",
                               path=name, field="@relation")
        if k > 0:
            is_label[:k] = True
        else:
            is_label[n_attr + k:] = True
    for i in np.flatnonzero(is_label):
        a, kind, vals = attrs[i]
        if kind == "nominal" and not set(vals) <= {"0", "1"}:
            raise DatasetError(f"label attribute {a!r} must be binary {{0,1}}, declared "
                               f"{{{','.join(vals)}}}", path=name, field=a)
    for i in np.flatnonzero(~is_label):
        a, kind, vals = attrs[i]
        if kind == "nominal":
            for v in vals:
                try:
                    float(v)
                except ValueError:
                    raise DatasetError(f"nominal attribute {a!r} has non-numeric value "
                                       f"{v!r}; only numeric-coded nominal attributes are "
                                       f"supported", path=name, field=a) from None
    return is_label


def _parse_arff_rows(raw: bytes, name: str, start: int, first_line: int, n_attr: int):
    from featagg_core._kernels.parse import parse_arff_data
    buf = np.frombuffer(raw, dtype=np.uint8)
    nl, ncomma = raw.count(b"\n", start), raw.count(b",", start)
    _budget().charge(56 * (nl + 2) + 16 * ncomma, "parsing the @data rows", _fail_for(name))
    (err, eline, epos, n_rows, indptr, attr, values, row_line, n_fields, hard,
     n_hard) = parse_arff_data(buf, start, first_line)
    if err:
        raise _kernel_error(err, raw, name, eline, epos)
    p = _Parsed()
    p.name = name
    p.n_rows = int(n_rows)
    p.indptr = indptr[:n_rows + 1]
    nnz = int(p.indptr[-1])
    p.indices = attr[:nnz]
    p.values = values[:nnz]
    p.row_line = row_line[:n_rows]
    _fill_hard(p.values, hard, n_hard, raw)
    nf = n_fields[:n_rows]
    bad = (nf >= 0) & (nf != n_attr)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise DatasetError(f"dense row has {int(nf[r])} fields, expected {n_attr} (one per "
                           f"attribute)", path=name, line=int(p.row_line[r]))
    if p.n_rows == 0:
        raise DatasetError("no data rows after @data", path=name)
    return p


@_guard
@fill_doc
def load_arff(path_or_file, *, xml=None, n_labels=None):
    """Read a MULAN ARFF file (sparse ``{i v, ...}`` and dense rows) with its labels.

    Which attributes are labels: ``xml=`` (MULAN's label XML: every ``<label name=...>``,
    nested ones included); else ``n_labels=`` (the last attributes); else a ``<stem>.xml``
    next to a file given by path (``bibtex-train.arff`` also finds ``bibtex.xml``); else
    MEKA's ``-C n`` in the relation name. Labels may be anywhere among the attributes;
    label columns keep the attributes' order. Feature and label names are kept.
    A missing value ``?`` is read as absent (0) for a feature and is an error for a label.
    Nominal features must have numeric values (their numeric value is stored).

    Parameters
    ----------
    path_or_file : str, os.PathLike or binary file-like
        The ARFF file (a file-like object is named by its ``.name``).
    xml : str, os.PathLike or binary file-like, optional
        MULAN's label XML, naming the label attributes.
    n_labels : int, optional
        The number of label attributes, the last ones (when there is no XML).
    {load_limits}

    Returns
    -------
    MultiLabelData
        X csr float32 of the features, Y csr float32 of 0/1 of the labels, with their
        attribute names; named by the file's stem.

    Raises
    ------
    DatasetError
        For any malformed input, or when the labels cannot be told from the features.
    """
    raw, name = _read_bytes(path_or_file)
    relation, attrs, start, first_line = _parse_arff_header(raw, name)
    is_label = _arff_label_mask(attrs, relation, name, xml, n_labels, path_or_file)
    n_attr = len(attrs)
    p = _parse_arff_rows(raw, name, start, first_line, n_attr)
    if p.indices.size:
        over = p.indices >= n_attr
        if over.any():
            q = int(np.flatnonzero(over)[0])
            raise DatasetError(f"attribute index {int(p.indices[q])} out of range (the header "
                               f"declares {n_attr} attributes)", path=name,
                               line=_line_of_entry(p, p.indptr, q))
    r, c = _first_duplicate(p.indptr, p.indices)
    if r >= 0:
        raise DatasetError(f"attribute index {int(c)} appears twice in the row", path=name,
                           line=int(p.row_line[r]))
    lab_entry = is_label[p.indices]
    miss = np.isnan(p.values)
    if (miss & lab_entry).any():
        q = int(np.flatnonzero(miss & lab_entry)[0])
        raise DatasetError(f"missing value '?' for label {attrs[int(p.indices[q])][0]!r}",
                           path=name, line=_line_of_entry(p, p.indptr, q))
    feat_col = np.cumsum(~is_label) - 1
    lab_col = np.cumsum(is_label) - 1
    rows = np.repeat(np.arange(p.n_rows), np.diff(p.indptr))

    n_feat, n_lab = int((~is_label).sum()), int(is_label.sum())

    def sub(mask, colmap, n_cols, binary, what):
        cnt = np.bincount(rows[mask], minlength=p.n_rows)
        ptr = np.concatenate([[0], np.cumsum(cnt)])
        vals = np.where(miss[mask], 0.0, p.values[mask])
        return _finish_matrix(p, ptr, colmap[p.indices[mask]], vals, n_cols, what=what,
                              binary=binary)

    X = sub(~lab_entry, feat_col, n_feat, False, "feature")
    Y = sub(lab_entry, lab_col, n_lab, True, "label")
    names = [a[0] for a in attrs]
    return MultiLabelData(X=X, Y=Y,
                          feature_names=[n for n, l in zip(names, is_label) if not l],
                          label_names=[n for n, l in zip(names, is_label) if l],
                          name=_stem(name), source=f"MULAN ARFF: {name}")
