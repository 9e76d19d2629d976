"""benchmarks/class_sim.py without a server: the cross-talk checker flags a transcript that
holds another student's name, the widget states a simulated browser keeps follow the
elements the server drew (as the frontend's), and stale elements leave with their run."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import class_sim as cs  # noqa: E402

PLAN = [{"i": 0, "name": "bibtex", "d0": 8}, {"i": 1, "name": "bibtex", "d0": 4},
        {"i": 4, "name": "student04_a0.txt", "d0": 8},
        {"i": 9, "name": "student09_b0.txt", "d0": 8}]


def test_crosstalk_clean_transcript_passes():
    own = PLAN[2]
    seen = ["In use: student04_a0.txt (400 × 300)", "#1 DEFRAG-XY d0=8 · 04:10"]
    assert cs.crosstalk(seen, own, PLAN, [("the run picker", "#1 DEFRAG-XY d0=8 · 04:10")]) == []


def test_crosstalk_flags_another_students_file_name():
    own = PLAN[2]
    seen = ["In use: student04_a0.txt", "Compare: DEFRAG-XY d0=8 · student09_b0.txt"]
    problems = cs.crosstalk(seen, own, PLAN)
    assert problems == ["saw another student's file 'student09_b0.txt'"]


def test_crosstalk_flags_another_students_d0_in_run_names():
    own = PLAN[0]
    runs = "#1 DEFRAG-XY d0=8 · 04:10 | #2 DEFRAG-XY d0=4 · 04:11"
    problems = cs.crosstalk([runs], own, PLAN, [("the run picker", runs)])
    assert problems == ["the run picker lists d0 ['4'], its own is 8"]
    # a Bibtex student's own dataset name is shared by the class: never cross-talk
    assert cs.crosstalk(["· bibtex"], PLAN[1], PLAN) == []


def _fm_element(path, make, run_hash="main", fragment=""):
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    fm = ForwardMsg()
    fm.metadata.delta_path.extend(path)
    fm.metadata.active_script_hash = run_hash
    if fragment:
        fm.delta.fragment_id = fragment
    make(fm.delta.new_element)
    return fm


def _finished(status=0):
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    fm = ForwardMsg()
    fm.script_finished = status
    return fm


def _new_session():
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    fm = ForwardMsg()
    fm.new_session.main_script_hash = "main"
    fm.new_session.page_script_hash = "page"
    return fm


def test_widget_states_follow_the_drawn_elements():
    import asyncio

    def slider(el):
        el.slider.id, el.slider.label = "$$ID-1-fa_d0", "Leaf size d0"
        el.slider.default.append(8.0)

    def radio(el):
        el.radio.id, el.radio.label = "$$ID-2-src", "Source"
        el.radio.options.extend(["Bundled sample", "Upload a file"])
        el.radio.default = 0

    def metric(el):
        el.metric.label, el.metric.body = "Dimensions", "1,836 → 256"

    async def go():
        s = cs.Student("http://127.0.0.1:1", {})
        s._on_forward(_new_session())
        s._on_forward(_fm_element([1, 0], radio))
        s._on_forward(_fm_element([0, 0], slider, "page"))
        s._on_forward(_fm_element([0, 1], metric, "page"))
        s._on_forward(_finished())
        assert s.widgets == {"$$ID-2-src": ("string_value", "Bundled sample"),
                             "$$ID-1-fa_d0": ("double_array_value", [8.0])}
        assert s.find("slider", lambda lab: "d0" in lab, main=True).id == "$$ID-1-fa_d0"
        assert s.find("slider", lambda lab: "d0" in lab, main=False) is None
        assert s.metric("Dimensions") == "1,836 → 256"
        # the next run draws the sidebar only: the page's slider and card are stale
        s._on_forward(_new_session())
        s._on_forward(_fm_element([1, 0], radio))
        s._on_forward(_finished())
        assert s.widgets == {"$$ID-2-src": ("string_value", "Bundled sample")}
        assert s.metric("Dimensions") is None
        states = s.widget_states()
        assert [(w.id, w.string_value) for w in states.widgets] == [("$$ID-2-src",
                                                                    "Bundled sample")]
    # a thread of its own: in the full suite playwright's sync API (the e2e tests) can
    # leave an event loop running in this thread, and asyncio.run refuses to nest
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, go()).result()


@pytest.mark.parametrize("kind,setup,expected", [
    ("checkbox", lambda w: (setattr(w, "default", True)), ("bool_value", True)),
    ("checkbox", lambda w: (setattr(w, "default", True), setattr(w, "set_value", True),
                            setattr(w, "value", False)), ("bool_value", False)),
    ("multiselect", lambda w: (w.options.extend(["4", "8", "16"]), w.default.extend([0, 2])),
     ("string_array_value", ["4", "16"])),
    ("number_input", lambda w: (setattr(w, "data_type", w.INT), setattr(w, "default", 3)),
     ("int_value", 3)),
    ("selectbox", lambda w: (w.options.extend(["a", "b"]),), None),   # no default: no state
    ("button", lambda w: None, None),
])
def test_initial_state_per_widget(kind, setup, expected):
    from streamlit.proto.Element_pb2 import Element
    el = Element()
    w = getattr(el, kind)
    w.id = "x"
    setup(w)
    assert cs.initial_state(el) == expected
