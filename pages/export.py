"""Export page: download what this session trained; import an artifact and evaluate it."""
import functools
import json

import streamlit as st

from featagg_app import export_view as ev
from featagg_app import session
from featagg_core.artifacts import (ArtifactError, artifact_bytes, bundle_bytes, is_bundle,
                                    load_artifact, load_bundle)

MAX_IMPORT_MB = 200

st.title("Export and import")

with st.expander("How it works", expanded=False):
    st.markdown(
        "A **featagg artifact** (`.fgz`) is a zip of plain numeric arrays (`.npy`, read with "
        "`allow_pickle=False`) and a JSON manifest: the class, its parameters, library "
        "versions, the fingerprint of the dataset it was trained on, the metrics at save time "
        "and a checksum of every array. Loading checks all of it, so a damaged or edited file "
        "is refused with a clear message; nothing in it is ever executed or unpickled.\n\n"
        "* **Download** one fitted object, or a **bundle** of all of them with the run table.\n"
        "* **Plain files** (CSV/JSON) — cluster assignments, feature rankings, vocabulary "
        "mappings — for use outside featagg.\n"
        "* **Import** an artifact (yours, or from `python -m featagg_core ... --out`) and "
        "evaluate it on the current dataset.")

data = session.current_dataset()
objects = ev.exportable(session.stored())

st.header("Download")
if not objects:
    st.info("Nothing trained in this session yet (or the dataset was switched, which clears "
            "fitted objects). Fit something on another page, then come back.")
else:
    fp = session.current_fingerprint()
    for key, obj in objects.items():
        with st.container(border=True):
            st.markdown(f"**{session.md_escape(key)}** — {session.md_escape(ev.describe(obj))}")
            cols = st.columns(4)
            # the bytes are built only when the button is clicked (a model can be large)
            cols[0].download_button("Artifact (.fgz)",
                                    functools.partial(artifact_bytes, obj, dataset_fingerprint=fp),
                                    file_name=f"{key}.fgz", mime="application/zip",
                                    key=f"dl_{key}", on_click="ignore")
            names = getattr(data, "feature_names", None)
            for i, (fname, payload, mime) in enumerate(ev.plain_exports(key, obj, names)):
                cols[1 + i % 3].download_button(fname, payload, file_name=fname, mime=mime,
                                                key=f"dl_{key}_{i}")
    st.download_button(f"Bundle of all {len(objects)} fitted objects + run table (.fgb)",
                       functools.partial(bundle_bytes, objects, info={"runs": session.runs()},
                                         dataset_fingerprint=fp),
                       file_name="featagg_bundle.fgb", mime="application/zip",
                       key="dl_bundle", type="primary", on_click="ignore")

runs = session.runs()
if runs:
    st.download_button("Run registry (JSON)", json.dumps(runs, indent=1, default=str).encode(),
                       file_name="featagg_runs.json", mime="application/json", key="dl_runs")

st.header("Import")
st.caption(f"An artifact (.fgz) or bundle (.fgb) saved by featagg, at most {MAX_IMPORT_MB} MB. "
           "It is evaluated on the dataset chosen in the sidebar.")
upload = st.file_uploader("Artifact file", type=["fgz", "fgb", "zip"], key="artifact_upload")
if upload is not None:
    size_mb = upload.size / 2**20
    if size_mb > MAX_IMPORT_MB:
        st.error(f"{upload.name} is {size_mb:.0f} MB; the limit is {MAX_IMPORT_MB} MB.")
        st.stop()
    try:
        if is_bundle(upload):
            imported, _info = load_bundle(upload)
        else:
            imported = {upload.name.rsplit(".", 1)[0]: load_artifact(upload)}
    except (ArtifactError, ValueError) as exc:
        session.show_error(exc, context=f"{upload.name} was refused")
        st.stop()
    st.success(f"Loaded {len(imported)} object(s) from {session.md_escape(upload.name)}: "
               + ", ".join(f"{session.md_escape(k)} ({type(o).__name__})" for k, o in imported.items()))
    for key, obj in imported.items():
        with st.container(border=True):
            st.subheader(f"{key}: {ev.describe(obj)}")
            manifest = getattr(obj, "artifact_manifest_", {})
            if data is not None and manifest.get("dataset_fingerprint") not in (None, data.fingerprint):
                st.caption("Trained on a different dataset than the current one "
                           "(fingerprints differ).")
            with st.expander("Manifest"):
                st.dataframe(ev.manifest_summary(manifest), hide_index=True, width="stretch")
            if data is None:
                st.info("Pick a dataset in the sidebar to evaluate this artifact on it.")
                continue
            column = None
            if type(obj).__name__ == "VocabularyCompressor" and data.kind == "table":
                column = st.selectbox("Column to compress", list(data.table.columns),
                                      key=f"col_{key}")
            store_key = ev.CLASS_STORE_KEY.get(type(obj).__name__)
            if store_key and data.kind == ev.CLASS_KIND.get(type(obj).__name__):
                if st.button(f"Use in this session (as '{store_key}')", key=f"use_{key}",
                             help="The other pages and the Download section then use it."):
                    session.put(store_key, obj)
                    st.success(f"Stored as '{store_key}' for this session.")
            if st.button("Evaluate on the current dataset", key=f"eval_{key}"):
                try:
                    with st.spinner("Evaluating…"):
                        result = ev.evaluate(obj, data, column=column)
                except ValueError as exc:
                    session.show_error(exc, context="Cannot evaluate")
                else:
                    st.table(ev.result_table(result))
                    session.record_run("Export", f"{type(obj).__name__} (imported)", data,
                                       manifest.get("params", {}),
                                       {k: v for k, v in result.items()
                                        if isinstance(v, (int, float))}, {})
