"""Artifacts saved by featagg before the package was reorganised load and predict identically.

The files in ``tests/fixtures/artifacts_0_1/`` were written by commit 48119b1's code (flat
``featagg_core`` modules) with ``tests/fixtures/make_artifacts_0_1.py``, together with the
outputs they gave then (``expected.npz``). A manifest names its class by its short name
("KTXMLC", "Pipeline", ...), never by a module path, so moving modules must not change what
loads; this test is the proof: every output is compared bit for bit.
"""
import os

import numpy as np
import pytest
import scipy.sparse as sp

from featagg_core import load_artifact

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "artifacts_0_1")


@pytest.fixture(scope="module")
def expected():
    with np.load(os.path.join(HERE, "expected.npz"), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _load(name):
    return load_artifact(os.path.join(HERE, name))


def test_defrag_artifact_transforms_as_before(expected):
    X = sp.csr_matrix(expected["X_new"].astype(np.float32))
    got = _load("defrag.featagg").transform(X).toarray()
    assert np.array_equal(got, expected["defrag_transform"])


def test_ktxmlc_artifact_scores_as_before(expected):
    X = sp.csr_matrix(expected["X_new"].astype(np.float32))
    got = _load("ktxmlc.featagg").predict_scores(X, k=5).toarray()
    assert np.array_equal(got, expected["ktxmlc_scores"])


def test_pipeline_artifact_scores_as_before(expected):
    X = sp.csr_matrix(expected["X_new"].astype(np.float32))
    pipe = _load("pipeline_defrag_ktxmlc_refrag.featagg")
    assert pipe.reranker is not None and pipe.defrag is not None
    got = pipe.predict_scores(X, k=5).toarray()
    assert np.array_equal(got, expected["pipeline_scores"])


def test_bmgufs_artifact_selects_as_before(expected):
    sel = _load("bmgufs.featagg")
    assert np.array_equal(np.asarray(sel.scores_), expected["bmgufs_scores"])
    assert np.array_equal(np.asarray(sel.select(10)), expected["bmgufs_select"])


def test_vocabulary_artifact_maps_as_before(expected):
    voc = _load("vocabulary.featagg")
    got = np.asarray(voc.transform(expected["vocab_values"]))
    assert np.array_equal(got, expected["vocab_transform"])
