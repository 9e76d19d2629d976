"""Graph readers checked against networkx / scipy on small hand-written graphs."""
import io
import os
import pickle

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from featagg_core.data import DatasetError, GraphData, load_graph, planetoid_to_npz

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def _named(raw, name):
    f = io.BytesIO(raw)
    f.name = name
    return f


def _nx_adj(G, nodelist):
    A = nx.to_scipy_sparse_array(G.to_undirected(), nodelist=nodelist, weight="weight",
                                 format="csr").astype(np.float32)
    A = sp.csr_matrix(A)
    A.setdiag(0)
    A.eliminate_zeros()
    return A


EDGES = b"""# a comment
% another comment
alice bob 2.5
bob,carol,1
carol  dave
dave alice 0.5
alice alice 3
erin bob
bob alice 2.5
"""


def test_edge_list_tokens_against_networkx():
    g = load_graph(_named(EDGES, "g.edges"))
    lines = [l.replace(",", " ") for l in EDGES.decode().split("\n")
             if l.strip() and l[0] not in "#%"]
    G = nx.Graph()
    for l in lines:
        t = l.split()
        G.add_edge(t[0], t[1], weight=float(t[2]) if len(t) > 2 else 1.0)
    order = ["alice", "bob", "carol", "dave", "erin"]  # first appearance
    want = _nx_adj(G, order)
    assert isinstance(g, GraphData) and g.A.dtype == np.float32
    assert (g.A != want).nnz == 0
    assert (g.A != g.A.T).nnz == 0 and g.A.diagonal().sum() == 0
    assert g.X.shape == (5, 0) and g.y is None
    kept = load_graph(_named(EDGES, "g.edges"), self_loops=True)
    assert kept.A[0, 0] == 3


def test_edge_list_int_ids_and_header(tmp_path):
    p = tmp_path / "g.csv"
    p.write_bytes(b"source,target,weight\n0,3,1\n3,1,2\n1,0,1e0\n")
    g = load_graph(p)
    G = nx.Graph()
    G.add_weighted_edges_from([(0, 3, 1.0), (3, 1, 2.0), (1, 0, 1.0)])
    G.add_node(2)  # ids are used as indices: node 2 exists, isolated
    assert (g.A != _nx_adj(G, [0, 1, 2, 3])).nnz == 0
    h = load_graph(p, node_ids="appearance")
    assert (h.A != _nx_adj(G, [0, 3, 1])).nnz == 0 and h.A.shape == (3, 3)


def test_edge_list_with_features_and_labels(tmp_path):
    (tmp_path / "e.txt").write_bytes(b"a b\nb c\n")
    X = sp.csr_matrix(np.array([[1, 0], [0, 2], [3, 0]], np.float32))
    (tmp_path / "lab.txt").write_bytes(b"c red\na blue\n")
    g = load_graph(tmp_path / "e.txt", features=X, labels=tmp_path / "lab.txt")
    assert (g.X != X).nnz == 0
    assert g.y.tolist() == [0, -1, 1] and g.class_names == ["blue", "red"]
    (tmp_path / "X.txt").write_bytes(b"3 2\n0:1\n1:2\n0:3\n")
    h = load_graph(tmp_path / "e.txt", features=tmp_path / "X.txt", labels=[5, 5, 7])
    assert (h.X != X).nnz == 0 and h.y.tolist() == [0, 0, 1] and h.class_names == ["5", "7"]
    with pytest.raises(DatasetError, match="rows"):
        load_graph(tmp_path / "e.txt", features=X[:2])


def _attr_graph():
    G = nx.Graph()
    G.add_node("n0", age=3, score=0.5, kind="x", **{"class": "A"})
    G.add_node("n1", age=0, score=1.5, kind="y", **{"class": "B"})
    G.add_node("n2", age=7, kind="x")
    G.add_node("n3", age=1, score=-2.0, **{"class": "A"})
    G.add_edge("n0", "n1", weight=2.0)
    G.add_edge("n1", "n2", weight=1.0)
    G.add_edge("n2", "n3", weight=0.25)
    G.add_edge("n3", "n3", weight=1.0)
    return G


def _check_attr_graph(g, G):
    nodes = list(G.nodes())
    assert (g.A != _nx_adj(G, nodes)).nnz == 0
    assert g.feature_names == ["age", "score"]  # numeric attributes, sorted; 'kind' is text
    want = np.array([[G.nodes[v].get(k, 0) for k in ("age", "score")] for v in nodes],
                    np.float32)
    assert np.array_equal(g.X.toarray(), want)
    assert g.y.tolist() == [0, 1, -1, 0] and g.class_names == ["A", "B"]


def test_graphml_against_networkx(tmp_path):
    G = _attr_graph()
    p = tmp_path / "g.graphml"
    nx.write_graphml(G, p)
    g = load_graph(p)
    _check_attr_graph(g, G)
    g2 = load_graph(_named(p.read_bytes(), "upload.xml"))  # sniffed from content
    assert (g2.A != g.A).nnz == 0


def test_gml_against_networkx(tmp_path):
    G = _attr_graph()
    p = tmp_path / "g.gml"
    nx.write_gml(G, p)
    g = load_graph(p)
    _check_attr_graph(g, G)


def test_graphml_with_entities_refused():
    bomb = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]>'
            b'<graphml><graph edgedefault="undirected"><node id="&lol;"/></graph></graphml>')
    with pytest.raises(DatasetError, match="DTD"):
        load_graph(_named(bomb, "bomb.graphml"))


def test_mat_one_hot_group(tmp_path):
    rng = np.random.default_rng(0)
    A = sp.random(8, 8, density=0.4, random_state=rng, format="csc")
    A = ((A + A.T) > 0).astype(np.float64)
    A.setdiag(1)  # self-loops, as BlogCatalog
    Xa = sp.random(8, 5, density=0.5, random_state=rng, format="csc")
    cls = np.array([0, 2, 1, 1, 0, 2, 2, 0])
    group = np.eye(3)[cls]
    group[7] = 0  # unknown
    p = tmp_path / "g.mat"
    scipy.io.savemat(p, {"network": A, "Attributes": Xa, "group": sp.csc_matrix(group)})
    g = load_graph(p)
    Aw = sp.csr_matrix(A, dtype=np.float32)
    Aw.setdiag(0)
    Aw.eliminate_zeros()
    assert (g.A != Aw).nnz == 0
    assert np.allclose(g.X.toarray(), Xa.toarray()) and g.X.dtype == np.float32
    assert g.y.tolist() == cls[:7].tolist() + [-1]
    assert load_graph(p, self_loops=True).A.diagonal().sum() == 8


def test_mat_label_vector(tmp_path):
    A = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], float))
    p = tmp_path / "g.mat"
    scipy.io.savemat(p, {"Network": A, "Label": np.array([[3], [1], [3]])})
    g = load_graph(p)
    assert g.y.tolist() == [1, 0, 1] and g.class_names == ["1", "3"]
    assert g.X.shape == (3, 0)
    q = tmp_path / "bad.mat"
    scipy.io.savemat(q, {"stuff": A})
    with pytest.raises(DatasetError, match="adjacency"):
        load_graph(q)


@pytest.mark.skipif(not os.path.isfile(os.path.join(DATA, "cora", "ind.cora.x")),
                    reason="no ../shared/data/cora")
@pytest.mark.parametrize("ds", ["cora", "citeseer"])
def test_planetoid_against_gcn_loader(tmp_path, ds):
    """Reference: the GCN loader (Kipf & Welling), written out here with plain pickle."""
    pre = os.path.join(DATA, ds, f"ind.{ds}")
    objs = {}
    for k in ("x", "y", "tx", "ty", "allx", "ally", "graph"):
        with open(f"{pre}.{k}", "rb") as fh:
            objs[k] = pickle.load(fh, encoding="latin1")
    test_idx = np.loadtxt(f"{pre}.test.index", dtype=int)
    rng_ = np.sort(test_idx)
    tx, ty = objs["tx"], objs["ty"]
    if ds == "citeseer":
        full = range(test_idx.min(), test_idx.max() + 1)
        tx_ext = sp.lil_matrix((len(full), objs["x"].shape[1]))
        tx_ext[rng_ - test_idx.min(), :] = tx
        tx = tx_ext
        ty_ext = np.zeros((len(full), objs["y"].shape[1]))
        ty_ext[rng_ - test_idx.min(), :] = ty
        ty = ty_ext
    feats = sp.vstack((objs["allx"], tx)).tolil()
    feats[test_idx, :] = feats[rng_, :]
    labels = np.vstack((objs["ally"], ty))
    labels[test_idx, :] = labels[rng_, :]
    adj = nx.adjacency_matrix(nx.from_dict_of_lists(objs["graph"]),
                              nodelist=range(feats.shape[0]))
    adj = sp.csr_matrix((adj > 0).astype(np.float32))
    adj.setdiag(0)
    adj.eliminate_zeros()
    g = planetoid_to_npz(pre, tmp_path / f"{ds}.npz")
    h = load_graph(tmp_path / f"{ds}.npz")
    assert (h.A != adj).nnz == 0
    assert abs(h.X - sp.csr_matrix(feats, dtype=np.float32)).sum() == 0
    y = np.where(labels.sum(1) > 0, labels.argmax(1), -1)
    assert np.array_equal(h.y, y) and np.array_equal(g.y, y)
    assert h.A.nnz // 2 == {"cora": 5278, "citeseer": 4552}[ds]


def test_sparse_integer_ids_numbered_by_appearance():
    """A tiny file with huge ids must not create a huge graph (auto mode)."""
    g = load_graph(_named(b"7 100000000000\n100000000000 3\n", "g.txt"))
    assert g.A.shape == (3, 3) and g.A.nnz == 4
    with pytest.raises(DatasetError, match="exceeds"):
        load_graph(_named(b"0 100000000000\n", "g.txt"), node_ids="int")
    h = load_graph(_named(b"1 2\n2 3\n", "g.txt"))  # 1-based ids: node 0 is isolated
    assert h.A.shape == (4, 4) and h.A[0].nnz == 0


def test_features_from_scipy_save_npz(tmp_path):
    """Node features saved with scipy.sparse.save_npz (format stored as bytes) load as csr;
    another sparse format is refused by name."""
    (tmp_path / "e.txt").write_text("0 1\n1 2\n2 3\n3 4\n4 5\n")
    F = sp.random(6, 4, density=0.5, format="csr", random_state=1, dtype=np.float32)
    sp.save_npz(tmp_path / "f.npz", F)
    g = load_graph(tmp_path / "e.txt", features=tmp_path / "f.npz")
    assert (g.X != F).nnz == 0
    sp.save_npz(tmp_path / "c.npz", F.tocsc())
    with pytest.raises(DatasetError, match="must be csr, got csc"):
        load_graph(tmp_path / "e.txt", features=tmp_path / "c.npz")


# ------------------------------------------------------------------ what the file held
# 2 self-loops (a a, e e); 3 repeated listings (a b twice more, c d once more); 4 one-way
# edges (a c, b d, e f, f g); a b / b a and c d / d c listed both ways (4 directed pairs)
MESSY = [("a", "b"), ("b", "a"), ("c", "d"), ("d", "c"), ("a", "a"), ("e", "e"),
         ("a", "b"), ("a", "b"), ("c", "d"), ("a", "c"), ("b", "d"), ("e", "f"), ("f", "g")]
CLEAN = [("a", "b"), ("b", "a"), ("b", "c"), ("c", "b")]


def _counts(g):
    fe = g.file_edges
    return (fe["listed_edges"], fe["self_loops"], fe["duplicate_edges"], fe["one_way_edges"],
            fe["two_way_edges"])


def _graphml(edges, directed):
    nodes = sorted({u for e in edges for u in e})
    body = "".join(f'<node id="{v}"/>' for v in nodes)
    body += "".join(f'<edge source="{u}" target="{v}"/>' for u, v in edges)
    return (f'<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
            f'<graph edgedefault="{"directed" if directed else "undirected"}">{body}'
            f'</graph></graphml>').encode()


def _gml(edges, directed):
    nodes = sorted({u for e in edges for u in e})
    ix = {v: i for i, v in enumerate(nodes)}
    body = "".join(f"node [ id {ix[v]} label \"{v}\" ]\n" for v in nodes)
    body += "".join(f"edge [ source {ix[u]} target {ix[v]} ]\n" for u, v in edges)
    return f"graph [\n{'directed 1' if directed else ''}\n{body}]\n".encode()


def test_edge_list_file_counts():
    g = load_graph(_named("".join(f"{u} {v}\n" for u, v in MESSY).encode(), "m.txt"))
    assert _counts(g) == (13, 2, 3, 4, 4)
    ex = g.file_edges["examples"]
    assert ex["self_loops"] == ["a -> a", "e -> e"]
    assert ex["duplicate_edges"] == ["a -> b", "c -> d"]
    assert sorted(ex["one_way_edges"]) == ["a -> c", "b -> d", "e -> f", "f -> g"]
    assert g.file_edges["directed"] is True
    # the matrix is what it always was: symmetric, no loops, one entry per pair
    assert g.A.diagonal().sum() == 0 and (g.A != g.A.T).nnz == 0 and g.A.nnz == 12
    clean = load_graph(_named("".join(f"{u} {v}\n" for u, v in CLEAN).encode(), "c.txt"))
    assert _counts(clean) == (4, 0, 0, 0, 4)
    # integer ids: the examples name the nodes by their ids; a zero weight is no edge
    h = load_graph(_named(b"0 1\n1 0\n1 1\n2 3 0\n0 1\n", "i.txt"))
    assert _counts(h) == (4, 1, 1, 0, 2) and h.file_edges["examples"]["self_loops"] == ["1 -> 1"]


def test_graphml_and_gml_file_counts():
    # directed: the same answer as the edge list
    assert _counts(load_graph(_named(_graphml(MESSY, True), "d.graphml"))) == (13, 2, 3, 4, 4)
    assert _counts(load_graph(_named(_gml(MESSY, True), "d.gml"))) == (13, 2, 3, 4, 4)
    # undirected: "b a" is the edge "a b" again, so the pairs are {a,b} x4 (3 repeats) and
    # {c,d} x3 (2 repeats) -> 5 repeats; loops 2; one-way does not apply
    for raw, name in ((_graphml(MESSY, False), "u.graphml"), (_gml(MESSY, False), "u.gml")):
        g = load_graph(_named(raw, name))
        assert _counts(g) == (13, 2, 5, None, None), name
        assert g.file_edges["directed"] is False
        assert g.file_edges["examples"]["one_way_edges"] is None
        assert g.A.nnz == 12
    for raw, name in ((_graphml(CLEAN[::2], False), "c.graphml"),
                      (_gml(CLEAN[::2], False), "c.gml")):
        assert _counts(load_graph(_named(raw, name))) == (2, 0, 0, None, None), name


def test_mat_file_counts(tmp_path):
    # entries: loop at 0, 0-1 both ways, 1->2 only
    A = sp.csr_matrix(np.array([[1, 1, 0], [1, 0, 1], [0, 0, 0]], float))
    p = tmp_path / "g.mat"
    scipy.io.savemat(p, {"network": A})
    assert _counts(load_graph(p)) == (4, 1, 0, 1, 2)


def test_file_counts_leave_fingerprint_and_npz_round_trip(tmp_path):
    from featagg_core.data import save_npz
    g = load_graph(_named("".join(f"{u} {v}\n" for u, v in MESSY).encode(), "m.txt"))
    bare = GraphData(A=g.A, X=g.X, y=g.y, name=g.name, source=g.source)
    assert bare.file_edges is None
    assert bare.fingerprint == g.fingerprint and bare == g
    save_npz(g, tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")
    assert h.file_edges == g.file_edges and h.fingerprint == g.fingerprint
    save_npz(bare, tmp_path / "b.npz")
    assert load_graph(tmp_path / "b.npz").file_edges is None
    # a forged entry is refused, naming it
    with np.load(tmp_path / "g.npz") as z:
        parts = dict(z)
    parts["file_edges"] = np.array('{"listed_edges": -1}')
    np.savez(tmp_path / "bad.npz", **parts)
    with pytest.raises(DatasetError, match="file_edges"):
        load_graph(tmp_path / "bad.npz")
