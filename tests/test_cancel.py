"""Cancellation: kernels stop on their flag, estimators stop when their progress callback
raises Cancelled, nothing keeps running, and results without a cancel are unchanged."""
import threading

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core.utils.cancel import Cancelled
from featagg_core._kernels.stopflag import stop_requested
from featagg_core.utils.polling import Throttle, call_polled, new_stop


@numba.njit(nogil=True)
def _spin(stop, out, n_max):
    """Counts until another thread sets the flag (or n_max, seconds away). A plain
    ``stop[0]`` read here is hoisted out of the loop by LLVM (the loop then never ends
    early): the kernels read the flag with stop_requested's atomic load."""
    s = 0.0
    for i in range(n_max):
        if stop_requested(stop):
            out[0] = i
            return s
        s += np.sqrt(i + 1.0)
    out[0] = n_max
    return s


def _kernel_threads():
    return [t for t in threading.enumerate() if t.name == "featagg-kernel"]


def _raise_on(call_no):
    calls = []

    def progress(*args):
        calls.append(args)
        if len(calls) >= call_no:
            raise Cancelled("stop")
    return progress, calls


# ----------------------------------------------------------------------------- machinery
def test_a_flag_set_from_another_thread_stops_a_running_kernel():
    n_max = 4_000_000_000
    _spin(new_stop(), np.zeros(1, np.int64), 10)            # compile outside the clock
    stop, out = new_stop(), np.zeros(1, np.int64)
    ticks = []

    def tick():
        ticks.append(1)
        if len(ticks) == 2:
            raise Cancelled("stop")
    with pytest.raises(Cancelled):
        call_polled(_spin, (stop, out, n_max), stop, tick, interval=0.01)
    assert stop[0] == 1
    assert 0 < out[0] < n_max          # the kernel saw the flag and returned early
    assert not _kernel_threads()


def test_call_polled_without_tick_runs_inline_and_passes_errors():
    stop, out = new_stop(), np.zeros(1, np.int64)
    assert call_polled(_spin, (stop, out, 1000), stop) == pytest.approx(
        sum(np.sqrt(i + 1.0) for i in range(1000)))

    def boom(stop):
        raise ZeroDivisionError("kernel failed")
    with pytest.raises(ZeroDivisionError):
        call_polled(boom, (stop,), stop, tick=lambda: None)
    assert not _kernel_threads()


def test_helper_thread_keeps_the_callers_numba_thread_count():
    seen = []

    def kernel(stop):
        seen.append(numba.get_num_threads())
        return 0
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        call_polled(kernel, (new_stop(),), new_stop(), tick=lambda: None)
    finally:
        numba.set_num_threads(before)
    assert seen == [1]


def test_throttle():
    t = Throttle(3600.0, first=True)
    assert t.due() and not t.due()
    assert not Throttle(3600.0).due()


# ----------------------------------------------------------------------------- kernels
def test_kernels_return_at_once_when_the_flag_is_set():
    from featagg_core._kernels import bmgufs as kb
    from featagg_core._kernels import defrag as kd
    from featagg_core._kernels import vocab as kv
    rng = np.random.default_rng(0)
    R = sp.random(64, 30, density=0.3, format="csr", random_state=0, dtype=np.float32)
    set_ = np.ones(1, np.uint8)
    order = np.arange(64, dtype=np.int64)
    it = kd.split_level(R.indptr.astype(np.int64), R.indices.astype(np.int32), R.data, 30,
                        order, np.array([0], np.int64), np.array([64], np.int64),
                        np.array([0], np.int64), 0, 1e-4, 50, 1, set_)
    assert it.tolist() == [0]
    Y = sp.random(30, 5, density=0.4, format="csr", random_state=1, dtype=np.float32)
    Xt = sp.csr_matrix(R[:30].T)
    ptr, ind, dat = kd.xt_y(Xt.indptr.astype(np.int64), Xt.indices.astype(np.int32), Xt.data,
                            Y.indptr.astype(np.int64), Y.indices.astype(np.int32), Y.data, 5,
                            2, set_)
    assert ind.size == 0 and ptr[-1] == 0
    A = sp.random(40, 40, density=0.2, format="csr", random_state=2)
    A = (A + A.T).tocsr()
    F = rng.random((40, 3)) + 0.1
    S = F.T @ (A @ F)
    hist = kb.onmtf_symmetric(A.indptr, A.indices, A.data, float(A.multiply(A).sum()), F, S,
                              100, 1e-300, set_)
    assert hist.shape == (1,)
    c0 = rng.integers(1, 9, 50).astype(np.float64)
    c1 = rng.integers(0, 9, 50).astype(np.float64)
    _, n_it = kv.divisive_kl(c0, c1, np.arange(50) % 4, 4, 50, 0.0, set_)
    assert n_it == 1


# ----------------------------------------------------------------------------- estimators
@pytest.fixture(scope="module")
def ml():
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    return make_powerlaw_multilabel(400, 600, 30, random_state=0)


@pytest.mark.parametrize("rep", ["XY", "X"])
def test_defrag_cancel_and_unchanged_results(ml, rep):
    from featagg_core.agglomeration.defrag import Defrag
    progress, calls = _raise_on(3)
    m = Defrag(d0=4, representation=rep)
    with pytest.raises(Cancelled):
        m.fit(ml.X, ml.Y, progress=progress)
    assert not hasattr(m, "labels_") and not _kernel_threads()
    plain = Defrag(d0=4, representation=rep).fit(ml.X, ml.Y)
    polled = Defrag(d0=4, representation=rep).fit(ml.X, ml.Y, progress=lambda *a: None)
    np.testing.assert_array_equal(plain.labels_, polled.labels_)
    np.testing.assert_array_equal(plain.tree_.order, polled.tree_.order)
    np.testing.assert_array_equal(plain.tree_.n_iter, polled.tree_.n_iter)
    assert plain.clustering_error_ == polled.clustering_error_


def test_feature_representation_cancel(ml):
    from featagg_core.agglomeration.defrag import feature_representation
    progress, _ = _raise_on(1)
    with pytest.raises(Cancelled):
        feature_representation(ml.X, ml.Y, "XY", progress=progress)


def test_fiat_and_refrag_cancel(ml):
    from featagg_core.agglomeration.defrag import Defrag
    from featagg_core.agglomeration.fiat import Fiat
    from featagg_core.agglomeration.refrag import Refrag
    df = Defrag(d0=8).fit(ml.X, ml.Y)
    for call_no in (1, 2):
        progress, _ = _raise_on(call_no)
        f = Fiat(df)
        with pytest.raises(Cancelled):
            f.fit(ml.X, progress=progress)
        assert not hasattr(f, "operator_")
        progress, _ = _raise_on(call_no)
        r = Refrag()
        with pytest.raises(Cancelled):
            r.fit(ml.X, ml.Y, df, progress=progress)
        assert not hasattr(r, "prototypes_")
    seen = []
    a = Refrag().fit(ml.X, ml.Y, df, progress=lambda f, m: seen.append(f))
    b = Refrag().fit(ml.X, ml.Y, df)
    assert seen[-1] == 1.0 and (a.prototypes_ != b.prototypes_).nnz == 0


@pytest.fixture(scope="module")
def graph():
    from featagg_core.data.synthetic import make_attributed_sbm
    return make_attributed_sbm(150, 3, n_informative=10, n_noise=30, random_state=0)


def test_block_model_and_bmgufs_cancel(graph):
    from featagg_core.graph.block_model import BlockModel
    from featagg_core.graph.bmgufs import BMGUFS
    progress, _ = _raise_on(2)
    bm = BlockModel(3)
    with pytest.raises(Cancelled):
        bm.fit(graph.A, progress=progress)
    assert not hasattr(bm, "labels_") and not _kernel_threads()
    stages = []

    def at_selection(stage, fraction, message):
        stages.append(stage)
        if stage == "selection":
            raise Cancelled("stop")
    model = BMGUFS(n_blocks=3, n_candidates=2, max_iter=30)
    with pytest.raises(Cancelled):
        model.fit(graph.A, graph.X, progress=at_selection)
    assert "block models" in stages and not hasattr(model, "scores_")
    a = BMGUFS(n_blocks=3, n_candidates=2, max_iter=30).fit(graph.A, graph.X,
                                                           progress=lambda *x: None)
    b = BMGUFS(n_blocks=3, n_candidates=2, max_iter=30).fit(graph.A, graph.X)
    np.testing.assert_array_equal(a.scores_, b.scores_)


def test_graph_baselines_and_scoring_cancel(graph):
    from featagg_core.graph import baselines as fsb
    from featagg_core.graph.evaluation import kmeans_scores
    X = sp.csr_matrix(graph.X, dtype=np.float64)
    for fn in (lambda p: fsb.knn_graph(X, 5, progress=p),
               lambda p: fsb.laplacian_score(X, graph.A, progress=p),
               lambda p: fsb.spec_score(X, graph.A, style=3, progress=p),
               lambda p: fsb.ndfs_score(X, graph.A, n_clusters=3, n_iter=5, progress=p),
               lambda p: kmeans_scores(X, graph.y, n_seeds=3, progress=p)):
        progress, calls = _raise_on(2)
        with pytest.raises(Cancelled):
            fn(progress)
        assert len(calls) == 2
    a = fsb.ndfs_score(X, graph.A, n_clusters=3, n_iter=5, progress=lambda f, m: None)
    b = fsb.ndfs_score(X, graph.A, n_clusters=3, n_iter=5)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["dp", "divisive", "submodular"])
def test_vocabulary_cancel(method):
    import pandas as pd

    from featagg_core.vocab.compressor import VocabularyCompressor, compress_columns
    rng = np.random.default_rng(0)
    values = rng.integers(0, 300, 3000)
    labels = (rng.random(3000) < 0.3).astype(int)
    for call_no in (1, 3):
        progress, _ = _raise_on(call_no)
        vc = VocabularyCompressor(8, method=method)
        with pytest.raises(Cancelled):
            vc.fit(values, labels, progress=progress)
        assert not hasattr(vc, "bucket_of_") and not _kernel_threads()
    table = pd.DataFrame({"a": values, "b": values % 17})
    progress, _ = _raise_on(2)
    with pytest.raises(Cancelled):
        compress_columns(table, labels, 10, method=method, progress=progress)
    seen = []
    a = VocabularyCompressor(8, method=method).fit(values, labels,
                                                   progress=lambda f, m: seen.append(f))
    b = VocabularyCompressor(8, method=method).fit(values, labels)
    np.testing.assert_array_equal(a.bucket_of_, b.bucket_of_)
    assert seen[-1] == 1.0
