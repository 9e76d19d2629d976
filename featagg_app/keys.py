"""Widget keys tied to a dataset.

A widget whose range or meaning depends on the data (the number of blocks k, d0, a budget,
the label column, K, d, …) is keyed by the dataset it was drawn for, so nothing it held
carries over to another dataset: on a new dataset it is a new widget and takes its default
from the new data (Cora's k = 7 classes does not stay in the box when a 17-class graph is
uploaded). Every page builds such keys with :func:`data_key`; tests find the widget again
by its name with :func:`key_name`.
"""
from __future__ import annotations

#: how much of the dataset fingerprint a key carries (48 bits: datasets of one session
#: never collide in practice)
FINGERPRINT_CHARS = 12


def data_key(name: str, data) -> str:
    """The widget key ``name`` for the dataset ``data``: ``"gf_k@1a2b3c4d5e6f"``.

    Parameters
    ----------
    name : str
        The widget's name on its page ("gf_k").
    data : MultiLabelData, GraphData or CategoricalData
        The dataset the page draws the widget for (the one it works on, which may be a
        bundled sample when the sidebar's dataset is of another kind).

    Returns
    -------
    str
        ``name`` followed by ``@`` and the first characters of the dataset's fingerprint.
    """
    return f"{name}@{str(data.fingerprint)[:FINGERPRINT_CHARS]}"


def key_name(key: str) -> str:
    """The widget name of a key made by :func:`data_key` (``"gf_k@1a2b…"`` → ``"gf_k"``);
    a key not tied to a dataset is its own name.

    Parameters
    ----------
    key : str
        A widget key.

    Returns
    -------
    str
        The part before ``@``.
    """
    return str(key).split("@", 1)[0]
