"""Export page: download every pipeline this session fitted (one artifact each, or all of
them in one bundle with the run table); import an artifact or bundle and evaluate it on the
current dataset's split through ``experiment.evaluate``."""
import functools
import json
import uuid

import streamlit as st

from featagg_app.views import export as ev
from featagg_app import runs_ui, state
from featagg_app.keys import data_key
from featagg_app.text import md_escape, show_error
from featagg_app.intake.uploads import MAX_IMPORT_MB, max_load_bytes
from featagg_core.artifacts.store import (
    ArtifactError,
    artifact_bytes,
    bundle_bytes,
    is_bundle,
    load_artifact,
    load_bundle,
)
from featagg_core.experiment import Run, as_pipeline, evaluate

PAGE = "Export"

st.title("Export and import")

with st.expander("How it works", expanded=False):
    st.markdown(
        "Every fit of this session is a **run**, and every run holds one **pipeline**: all "
        "its fitted steps in order (e.g. FIAT → DEFRAG → KTXMLC → REFRAG), taking *raw* "
        "features in. A pipeline is saved as one **featagg artifact** (`.fgz`): a zip of "
        "plain numeric arrays (`.npy`, read with `allow_pickle=False`) and a JSON manifest "
        "— the spec, the parameters, library versions, the fingerprint of the dataset and "
        "the id of the split it was fitted on, the metrics at save time and a checksum of "
        "every array. Loading checks all of it, so a damaged or edited file is refused with "
        "a clear message; nothing in it is ever executed or unpickled.\n\n"
        "* **Download** one run's pipeline, or a **bundle** (`.fgb`) of every pipeline of "
        "the session (both classifier runs, REFRAG and FIAT included) with the run table.\n"
        "* **Plain files** (CSV/JSON) — feature clusters, feature rankings, vocabulary "
        "mappings — for use outside featagg.\n"
        "* **Import** a pipeline artifact or a bundle (yours, an older one, or one written by "
        "`python -m featagg_core ... --out`) and evaluate it on the current dataset: on the "
        "**test rows of the session's split** (sidebar), with the same evaluation as every "
        "page. A pipeline fitted on this dataset with another split is refused (it could be "
        "scored on rows it was trained on).")

data = state.current_dataset()
try:
    split = state.current_split(data) if data is not None else None
except ValueError as exc:             # e.g. a one-row upload: nothing to evaluate on
    st.caption(f"The current dataset cannot be split ({md_escape(exc)}): imports "
               "cannot be evaluated on it.")
    data, split = None, None
page_ns = state.page_state(PAGE)

# ---------------------------------------------------------------------------
# download
# ---------------------------------------------------------------------------
st.header("Download")
all_runs = [r for r in state.runs(status="done") if r.pipeline is not None]
if not all_runs:
    st.info("Nothing trained in this session yet. Fit something on another page, then come "
            "back: every run's pipeline is listed here.")
else:
    titles = [state.run_title(r) for r in all_runs]
    objects = ev.bundle_objects(all_runs, titles)
    records = [state.run_record(r) for r in all_runs]
    fps = {r.dataset_fingerprint for r in all_runs}
    st.download_button(f"Bundle of all {len(objects)} pipelines + run table (.fgb)",
                       functools.partial(bundle_bytes, objects, info={"runs": records},
                                         dataset_fingerprint=fps.pop() if len(fps) == 1
                                         else None),
                       file_name="featagg_bundle.fgb", mime="application/zip",
                       key="dl_bundle", type="primary", on_click="ignore")
    st.download_button("Run registry (JSON)", json.dumps(records, indent=1).encode(),
                       file_name="featagg_runs.json", mime="application/json", key="dl_runs",
                       on_click="ignore")
    by_ds = {}
    for run, title, key in zip(all_runs, titles, objects):
        by_ds.setdefault(run.dataset_name or "dataset", []).append((run, title, key))
    for ds_name, items in by_ds.items():
        st.subheader(f"{ds_name}: {len(items)} run{'s' if len(items) != 1 else ''}")
        for run, title, key in reversed(items):
            with st.container(border=True):
                st.markdown(f"**{md_escape(title)}** — "
                            f"{md_escape(ev.describe_pipeline(run.pipeline))}")
                st.caption(md_escape(state.run_record(run)["split_text"]))
                cols = st.columns(4)
                # the bytes are built only when the button is clicked (a model can be large)
                cols[0].download_button("Artifact (.fgz)",
                                        functools.partial(artifact_bytes, run.pipeline,
                                                          dataset_fingerprint=run.dataset_fingerprint,
                                                          metrics=run.metrics.get("test", {})),
                                        file_name=f"{key}.fgz", mime="application/zip",
                                        key=f"dl_{run.run_id}", on_click="ignore")
                names = (getattr(data, "feature_names", None)
                         if data is not None and data.fingerprint == run.dataset_fingerprint
                         else None)
                for i, (fname, payload, mime) in enumerate(ev.pipeline_exports(key, run.pipeline,
                                                                               names)):
                    cols[1 + i % 3].download_button(ev.export_label(fname), payload,
                                                    file_name=fname, mime=mime,
                                                    key=f"dl_{run.run_id}_{i}",
                                                    on_click="ignore")

# ---------------------------------------------------------------------------
# import
# ---------------------------------------------------------------------------
st.header("Import")
st.caption(f"A pipeline artifact (.fgz) or bundle (.fgb) saved by featagg, at most "
           f"{MAX_IMPORT_MB} MB. It is evaluated on the dataset chosen in the sidebar"
           + (f", on the test rows of {md_escape(split.describe())}."
              if split is not None else "."))
upload = st.file_uploader("Artifact file", type=["fgz", "fgb", "zip"], key="artifact_upload",
                          max_upload_size=MAX_IMPORT_MB)
if upload is None:
    st.stop()
size_mb = upload.size / 2**20
if size_mb > MAX_IMPORT_MB:
    st.error(f"{upload.name} is {size_mb:.0f} MB; the limit is {MAX_IMPORT_MB} MB.")
    st.stop()
file_id = getattr(upload, "file_id", None) or f"{upload.name}:{upload.size}"
if page_ns.get("file_id") != file_id:
    try:
        if is_bundle(upload):
            # the same load budget as a dataset upload (FEATAGG_MAX_LOAD_MB), not the
            # library's default: a bundle's arrays live in this server's memory
            imported, info = load_bundle(upload, max_bytes=max_load_bytes())
        else:
            imported, info = {upload.name.rsplit(".", 1)[0]:
                              load_artifact(upload, max_bytes=max_load_bytes())}, {}
    except (ArtifactError, ValueError) as exc:
        page_ns.pop("file_id", None)
        # the loader's message starts with the file's name; the context already says it
        text = str(exc)
        if text.startswith(f"{upload.name}: "):
            exc = ValueError(text[len(upload.name) + 2:])
        show_error(exc, context=f"{upload.name} was refused")
        st.stop()
    page_ns.update(file_id=file_id, name=upload.name, objects=imported,
                 entries=ev.pipelines_from_import(imported, info),
                 manifests={k: getattr(o, "artifact_manifest_", {}) for k, o in imported.items()},
                 results={})
entries, manifests, results = page_ns["entries"], page_ns["manifests"], page_ns["results"]
st.success(f"Loaded {len(entries)} object(s) from {md_escape(page_ns['name'])}: "
           + ", ".join(md_escape(k) for k, _, _ in entries))


def _evaluation(pipe):
    """The job that scores ``pipe`` on the current split's test rows as a run."""
    name = ev.pipeline_name(pipe)

    def work(progress, cancel):
        progress(0.1, "scoring the test rows")
        metrics = evaluate(pipe, data, split, rows="test")
        return Run(run_id=uuid.uuid4().hex, name=f"{name} (imported)", kind=pipe.kind,
                   dataset_fingerprint=data.fingerprint,
                   dataset_name=str(getattr(data, "name", "") or ""),
                   split_id=split.split_id, split=split, spec=pipe.spec, status="done",
                   metrics={"test": metrics}, model_sizes=pipe.model_sizes(), pipeline=pipe)
    return work


for key, pipe, note in entries:
    with st.container(border=True):
        obj = page_ns["objects"].get(key)
        if pipe is None and type(obj).__name__ == "VocabularyCompressor" \
                and data is not None and data.kind == "table":
            # a vocabulary compressor saved on its own: say which column it compresses
            col = st.selectbox(f"{key}: the column this compressor applies to",
                               list(data.table.columns), key=data_key(f"col_{key}", data))
            pipe, note = as_pipeline(obj, column=col), f"compressing column {col!r}"
        if pipe is None:
            st.subheader(key)
            st.warning(f"Cannot be evaluated on its own: {md_escape(note)}")
            continue
        st.subheader(f"{key}: {ev.pipeline_name(pipe)}")
        st.caption(md_escape(ev.describe_pipeline(pipe))
                   + (f" · {md_escape(note)}" if note else ""))
        manifest = manifests.get(key, {})
        if manifest:
            with st.expander("Manifest"):
                st.dataframe(ev.manifest_summary(manifest), hide_index=True, width="stretch")
        if data is None:
            st.info("Pick a dataset in the sidebar to evaluate this pipeline on it.")
            continue
        same_data = pipe.dataset_fingerprint == data.fingerprint
        if pipe.dataset_fingerprint is not None and not same_data:
            st.caption("Fitted on a different dataset than the current one (fingerprints "
                       "differ): it is scored on this dataset's test rows if the features "
                       "and labels fit.")
        if pipe.split_id is None:
            st.caption("An older artifact: the rows it was fitted on are unknown. If it was "
                       "fitted on this dataset, its test numbers may include rows it saw.")
        job = runs_ui.run_section(PAGE, data, split, _evaluation(pipe), slot=f"eval_{key}",
                                  key=f"eval_{key}", button="Evaluate on the current dataset",
                                  layout="button", primary=False,
                                  label=f"Evaluate {ev.pipeline_name(pipe)}").job
        if job is not None and job.status == "done":
            results[key] = job.result.run_id
        elif job is not None and job.status == "failed":
            results.pop(key, None)
        shown = state.get_run(results.get(key))
        if shown is not None:
            st.caption(f"Evaluated as **{md_escape(state.run_title(shown))}** on "
                       f"{md_escape(split.describe())}.")
            st.table(ev.result_table(shown.metrics["test"]))
