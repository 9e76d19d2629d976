"""The server's data folder in the sidebar: ``FEATAGG_DATA_DIR`` (``bash scripts/dashboard.sh
--data-dir DIR``) lists its dataset files next to the bundled samples, with no upload cap.

Opening a file is a job on the server's runner (progress, Cancel): the first open of a
large multi-label file parses it once and writes its memory-mapped npz cache beside it
(``featagg_core.data.cache``); every later open, by any session, maps that cache in about a
second. Opened datasets are shared read-only by every session of the server through one
:class:`featagg_core.data.cache.DatasetStore` (``st.cache_resource``, keyed on the real
path + size + mtime of the file and its companions, bounded by ``FEATAGG_DATA_CACHE_MB``,
default 4096 MiB). Files from ``FEATAGG_DATA_CACHE_MIN_MB`` (default 4) on get the disk
cache. A browser user only ever sees paths relative to the folder; a path
outside it (``..``, a symlink out) is refused by the core's :meth:`DataFolder.resolve`.

API::

    configured() -> bool                 # FEATAGG_DATA_DIR is set
    get_folder() -> DataFolder | None    # None when unset or not a folder (logged)
    get_store() -> DatasetStore          # the server's shared store
    list_files() -> list[FolderFile]     # cached for LISTING_TTL_S seconds
    skipped_names() -> list[str]         # entries left out: names not valid UTF-8
    folder_picker()                      # the sidebar widget (inside ``with st.sidebar``)
    open_in_job(relpath, options) -> Job # what the picker does on a pick
"""
from __future__ import annotations

import logging
import os
from typing import Optional

import streamlit as st

from featagg_app import runs_ui, state
from featagg_app.intake import guidance
from featagg_app.server import context
from featagg_app.server.jobs import JobQueueFull
from featagg_app.text import md_escape
from featagg_core.data import DatasetError
from featagg_core.data.cache import CONVERT_MIN_BYTES, DataFolder, DatasetStore

ENV_CACHE_MB = "FEATAGG_DATA_CACHE_MB"
ENV_MIN_MB = "FEATAGG_DATA_CACHE_MIN_MB"   # files from this size on get a disk cache
DEFAULT_CACHE_MB = 4096
#: seconds a folder listing is reused before the folder is walked again
LISTING_TTL_S = 10
#: wall seconds per byte of a first open (parse + cache write), and of opening a fresh
#: cache (measured: benchmarks/results/dashboard_notes.md)
FIRST_OPEN_S_PER_BYTE = 1 / 13e6
CACHED_OPEN_S = 1.5

K_FILE = "featagg_folder_file"            # the select box
K_NLABELS = "featagg_folder_n_labels"      # ARFF without XML: label columns at the end
K_LABEL = "featagg_folder_label"           # table: label column
_JOB = "featagg.folder_job"                # (relpath, options, Job) of this session
_RESULT = "featagg.folder_result"          # (relpath, options, "error"|"needs", text, option)
_CURRENT = "featagg.folder_current"        # (relpath, fingerprint, options) of the dataset in use

_log = logging.getLogger("featagg_app")


def configured() -> bool:
    """True when the server was started with a data folder (``FEATAGG_DATA_DIR``)."""
    return context.data_dir() is not None


def _min_bytes() -> int:
    try:
        mb = float(os.environ.get(ENV_MIN_MB, "") or CONVERT_MIN_BYTES / (1 << 20))
    except ValueError:
        mb = CONVERT_MIN_BYTES / (1 << 20)
    return int(max(mb, 0.0) * (1 << 20))


@st.cache_resource(show_spinner=False, max_entries=4)
def _folder(root: str) -> Optional[DataFolder]:
    try:
        return DataFolder(root, convert_min_bytes=_min_bytes())
    except DatasetError:
        _log.error("featagg: the data folder %r (FEATAGG_DATA_DIR) is not a folder", root)
        return None


def get_folder() -> Optional[DataFolder]:
    """The server's :class:`DataFolder`, or None (unset, or not a readable folder)."""
    root = context.data_dir()
    return _folder(os.path.realpath(root)) if root else None


def _cache_mb() -> float:
    try:
        mb = float(os.environ.get(ENV_CACHE_MB, "") or DEFAULT_CACHE_MB)
    except ValueError:
        mb = DEFAULT_CACHE_MB
    return mb if mb > 0 else DEFAULT_CACHE_MB


@st.cache_resource(show_spinner=False)
def _store(max_bytes: int) -> DatasetStore:
    return DatasetStore(max_bytes)


def get_store() -> DatasetStore:
    """The server's one store of opened folder datasets (shared by every session)."""
    return _store(int(_cache_mb() * (1 << 20)))


@st.cache_data(ttl=LISTING_TTL_S, show_spinner=False, max_entries=4)
def _listing(root: str) -> tuple:
    folder = _folder(root)
    skipped: list = []
    files = [] if folder is None else folder.list_files(skipped=skipped)
    return files, skipped


def list_files() -> list:
    """The folder's dataset files (:class:`FolderFile`), walked at most every
    :data:`LISTING_TTL_S` seconds (only names and sizes: no file's content is read)."""
    folder = get_folder()
    return [] if folder is None else _listing(folder.root)[0]


def skipped_names() -> list:
    """The escaped names of the folder's entries left out of :func:`list_files` because
    their name is not valid UTF-8 (``bad\\xff\\xfe.csv``)."""
    folder = get_folder()
    return [] if folder is None else _listing(folder.root)[1]


def _opts_key(options: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in (options or {}).items() if v not in (None, "")))


def open_in_job(relpath: str, options: Optional[dict] = None):
    """Queue the opening of ``relpath`` as a job of this session and remember it; returns
    the Job (None when the session's queue is full, which is said in the sidebar)."""
    folder, store = get_folder(), get_store()
    options = dict(_opts_key(options or {}))
    entry = folder.describe(relpath)
    key = folder.cache_key(relpath, options)
    cached = store.peek(key) is not None or entry.cached
    estimate = CACHED_OPEN_S if cached else 2.0 + entry.size * FIRST_OPEN_S_PER_BYTE

    def work(progress, cancel):
        try:
            return ("ok", store.get(key, lambda: folder.load(relpath, options=options,
                                                              progress=progress)))
        except DatasetError as exc:
            return ("error", str(exc))

    try:
        # parsing needs the readers' kernels: on a server still compiling them in the
        # background the job waits for them (compiling in the server would stall every
        # session); a cached open maps the npz and runs no kernel
        job = context.get_runner().submit(state.session_id(), f"Opening {relpath}", work,
                                          estimate_s=estimate, kind="open",
                                          needs=() if cached else ("readers",))
    except JobQueueFull as exc:
        st.warning(str(exc), icon=":material/hourglass_top:")
        return None
    st.session_state[_JOB] = (relpath, _opts_key(options), job)
    st.session_state.pop(_RESULT, None)
    return job


def _collect() -> None:
    """Pick up this session's finished opening job: use its dataset, or keep its message."""
    held = st.session_state.get(_JOB)
    if held is None:
        return
    relpath, opts, job = held
    if job.status in ("queued", "running"):
        return
    del st.session_state[_JOB]
    if job.status != "done":
        text = job.error or job.message or "cancelled"
        st.session_state[_RESULT] = (relpath, opts, "error", text, None)
        return
    status, value = job.result
    if status == "ok":
        state.set_dataset(value, origin="folder", source_id=relpath)
        st.session_state[_CURRENT] = (relpath, value.fingerprint, opts)
        return
    option = guidance.needed_option(value)
    st.session_state[_RESULT] = (relpath, opts, "needs" if option else "error",
                                 guidance.ui_message(value), option)


def _in_use() -> Optional[str]:
    """The folder file this session's dataset came from (None when it is something else)."""
    cur = st.session_state.get(_CURRENT)
    if cur is None or state.current_origin() != "folder":
        return None
    return cur[0] if state.current_fingerprint() == cur[1] else None


def _reopen_if_changed(relpath: str) -> None:
    """The session's dataset from the folder maps a cache file that changed on the server
    since (cut, rewritten, removed): reading it could run past the end of a cut file and
    kill the server (SIGBUS). Before any page uses it in this run, it is replaced by a
    fresh open (from the store, which drops the changed one), and the person is told."""
    from featagg_core.data.mapped_npz import mapped_file_changed
    changed = mapped_file_changed(state.current_dataset())
    if changed is None:
        return
    cur = st.session_state.get(_CURRENT)
    options = dict(cur[2]) if cur is not None and len(cur) > 2 else {}
    folder, store = get_folder(), get_store()
    try:
        with st.spinner(f"{relpath} changed on the server: opening it again…"):
            fresh = store.get(folder.cache_key(relpath, options),
                              lambda: folder.load(relpath, options=options))
    except DatasetError as exc:
        st.error(f"{md_escape(relpath)} changed on the server and cannot be opened again: "
                 f"{md_escape(guidance.ui_message(str(exc)))}", icon="⚠️")
        return
    state.set_dataset(fresh, origin="folder", source_id=relpath)
    st.session_state[_CURRENT] = (relpath, fresh.fingerprint, _opts_key(options))
    _log.warning("featagg: the data cache of %s changed under the server (%s); reopened",
                 relpath, changed)
    st.warning(f"**{md_escape(relpath)}** changed on the server ({md_escape(changed)}); it "
               "was opened again.", icon="⚠️")


def _options_widgets(relpath: str, option: str) -> Optional[dict]:
    """The widget that supplies what the reader asked for; returns the options once the
    person pressed Open, else None."""
    if option == "n_labels":
        n = st.number_input("Number of label columns at the end", 1, 100_000, None,
                            key=f"{K_NLABELS}:{relpath}", placeholder="e.g. 374",
                            help="MULAN ARFF files keep the labels as the last attributes; "
                                 "the XML label header (<name>.xml beside the file) would "
                                 "say which they are")
        if st.button("Open with these label columns", key=f"{K_NLABELS}:{relpath}:go",
                     disabled=n is None):
            return {"n_labels": int(n)}
    elif option == "label":
        col = st.text_input("Label column (binary 0/1)", key=f"{K_LABEL}:{relpath}")
        if st.button("Open with this label", key=f"{K_LABEL}:{relpath}:go",
                     disabled=not col.strip()):
            return {"label": col.strip()}
    return None


def folder_picker() -> None:
    """The "Data folder" part of the sidebar's dataset picker (call inside the sidebar)."""
    folder = get_folder()
    if folder is None:
        st.warning("The server's data folder is not available (see the server log).",
                   icon="⚠️")
        return
    _collect()
    if _in_use() is not None:
        _reopen_if_changed(_in_use())
    files = list_files()
    skipped = skipped_names()
    if skipped:
        shown = ", ".join(md_escape(n) for n in skipped[:3])
        more = f" and {len(skipped) - 3:,} more" if len(skipped) > 3 else ""
        st.caption(f"Left out because their names are not valid UTF-8 text: {shown}{more}. "
                   "Rename them on the server to open them here.")
    if not files:
        st.info("The server's data folder holds no dataset files yet.")
        return
    by_rel = {f.relpath: f for f in files}
    current = _in_use()
    if st.session_state.get(K_FILE) not in by_rel:
        st.session_state[K_FILE] = current if current in by_rel else None
    rel = st.selectbox(
        "File in the data folder", list(by_rel), key=K_FILE, index=None,
        placeholder="Choose a file",
        format_func=lambda r: by_rel[r].label if r in by_rel else r,
        help="Files on the server (no upload limit). A large file is converted once to a "
             "memory-mapped cache; after that every session opens it in seconds.")
    st.caption(f"{len(files):,} dataset file{'s' if len(files) != 1 else ''} in the "
               "server's data folder, shared by every session.")
    if rel is None:
        return
    held = st.session_state.get(_JOB)
    if held is not None and held[0] == rel and held[2].done:
        # it finished after _collect() above looked (a small file opens in milliseconds):
        # collect it in a fresh run instead of opening the file again without its options
        st.rerun()
    if held is not None and held[2].status in ("queued", "running"):
        if held[0] == rel:
            runs_ui.job_panel(held[2], key="job:sidebar:folder")
            return
        held[2].cancel()                  # another file was picked meanwhile
        st.session_state.pop(_JOB, None)
    if rel == current:
        return
    result = st.session_state.get(_RESULT)
    if result is not None and result[0] == rel:
        _, _, status, text, option = result
        st.error(f"Could not open this file: {md_escape(text)}", icon="⚠️")
        opts = _options_widgets(rel, option) if status == "needs" else None
        if opts is None and st.button("Try again", key=f"{K_FILE}:retry"):
            opts = {}
        if opts is not None and open_in_job(rel, opts) is not None:
            st.rerun()
        return
    try:
        job = open_in_job(rel)
    except DatasetError as exc:           # vanished or refused since the listing
        st.session_state[_RESULT] = (rel, (), "error", guidance.ui_message(str(exc)), None)
        st.rerun()
    if job is not None:
        runs_ui.job_panel(job, key="job:sidebar:folder")
