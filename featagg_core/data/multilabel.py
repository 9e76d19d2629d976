""":func:`load_dataset`: the multi-label reader that picks the format (npz, ARFF, XC,
svmlight) by extension and content and reads the held-out split (``test=``).
"""
from __future__ import annotations

from featagg_core.data._containers import DatasetError, MultiLabelData
from featagg_core.data._input import _guard, _raw_file, _read_bytes, _source_name, _stem, _suffix
from featagg_core.data.npz import _load_npz_any
from featagg_core.data.xc import _load_xc_raw
from featagg_core.data.svmlight import _svmlight_assemble, _svmlight_parse
from featagg_core.data.arff import load_arff
from featagg_core.utils.docstrings import fill_doc


def _sniff(raw: bytes, ext: str) -> str:
    """'npz' | 'arff' | 'xc' | 'xc_split' | 'svmlight' from the extension and first bytes."""
    if raw[:4] == b"PK\x03\x04" or ext == ".npz":
        return "npz"
    if ext == ".arff":
        return "arff"
    head = raw[:4096].lstrip()
    first = head.split(b"\n", 1)[0].strip()
    if head[:1] == b"%" or first.lower().startswith(b"@relation"):
        return "arff"
    if ext in (".svm", ".libsvm", ".svmlight"):
        return "svmlight"
    parts = first.split()
    if parts and all(p.isdigit() for p in parts):
        if len(parts) == 3:
            return "xc"
        if len(parts) == 2:
            return "xc_split"
    return "svmlight"


@_guard
@fill_doc
def load_dataset(path_or_file, *, test=None, labels_path=None, test_labels_path=None,
                 xml=None, n_labels=None, zero_based="auto", n_features=None,
                 format=None, name=None) -> MultiLabelData:
    """Load a multi-label dataset from a path or a binary file-like object with ``.name``.

    Formats (``format=`` forces one, else by extension and content): ``.npz``
    (:func:`save_npz`), MULAN ARFF (``.arff``, or text starting with ``%``/``@relation``;
    ``xml=``/``n_labels=`` as in :func:`load_arff`), XC text (first line ``N D L``; the
    split format ``N D`` needs ``labels_path=``), otherwise svmlight/libsvm multilabel
    (``zero_based``, ``n_features``, ``n_labels`` as in :func:`load_svmlight`).

    ``test=`` loads a second file of the same format into ``X_test``/``Y_test`` (with
    ``test_labels_path=`` for the XC split format); the two must agree on the number of
    features and labels (svmlight: shapes and the 1-based shift are decided jointly, as
    ``sklearn.datasets.load_svmlight_files`` does). Nothing but DatasetError escapes.

    Parameters
    ----------
    path_or_file : str, os.PathLike or binary file-like
        The (training) file; a file-like object is named by its ``.name``.
    test : str, os.PathLike or binary file-like, optional
        A second file of the same format, read into ``X_test`` / ``Y_test``.
    labels_path : str, os.PathLike or binary file-like, optional
        The XC split format's labels file of ``path_or_file``.
    test_labels_path : str, os.PathLike or binary file-like, optional
        The XC split format's labels file of ``test``.
    xml : str, os.PathLike or binary file-like, optional
        ARFF only: MULAN's label XML (see :func:`load_arff`).
    n_labels : int, optional
        ARFF: the number of label attributes (the last ones); svmlight: the number of
        labels.
    zero_based : {"auto", True, False}
        svmlight only: the index base (see :func:`load_svmlight`).
    n_features : int, optional
        svmlight only: the number of features.
    format : {"npz", "arff", "xc", "xc_split", "svmlight"}, optional
        Force a format instead of guessing it from the extension and content.
    name : str, optional
        The dataset's name (default: the file's stem, or the name an npz stores).
    {load_limits}

    Returns
    -------
    MultiLabelData
        The training part, and the held-out part when ``test`` is given.

    Raises
    ------
    DatasetError
        For any malformed input, an npz of another kind, an unknown ``format``, or a test
        file whose features or labels differ from the training file's.
    """
    raw, src = _read_bytes(path_or_file)
    ext = _suffix(src)
    fmt = format or _sniff(raw, ext)
    if fmt == "npz":
        data = _load_npz_any(_raw_file(raw, src))
        if not isinstance(data, MultiLabelData):
            raise DatasetError(f"npz holds a {data.kind} dataset, not a multi-label one "
                               f"(use load_graph/load_categorical)", path=src,
                               field="kind")
        if test is not None:
            t = load_dataset(test, format="npz")
            data.X_test, data.Y_test = t.X, t.Y
    elif fmt == "arff":
        data = load_arff(_raw_file(raw, src, path_or_file), xml=xml, n_labels=n_labels)
        if test is not None:
            t = load_arff(test, xml=xml, n_labels=n_labels)
            if t.feature_names != data.feature_names or t.label_names != data.label_names:
                raise DatasetError("the test file's attributes differ from the training "
                                   "file's", path=_source_name(test))
            data.X_test, data.Y_test = t.X, t.Y
    elif fmt in ("xc", "xc_split"):
        data = _load_xc_raw(raw, src, labels_path)
        if test is not None:
            traw, tname = _read_bytes(test)
            t = _load_xc_raw(traw, tname, test_labels_path)
            data.X_test, data.Y_test = t.X, t.Y
    elif fmt == "svmlight":
        parsed = [_svmlight_parse(raw, src)]
        if test is not None:
            traw, tname = _read_bytes(test)
            parsed.append(_svmlight_parse(traw, tname))
        mats = _svmlight_assemble(parsed, zero_based, n_features, n_labels)
        data = MultiLabelData(X=mats[0][0], Y=mats[0][1], name=_stem(src),
                              source=f"svmlight: {src}")
        if test is not None:
            data.X_test, data.Y_test = mats[1]
    else:
        raise DatasetError(f"unknown format {fmt!r} (npz, arff, xc, xc_split, svmlight)",
                           path=src)
    if data.X_test is not None:
        if data.X_test.shape[1] != data.X.shape[1] or data.Y_test.shape[1] != data.Y.shape[1]:
            raise DatasetError(f"test set has {data.X_test.shape[1]} features and "
                               f"{data.Y_test.shape[1]} labels, training set "
                               f"{data.X.shape[1]} and {data.Y.shape[1]}",
                               path=_source_name(test))
    if name is not None:
        data.name = name
    return data
