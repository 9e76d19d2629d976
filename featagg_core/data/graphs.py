""":func:`load_graph`: edge lists (numba tokeniser), GraphML and GML (networkx), and the
dispatch to the MATLAB and npz readers.
"""
from __future__ import annotations

import io
import os
import re

import numpy as np
import scipy.sparse as sp

from featagg_core.data._containers import DatasetError, GraphData
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
from featagg_core.data._checks import _check_declared, _MAX_DIM, _reject_dtd
from featagg_core.data._text import _fill_hard, _kernel_error
from featagg_core.data.npz import _load_npz_any
from featagg_core.data._graph_parts import (
    _classes_from_values,
    _file_edges,
    _labels_from_any,
    _matrix_from_any,
    _undirected,
)
from featagg_core.data.matlab import _load_mat
from featagg_core.utils.docstrings import fill_doc


_HEADER_WORDS = {"source", "target", "src", "dst", "from", "to", "weight", "u", "v", "w",
                 "node1", "node2", "id1", "id2", "i", "j", "head", "tail", "node_1", "node_2"}


def _parse_edge_list(raw: bytes, name: str, node_ids: str):
    """-> (rows, cols, weights, lines, n_nodes, node_names or None)."""
    from featagg_core._kernels.parse import intern_tokens, parse_edge_lines
    if _blank(raw):
        raise DatasetError("empty file", path=name)
    if node_ids not in ("auto", "int", "appearance"):
        raise ValueError(f"node_ids must be 'auto', 'int' or 'appearance', got {node_ids!r}")
    # a header line such as "source,target,weight" is skipped
    start, first_line = 0, 1
    while True:
        nl = raw.find(b"\n", start)
        end = len(raw) if nl < 0 else nl
        s = raw[start:end].strip()
        if s and not s.startswith((b"#", b"%")):
            words = s.replace(b",", b" ").lower().split()
            try:
                is_header = all(wd.decode("ascii").strip("'\"") in _HEADER_WORDS
                                for wd in words)
            except UnicodeDecodeError:
                is_header = False
            if is_header and 2 <= len(words) <= 3:
                start, first_line = end + 1, first_line + 1
            break
        if nl < 0:
            break
        start, first_line = nl + 1, first_line + 1
    buf = np.frombuffer(raw, np.uint8)
    # the tokeniser allocates 64 bytes per line (two name spans, two integer ids, a weight
    # and a line number), the interning below 48 more
    _budget().charge(112 * (raw.count(b"\n", start) + 1), "parsing the edge list",
                     _fail_for(name))
    (err, eline, epos, ne, ts, te, w, eline_arr, all_int, int_id, hard,
     n_hard) = parse_edge_lines(buf, min(start, len(raw)), first_line)
    if err:
        raise _kernel_error(err, raw, name, eline, epos)
    if ne == 0:
        raise DatasetError("no edges in the file", path=name)
    ts, te, w, lines = ts[:2 * ne], te[:2 * ne], w[:ne], eline_arr[:ne]
    _fill_hard(w, hard, n_hard, raw)
    if node_ids == "int" and not all_int:
        raise DatasetError("node_ids='int' but a node name is not a non-negative integer",
                           path=name)
    use_int = all_int and node_ids != "appearance"
    if use_int:
        ids = int_id[:2 * ne]
        n = int(ids.max()) + 1
        if node_ids == "auto" and n > 2 * np.unique(ids).size + 1:
            use_int = False          # sparse integer ids (e.g. SNAP's): number by appearance
        elif n > _MAX_DIM:
            raise DatasetError(f"node id {n - 1} exceeds the supported maximum "
                               f"{_MAX_DIM - 1}", path=name)
        else:
            _check_declared({"nodes": n}, name=name)
    if use_int:
        names = None
    else:
        # numbered by first appearance through a hash table: memory O(edges), never
        # O(edges x longest name) as a fixed-width string array would be
        ids, first = intern_tokens(buf, ts, te, int.from_bytes(os.urandom(8), "little") >> 1)
        n = int(first.size)
        try:
            names = [raw[a:b].decode("utf-8") for a, b in zip(ts[first].tolist(),
                                                               te[first].tolist())]
        except UnicodeDecodeError:
            raise DatasetError("a node name is not valid UTF-8", path=name) from None
    return ids[0::2], ids[1::2], w, lines, n, names


def _graph_from_networkx(G, name: str, self_loops: bool, class_attr):
    """A, X (numeric node attributes, one column per attribute name, sorted), y, feature
    names, class names, and what the file's edges held (:func:`_file_edges`; one-way edges
    only when the graph is directed)."""
    nodes = list(G.nodes())
    n = len(nodes)
    if n == 0:
        raise DatasetError("the graph has no nodes", path=name)
    index = {v: i for i, v in enumerate(nodes)}
    es = list(G.edges(data=True))
    r = np.fromiter((index[u] for u, _, _ in es), np.int64, len(es))
    c = np.fromiter((index[v] for _, v, _ in es), np.int64, len(es))
    w = []
    for k, (_, _, a) in enumerate(es):
        x = a.get("weight", 1.0)
        try:
            w.append(float(x))
        except (TypeError, ValueError):
            raise DatasetError(f"edge weight {x!r} is not a number", path=name,
                               field="weight") from None
    w = np.asarray(w, np.float64)
    A = _undirected(r, c, w, n, self_loops=self_loops, name=name)
    file_edges = _file_edges(r, c, n, directed=G.is_directed(), w=w, names=nodes)
    attrs = [a for _, a in G.nodes(data=True)]
    keys = sorted({k for a in attrs for k in a}, key=str)
    if class_attr is None:
        class_attr = next((k for k in ("class", "y", "group", "community") if k in keys), None)
    elif class_attr not in keys:
        raise DatasetError(f"no node attribute {class_attr!r}", path=name, field=class_attr)
    # one pass over the nodes' attribute dicts (never one pass per attribute: a file whose
    # every node carries its own attribute would make that quadratic); a column is kept
    # when every value it has is a number (missing = 0)
    skip = {"label", "id", "name", class_attr}
    entries = {}            # key -> [rows, values] while every value is numeric, else None
    for i, a in enumerate(attrs):
        for k, x in a.items():
            if k in skip:
                continue
            e = entries.get(k, ())
            if e is None:
                continue
            if x is not None and not isinstance(x, (int, float, np.integer, np.floating)):
                entries[k] = None
                continue
            if e == ():
                e = entries[k] = [[], []]
            if x is not None:
                e[0].append(i)
                e[1].append(float(x))
    cols, rows_, vals, fnames = [], [], [], []
    for k in keys:
        e = entries.get(k)
        if not e:
            continue
        arr = np.asarray(e[1], np.float64)
        if not np.isfinite(arr).all():
            raise DatasetError(f"node attribute {k!r} has NaN/inf", path=name, field=str(k))
        nz = arr != 0
        rows_.append(np.asarray(e[0], np.int64)[nz])
        cols.append(np.full(int(nz.sum()), len(fnames)))
        vals.append(arr[nz])
        fnames.append(str(k))
    if fnames:
        X = sp.csr_matrix((np.concatenate(vals).astype(np.float32),
                           (np.concatenate(rows_), np.concatenate(cols))),
                          shape=(n, len(fnames)))
    else:
        X = sp.csr_matrix((n, 0), dtype=np.float32)
    y = class_names = None
    if class_attr is not None:
        vals_ = [G.nodes[v].get(class_attr) for v in nodes]
        known = np.array([v is not None for v in vals_])
        if known.any():
            kv = np.array([str(v) for v in vals_ if v is not None])
            try:
                kv = kv.astype(np.int64)
            except ValueError:
                pass
            codes, class_names = _classes_from_values(kv, name, class_attr)
            y = np.full(n, -1, np.int64)
            y[known] = codes
    return A, X, y, fnames or None, class_names, file_edges


#: bytes networkx holds per node or edge of a GraphML / GML graph (its attribute dicts,
#: adjacency entries and the parsed elements; 10^6 nodes + 5*10^5 edges took 1.56 GB)
GRAPH_ELEMENT_BYTES = 1 << 10
_GML_ELEMENT = re.compile(rb"\b(?:node|edge)\s*\[")
_GML_GRAPH = re.compile(r"\bgraph\s*\[")


def _charge_graph_elements(raw: bytes, name: str, fmt: str) -> None:
    """Charge the nodes and edges a GraphML / GML file declares before anything is built:
    counted in the raw bytes (``<node`` / ``<edge`` in UTF-8 or UTF-16; ``node [`` /
    ``edge [`` in GML), an upper bound, at :data:`GRAPH_ELEMENT_BYTES` each."""
    if fmt == "graphml":
        n = 0
        for tag in ("<node", "<edge"):
            for enc in ("utf-8", "utf-16-le", "utf-16-be"):
                n += raw.count(tag.encode(enc))
    else:
        n = sum(1 for _ in _GML_ELEMENT.finditer(raw))
    _budget().charge(GRAPH_ELEMENT_BYTES * n,
                     f"the {'GraphML' if fmt == 'graphml' else 'GML'} graph's {n:,} nodes "
                     "and edges",
                     _fail_for(name))


def _load_graphml(raw: bytes, name: str, self_loops: bool, class_attr):
    import networkx as nx
    _charge_graph_elements(raw, name, "graphml")
    _reject_dtd(raw, name, "GraphML")
    try:
        G = nx.read_graphml(io.BytesIO(raw))
    except DatasetError:
        raise
    except Exception as exc:  # noqa: BLE001 - networkx/ElementTree raise many kinds
        raise DatasetError(f"malformed GraphML ({reason(exc)})",
                           path=name) from None
    return _graph_from_networkx(G, name, self_loops, class_attr)


def _load_gml(raw: bytes, name: str, self_loops: bool, class_attr):
    import networkx as nx
    _charge_graph_elements(raw, name, "gml")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not valid UTF-8 ({exc.reason})", path=name,
                           line=raw[:exc.start].count(b"\n") + 1) from None
    try:
        try:
            G = nx.parse_gml(text.splitlines(), label=None)
        except nx.NetworkXError as exc:
            # networkx refuses an edge listed twice unless the file says "multigraph 1";
            # read it as one so the duplicates can be counted (the graph keeps one of each)
            if "is duplicated" not in str(exc):
                raise
            G = nx.parse_gml(_GML_GRAPH.sub(lambda m: m.group(0) + "\nmultigraph 1\n", text,
                                            count=1).splitlines(), label=None)
    except Exception as exc:  # noqa: BLE001
        raise DatasetError(f"malformed GML ({reason(exc)})",
                           path=name) from None
    return _graph_from_networkx(G, name, self_loops, class_attr)


def _graph_format(raw: bytes, ext: str) -> str:
    if raw[:4] == b"PK\x03\x04" or ext == ".npz":
        return "npz"
    if ext == ".mat" or raw[:6] == b"MATLAB":
        return "mat"
    if ext == ".graphml":
        return "graphml"
    if ext == ".gml":
        return "gml"
    head = raw[:2048].lstrip().lower()
    if head.startswith(b"<?xml") or head.startswith(b"<graphml"):
        return "graphml"
    if re.match(rb"^(#[^\n]*\n\s*)*(creator[^\n]*\n\s*)?graph\s*\[", head):
        return "gml"
    return "edgelist"


@_guard
@fill_doc
def load_graph(path_or_file, features=None, labels=None, *, format=None, node_ids="auto",
               self_loops=None, class_attr=None, name=None) -> GraphData:
    """Load an attributed graph from a path or a binary file-like object with ``.name``.

    Formats (``format=`` forces one; else by extension and content):
    - ``npz`` written by :func:`save_npz` (kind "graph").
    - MATLAB ``.mat`` (v5/v7, via ``scipy.io.loadmat``, which never unpickles): adjacency
      under network/A/adj..., features under attributes/features/X..., classes under
      group/label/labels/y/gnd... (names matched case-insensitively). A class matrix
      n x c is read one-hot (a row with several classes keeps the lowest one, a row with
      none gets -1); a class vector is mapped to 0..k-1 in sorted order, the original
      values kept as ``class_names``.
    - GraphML and GML (networkx; XML with a DTD/entities is refused). Numeric node
      attributes become feature columns (sorted by name; missing = 0); the classes come
      from ``class_attr`` or else an attribute named class/y/group/community.
    - edge lists: ``u v [w]`` per line, separated by whitespace and/or a comma, ``#``/``%``
      comment lines, an optional ``source,target[,weight]`` header. ``node_ids="auto"``
      uses the names as node indices when all are non-negative integers and dense enough
      (largest id < 2 x number of distinct ids + 1, so 0- and 1-based numberings with a
      few isolated nodes qualify; n = largest + 1), else numbers nodes in order of first
      appearance, keeping the names for a ``labels`` file (``"appearance"`` forces that,
      ``"int"`` forces integer ids). Parsed by a numba kernel.

    Every format gives A symmetric csr float32: an edge given in either direction (or
    repeatedly) becomes one edge with the largest weight given; self-loops are dropped
    unless ``self_loops=True`` (BlogCatalog's .mat has them on the diagonal); an npz is
    read as stored unless ``self_loops=False`` is given explicitly; weights
    must be finite and non-negative. What the file held before that (self-loops, edges
    listed twice, edges listed in one direction only; GraphML / GML graphs that are
    undirected have no one-way edges) is counted while parsing and kept as
    ``file_edges`` for the health checks. ``features``/``labels`` add (or replace) node
    features and classes: an array/sparse matrix, or a file (see ``_matrix_from_any``,
    ``_labels_from_any``). X is csr float32 (n x 0 when there are none), y int64 with -1 =
    unknown, or None.

    Parameters
    ----------
    path_or_file : str, os.PathLike or binary file-like
        The graph file; a file-like object is named by its ``.name``.
    features : array, sparse matrix, str, os.PathLike or binary file-like, optional
        Node features, one row per node in node order: a matrix, or a file (.npz in
        ``scipy.sparse.save_npz`` layout, .npy, XC ``N D`` features or svmlight lines).
    labels : sequence, str, os.PathLike or binary file-like, optional
        Node classes: one per node, or a text file of one class per line (node order) or
        ``node class`` lines (unlisted nodes get -1).
    format : {"npz", "mat", "graphml", "gml", "edgelist"}, optional
        Force a format instead of guessing it from the extension and content.
    node_ids : {"auto", "int", "appearance"}
        Edge lists only: how node names become node indices (see above).
    self_loops : bool, optional
        Keep self-loops (default: drop them; an npz keeps what it stores unless False).
    class_attr : str, optional
        GraphML / GML only: the node attribute holding the classes.
    name : str, optional
        The dataset's name (default: the file's stem).
    {load_limits}

    Returns
    -------
    GraphData
        A symmetric csr float32, X csr float32, y int64 (-1 = unknown) or None.

    Raises
    ------
    DatasetError
        For any malformed input (and for a bad ``node_ids``), or an npz of another kind.
    """
    raw, src = _read_bytes(path_or_file)
    if _blank(raw):
        raise DatasetError("empty file", path=src)
    fmt = format or _graph_format(raw, _suffix(src))
    node_names = None
    keep_loops = bool(self_loops)
    if fmt == "npz":
        data = _load_npz_any(_NamedBytes(raw, src))
        if not isinstance(data, GraphData):
            raise DatasetError(f"npz holds a {data.kind} dataset, not a graph", path=src,
                               field="kind")
        A, X, y, fnames, cnames = (data.A, data.X, data.y, data.feature_names,
                                   data.class_names)
        file_edges = data.file_edges
        if self_loops is False and A.diagonal().any():  # explicit request only
            A = A.tolil()
            A.setdiag(0)
            A = A.tocsr()
            A.eliminate_zeros()
    elif fmt == "mat":
        A, X, y, fnames, cnames, file_edges = _load_mat(raw, src, keep_loops)
    elif fmt == "graphml":
        A, X, y, fnames, cnames, file_edges = _load_graphml(raw, src, keep_loops, class_attr)
    elif fmt == "gml":
        A, X, y, fnames, cnames, file_edges = _load_gml(raw, src, keep_loops, class_attr)
    elif fmt == "edgelist":
        r, c, w, lines, n, node_names = _parse_edge_list(raw, src, node_ids)
        A = _undirected(r, c, w, n, self_loops=keep_loops, name=src, lines=lines)
        file_edges = _file_edges(r, c, n, directed=True, w=w, names=node_names)
        X = sp.csr_matrix((n, 0), dtype=np.float32)
        y = fnames = cnames = None
    else:
        raise DatasetError(f"unknown graph format {fmt!r} (npz, mat, graphml, gml, "
                           f"edgelist)", path=src)
    n = A.shape[0]
    if features is not None:
        X = _matrix_from_any(features, n, src, "features")
        fnames = None
    if labels is not None:
        y, cnames = _labels_from_any(labels, n, node_names, src)
    return GraphData(A=A, X=X, y=y, feature_names=fnames, class_names=cnames,
                     name=name or _stem(src),
                     source=f"{fmt}: {src}", file_edges=file_edges)
