"""Checks every artifact class must pass (in the spirit of scikit-learn's
``check_estimator``, over featagg's own class table ``artifacts.ARTIFACT_CLASSES``).

For every class, built from a row of the table below (small valid parameters, a tiny
input of its kind):

* ``sklearn.base.clone`` gives equal parameters and an unfitted object (also from a fitted
  one);
* ``get_params()`` is JSON-serialisable the way artifacts save it;
* what needs the fitted state (predict / transform / rerank / select) raises
  scikit-learn's ``NotFittedError`` before ``fit``;
* every ``__init__`` parameter is declared in ``_parameter_constraints``, and for every
  declared parameter a value outside its constraint (derived from it: out of the interval,
  a wrong type, an option not in the set) makes ``fit`` raise ``ValueError`` saying
  ``"<name> must be ..."``;
* ``fit`` does not change the parameters.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import json
from numbers import Integral

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from featagg_core.utils.validation import Interval, Options, check_param
from featagg_core.artifacts.store import ARTIFACT_CLASSES, _json_default


def _cls(name):
    return getattr(importlib.import_module(ARTIFACT_CLASSES[name]), name)


# ----------------------------------------------------------------------------- inputs
@functools.lru_cache(maxsize=None)
def _multilabel():
    from featagg_core.data.synthetic import make_powerlaw_multilabel
    return make_powerlaw_multilabel(60, 24, 6, avg_labels=2, avg_features=6, random_state=0)


@functools.lru_cache(maxsize=None)
def _graph():
    from featagg_core.data.synthetic import make_attributed_sbm
    return make_attributed_sbm(40, 2, p_in=0.3, p_out=0.02, n_informative=6, n_noise=6,
                               random_state=0)


@functools.lru_cache(maxsize=None)
def _categorical():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 12, 200)
    labels = (rng.random(200) < 0.2 + 0.05 * (values % 4)).astype(np.int64)
    return values, labels


def _X():
    return _multilabel().X


def _Y():
    return _multilabel().Y


def _cluster_ids():
    return np.arange(_X().shape[1]) % 4


def _scores():
    return sp.random(_X().shape[0], _Y().shape[1], density=0.5, format="csr",
                     random_state=1)


def _fit_pipeline(est):
    from featagg_core.experiment import make_split, run_pipeline
    data = _multilabel()
    run = run_pipeline(data, make_split(data, random_state=0), est.spec)
    assert run.status == "done", run.message
    return run.pipeline


# ----------------------------------------------------------------------------- the table
# name -> (small valid params, fit(est) -> fitted object, [calls that need the fitted state])
TABLE = {
    "Defrag": (dict(d0=4, max_iter=5),
               lambda est: est.fit(_X(), _Y()),
               [lambda est: est.transform(_X()), lambda est: est.membership_matrix()]),
    "Fiat": (dict(defrag=_cluster_ids(), mix=0.5),
             lambda est: est.fit(_X()),
             [lambda est: est.transform(_X())]),
    "Refrag": (dict(shortlist_size=4, n_prototype_candidates=2),
               lambda est: est.fit(_X(), _Y(), _cluster_ids()),
               [lambda est: est.rerank(_X(), _scores(), k=2),
                lambda est: est.candidates(_X(), _scores()),
                lambda est: est.label_weights()]),
    "KTXMLC": (dict(n_clusters=2, n_trees=1, max_leaf_labels=2, max_iter=5,
                    kmeans_max_iter=5),
               lambda est: est.fit(_X(), _Y()),
               [lambda est: est.predict_scores(_X(), k=2)]),
    "OneVsAll": (dict(max_iter=5),
                 lambda est: est.fit(_X(), _Y()),
                 [lambda est: est.predict_scores(_X(), k=2)]),
    "DefragKTXMLC": (dict(d0=4, n_clusters=2, n_trees=1, max_leaf_labels=2),
                     lambda est: est.fit(_X(), _Y()),
                     [lambda est: est.predict_scores(_X(), k=2),
                      lambda est: est.transform(_X())]),
    "BlockModel": (dict(n_blocks=2, n_iter=10),
                   lambda est: est.fit(_graph().A),
                   []),                       # nothing but its fitted attributes
    "BMGUFS": (dict(n_blocks=2, n_candidates=2, max_iter=5, n_iter_block=10),
               lambda est: est.fit(_graph().A, _graph().X),
               [lambda est: est.select(3), lambda est: est.transform(_graph().X, 3)]),
    "VocabularyCompressor": (dict(budget=3),
                             lambda est: est.fit(*_categorical()),
                             [lambda est: est.transform(_categorical()[0])]),
    # a Pipeline's fit is run_pipeline (it is never fitted by hand)
    "Pipeline": (dict(spec={"defrag": {"d0": 4}, "classifier": {"kind": "ova", "max_iter": 5}}),
                 _fit_pipeline,
                 [lambda est: est.transform(_X()), lambda est: est.predict_scores(_X())]),
}

NAMES = sorted(ARTIFACT_CLASSES)


def test_the_table_covers_every_artifact_class():
    assert sorted(TABLE) == NAMES


@functools.lru_cache(maxsize=None)
def _fitted(name):
    params, fit, _ = TABLE[name]
    return fit(_cls(name)(**params))


def _params_json(est) -> str:
    """The parameters as an artifact stores them (``artifacts.artifact_bytes``)."""
    return json.dumps(est.get_params(deep=False), default=_json_default, sort_keys=True)


def _init_params(cls):
    sig = inspect.signature(cls.__init__)
    return sorted(p.name for p in list(sig.parameters.values())[1:]
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def _bad_values(spec):
    """Values that satisfy none of the alternatives in ``spec`` (derived from each one)."""
    if spec == "no_validation":
        return []
    candidates = []
    for c in spec:
        if isinstance(c, Interval):
            if c.low is not None:
                candidates.append(c.low - 1)
            if c.high is not None:
                candidates.append(c.high + 1)
            candidates += [2.5 if c.kind is Integral else float("nan"), "1"]
        elif isinstance(c, Options):
            candidates += ["not-an-option", 12345]
        elif c == "boolean":
            candidates += ["yes", 1]
        elif isinstance(c, type) or isinstance(c, tuple):
            candidates.append(object() if c is str else "a string")
    bad = []
    for v in candidates:
        try:
            check_param("p", v, spec)
        except ValueError:
            bad.append(v)
    return bad


# ----------------------------------------------------------------------------- checks
@pytest.mark.parametrize("name", NAMES)
def test_clone_gives_equal_params_and_an_unfitted_object(name):
    params, _, uses = TABLE[name]
    est = _cls(name)(**params)
    twin = clone(est)
    assert type(twin) is type(est) and twin is not est
    assert _params_json(twin) == _params_json(est)
    fitted = _fitted(name)
    again = clone(fitted)
    assert _params_json(again) == _params_json(fitted)
    state = sorted(a for a, v in vars(again).items()
                   if a.endswith("_") and not a.startswith("_") and v is not None)
    assert state == [], f"the clone of a fitted {name} has fitted state {state}"
    for use in uses:
        use(fitted)                                   # works on the fitted one
        with pytest.raises(NotFittedError):
            use(again)


@pytest.mark.parametrize("name", NAMES)
def test_params_are_json_serialisable(name):
    """As artifacts save them; the JSON builds an estimator with the same parameters (what
    loading an artifact does)."""
    params, _, _ = TABLE[name]
    for est in (_cls(name)(), _cls(name)(**params), _fitted(name)):
        text = _params_json(est)
        assert _params_json(_cls(name)(**json.loads(text))) == text


@pytest.mark.parametrize("name", NAMES)
def test_not_fitted_error_before_fit(name):
    params, _, uses = TABLE[name]
    if not uses:        # only fitted attributes: check it really has nothing to call
        cls = _cls(name)
        assert not any(hasattr(cls, m) for m in ("predict", "predict_scores", "transform",
                                                 "rerank", "select"))
    for use in uses:
        with pytest.raises(NotFittedError):
            use(_cls(name)(**params))


@pytest.mark.parametrize("name", NAMES)
def test_every_init_parameter_is_declared(name):
    cls = _cls(name)
    assert isinstance(getattr(cls, "_parameter_constraints", None), dict), \
        f"{name} declares no _parameter_constraints"
    assert sorted(cls._parameter_constraints) == _init_params(cls)


@pytest.mark.parametrize("name", NAMES)
def test_bad_parameter_makes_fit_raise_naming_it(name):
    cls = _cls(name)
    params, fit, _ = TABLE[name]
    constraints = getattr(cls, "_parameter_constraints", None)
    assert isinstance(constraints, dict), f"{name} declares no _parameter_constraints"
    exposed = set(cls(**params).get_params(deep=False))
    checked = 0
    for pname, spec in constraints.items():
        if pname not in exposed:       # not a parameter (provenance, opted out)
            assert spec == "no_validation", pname
            continue
        for bad in _bad_values(spec):
            est = cls(**{**params, pname: bad})
            with pytest.raises(ValueError, match=f"{pname} must be"):
                fit(est)
            checked += 1
    assert checked > 0


EXTRA_BAD = {   # parameters checked against the data in fit (declared "no_validation")
    "Fiat": [("defrag", None, "defrag must be"),
             ("defrag", np.zeros(3, np.int64), "features")],
}


@pytest.mark.parametrize("name", sorted(EXTRA_BAD))
def test_data_dependent_parameter_checks_name_the_parameter(name):
    params, fit, _ = TABLE[name]
    for pname, bad, match in EXTRA_BAD[name]:
        with pytest.raises(ValueError, match=match):
            fit(_cls(name)(**{**params, pname: bad}))


@pytest.mark.parametrize("name", NAMES)
def test_fit_does_not_change_params(name):
    params, fit, _ = TABLE[name]
    est = _cls(name)(**params)
    before = _params_json(est)
    fit(est)
    assert _params_json(est) == before
