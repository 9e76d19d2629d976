"""featagg dashboard entry point: ``streamlit run app.py`` (or ``bash scripts/dashboard.sh``,
which starts it through ``featagg_app.server.serve`` with the kernels compiled before serving).

Runs on every script run of every session: page config, the durable session named by the
URL's ``?session=KEY`` (``featagg_app.state.durable_session``: a reload or a new tab with the
same URL gets the work back; the run's state is handed to the server's store when the run
ends, ``state.save_session``), the server's background kernel compilation and session
reaper (started once per server process; skipped when the environment has
FEATAGG_WARMUP=0, as the in-process AppTest tests do), the sidebar dataset picker, and
navigation over the pages that exist.
"""
import logging
import sys
from pathlib import Path

import streamlit as st

# Jobs compute in worker threads of this process. A thread that waits for I/O (the event
# loop serving every browser, a page's script) gets the GIL back only when the computing
# thread is forced to drop it, every "switch interval" (5 ms by default): a page with many
# small messages then waits for hundreds of those. 1 ms keeps other sessions responsive
# while a job runs, for a negligible cost to the job (measured:
# benchmarks/results/dashboard_notes.md).
if sys.getswitchinterval() > 0.001:
    sys.setswitchinterval(0.001)

st.set_page_config(page_title="featagg", page_icon="🧮", layout="wide",
                   initial_sidebar_state="expanded")

from featagg_app import state  # noqa: E402
from featagg_app.intake import sidebar  # noqa: E402
from featagg_app.server import context, reaper  # noqa: E402
from featagg_app.text import show_error  # noqa: E402
from featagg_app.views import home  # noqa: E402

ROOT = Path(__file__).resolve().parent

#: pages after Home, in menu order: (file, title, icon)
PAGES = [
    ("pages/data.py", "Data", ":material/table_chart:"),
    ("pages/triage.py", "Triage", ":material/fact_check:"),
    ("pages/feature_agglomeration.py", "Feature agglomeration", ":material/account_tree:"),
    ("pages/extreme_classification.py", "Extreme classification", ":material/label:"),
    ("pages/rare_labels.py", "Rare labels", ":material/trending_down:"),
    ("pages/graph_features.py", "Graph features", ":material/hub:"),
    ("pages/vocabulary.py", "Vocabulary compression", ":material/compress:"),
    ("pages/compare.py", "Compare", ":material/compare_arrows:"),
    ("pages/export.py", "Export", ":material/download:"),
]


def main() -> None:
    # widget values come back from the durable session through st.session_state: no
    # "default value also set via Session State" warning for them
    _quiet_duplication_warning()
    try:
        state.durable_session()
    except Exception:  # noqa: BLE001 - the page still works, only without a durable session
        logging.getLogger("featagg_app").exception("featagg: the durable session failed")
    try:
        _run()
    finally:
        state.save_session()


def _quiet_duplication_warning() -> None:
    try:
        from streamlit import config
        if not config.get_option("global.disableWidgetStateDuplicationWarning"):
            config.set_option("global.disableWidgetStateDuplicationWarning", True)
    except Exception:  # noqa: BLE001 - only a warning is at stake
        pass


def _run() -> None:
    # the server's background compilation of the numba kernels (featagg_app/server/warmup.py:
    # child processes fill numba's cache in the order pages need it, jobs wait for the
    # kernels they need) and its session reaper (featagg_app/server/reaper.py: a closed or idle
    # session's runs are freed). FEATAGG_WARMUP=0 (in-process AppTest runs): neither.
    if context.kernel_warmup_enabled():
        context.kernels()
        reaper.session_seen()
    freed = st.session_state.pop(reaper.FREED_KEY, False)
    unknown = st.session_state.pop(state.SESSION_NOTICE, False)
    if freed:
        st.info("This session was idle for a long time: its dataset and runs were freed to "
                "make room for others on this server. Pick a dataset to start again.",
                icon=":material/bedtime:")
    elif unknown:
        st.info("The link you opened names a session this server does not have (it "
                "expired, or the server was restarted): this is a new session.",
                icon=":material/bedtime:")
    pages = [st.Page(home.render, title="Home", icon=":material/home:", url_path="home",
                     default=True)]
    pages += [st.Page(str(ROOT / f), title=t, icon=i) for f, t, i in PAGES]
    nav = st.navigation(pages)
    try:
        sidebar.dataset_picker()
    except Exception as exc:  # noqa: BLE001 - never a traceback in the browser
        with st.sidebar:
            show_error(exc, context="The dataset picker failed")
    try:
        nav.run()
    except Exception as exc:  # noqa: BLE001 - st.stop/st.rerun are BaseException: not caught
        show_error(exc, context=f"The page {nav.title!r} failed")


main()
