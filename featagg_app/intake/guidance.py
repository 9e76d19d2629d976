"""The readers' messages in the dashboard's words (no streamlit here: unit-testable).

``featagg_core``'s readers speak to a programmer: "pass xml= (MULAN label file) or
n_labels= (the last attributes)". A browser user has no keyword arguments, only the
sidebar's widgets, so every message that reaches a page from a reader (uploads, the data
folder) goes through :func:`ui_message` first, and :func:`needed_option` tells the sidebar
which widget would fix the problem:

* ``"n_labels"`` — an ARFF without its MULAN XML: ask for the XML or for the number of
  label columns at the end;
* ``"label"`` — a table whose label column the reader cannot guess: ask for the column.
"""
from __future__ import annotations

import re
from typing import Optional

#: (pattern, replacement) applied in order; patterns are the readers' phrasings
_RULES = [
    (r"cannot tell which attributes are labels: pass xml= \(MULAN label file\) or "
     r"n_labels= \(the last attributes\)",
     "this ARFF file does not say which attributes are labels: add its MULAN XML label "
     "header, or give the number of label columns at the end of each row"),
    (r"n_labels=(\d+) but the file has (\d+) attributes",
     r"\1 label columns were asked for, but the file has only \2 attributes"),
    (r"header 'N D' is the XC split format's features file: pass the labels file as "
     r"labels_path=",
     "this is the features file of the XC split format (header 'N D'); use the file "
     "with the 'N D L' header, which holds the labels too"),
    (r"labels_path= given but the header 'N D L' says the labels are in this file",
     "a labels file was given, but this file's 'N D L' header says it holds the labels "
     "itself"),
    (r"say which column is the binary label: label=\.\.\. ",
     "say which column is the binary 0/1 label "),
    (r"; pass positive= \(one value is the positive class\) or threshold= \(a number: rows "
     r"at or above it are positive\) to binarise",
     "; give a column with two values as the label here; a numeric column (a rating) can "
     "then be the label on the Vocabulary compression page: pick it under **Label column** "
     "and set **Positive when at least**"),
    (r": pass positive= to say which value is the positive class",
     ": a label needs two values (0 and 1)"),
    (r"positive=('[^']*'|\"[^\"]*\") never occurs in the label column",
     r"the value \1 never occurs in the label column"),
    (r"\(use load_graph/load_categorical\)",
     "(pick the matching kind of data in the sidebar: Graph or Table)"),
    (r"\(use load_dataset/load_categorical\)",
     "(pick the matching kind of data in the sidebar: Multi-label or Table)"),
    (r"\(use load_dataset/load_graph\)",
     "(pick the matching kind of data in the sidebar: Multi-label or Graph)"),
    (r"\(use the command line, python -m featagg_core, for larger data\)",
     "(larger data sets belong in the server's data folder)"),
    (r"; raise max_bytes \(FEATAGG_MAX_LOAD_MB\) to load it",
     "; that is over the server's limit for one file (larger data sets belong in the "
     "server's data folder)"),
    (r"raise max_bytes \(FEATAGG_MAX_LOAD_MB\)",
     "the server's limit for one file is too small for it"),
    (r"node_ids='int' but a node name is not a non-negative integer",
     "a node name is not a non-negative integer"),
    (r"no <label name=\.\.\.> elements in the label XML",
     "the label XML names no labels (no <label> elements)"),
    (r"end at nnz=(\d+)", r"end at the number of stored values (\1)"),
    (r"\(zero_based=False\)", "(its indices start at 1)"),
]
_COMPILED = [(re.compile(p), r) for p, r in _RULES]
#: what is left of an API keyword after the rules: "pass foo=" / "foo=..." / "foo=3"
_KEYWORD = re.compile(r"\b(?:pass\s+)?([a-z_][a-z0-9_]*)=(?:\.\.\.|\S*)")


def ui_message(text: str) -> str:
    """``text`` (a reader's message) with every API keyword turned into the dashboard's
    words; a keyword no rule knows is dropped with its ``pass`` ("pass foo=" → "the
    foo setting")."""
    out = str(text)
    for pat, rep in _COMPILED:
        out = pat.sub(rep, out)
    return _KEYWORD.sub(lambda m: f"the {m.group(1).replace('_', ' ')} setting", out)


def needed_option(text: str) -> Optional[str]:
    """Which sidebar widget would let the reader succeed: ``"n_labels"`` (an ARFF without
    its XML), ``"label"`` (a table without a guessable label column), or None."""
    t = str(text)
    if "cannot tell which attributes are labels" in t:
        return "n_labels"
    if "say which column is the binary label" in t:
        return "label"
    return None
