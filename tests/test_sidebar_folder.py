"""The sidebar's Data folder and Large text toggle, in-process (AppTest of app.py): a folder
file opens through a job and becomes the session's dataset, an ARFF without its XML asks
for its label columns, and the large-text CSS is there only when asked for."""
import os
import threading
import time

import pytest

ARFF = "\n".join(["@relation tiny", "@attribute f0 numeric", "@attribute f1 numeric",
                  "@attribute a {0,1}", "@attribute b {0,1}", "@data", "1,2,0,1",
                  "0,3,1,1", "2,0,1,0", "1,1,0,1"]) + "\n"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    from featagg_core.data import save_xc
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    (tmp_path / "corel5k").mkdir()
    d = make_powerlaw_multilabel(300, 50, 8, random_state=5)
    save_xc(d, tmp_path / "synth.txt")
    (tmp_path / "corel5k" / "train.arff").write_text(ARFF)
    monkeypatch.setenv("FEATAGG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("FEATAGG_DATA_CACHE_MIN_MB", "0.001")
    return tmp_path, d


def _app(app_for):
    at = app_for("app", timeout=120)
    at.run()
    return at


def _settle(at, timeout=120):
    deadline = time.monotonic() + timeout
    at.run()
    while "featagg.folder_job" in at.session_state:
        job = at.session_state["featagg.folder_job"][2]
        job.wait(1.0)
        at.run()
        if time.monotonic() > deadline:
            raise TimeoutError("the folder job did not finish")
    at.run()
    return at


def _dataset(at):
    return at.session_state["featagg.dataset"]["data"]


def test_folder_file_opens_as_the_sessions_dataset(folder, app_for):
    root, d = folder
    at = _app(app_for)
    assert not at.exception
    at.radio(key="featagg_source").set_value("Data folder").run()
    box = at.selectbox(key="featagg_folder_file")
    assert [o.split(" · ")[0] for o in box.options] == ["corel5k/train.arff", "synth.txt"]
    box.set_value("synth.txt")
    _settle(at)
    assert not at.exception
    data = _dataset(at)
    assert data.name == "synth.txt" and data.X.shape == d.X.shape
    assert abs(data.X - d.X).max() == 0
    assert (root / ".featagg-cache" / "synth.txt.npz").is_file()
    assert any("In use: **synth.txt" in c.value for c in at.sidebar.caption)
    assert not any(str(root) in c.value for c in at.sidebar.caption)


def test_an_open_that_parses_waits_for_the_readers_kernels(folder, monkeypatch, app_for):
    """A first open parses (its job needs the readers' kernel group, so a server still
    compiling them never compiles in-process); an open from the disk cache runs no kernel
    and needs nothing."""
    from featagg_app.server.jobs import JobRunner
    needs, submit = [], JobRunner.submit

    def recording(self, *args, **kw):
        if kw.get("kind") == "open":
            needs.append(tuple(kw.get("needs") or ()))
        return submit(self, *args, **kw)

    monkeypatch.setattr(JobRunner, "submit", recording)
    for _ in range(2):           # the second session finds the disk cache of the first
        at = _app(app_for)
        at.radio(key="featagg_source").set_value("Data folder").run()
        at.selectbox(key="featagg_folder_file").set_value("synth.txt")
        _settle(at)
        assert _dataset(at).name == "synth.txt"
    assert needs[0] == ("readers",) and needs[-1] == ()


def test_folder_arff_without_xml_asks_for_the_label_columns(folder, app_for):
    at = _app(app_for)
    at.radio(key="featagg_source").set_value("Data folder").run()
    at.selectbox(key="featagg_folder_file").set_value("corel5k/train.arff")
    _settle(at)
    errors = [e.value for e in at.sidebar.error]
    assert any("does not say which attributes are labels" in e for e in errors), errors
    assert not any("xml=" in e or "n_labels" in e for e in errors)
    at.number_input(key="featagg_folder_n_labels:corel5k/train.arff").set_value(2).run()
    at.button(key="featagg_folder_n_labels:corel5k/train.arff:go").click()
    _settle(at)
    data = _dataset(at)
    assert data.name == "corel5k/train.arff"
    assert data.X.shape == (4, 2) and data.Y.toarray().tolist() == [[0, 1], [1, 1], [1, 0],
                                                                    [0, 1]]


def test_large_text_css_only_when_asked(folder, app_for):
    at = _app(app_for)

    def css():
        return [h for h in at.get("html") if "font-size" in str(h.proto)]

    assert not css()
    at.toggle(key="featagg_large_text").set_value(True).run()
    assert css() and "21px" in str(css()[0].proto)
    at.toggle(key="featagg_large_text").set_value(False).run()
    assert not css()


def test_a_job_finishing_after_the_collect_is_not_opened_again(folder, monkeypatch, app_for):
    """The window between the picker's collect and its status check: an ARFF opened with its
    label columns that finishes right after ``_collect`` looked must be used on the next
    run, not opened once more without the label columns (which asks for them again)."""
    from featagg_app.intake import data_folder
    at = _app(app_for)
    at.radio(key="featagg_source").set_value("Data folder").run()
    at.selectbox(key="featagg_folder_file").set_value("corel5k/train.arff")
    _settle(at)
    at.number_input(key="featagg_folder_n_labels:corel5k/train.arff").set_value(2).run()
    # the opening job waits until the test holds it: on a fast machine the tiny ARFF would
    # otherwise be opened and collected within the click's own run, leaving nothing to race
    from featagg_core.data.cache import DataFolder
    release, original_load = threading.Event(), DataFolder.load

    def load_when_released(self, *args, **kwargs):
        assert release.wait(60)
        return original_load(self, *args, **kwargs)
    monkeypatch.setattr(DataFolder, "load", load_when_released)
    at.button(key="featagg_folder_n_labels:corel5k/train.arff:go").click().run()
    held = at.session_state["featagg.folder_job"]
    release.set()
    assert held[1] and held[2].wait(60)               # opened with options, now finished
    original, calls = data_folder._collect, []

    def collect_too_early():                          # the first collect of the next run
        calls.append(1)                               # looks before the job has finished
        if len(calls) > 1:
            original()
    monkeypatch.setattr(data_folder, "_collect", collect_too_early)
    _settle(at)
    assert not at.exception
    data = _dataset(at)
    assert data.name == "corel5k/train.arff" and data.Y.shape == (4, 2)


def test_a_name_that_is_not_utf8_leaves_the_rest_of_the_folder_usable(folder, app_for):
    """R7 (issue 33): a file named with the bytes \\xff\\xfe made the picker fail for every
    session ("'utf-8' codec can't encode ..."). It is left out with a note naming it
    escaped; the other files are listed and open."""
    root, d = folder
    with open(os.path.join(os.fsencode(str(root)), b"bad\xff\xfe.txt"), "wb") as fh:
        fh.write(b"3 2 1\n0 0:1\n")
    at = _app(app_for)
    at.radio(key="featagg_source").set_value("Data folder").run()
    assert not at.exception
    box = at.selectbox(key="featagg_folder_file")
    assert [o.split(" · ")[0] for o in box.options] == ["corel5k/train.arff", "synth.txt"]
    notes = [c.value for c in at.sidebar.caption]
    assert any("not valid UTF-8" in c and "bad\\xff\\xfe.txt" in c.replace("\\\\", "\\")
               for c in notes), notes
    box.set_value("synth.txt")
    _settle(at)
    assert not at.exception and _dataset(at).name == "synth.txt"


def test_a_dataset_whose_mapped_cache_changes_is_opened_again(folder, monkeypatch, app_for):
    """R11 (issue 33) in a session: the folder dataset a session uses maps its cache file;
    when that file changes on the server (here rewritten, a new inode: safe to test; cut in
    place it would be a SIGBUS on the next read), the sidebar notices before the page runs,
    opens it again and says so."""
    import shutil
    monkeypatch.setattr("featagg_core.data.mapped_npz.COPY_MAX_BYTES", 0)
    from featagg_core.data.mapped_npz import mapped_source
    root, d = folder
    at = _app(app_for)
    at.radio(key="featagg_source").set_value("Data folder").run()
    at.selectbox(key="featagg_folder_file").set_value("synth.txt")
    _settle(at)
    first = _dataset(at)
    assert mapped_source(first) is not None            # mapped, not read
    cache = root / ".featagg-cache" / "synth.txt.npz"
    shutil.copy(cache, root / "copy.npz")
    os.replace(root / "copy.npz", cache)               # same bytes, another file
    at.run()
    assert not at.exception
    again = _dataset(at)
    assert again is not first and again.name == "synth.txt"
    assert abs(again.X - d.X).max() == 0
    notes = [w.value for w in at.sidebar.warning]
    assert any("synth.txt" in w and "opened again" in w for w in notes), notes
    at.run()                                           # once only
    assert _dataset(at) is again and not any("opened again" in w.value
                                             for w in at.sidebar.warning)
