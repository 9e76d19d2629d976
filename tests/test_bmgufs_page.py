"""The Graph feature selection page and the library behave the same: an AppTest run of the
page selects exactly the features ``BMGUFS(<the page's knobs>).fit(A, X).select(d)``
selects on the same training nodes — also when the page's γ leaves fewer than d weights
and both follow the γ path."""
import dataclasses
import warnings

import numpy as np

from page_util import click, runs, widget
from featagg_core.data.synthetic import make_attributed_sbm
from featagg_core.experiment import split_rows
from featagg_core.graph.bmgufs import BMGUFS


def test_page_selects_what_the_library_selects_with_the_same_knobs(app_for):
    g = make_attributed_sbm(240, 3, p_in=0.1, p_out=0.01, n_informative=12, n_noise=48,
                            random_state=3)
    g = dataclasses.replace(g, y=None, name="unlabelled.graphml")     # no classes
    at = app_for("graph_features", g, timeout=240)
    at.run()
    assert not at.exception, at.exception
    widget(at.checkbox, "gf_k_auto").check()               # k from the data: eigengap
    widget(at.number_input, "gf_cand").set_value(2)
    widget(at.number_input, "gf_gamma").set_value(3.0)
    widget(at.number_input, "gf_iter").set_value(120)
    widget(at.number_input, "gf_d").set_value(40)
    at.run()
    click(at, "gf_run")
    assert not at.exception, at.exception
    run = runs(at)[-1]
    page_idx = np.asarray(run.pipeline.selected_)
    assert page_idx.size == 40
    train = split_rows(g, run.split, "train")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)          # the poor-fit warning
        lib = BMGUFS(n_candidates=2, gamma=3.0, max_iter=120, random_state=0).fit(
            train.A, train.X)
        lib_idx = lib.select(40)
    # γ = 3 keeps fewer than 40 weights: both walked down the γ path to the same γ
    assert lib.n_nonzero_ < 40 and lib.last_selection_["how"] == "gamma path"
    assert run.pipeline.selector.gamma_ == lib.last_selection_["gamma"] < 3.0
    assert run.pipeline.selector.n_blocks_ == lib.n_blocks_
    assert run.pipeline.selector.k_source_ == lib.k_source_ == "eigengap"
    np.testing.assert_array_equal(page_idx, lib_idx)
