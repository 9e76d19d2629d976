"""The sidebar shown on every page (``app.py`` calls :func:`dataset_picker`): the dataset
picker, the session's split of that dataset, and the display options.

Pick a bundled sample (grouped by kind), a file of the server's data folder (when the
server has one: ``FEATAGG_DATA_DIR``, see :mod:`featagg_app.intake.data_folder`), or upload a
file. Each kind of data keeps its last upload (its bytes too: the session's durable state,
:class:`featagg_app.server.sessions.Upload`), so switching to graph data and back, or
reloading the page, finds it again. Uploads speak the dashboard's language: an ARFF without its XML asks for the number
of label columns at the end, a table with a single 0/1 column proposes it as the label,
replacing the main file clears its companion files, and the dataset keeps the uploaded
file's name. The chosen dataset is kept per
browser session through :mod:`featagg_app.state`. An upload is parsed once per new file
(or new options); its error, if any, stays shown under the uploader until the file changes.

Below it, :func:`split_picker` sets the one split every page uses for this dataset (test
fraction, validation fraction, seed; a dataset with its own test part uses that part), made
by ``featagg_core.experiment.make_split`` through :func:`featagg_app.state.current_split`.
"""
from __future__ import annotations

import streamlit as st

from featagg_app.intake import data_folder
from featagg_app.server.sessions import Upload
from featagg_app.views import display
from featagg_app import state
from featagg_app.text import error_message, md_escape, show_error
from featagg_core.data.samples import list_samples
from featagg_app.intake.uploads import (
    EXTRA_FILES,
    FORMAT_HELP,
    MAX_UPLOAD_MB,
    UPLOAD_TYPES,
    UploadError,
    propose_label,
    read_upload,
)

SOURCE_SAMPLE = "Bundled sample"
SOURCE_FOLDER = "Data folder"
SOURCE_UPLOAD = "Upload a file"
KIND_ORDER = {k: i for i, k in enumerate(state.KINDS)}
KIND_GROUP = {"multilabel": "Multi-label", "graph": "Graph", "table": "Table"}

# session_state keys (widgets and bookkeeping of this module)
K_SOURCE = "featagg_source"
K_SAMPLE = "featagg_sample"
K_UPLOAD_KIND = "featagg_upload_kind"
K_LABEL_COL = "featagg_label_column"
K_N_LABELS = "featagg_upload_n_labels"      # ARFF without XML: label columns at the end
_UPLOAD_SIG = "featagg.upload_sig"          # what the last parse was run on
_UPLOAD_RESULT = "featagg.upload_result"    # ("ok"|"error", text, needed option or None)
_UPLOAD_MAIN = "featagg.upload_main"        # kind -> file id of the main file seen last
_COMPANION_GEN = "featagg.companion_gen"    # kind -> generation of the companion uploaders
_LABEL_PROPOSAL = "featagg.label_proposal"  # the 0/1 column proposed for the last table
_UPLOADS = "featagg.uploads"                # kind -> sessions.Upload: the last good upload


def _sample_options() -> tuple[list, dict]:
    infos = sorted(list_samples(),
                   key=lambda s: KIND_ORDER.get(s.kind, 99))  # stable: real samples, then synthetic
    return [s.name for s in infos], {s.name: s for s in infos}


def _sample_picker() -> None:
    names, info = _sample_options()
    if K_SAMPLE not in st.session_state:      # first run, or back from "Upload a file"
        cur, default = state.current_source_id(), state.DEFAULT_SAMPLES["multilabel"]
        st.session_state[K_SAMPLE] = (cur if cur in info else
                                      default if default in info else names[0])
    name = st.selectbox(
        "Sample dataset", names, key=K_SAMPLE,
        format_func=lambda n: f"{info[n].title} · {KIND_GROUP.get(info[n].kind, info[n].kind)}",
        help="Small real datasets bundled with featagg (see sample_data/README.md).")
    s = info[name]
    st.caption(f"{s.description} ({s.shape_text})")
    if state.current_source_id() == name:
        return
    try:
        data = state.load_sample_cached(name)
    except Exception as exc:  # noqa: BLE001 - no traceback in the browser
        show_error(exc, context=f"Could not load the sample {s.title}")
        return
    state.set_dataset(data, origin="sample", source_id=name)


def _file_id(f) -> str:
    return getattr(f, "file_id", None) or f"{f.name}:{f.size}"


def _main_changed(kind: str, main) -> int:
    """Bookkeeping when the main file of ``kind`` changes: returns the companion uploaders'
    generation (bumped when one main file is replaced by another or removed, so the
    companions of the old file are cleared: Streamlit cannot empty an uploader, a new key
    gives a new, empty one) and forgets the label settings of the old file."""
    seen = st.session_state.setdefault(_UPLOAD_MAIN, {})
    gens = st.session_state.setdefault(_COMPANION_GEN, {})
    now = None if main is None else _file_id(main)
    before = seen.get(kind)
    if now != before:
        if before is not None:
            gens[kind] = gens.get(kind, 0) + 1
        seen[kind] = now
        st.session_state.pop(K_N_LABELS, None)
        if kind == "table":
            st.session_state.pop(K_LABEL_COL, None)
            proposal = None if main is None else propose_label(main.name, main.getvalue())
            st.session_state[_LABEL_PROPOSAL] = proposal
            if proposal:
                st.session_state[K_LABEL_COL] = proposal
    return gens.get(kind, 0)


def _upload_picker() -> None:
    kind = st.radio("Kind of data", list(state.KINDS), key=K_UPLOAD_KIND, horizontal=True,
                    format_func=lambda k: KIND_GROUP[k])
    st.caption(f"{FORMAT_HELP[kind]} Up to **{MAX_UPLOAD_MB} MB** per file"
               + (" (larger files: the server's *Data folder*)" if data_folder.configured()
                  else "")
               + ". Files are parsed by featagg's readers only: never unpickled, never "
                 "executed.")
    main = st.file_uploader("Data file", type=UPLOAD_TYPES[kind], key=f"featagg_upload_{kind}",
                            max_upload_size=MAX_UPLOAD_MB)
    result_slot = st.container()      # the outcome shows right under the file, not below
    gen = _main_changed(kind, main)
    extras = {}
    if EXTRA_FILES[kind]:
        keys = {r: f"featagg_upload_{kind}_{r}_{gen}" for r in EXTRA_FILES[kind]}
        with st.expander("Optional companion files",
                         expanded=any(st.session_state.get(k) for k in keys.values())):
            for role, (label, types) in EXTRA_FILES[kind].items():
                f = st.file_uploader(label, type=types, key=keys[role],
                                     max_upload_size=MAX_UPLOAD_MB)
                if f is not None:
                    extras[role] = f
    label_col = n_labels = None
    if kind == "table":
        label_col = st.text_input("Label column (binary 0/1)", key=K_LABEL_COL,
                                  placeholder="e.g. income",
                                  help="Leave empty to let the reader find it.").strip() or None
        proposal = st.session_state.get(_LABEL_PROPOSAL)
        if proposal and label_col == proposal:
            st.caption(f"Proposed **{md_escape(proposal)}** as the label: it is the "
                       "file's only column of 0/1 values. Type another column to change it.")
    status, text, needs = st.session_state.get(_UPLOAD_RESULT, ("", "", None))
    if kind == "multilabel" and main is not None and "xml" not in extras and (
            needs == "n_labels" or st.session_state.get(K_N_LABELS) is not None):
        n_labels = st.number_input(
            "Number of label columns at the end", 1, 1_000_000, None, key=K_N_LABELS,
            placeholder="e.g. 374",
            help="MULAN ARFF files keep the labels as the last attributes; its XML label "
                 "header (under Optional companion files) would name them instead.")
    if main is None:
        held = st.session_state.get(_UPLOADS, {}).get(kind)
        last = None if held is None else held.data
        if last is not None and last.kind == kind:
            if state.current_fingerprint() != last.fingerprint:
                state.set_dataset(last, origin="upload", source_id="upload")
            result_slot.caption(f"Using your earlier upload **{md_escape(last.name)}**.")
        return
    sig = (kind, _file_id(main), tuple(sorted((r, _file_id(f)) for r, f in extras.items())),
           label_col, n_labels)
    if st.session_state.get(_UPLOAD_SIG) != sig:
        st.session_state[_UPLOAD_SIG] = sig
        raw = main.getvalue()
        extra_raw = {r: (f.name, f.getvalue()) for r, f in extras.items()}
        try:
            with result_slot, st.spinner(f"Reading {main.name}…"):
                data = load_upload(kind, main.name, raw, extras=extra_raw,
                                   label=label_col, n_labels=n_labels)
        except UploadError as exc:
            st.session_state[_UPLOAD_RESULT] = ("error", str(exc), exc.needs)
        except Exception as exc:  # noqa: BLE001 - load_upload only raises UploadError
            st.session_state[_UPLOAD_RESULT] = ("error", error_message(exc), None)
        else:
            st.session_state.setdefault(_UPLOADS, {})[kind] = Upload(
                kind=kind, name=main.name, raw=raw, extras=extra_raw, label=label_col,
                n_labels=n_labels, data=data, fingerprint=data.fingerprint)
            state.set_dataset(data, origin="upload", source_id="upload")
            st.session_state[_UPLOAD_RESULT] = ("ok", f"Loaded {state.dataset_label(data)}",
                                                None)
        st.rerun()                    # the widgets above follow the outcome (what to ask for)
    if status == "error":
        result_slot.error(f"Could not load this file: {md_escape(text)}", icon="⚠️")
    elif status == "ok":
        result_slot.success(md_escape(text))


def load_upload(kind: str, name: str, raw: bytes, *, extras=None, label=None, n_labels=None):
    """Parse an upload (see :func:`featagg_app.intake.uploads.read_upload`); every failure comes
    out as an UploadError whose message (in the dashboard's words) the sidebar shows."""
    return read_upload(kind, name, raw, extras=extras, label=label, n_labels=n_labels)


def dataset_picker():
    """Draw the dataset picker in the sidebar; returns the session's current dataset
    (loading the default Bibtex sample on a session's first run)."""
    with st.sidebar:
        st.subheader("Dataset")
        sources = [SOURCE_SAMPLE] + ([SOURCE_FOLDER] if data_folder.configured() else []) \
            + [SOURCE_UPLOAD]
        if st.session_state.get(K_SOURCE) not in sources:
            st.session_state[K_SOURCE] = SOURCE_SAMPLE
        source = st.radio("Source", sources, key=K_SOURCE, horizontal=True,
                          label_visibility="collapsed")
        if source == SOURCE_SAMPLE:
            _sample_picker()
        elif source == SOURCE_FOLDER:
            data_folder.folder_picker()
        else:
            _upload_picker()
        data = state.current_dataset()
        if data is not None:
            st.caption(f"In use: **{md_escape(state.dataset_label(data))}**")
            split_picker(data)
        else:
            st.caption("No dataset in use yet.")
        _cluster_line()
        display.display_options()
    return data


@st.cache_data(ttl=30, show_spinner=False)
def _cluster_status(scheduler: str) -> dict:
    from featagg_core.distributed import describe_scheduler
    return describe_scheduler(scheduler)


def _cluster_line() -> None:
    """Where DEFRAG and KTXMLC fits run, when ``FEATAGG_DASK_SCHEDULER`` names a cluster."""
    from featagg_core.distributed import scheduler_from_env
    scheduler = scheduler_from_env()
    if scheduler is None:
        return
    status = _cluster_status(scheduler)
    text = md_escape(status["message"])
    if status["ok"]:
        st.caption(f"🖧 {text} DEFRAG and KTXMLC fits run there (the same models).")
    else:
        st.warning(f"{text} DEFRAG and KTXMLC fits will fail until it is reachable; unset "
                   "FEATAGG_DASK_SCHEDULER to fit on this server.")


def split_picker(data) -> None:
    """The split widget: test fraction (when the dataset has no test part of its own),
    validation fraction and seed of this session's split of ``data``. The widgets are new
    for every dataset, so each dataset keeps its own settings."""
    st.subheader("Split")
    settings = state.split_settings(data)
    tag = data.fingerprint[:12]
    own = state.has_own_test(data)
    with st.expander("Test / validation rows", expanded=False):
        how = None
        if own:
            use_own = st.checkbox(f"Use its own test part ({data.X_test.shape[0]:,} rows)",
                                  value=settings["how"] is None, key=f"featagg_split_own_{tag}",
                                  help="the dataset came with a test part; untick to split its "
                                       "training part at random instead")
            how = None if use_own else "random"
        test = settings["test_size"]
        if how == "random" or not own:
            test = st.slider("Test fraction", 0.05, 0.5, float(settings["test_size"]), 0.05,
                             key=f"featagg_split_test_{tag}",
                             help="share of the rows held out for the test metrics; no "
                                  "fitted step ever sees them")
        valid = st.slider("Validation fraction", 0.0, 0.4, float(settings["valid_size"]), 0.05,
                          key=f"featagg_split_valid_{tag}",
                          help="share of the rows held out from training for validation "
                               "metrics (0 = none)")
        seed = st.number_input("Seed", 0, 1_000_000, int(settings["random_state"]), 1,
                               key=f"featagg_split_seed_{tag}",
                               help="which rows go where (the same seed gives the same rows)")
    if (float(test), float(valid), int(seed), how) != (
            settings["test_size"], settings["valid_size"], settings["random_state"],
            settings["how"]):
        state.set_split_settings(data, test, valid, seed, how)
    try:
        split = state.current_split(data)
    except ValueError as exc:
        show_error(exc, context="This split cannot be made")
        return
    st.caption(md_escape(split.describe()) + f" · id `{split.split_id[:8]}`")
