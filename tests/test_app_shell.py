"""The app shell as a person uses it (AppTest): home page, the sidebar dataset picker on
every bundled sample, good and bad uploads; plus the session API, the upload handler and
the warm-up on their own.

Note: after ``AppTest.switch_page`` AppTest (1.67) runs the page script without the main
script, so the sidebar is not drawn there; the session state (the picked dataset) carries
over, which is what these tests check. The browser test covers sidebar + page together.
"""
import os

os.environ.setdefault("FEATAGG_WARMUP", "0")  # no background JIT warm-up in AppTest runs

import io
import logging
import os
import pickle
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from featagg_app import state
from featagg_app.text import md_escape
from featagg_app.intake.uploads import MAX_UPLOAD_BYTES, MAX_UPLOAD_MB, parse_upload
from featagg_app.server.warmup import warm_up
from featagg_core.data import DatasetError, load_dataset
from featagg_core.data.samples import list_samples, load_sample

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
DATA_PAGE = "pages/data.py"

GOOD_XC = b"3 5 2\n0,1 0:1 2:0.5\n1 1:2 4:1\n0 3:1\n"
BAD_XC = b"2 4 2\n0 0:1 9:1\n1 1:1\n"          # feature index 9 with d = 4


def _app():
    return AppTest.from_file(APP, default_timeout=120).run()


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _metrics(at):
    return {m.label: m.value for m in at.metric}


def _dataset(at):
    return at.session_state["featagg.dataset"]["data"]


def _upload(at, kind, name, raw, role=None):
    at.radio(key="featagg_source").set_value("Upload a file").run()
    at.radio(key="featagg_upload_kind").set_value(kind).run()
    key = f"featagg_upload_{kind}" + (f"_{role}" if role else "")
    uploader = next(u for u in at.file_uploader if u.key == key)
    uploader.set_value((name, raw, "application/octet-stream"))
    return at.run()


# ---------------------------------------------------------------------------
# home and samples
# ---------------------------------------------------------------------------

def test_home_loads_with_bibtex_in_use():
    at = _app()
    _ok(at)
    assert at.title[0].value == "featagg"
    assert any("four methods" in h.value for h in at.subheader)
    data = _dataset(at)
    assert data.kind == "multilabel" and data.X.shape == load_sample("bibtex").X.shape
    assert any("In use" in c.value and "Bibtex" in c.value for c in at.sidebar.caption)
    from featagg_app.views.home import METHODS
    links = sorted(p.proto.page for p in at.get("page_link"))
    assert links == sorted(Path(m[3]).stem for m in METHODS)


@pytest.mark.parametrize("info", list_samples(), ids=lambda s: s.name)
def test_each_sample_can_be_picked_and_shown(info):
    at = _app()
    at.selectbox(key="featagg_sample").set_value(info.name).run()
    _ok(at)
    expected = load_sample(info.name)
    assert _dataset(at).fingerprint == expected.fingerprint
    at.switch_page(DATA_PAGE).run()
    _ok(at)
    m = _metrics(at)
    if info.kind == "multilabel":
        assert m["Points n (train)"] == f"{expected.X.shape[0]:,}"
        assert m["Features d"] == f"{expected.X.shape[1]:,}"
        assert m["Labels L"] == f"{expected.Y.shape[1]:,}"
    elif info.kind == "graph":
        assert m["Nodes"] == f"{expected.A.shape[0]:,}"
        assert m["Node features"] == f"{expected.X.shape[1]:,}"
    else:
        assert m["Rows"] == f"{len(expected.labels):,}"
        assert m["Columns"] == f"{len(expected.table.columns):,}"
    assert at.get("plotly_chart"), "the page shows its plots"


# ---------------------------------------------------------------------------
# uploads through the sidebar widget
# ---------------------------------------------------------------------------

def test_good_upload_becomes_the_dataset_and_shows_stats():
    at = _upload(_app(), "multilabel", "tiny.txt", GOOD_XC)
    _ok(at)
    data = _dataset(at)
    assert data.X.shape == (3, 5) and data.Y.shape == (3, 2)
    assert data.X.toarray()[0].tolist() == [1, 0, 0.5, 0, 0]       # hand-parsed row 0
    assert any("Loaded" in s.value for s in at.success)
    at.switch_page(DATA_PAGE).run()
    _ok(at)
    m = _metrics(at)
    assert (m["Points n (train)"], m["Features d"], m["Labels L"]) == ("3", "5", "2")
    assert m["Non-zeros (nnz)"] == "5"


def test_bad_upload_shows_the_dataset_error_and_keeps_the_dataset():
    at = _app()
    before = _dataset(at).fingerprint
    at = _upload(at, "multilabel", "broken.txt", BAD_XC)
    assert not at.exception
    with pytest.raises(DatasetError) as info:        # the reader's own message, independently
        load_dataset(_named(BAD_XC, "broken.txt"))
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "Could not load this file" in errors[0]
    assert md_escape(str(info.value)) in errors[0]
    assert "Traceback" not in errors[0]
    assert _dataset(at).fingerprint == before         # the session keeps its dataset
    # the error stays while the file is there, and goes once a good file replaces it
    at.run()
    assert len(at.error) == 1
    uploader = next(u for u in at.file_uploader if u.key == "featagg_upload_multilabel")
    uploader.set_value(("tiny.txt", GOOD_XC, "text/plain"))
    at.run()
    _ok(at)
    assert _dataset(at).X.shape == (3, 5)


def test_upload_of_wrong_type_and_empty_file():
    at = _upload(_app(), "graph", "graph.edges", b"")
    assert not at.exception
    assert any("empty file" in e.value for e in at.error)


# ---------------------------------------------------------------------------
# the upload handler on its own
# ---------------------------------------------------------------------------

def _named(raw, name):
    f = io.BytesIO(raw)
    f.name = name
    return f


def test_parse_upload_size_cap_and_types():
    with pytest.raises(DatasetError, match=f"{MAX_UPLOAD_MB} MB upload limit"):
        parse_upload("multilabel", "big.txt", b"0" * (MAX_UPLOAD_BYTES + 1))
    with pytest.raises(DatasetError, match="unsupported file type .pkl"):
        parse_upload("multilabel", "model.pkl", b"abc")
    with pytest.raises(DatasetError, match="unknown kind"):
        parse_upload("images", "x.txt", GOOD_XC)
    data = parse_upload("multilabel", "tiny.txt", GOOD_XC)
    assert data.X.shape == (3, 5) and data.name


def test_npz_with_a_pickle_is_refused_and_never_unpickled(tmp_path):
    marker = tmp_path / "unpickled"

    class Boom:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    buf = io.BytesIO()
    np.savez(buf, kind=np.array("multilabel"), X_data=np.array([Boom()], dtype=object))
    with pytest.raises(DatasetError):
        parse_upload("multilabel", "evil.npz", buf.getvalue())
    assert not marker.exists()
    with pytest.raises(DatasetError):   # a raw pickle renamed .npz is not a zip either
        parse_upload("multilabel", "evil2.npz", pickle.dumps(Boom()))
    assert not marker.exists()


def test_reader_bug_becomes_a_dataset_error(monkeypatch, caplog):
    import featagg_core.data as fd

    def broken(*a, **k):
        raise KeyError("internal")

    monkeypatch.setattr(fd, "load_dataset", broken)
    with caplog.at_level(logging.ERROR, logger="featagg_app"):
        with pytest.raises(DatasetError, match="could not read the file: the reader stopped "
                                               "unexpectedly") as ei:
            parse_upload("multilabel", "tiny.txt", GOOD_XC)
    # the person reads what happened; the server's log keeps the exception for a bug report
    assert "KeyError" not in str(ei.value) and "internal" not in str(ei.value)
    assert any(r.exc_info and r.exc_info[0] is KeyError for r in caplog.records)


# ---------------------------------------------------------------------------
# the session API in a script run
# ---------------------------------------------------------------------------

def _session_script():
    import numpy as np
    import scipy.sparse as sp
    import streamlit as st
    from featagg_app import runs_ui, state
    from featagg_app.text import show_error
    from featagg_core.data import DatasetError, MultiLabelData
    from featagg_core.experiment import run_pipeline

    def ml(seed):
        X = sp.random(40, 6, density=0.5, format="csr", random_state=seed, dtype=np.float32)
        Y = sp.csr_matrix((np.random.default_rng(seed).random((40, 3)) < 0.5)
                          .astype(np.float32))
        return MultiLabelData(X=X, Y=Y, name=f"d{seed}")

    step = st.session_state.get("step", 0)
    if step == 0:
        a = ml(1)
        state.set_dataset(a, origin="upload")
        split = state.current_split(a)
        st.session_state["split_same"] = state.current_split(a) is split
        state.page_state("P")["shown"] = "run on a"
        state.set_dataset(a, origin="upload")           # same data: pages keep state
        st.session_state["after_same"] = state.page_state("P").get("shown")
        r1 = state.add_run(run_pipeline(a, split, {"defrag": {"d0": 2}}))
        r2 = state.add_run(run_pipeline(a, split, {"defrag": {"d0": 3}}))
        state.add_run(r1)                                # adding again: still one entry
        state.set_split_settings(a, 0.3, 0.0, 5)
        split2 = state.current_split(a)
        r3 = state.add_run(run_pipeline(a, split2, {"defrag": {"d0": 2}}))
        st.session_state["ids"] = [r1.run_id, r2.run_id, r3.run_id]
        st.session_state["splits"] = [split.split_id, split2.split_id]
        st.session_state["by_split"] = [r.run_id for r in state.runs(split_id=split.split_id)]
        st.session_state["got"] = state.get_run(r2.run_id) is r2
        st.session_state["title"] = state.run_title(r2)
        # the picker: on split2 it offers the latest run on split2; back on split 1 it
        # follows the latest run there
        st.session_state["picked2"] = runs_ui.run_picker("Run", "agglomeration", split2,
                                                         key="pick").run_id
        state.set_split_settings(a, 0.2, 0.0, 0)
        st.session_state["picked1"] = runs_ui.run_picker("Run", "agglomeration", split,
                                                         key="pick2").run_id
        state.set_dataset(ml(2), origin="upload")       # another dataset: pages emptied
        st.session_state["after_switch"] = state.page_state("P").get("shown", "gone")
        st.session_state["n_runs"] = len(state.runs())  # the registry is kept
        st.session_state["on_d2"] = runs_ui.run_picker("Run", "agglomeration",
                                                       state.current_split(ml(2)),
                                                       key="pick3")
        show_error(DatasetError("bad row", path="x.txt", line=3))
        show_error(RuntimeError("kaboom"))
        st.session_state["graph"] = state.require_dataset("graph").name
        st.session_state["ml"] = state.require_dataset("multilabel").name


def test_session_api_contract():
    at = AppTest.from_function(_session_script, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    s = at.session_state
    assert s["split_same"] and s["after_same"] == "run on a"
    assert s["after_switch"] == "gone"
    ids = s["ids"]
    assert len(set(ids)) == 3 and s["n_runs"] == 3          # nothing overwritten
    assert s["splits"][0] != s["splits"][1]
    assert s["by_split"] == ids[:2] and s["got"]
    assert s["title"] == "#2 DEFRAG-XY d0=3"
    assert s["picked2"] == ids[2] and s["picked1"] == ids[1]
    assert s["on_d2"] is None                                # runs of d1 are not offered
    assert any("Using **#2 DEFRAG-XY d0=3**" in c.value for c in at.caption)
    errors = [e.value for e in at.error]
    assert errors[0] == "x.txt, line 3: bad row"
    assert "RuntimeError" in errors[1] and "Traceback" not in errors[1]
    # the multilabel dataset d2 stays; the graph page falls back to Cora and says so
    assert s["ml"] == "d2"
    assert s["graph"] == load_sample("cora").name
    assert any("Cora" in i.value or "cora" in i.value for i in at.info)


def _picker_script():
    import numpy as np
    import scipy.sparse as sp
    import streamlit as st
    from featagg_app import runs_ui, state
    from featagg_core.data import MultiLabelData
    from featagg_core.experiment import make_split, run_pipeline

    if "data" not in st.session_state:
        X = sp.random(40, 6, density=0.5, format="csr", random_state=1, dtype=np.float32)
        Y = sp.csr_matrix(np.eye(40, 3, dtype=np.float32))
        st.session_state["data"] = MultiLabelData(X=X, Y=Y, name="d")
        data = st.session_state["data"]
        other = make_split(data, test_size=0.4, random_state=9)
        st.session_state["old"] = state.add_run(run_pipeline(data, other, {"defrag": {"d0": 2}}))
    data = st.session_state["data"]
    split = state.current_split(data)
    picked = runs_ui.run_picker("Run", "agglomeration", split, key="pick",
                                on_refit=lambda r: st.session_state.update(refit=r.run_id))
    st.session_state["picked"] = picked


def test_run_picker_never_reuses_a_run_of_another_split():
    at = AppTest.from_function(_picker_script, default_timeout=120).run()
    assert not at.exception
    assert at.session_state["picked"] is None
    assert any("was fitted on another split" in w.value for w in at.warning)
    at.button(key="pick__refit").click().run()
    assert at.session_state["refit"] == at.session_state["old"].run_id


def test_require_dataset_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kind must be one of"):
        state.require_dataset("images")


def test_uncaught_errors_are_redacted_in_the_browser():
    """.streamlit/config.toml sets client.showErrorDetails = "none": even a bug that escapes
    every handler shows no message or traceback."""
    def script():
        raise RuntimeError("secret internals")
    at = AppTest.from_function(script).run()
    assert at.exception
    shown = at.exception[0].value + "".join(at.exception[0].stack_trace)
    assert "secret internals" not in shown and "redacted" in shown


# ---------------------------------------------------------------------------
# warm-up and navigation
# ---------------------------------------------------------------------------

def test_warm_up_calls_each_warmup_and_survives_failures(monkeypatch):
    calls = []
    good = types.ModuleType("fa_test_good")
    good.warmup = lambda: calls.append("good")
    bad = types.ModuleType("fa_test_bad")

    def boom():
        raise RuntimeError("no compiler")
    bad.warmup = boom
    monkeypatch.setitem(sys.modules, "fa_test_good", good)
    monkeypatch.setitem(sys.modules, "fa_test_bad", bad)
    rep = warm_up(("fa_test_good", "fa_test_bad", "fa_test_missing_module"))
    assert calls == ["good"]
    assert "fa_test_good" in rep.timings
    assert "ModuleNotFoundError" in rep.errors["fa_test_missing_module"]
    assert "no compiler" in rep.errors["fa_test_bad"] and rep.done.is_set()


def test_navigation_lists_every_page_in_order():
    import ast
    tree = ast.parse((ROOT / "app.py").read_text())
    pages = next(ast.literal_eval(n.value) for n in ast.walk(tree)
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PAGES")
    files = [p[0] for p in pages]
    assert files == ["pages/data.py", "pages/triage.py", "pages/feature_agglomeration.py",
                     "pages/extreme_classification.py", "pages/rare_labels.py",
                     "pages/graph_features.py", "pages/vocabulary.py", "pages/compare.py",
                     "pages/export.py"]
    at = _app()
    registered = {Path(str(i.get("script_path"))).resolve()
                  for i in at._registered_pages.values() if i.get("script_path")}
    for f in files:
        assert (ROOT / f).resolve() in registered, f


def _app_calls(attr: str):
    """``(path, call)`` for every call of ``<something>.attr(...)`` in the app's sources:
    its pages, the view modules they call (featagg_app) and app.py."""
    import ast
    sources = (sorted((ROOT / "pages").glob("*.py"))
               + sorted((ROOT / "featagg_app").rglob("*.py")) + [ROOT / "app.py"])
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == attr:
                yield path, node


def test_no_download_button_reruns_its_page():
    """A download button reruns its page by default. A rerun is useless after a download
    and harmful: while it runs, the page's other download buttons are rebuilt, and a click
    on one of them can start no download (CI saw the Export page drop an artifact download
    right after a CSV one). Every download button of the app (its pages and the view
    modules they call) passes on_click="ignore"."""
    import ast
    missing = []
    for path, node in _app_calls("download_button"):
        on_click = next((k.value for k in node.keywords if k.arg == "on_click"), None)
        if not (isinstance(on_click, ast.Constant) and on_click.value == "ignore"):
            missing.append(f"{path.name}:{node.lineno}")
    assert not missing, missing


def test_every_uploader_has_its_own_cap_under_the_servers():
    """Streamlit's server refuses any upload over ``server.maxUploadSize`` whatever a
    widget says, and a widget without ``max_upload_size`` shows (and allows) the server's
    cap. So every uploader of the app passes its own cap, one of the uploads module's, and
    the server runs with the largest of them: from featagg_app.server.serve (when the command
    line does not say) and from .streamlit/config.toml (``streamlit run``). Before, the
    server ran at 50 MB while the Export page promised 200 MB imports."""
    import tomllib
    from featagg_app.server import serve
    from featagg_app.intake import uploads
    caps = {"MAX_UPLOAD_MB": uploads.MAX_UPLOAD_MB, "MAX_IMPORT_MB": uploads.MAX_IMPORT_MB}
    found, wrong = [], []
    for path, node in _app_calls("file_uploader"):
        cap = next((k.value for k in node.keywords if k.arg == "max_upload_size"), None)
        name = getattr(cap, "id", None)
        (found if name in caps else wrong).append(f"{path.name}:{node.lineno}:{name}")
    assert not wrong, wrong
    assert any(f.startswith("export.py") and f.endswith("MAX_IMPORT_MB") for f in found), found
    assert any(f.startswith("sidebar.py") for f in found), found
    cap = uploads.server_upload_cap_mb()
    assert cap == max(caps.values()) == 200 and uploads.MAX_UPLOAD_MB == 50
    argv = serve.with_upload_cap(["--server.port", "8501"])
    assert argv == ["--server.port", "8501", "--server.maxUploadSize", "200"]
    # an operator's explicit value is kept, in either spelling
    assert serve.with_upload_cap(["--server.maxUploadSize", "10"]) == ["--server.maxUploadSize", "10"]
    assert serve.with_upload_cap(["--server.maxUploadSize=10"]) == ["--server.maxUploadSize=10"]
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == cap
    # and none of the launchers pins the old, smaller cap any more
    for launcher in ("scripts/dashboard.sh", "tests/e2e/conftest.py"):
        assert "maxUploadSize" not in (ROOT / launcher).read_text(), launcher
    assert "--server.maxUploadSize" not in serve.DASHBOARD_OPTIONS


def test_a_larger_data_cap_raises_the_servers(monkeypatch):
    """FEATAGG_MAX_UPLOAD_MB above the import cap must raise the server's cap with it,
    or the sidebar would promise a size the server refuses."""
    from featagg_app.server import serve
    from featagg_app.intake import uploads
    monkeypatch.setattr(uploads, "MAX_UPLOAD_MB", 500)
    assert serve.with_upload_cap([]) == ["--server.maxUploadSize", "500"]
    monkeypatch.setenv("FEATAGG_MAX_UPLOAD_MB", "500")
    assert uploads._upload_mb() == 500
    monkeypatch.setenv("FEATAGG_MAX_UPLOAD_MB", "lots")
    assert uploads._upload_mb() == 50


# ---------------------------------------------------------------------------
# every upload format the picker offers, through the same handler
# ---------------------------------------------------------------------------

def _ml_truth():
    X = np.array([[1, 0, 0.5, 0, 0], [0, 2, 0, 0, 1], [0, 0, 0, 1, 0]], np.float32)
    Y = np.array([[1, 1], [0, 1], [1, 0]], np.float32)
    return X, Y


def _ml_files():
    from featagg_core.data import MultiLabelData, save_npz
    X, Y = _ml_truth()
    svm = b"0,1 1:1 3:0.5\n1 2:2 5:1\n0 4:1\n"                       # 1-based indices
    arff = (b"@relation tiny\n" + b"".join(b"@attribute f%d numeric\n" % i for i in range(5))
            + b"@attribute tagA {0,1}\n@attribute tagB {0,1}\n@data\n"
            b"{0 1,2 0.5,5 1,6 1}\n{1 2,4 1,6 1}\n{3 1,5 1}\n")
    xml = (b'<?xml version="1.0" encoding="utf-8"?>\n'
           b'<labels xmlns="http://mulan.sourceforge.net/labels">'
           b'<label name="tagA"></label><label name="tagB"></label></labels>\n')
    buf = io.BytesIO()
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "tiny.npz")
        save_npz(MultiLabelData(X=sp.csr_matrix(X), Y=sp.csr_matrix(Y), name="tiny"), p)
        npz = Path(p).read_bytes()
    return {"xc": ("tiny.txt", GOOD_XC, {}), "svmlight": ("tiny.svm", svm, {}),
            "arff+xml": ("tiny.arff", arff, {"xml": ("tiny.xml", xml)}),
            "npz": ("tiny.npz", npz, {}),
            "xc+test": ("tiny.txt", GOOD_XC, {"test": ("tiny_test.txt", GOOD_XC)})}


@pytest.mark.parametrize("fmt", ["xc", "svmlight", "arff+xml", "npz", "xc+test"])
def test_upload_multilabel_formats(fmt):
    name, raw, extras = _ml_files()[fmt]
    data = parse_upload("multilabel", name, raw, extras=extras)
    X, Y = _ml_truth()
    assert np.array_equal(data.X.toarray(), X) and np.array_equal(data.Y.toarray(), Y)
    if fmt == "arff+xml":
        assert list(data.label_names) == ["tagA", "tagB"]
    if fmt == "xc+test":
        assert data.X_test.shape == (3, 5)


def _graph_truth():
    import networkx as nx
    G = nx.Graph([(0, 1), (1, 2), (2, 3), (3, 0), (3, 4)])
    return G, sp.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=range(5), dtype=np.float32))


def _graph_files(tmp_path):
    import networkx as nx
    import scipy.io
    from featagg_core.data import GraphData, save_npz
    G, A = _graph_truth()
    out = {"edges": ("g.edges", b"# tiny\n0 1\n1 2\n2 3\n3 0\n3 4\n", {})}
    nx.write_graphml(G, tmp_path / "g.graphml")
    out["graphml"] = ("g.graphml", (tmp_path / "g.graphml").read_bytes(), {})
    nx.write_gml(G, tmp_path / "g.gml")
    out["gml"] = ("g.gml", (tmp_path / "g.gml").read_bytes(), {})
    X = sp.csr_matrix(np.eye(5, 3, dtype=np.float32))
    scipy.io.savemat(tmp_path / "g.mat", {"network": A.astype(np.float64),
                                          "attributes": X.astype(np.float64),
                                          "group": np.array([[0], [1], [0], [1], [2]])})
    out["mat"] = ("g.mat", (tmp_path / "g.mat").read_bytes(), {})
    save_npz(GraphData(A=A, X=X, y=np.array([0, 1, 0, 1, 2])), tmp_path / "g.npz")
    out["npz"] = ("g.npz", (tmp_path / "g.npz").read_bytes(), {})
    np.save(tmp_path / "x.npy", X.toarray())
    out["edges+features+labels"] = (
        "g.edges", out["edges"][1],
        {"features": ("x.npy", (tmp_path / "x.npy").read_bytes()),
         "labels": ("y.txt", b"0\n1\n0\n1\n2\n")})
    return out


@pytest.mark.parametrize("fmt", ["edges", "graphml", "gml", "mat", "npz",
                                 "edges+features+labels"])
def test_upload_graph_formats(fmt, tmp_path):
    name, raw, extras = _graph_files(tmp_path)[fmt]
    data = parse_upload("graph", name, raw, extras=extras)
    G, A = _graph_truth()
    assert data.A.shape == (5, 5)
    assert np.array_equal((data.A.toarray() != 0), (A.toarray() != 0))
    if fmt in ("mat", "npz", "edges+features+labels"):
        assert data.X.shape[0] == 5 and data.X.nnz == 3
        assert data.y is not None and len(np.unique(data.y)) == 3


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet"])
def test_upload_table_formats(fmt, tmp_path):
    import pandas as pd
    df = pd.DataFrame({"city": list("abacab"), "os": list("xxxxyy"),
                       "click": [1, 0, 1, 0, 0, 1]})
    p = tmp_path / f"t.{fmt}"
    if fmt == "parquet":
        df.to_parquet(p)
    else:
        df.to_csv(p, sep="," if fmt == "csv" else "\t", index=False)
    data = parse_upload("table", p.name, p.read_bytes(), label="click")
    assert list(data.table.columns) == ["city", "os"]
    assert data.labels.tolist() == [1, 0, 1, 0, 0, 1]
    with pytest.raises(DatasetError):
        parse_upload("table", p.name, p.read_bytes(), label="no_such_column")


def test_app_starts_the_warm_up_and_the_reaper_once_per_process(monkeypatch):
    import streamlit as st
    from featagg_app.server import reaper as reaper_mod, warmup as warmup_mod
    started, seen = [], []

    class FakeWarmup:
        def __init__(self, **kwargs):
            assert kwargs == {"freeze_gc": True}        # the server's collector is frozen

        def start(self):
            started.append(1)
            return self

        def ready(self, names):
            return True

        def pending(self, names):
            return []

        def speed(self):
            return dict(warmup_mod.REFERENCE_SPEED)

    monkeypatch.setattr(warmup_mod, "KernelWarmup", FakeWarmup)
    monkeypatch.setattr(warmup_mod, "watch_compiles", lambda log=None: (lambda: 0))
    monkeypatch.setattr(reaper_mod, "session_seen", lambda: seen.append(1))
    monkeypatch.setenv("FEATAGG_WARMUP", "1")
    st.cache_resource.clear()
    try:
        _ok(_app())
        _ok(_app().run())           # a second session and a rerun: no second warm-up
        assert started == [1]
        assert len(seen) >= 2       # every script run tells the reaper the session is alive
    finally:
        st.cache_resource.clear()


def test_serve_starts_the_background_compilation_then_hands_over(monkeypatch):
    from streamlit.web import cli
    from featagg_app.server import context, serve
    order = []
    monkeypatch.setattr(context, "kernels", lambda: order.append("kernels"))
    monkeypatch.setattr(cli, "main", lambda args, prog_name: order.append(("run", args)))
    monkeypatch.setenv("FEATAGG_WARMUP", "1")
    for key in ("FEATAGG_PARALLEL_KERNELS", "NUMBA_CACHE_DIR", "MALLOC_ARENA_MAX"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(serve, "server_defaults", lambda: order.append("defaults") or {})
    serve.main(["--server.port", "9999"])
    # and the server gets the uploaders' largest cap (test_every_uploader_has_its_own_cap…)
    assert order == ["defaults", "kernels",
                     ("run", ["run", str(ROOT / "app.py"), "--server.port", "9999",
                              "--server.maxUploadSize", "200"])]


def test_server_defaults_never_override_the_environment(monkeypatch):
    from featagg_app.server import serve
    monkeypatch.setenv("FEATAGG_JOB_WORKERS", str(os.cpu_count() or 1))
    env = {"MALLOC_ARENA_MAX": "4"}
    set_now = serve.server_defaults(env)
    assert env["MALLOC_ARENA_MAX"] == "4" and "MALLOC_ARENA_MAX" not in set_now
    assert env["FEATAGG_PARALLEL_KERNELS"] == "0"          # one thread per job: serial
    assert env["NUMBA_CACHE_DIR"].endswith("numba-server")  # its own cache of that variant
    # no full garbage collection after every script run (job panels rerun once a second)
    assert env["STREAMLIT_RUNNER_POST_SCRIPT_GC"] == "false"
    env2 = {"FEATAGG_PARALLEL_KERNELS": "1", "STREAMLIT_RUNNER_POST_SCRIPT_GC": "true"}
    serve.server_defaults(env2)
    assert "NUMBA_CACHE_DIR" not in env2
    assert env2["STREAMLIT_RUNNER_POST_SCRIPT_GC"] == "true"


def test_upload_declaring_huge_dimensions_is_refused():
    """A tiny file whose header claims billions of features is refused before any page
    allocates per-feature arrays; a header within the limit loads."""
    from featagg_app.intake.uploads import MAX_UPLOAD_DIM
    huge = f"1 {MAX_UPLOAD_DIM + 1} 2\n0 0:1.5\n".encode()
    with pytest.raises(DatasetError, match="limited to"):
        parse_upload("multilabel", "huge.txt", huge)
    ok = parse_upload("multilabel", "ok.txt", f"1 {MAX_UPLOAD_DIM} 2\n0 0:1.5\n".encode())
    assert ok.X.shape == (1, MAX_UPLOAD_DIM)


def test_sidebar_split_widget_sets_the_session_split():
    """The split every page uses is set in the sidebar, per dataset."""
    from featagg_core.experiment import make_split
    at = _app()
    _ok(at)
    bib = load_sample("bibtex")
    tag = bib.fingerprint[:12]
    assert any("own split" in c.value for c in at.sidebar.caption)
    at.checkbox(key=f"featagg_split_own_{tag}").uncheck().run()
    _ok(at)
    at.slider(key=f"featagg_split_test_{tag}").set_value(0.3).run()
    at.number_input(key=f"featagg_split_seed_{tag}").set_value(4).run()
    _ok(at)
    split = at.session_state["featagg.splits"][(bib.fingerprint, bib.name)][1]
    expected = make_split(bib, test_size=0.3, random_state=4, how="random")
    assert split.split_id == expected.split_id
    assert any(expected.describe() in c.value for c in at.sidebar.caption)
    # another dataset has its own settings; coming back keeps Bibtex's
    at.selectbox(key="featagg_sample").set_value("delicious").run()
    _ok(at)
    assert any("own split" in c.value for c in at.sidebar.caption)
    at.selectbox(key="featagg_sample").set_value("bibtex").run()
    assert any(expected.describe() in c.value for c in at.sidebar.caption)


def _split_script():
    import dataclasses

    import streamlit as st
    from featagg_app import state
    from featagg_core.data.samples import load_sample
    data = load_sample("bibtex")
    split = state.current_split(data)
    st.session_state["split"] = split
    # the same bytes under another name (two students uploading one file as a.txt / b.txt)
    renamed = dataclasses.replace(data, name="bibtex-of-someone-else")
    st.session_state["renamed_split"] = state.current_split(renamed)


def test_sessions_on_the_same_data_and_settings_share_one_split():
    """Two people on the same sample hold one read-only Split (its row indices once per
    server, not once per durable session), equal to the one make_split makes."""
    from featagg_core.data.samples import load_sample
    from featagg_core.experiment import make_split
    a = AppTest.from_function(_split_script, default_timeout=120).run()
    b = AppTest.from_function(_split_script, default_timeout=120).run()
    assert not a.exception and not b.exception
    sa, sb = a.session_state["split"], b.session_state["split"]
    assert sa is sb
    # the split carries the dataset's name: same bytes, another name, its own split
    other = a.session_state["renamed_split"]
    assert other is not sa and other.dataset_name == "bibtex-of-someone-else"
    assert sa.dataset_name != "bibtex-of-someone-else" and other.split_id == sa.split_id
    ref = make_split(load_sample("bibtex"))
    assert sa.split_id == ref.split_id
    for part in ("train", "valid", "test"):
        assert np.array_equal(getattr(sa, part), getattr(ref, part))
        assert not getattr(sa, part).flags.writeable


def _big_split_script():
    import numpy as np
    import scipy.sparse as sp
    import streamlit as st
    from featagg_app import state
    from featagg_core.data import MultiLabelData
    n = state.SHARED_SPLIT_MAX_ROWS + 1
    X = sp.identity(n, dtype=np.float32, format="csr")[:, :3]
    Y = sp.csr_matrix((np.ones(n, np.float32), (np.arange(n), np.arange(n) % 2)),
                      shape=(n, 2))
    st.session_state["split"] = state.current_split(MultiLabelData(X=X, Y=Y, name="big"))


def test_a_large_datasets_split_is_its_sessions_own():
    """Above SHARED_SPLIT_MAX_ROWS rows the split is not kept in the server-wide cache
    (which outlives sessions): two sessions get two objects with the same rows."""
    from featagg_app import state
    a = AppTest.from_function(_big_split_script, default_timeout=120).run()
    b = AppTest.from_function(_big_split_script, default_timeout=120).run()
    assert not a.exception and not b.exception
    sa, sb = a.session_state["split"], b.session_state["split"]
    assert sa is not sb and sa.split_id == sb.split_id
    n = state.SHARED_SPLIT_MAX_ROWS + 1
    assert sa.n_rows == n
