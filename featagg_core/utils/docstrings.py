"""Shared numpydoc fragments, written once and filled into docstrings at import time.

The same parameter means the same thing in many functions (a loader's ``max_bytes``, an
evaluation's ``pipeline, data, split, rows``, an experiment's ``progress, cancel``); its
description lives here once, in :data:`DOCS`, and a docstring names it by a placeholder
line. This is what scipy (``scipy._lib.doccer``), pandas (``@doc``) and matplotlib
(``_docstring.interpd``) do; the choices here:

* a placeholder is a line that holds only ``{name}`` (any indentation), ``name`` a key of
  :data:`DOCS`; nothing else in a docstring is touched, so literal braces (``{"test",
  "valid"}``, ``{0, 1}``) need no escaping, unlike ``str.format``;
* a fragment is stored dedented (its entries at column 0, their descriptions indented by
  4) and is indented to the placeholder's column when filled, so the filled docstring has
  one consistent indentation and :func:`inspect.getdoc` (which dedents it) reads it as if
  written out by hand; blank lines inside a fragment stay empty;
* an unknown name on a placeholder line raises ``KeyError`` at import, so a typo cannot
  ship a docstring with a hole in it;
* the decorator returns the object itself (functions, methods in a class body, classes),
  only its ``__doc__`` changed; under ``python -OO`` (no docstrings) it does nothing.

Use::

    from featagg_core.utils.docstrings import fill_doc

    @fill_doc
    def load_x(path, *, max_bytes=None, max_dim=None):
        \"\"\"Load ...

        Parameters
        ----------
        path : str
            The file.
        {load_limits}
        \"\"\"
"""
from __future__ import annotations

import re
import textwrap

__all__ = ["DOCS", "fill_doc", "fill"]

_PLACEHOLDER = re.compile(r"^([ \t]*)\{([A-Za-z_][A-Za-z0-9_]*)\}[ \t]*$", re.M)


def fill(doc: str | None, fragments: dict | None = None) -> str | None:
    """Replace each placeholder line of ``doc`` by its fragment, at the line's indent.

    Parameters
    ----------
    doc : str or None
        A docstring (``None`` under ``python -OO``: returned as is).
    fragments : dict, optional
        Name -> fragment; default :data:`DOCS`.

    Returns
    -------
    str or None
        The filled docstring.

    Raises
    ------
    KeyError
        When a placeholder line names no fragment.
    """
    if doc is None:
        return None
    table = DOCS if fragments is None else fragments

    def sub(m):
        indent, name = m.group(1), m.group(2)
        if name not in table:
            raise KeyError(f"docstring placeholder {{{name}}} names no fragment of "
                           f"featagg_core.utils.docstrings.DOCS")
        return "\n".join(indent + line if line.strip() else ""
                         for line in table[name].split("\n"))

    return _PLACEHOLDER.sub(sub, doc)


def _fragments(**texts: str) -> dict:
    """Dedent each fragment and drop its surrounding blank lines.

    A fragment may itself hold placeholder lines naming fragments defined before it (a
    group such as ``progress`` + ``cancel``); they are filled here, once.
    """
    out: dict = {}
    for name, text in texts.items():
        out[name] = fill(textwrap.dedent(text).strip("\n"), out)
    return out


#: name -> a numpydoc fragment (one or more entries, dedented)
DOCS: dict = _fragments(
    # --- loaders (featagg_core.data) -----------------------------------------------------
    load_limits="""
        max_bytes : int, optional
            The most bytes the load may inflate from compressed members or allocate for
            declared sizes (default ``FEATAGG_MAX_LOAD_MB`` or 1 GiB, and never more than 50x
            the input beyond 64 MiB; added by :func:`_guard`).
        max_dim : int, optional
            The largest number of rows, columns, labels or nodes accepted, checked before
            anything of that size is allocated (default: the int32 index space).
        """,
    # --- runs, evaluation and experiments (experiment, _evaluation, _*experiments, _steps) --
    progress="""
        progress : callable, optional
            ``progress(fraction, message)``.
        """,
    evaluated="""
        pipeline : Pipeline or Run
            A fitted pipeline, or a finished run holding one.
        data : MultiLabelData, GraphData or CategoricalData
            The dataset the pipeline was fitted on.
        split : Split
            The split it was fitted on.
        rows : {"test", "valid", "train", "train+valid"}, default="test"
            Which rows of the split to score.
        """,
    pipeline_fitted="""
        pipeline : Pipeline or Run
            A fitted pipeline, or a finished run holding one.
        """,
    data_split_fitted="""
        data : MultiLabelData, GraphData or CategoricalData
            The dataset the pipeline was fitted on.
        split : Split
            The split it was fitted on.
        """,
    rows_scored="""
        rows : {"test", "valid", "train", "train+valid"}, default="test"
            Which rows of the split to score.
        """,
    cancel_between_steps="""
        cancel : threading.Event-like, optional
            Stops the work between steps (raises ``Cancelled``).
        """,
    data_any="""
        data : MultiLabelData, GraphData or CategoricalData
            The dataset.
        """,
    split_its="""
        split : Split
            Its split.
        """,
    table_data_split="""
        data : CategoricalData
            The table.
        split : Split
            Its split.
        """,
    cancel_experiment="""
        cancel : threading.Event-like, optional
            Stops the experiment (what finished is kept).
        """,
    cancel_experiment_status="""
        cancel : threading.Event-like, optional
            Stops the experiment (what finished is kept, ``status="cancelled"``).
        """,
    ks_ranking="""
        ks : sequence of int, default=(1, 3, 5)
            The cut-offs of the ranking metrics.
        """,
    n_seeds="""
        n_seeds : int, default=3
            k-means seeds per score.
        """,
    graph_experiment_data="""
        data : GraphData
            The graph (its nodes need classes).
        split : Split
            Its split (rankings are fitted on the training nodes' subgraph).
        """,
    graph_rows="""
        rows : {"test", "valid", "train", "train+valid"}, default="test"
            The nodes the selections are scored on.
        """,
    train_XY="""
        X : scipy.sparse.csr_matrix of shape (n, d)
            The training rows' features.
        Y : scipy.sparse.csr_matrix of shape (n, L)
            Their 0/1 labels.
        """,
    # --- splits, specs ----------------------------------------------------------------------
    rows_split="""
        rows : {"train", "valid", "test", "train+valid"}
            Which rows of the split.
        """,
    canonical_spec="""
        spec : dict
            A canonical spec (:func:`canonical_spec`).
        """,
    # --- metrics ----------------------------------------------------------------------------
    metric_truth_scores_k="""
        Y_true : sparse matrix or ndarray of shape (n, L)
            The true 0/1 labels.
        Y_score : ndarray or sparse matrix of shape (n, L)
            The predicted scores (higher ranks first; no NaN).
        k : int or list/tuple of int, default=5
            The cut-off(s), each >= 1.
        """,
    partition_pair="""
        y_true : array-like of shape (n,)
            The classes.
        y_pred : array-like of shape (n,)
            The cluster of every point.
        """,
    inv_propensity_required="""
        inv_propensity : ndarray of shape (L,), optional
            The labels' inverse propensities, from :func:`inverse_propensity` on the training
            labels (required; pyxclib's argument order ``(Y_true, Y_score, inv_propensity, k)``
            is accepted too).
        """,
    # --- bounded reading (_bounded) ---------------------------------------------------------
    fail="""
        fail : callable
            ``fail(message)`` raises the caller's error (it does not return).
        """,
    zip_member="""
        zf : zipfile.ZipFile
            An archive opened by :func:`open_zip`.
        name : str
            The member's name.
        """,
    budget="""
        budget : Budget
            The load's budget.
        """,
    # --- distributed blocks -----------------------------------------------------------------
    block="""
        block : tuple (X, Y)
            A row block: csr features and csr labels (or None).
        """,
    executor="""
        ex : Executor
            The executor the futures belong to.
        """,
    # --- report, artifacts, data cache, containers ------------------------------------------
    triage_record="""
        record : dict
            A triage report's record (:attr:`featagg_core.triage.battery.TriageReport.record`).
        """,
    artifact_file="""
        path_or_file : str, os.PathLike or binary file object
            The file (e.g. a Streamlit upload).
        """,
    relpath="""
        relpath : str
            The file's path relative to the folder.
        """,
    # --- graph evaluation and feature selection baselines -----------------------------------
    graph_X_y="""
        X : sparse matrix or ndarray of shape (n, d)
            The node x feature matrix.
        y : array-like of shape (n,)
            The class of every node (-1 / NaN / None: unknown, left out of the scores).
        """,
    fs_X="""
        X : sparse or dense matrix (n, f)
            Node features.
        """,
    fs_W="""
        W : sparse matrix (n, n)
            Non-negative affinity graph.
        """,
    fs_progress="""
        progress : callable(fraction, message) or None, default None
            Called between the steps; it may raise :class:`featagg_core.utils.cancel.Cancelled`,
            which propagates.
        """,
    node="""
        node : int
            A node id.
        """,
    # --- estimators (defrag, fiat, refrag, pipeline) ----------------------------------------
    not_fitted="""
        NotFittedError
            Before :meth:`fit`.
        """,
    membership_returns="""
        Returns
        -------
        csr_matrix of float32 (d, K)
        """,
    # --- run-time estimates (estimate) ------------------------------------------------------
    run_estimate_args="""
        data : MultiLabelData, GraphData or CategoricalData
            The dataset the run would use.
        split : Split
            The split (from :func:`featagg_core.experiment.make_split`) of ``data``.
        spec : dict
            A run spec of docs/RUN_MODEL.md (made canonical first).
        speed : dict, optional
            :func:`measure_speed`'s dict; default :func:`default_speed`.
        stats : optional
            :func:`multilabel_stats` of ``data`` and ``split`` (for a multi-label run),
            computed once and passed to many estimates; None computes them here.
        """,
    cancel_tuning="""
        cancel : threading.Event-like, optional
            Stops the tuning (raises ``Cancelled``).
        """,
    npy_checks="""
        {budget}
        {fail}
        kinds : str, default="biuf"
            The allowed dtype kinds.
        """,
    # --- KTXMLC, BMGUFS, vocabulary compression (xmlc/, graph/, vocab/) ---------------------
    xml_X_Y="""
        X : sparse or dense matrix, shape (n, d)
            Features.
        Y : sparse or dense 0/1 matrix, shape (n, L)
            Labels.
        """,
    xml_X_Y_params="""
        Parameters
        ----------
        {xml_X_Y}
        """,
    xml_fit_raises="""
            ``self``, fitted.

        Raises
        ------
        ValueError
            For a parameter outside ``_parameter_constraints`` or bad ``X`` / ``Y``.
        """,
    sklearn_not_fitted_raises="""
        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        """,
    solver_stop="""
        solver : SolverSpec
            Solver parameters.
        stop : ndarray of uint8
            See :func:`run_jobs`.
        """,
    artifact_state_returns="""
        Returns
        -------
        tuple
            ``(meta dict, arrays dict)``.
        """,
    vocab_fit_returns="""
        Returns
        -------
        VocabularyCompressor
            ``self``, fitted.
        """,
    # --- groups of the fragments above (filled when DOCS is built) --------------------------
    experiment_progress="""
        {progress}
        {cancel_experiment}
        """,
    experiment_progress_status="""
        {progress}
        {cancel_experiment_status}
        {ks_ranking}
        """,
    work_progress="""
        {progress}
        {cancel_between_steps}
        """,
    tuning_progress="""
        {cancel_tuning}
        {progress}
        """,
    graph_scoring="""
        {n_seeds}
        {graph_rows}
        """,
    split_rows_args="""
        {data_any}
        split : Split
            A split of ``data``.
        {rows_split}
        """,
    ps_metric_args="""
        {metric_truth_scores_k}
        {inv_propensity_required}
        """,
    # --- data containers (data/_containers) -------------------------------------------------
    container_name_source="""
        name : str
            A short name (the readers use the file's stem).
        source : str
            Where the data came from (format and file), for display.
        """,
    fingerprint_returns="""
        Returns
        -------
        str
            16 hex digits of a sha1 over the content (see :func:`_fingerprint`).
        """,
    # --- Raises entries and whole sections (a one-parameter function's ``Parameters``) --
    not_applicable="""
        ValueError
            When the pipeline cannot be scored on these rows (:func:`check_applicable`) or is
            not of the kind the function needs.
        """,
    not_a_graph="""
        ValueError
            For a dataset that is not a graph with classes, or held-out nodes of fewer than two
            classes.
        """,
    bad_run_spec="""
        ValueError
            For a bad spec or one that does not fit the data.
        """,
    metric_value="""
        Returns
        -------
        float or ndarray
            The value, or one value per cut-off when ``k`` is a list/tuple.
        """,
    ps_metric_results="""
        {metric_value}

        Raises
        ------
        ValueError
            Without ``inv_propensity``, or with one of the wrong length.
        """,
    metric_sections="""
        Parameters
        ----------
        {metric_truth_scores_k}

        {metric_value}
        """,
    ps_metric_sections="""
        Parameters
        ----------
        {ps_metric_args}

        {ps_metric_results}
        """,
    ml_experiment_data="""
        data : MultiLabelData
            The dataset.
        split : Split
            Its split (everything is fitted on the training rows, scored on the test rows).
        """,
    artifact_read_args="""
        {artifact_file}
        max_bytes : int, optional
            Most bytes the load may inflate (default ``FEATAGG_MAX_LOAD_MB`` or 1 GiB).
        """,
    rows_data_returns="""
        Returns
        -------
        MultiLabelData, GraphData or CategoricalData
            The rows' data.
        """,
    data_any_params="""
        Parameters
        ----------
        {data_any}
        """,
    triage_record_params="""
        Parameters
        ----------
        {triage_record}
        """,
    canonical_spec_params="""
        Parameters
        ----------
        {canonical_spec}
        """,
)


def fill_doc(obj):
    """Decorator: fill the placeholders of ``obj.__doc__`` from :data:`DOCS`.

    Parameters
    ----------
    obj : function, method or class
        What to document.

    Returns
    -------
    object
        ``obj`` itself, its ``__doc__`` filled.
    """
    obj.__doc__ = fill(obj.__doc__)
    return obj
