"""featagg_core.utils.docstrings: shared numpydoc fragments filled into docstrings."""
import inspect

import pytest

from featagg_core.utils.docstrings import DOCS, fill, fill_doc


def test_placeholder_line_is_replaced_at_its_indent_and_getdoc_reads_it_as_written():
    frags = {"thing": "x : int\n    The x.\n\n    A second paragraph."}

    def written_out(x):
        """Summary.

        Parameters
        ----------
        x : int
            The x.

            A second paragraph.
        """

    def with_placeholder(x):
        """Summary.

        Parameters
        ----------
        {thing}
        """

    with_placeholder.__doc__ = fill(with_placeholder.__doc__, frags)
    assert inspect.getdoc(with_placeholder) == inspect.getdoc(written_out)


def test_literal_braces_and_inline_names_are_left_alone():
    doc = 'rows : {"test", "valid"}\n    One of {0, 1}; not {progress} inline.\n    {not a name}'
    assert fill(doc) == doc


def test_unknown_placeholder_fails_at_decoration():
    with pytest.raises(KeyError, match="no_such_fragment"):
        @fill_doc
        def f():
            """Summary.

            {no_such_fragment}
            """


def test_groups_are_filled_and_methods_and_missing_docs_work():
    assert "{" not in DOCS["experiment_progress"]
    assert DOCS["experiment_progress"] == DOCS["progress"] + "\n" + DOCS["cancel_experiment"]

    class C:
        @fill_doc
        def m(self, progress=None):
            """Summary.

            Parameters
            ----------
            {progress}
            """

        @fill_doc
        def bare(self):
            pass

    assert "progress : callable, optional" in inspect.getdoc(C.m)
    assert inspect.getdoc(C.bare) is None
