"""What the server's first visitor would otherwise wait for, done during the warm-up.

A server that has compiled its kernels still has work left that the first person to open
a page pays for, and that every later visitor then shares: importing the pages' modules
(the views, plotly, pandas, the run and health helpers: about 40 modules and a second or
two of CPU) and loading the bundled sample every session starts on (Bibtex, shared
read-only through ``st.cache_resource``). :func:`warm_server` does both in the server's
kernel loader thread once every kernel group is ready
(:meth:`featagg_app.server.warmup.KernelWarmup.then`, registered by
:func:`featagg_app.server.serve.main`), before the log says "kernels: all … groups ready"
and before the garbage collector freezes what the server has loaded.

Why here and not on the first visit: the first visitor's page then opens without that
wait, and the server's memory when idle already holds what it keeps for as long as it
runs, so the memory a class leaves behind is measured against a server that is really
warm (``benchmarks/class_sim.py``, ``benchmarks/results/classroom.md``). The other kinds'
default samples (Cora, Adult) are left to the first person who switches kind: most classes
never do, and each costs memory for the server's lifetime.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading

__all__ = ["warm_server"]

#: the Streamlit logger that warns when a cached function (its spinner) runs outside a page
_CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


@contextlib.contextmanager
def _no_script_context_warning():
    """Drop Streamlit's "missing ScriptRunContext" warning for this thread only while the
    shared cache is filled outside any page (nothing is drawn, so nothing is missing)."""
    here = threading.current_thread().name

    def keep(record: logging.LogRecord) -> bool:
        return record.threadName != here

    log = logging.getLogger(_CONTEXT_LOGGER)
    log.addFilter(keep)
    try:
        yield
    finally:
        log.removeFilter(keep)


def warm_server() -> str:
    """Import the pages' modules and load the default multi-label sample into the shared
    cache.

    Returns
    -------
    str
        A line for the server's log: what was loaded.
    """
    before = len(sys.modules)
    # the modules the pages import (the page scripts themselves are run per visit)
    from featagg_app import experiment_sections, health_ui, runs_ui, state  # noqa: F401
    from featagg_app.intake import sidebar  # noqa: F401
    from featagg_app.views import (agglomeration, charts, compare, data, display,  # noqa: F401
                                   export, graph_features, health, home, rare_labels,
                                   triage, vocabulary, xmlc)
    from featagg_core import health as core_health, triage as core_triage  # noqa: F401
    name = state.DEFAULT_SAMPLES["multilabel"]
    with _no_script_context_warning():
        sample = state.load_sample_cached(name)
    return (f"[featagg] warm: {len(sys.modules) - before} page modules imported, the "
            f"default sample {name} ({sample.n_samples:,} points) loaded")
