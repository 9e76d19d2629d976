"""How a fitted KTXMLC / OneVsAll is saved in an artifact and rebuilt from one: the stacked
node classifiers, their calibration and the trees' node arrays, with the version of that
layout (an artifact of another version is refused with a message instead of being
mis-read).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from featagg_core.artifacts.registry import ArtifactError
from featagg_core.utils.docstrings import fill_doc

#: version of the fitted state saved in artifacts (2: calibrated node scores, PECOS-style
#: trees)
STATE_VERSION = 2


@fill_doc
def tree_model_artifact_state(model):
    """``(meta, arrays)`` of a fitted KTXMLC / OneVsAll (``_TreeModel._artifact_state``):
    the stacked node classifiers, their calibration and the trees' node arrays.

    Parameters
    ----------
    model : KTXMLC or OneVsAll
        Fitted.

    {artifact_state_returns}
    """
    model._check_fitted()
    meta = dict(state_version=STATE_VERSION, n_features_in_=model.n_features_in_,
                n_labels_=model.n_labels_, n_trees_=len(model.trees_),
                bias_value=model._bias_value, W_shape=list(model.W_.shape),
                calibration=[[g, *v] for g, v in sorted(model.calibration_.items())],
                train_time_=getattr(model, "train_time_", None))
    # what a KTXMLC(form="auto") fit chose (absent from artifacts saved before the choice)
    for key in ("form_", "C_", "choice_"):
        if hasattr(model, key):
            meta[key] = getattr(model, key)
    arrays = dict(W_data=model.W_.data.astype(np.float32),
                  W_indices=model.W_.indices.astype(np.int32),
                  W_indptr=model.W_.indptr.astype(np.int64), bias_w=model.bias_w_,
                  node_offsets=model.node_offsets_, calibration_a=model.calibration_a_,
                  calibration_b=model.calibration_b_,
                  perm=np.stack([tr["perm"] for tr in model.trees_]))
    for key in model._TREE_KEYS:
        arrays["tree_" + key] = np.concatenate([tr[key] for tr in model.trees_])
    return meta, arrays


def tree_model_from_artifact_state(cls, params, meta, arrays):
    """A fitted ``cls`` (KTXMLC / OneVsAll) from :func:`tree_model_artifact_state`'s
    output; refuses another ``STATE_VERSION`` (``_TreeModel._from_artifact_state``).

    Parameters
    ----------
    cls : type
        KTXMLC or OneVsAll.
    params, meta, arrays : dict
        The estimator's parameters and :func:`tree_model_artifact_state`'s output.

    Returns
    -------
    KTXMLC or OneVsAll
        Fitted.

    Raises
    ------
    featagg_core.artifacts.registry.ArtifactError
        For another state version or arrays of the wrong shape.
    """
    version = meta.get("state_version")
    if version != STATE_VERSION:
        raise ArtifactError(
            f"this {cls.__name__} artifact holds fitted state version {version!r} "
            f"(saved by an older featagg); this featagg reads version {STATE_VERSION}: "
            "its node scores are calibrated differently, so the model must be refitted")
    params = {**getattr(cls, "_params_added_later", {}), **params}
    obj = cls(**params)
    off = np.asarray(arrays["node_offsets"], np.int64)
    trees = []
    for t in range(int(meta["n_trees_"])):
        tr = {key: np.asarray(arrays["tree_" + key][off[t]:off[t + 1]], np.int64)
              for key in cls._TREE_KEYS}
        tr["perm"] = np.asarray(arrays["perm"][t], np.int64)
        trees.append(tr)
    W = sp.csr_matrix((arrays["W_data"], arrays["W_indices"], arrays["W_indptr"]),
                      shape=tuple(meta["W_shape"]))
    N = int(off[-1])
    for key in ("bias_w", "calibration_a", "calibration_b"):
        if np.asarray(arrays[key]).shape != (N,):
            raise ArtifactError(f"{cls.__name__} artifact: {key} has shape "
                                f"{np.asarray(arrays[key]).shape}, expected ({N},)")
    groups = {int(g[0]): tuple(g[1:]) for g in meta["calibration"]}
    obj._finalise((0, meta["n_features_in_"]), meta["n_labels_"], trees, W,
                  np.asarray(arrays["bias_w"]), off, meta["bias_value"],
                  arrays["calibration_a"], arrays["calibration_b"], groups)
    obj.train_time_ = meta.get("train_time_")
    if hasattr(obj, "form"):
        # KTXMLC: what its fit chose; older artifacts say nothing: derived from the trees
        flat = len(trees) == 1 and int(trees[0]["n_children"][0]) == int(meta["n_labels_"])
        obj.form_ = str(meta.get("form_", "flat" if flat else "trees"))
        obj.C_ = float(meta.get("C_", params.get("C", obj.C)))
        obj.choice_ = str(meta.get("choice_", "saved before KTXMLC chose its own form"))
    return obj
