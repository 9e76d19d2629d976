"""The Home page: what featagg is, the four methods, how to start (teaching text)."""
from __future__ import annotations

import streamlit as st

from featagg_app import state
from featagg_app.text import md_escape

from featagg_app.server.layout import APP_DIR as ROOT   # app.py + pages/: checkout or installed

#: (title, citation, text, page file)
METHODS = [
    ("Feature agglomeration — DEFRAG, FIAT, REFRAG", "Jalan & Kar, IJCAI 2019",
     "Clusters the *features* into a balanced tree and sums each cluster into one feature: "
     "thousands of sparse words become a few hundred dense groups, and classifiers train "
     "faster on them. FIAT fills in missing features from the groups; REFRAG re-ranks a "
     "classifier's labels with simple label prototypes so rare labels come up.",
     "pages/feature_agglomeration.py"),
    ("Extreme classification — KTXMLC", "Prajapati & Thakkar, 2021",
     "Thousands of labels per dataset: several K-way label trees (labels grouped by "
     "k-means‖), a linear classifier per label, and beam search down the trees, so "
     "prediction looks at a few branches instead of every label.",
     "pages/extreme_classification.py"),
    ("Graph feature selection — BMGUFS", "Bai, Nguyen & Davidson, KDD 2020",
     "On an attributed graph, finds the block structure (who links to whom) and keeps the "
     "node features that explain it — no labels needed.", "pages/graph_features.py"),
    ("Vocabulary compression", "Bateni et al., ICML 2019",
     "A categorical column with a huge vocabulary (user ids, zip codes) is folded into m "
     "buckets chosen to keep as much information about the label as possible.",
     "pages/vocabulary.py"),
]


def render() -> None:
    """Draw the Home page."""
    st.title("featagg")
    st.markdown(
        "**Explore and shrink huge sparse feature and label spaces.** Real datasets with "
        "thousands of words as features and thousands of tags as labels are *sparse* (each "
        "point uses a handful of them) and *skewed* (a few labels are everywhere, most are "
        "rare). featagg shows that structure and runs four published methods that make such "
        "spaces smaller, faster to learn from, and fairer to the rare labels.")
    st.subheader("The four methods")
    cols = st.columns(2)
    for i, (title, cite, text, page) in enumerate(METHODS):
        with cols[i % 2].container(border=True):
            st.markdown(f"**{title}**  \n*{cite}*")
            st.markdown(text)
            st.page_link(str(ROOT / page), label="Open the page",
                         icon=":material/arrow_forward:")
    st.subheader("How to start")
    st.markdown(
        "1. **Pick a dataset** in the sidebar: a bundled sample (Bibtex is loaded to begin "
        "with) or your own file.\n"
        "2. Open **Data** to see its shape: how many points, features and labels, and the "
        "power law of label frequencies.\n"
        "3. Under it, the **split** says which rows train and which rows test (a dataset "
        "with its own test part uses it). Every page fits on the same training rows and "
        "scores the same test rows, so their numbers can be compared.\n"
        "4. Open a method page, read its *How it works* box, move the knobs, run it. Every "
        "run is kept (a long one shows an estimate, its progress and a Cancel button), and "
        "later pages build on earlier runs: a classifier on a DEFRAG run's features, REFRAG "
        "on a classifier run. Short of time with a new dataset? **Triage** runs the "
        "methods that fit it within a time budget and writes a verdict, with a report to "
        "download.\n"
        "5. **Compare** puts the runs of your session side by side, with the differences "
        "to a baseline run; **Export** downloads their pipelines.\n\n"
        "Each browser tab has its own session: in a class, every student can pick their own "
        "dataset and runs without disturbing anyone else.")
    data = state.current_dataset()
    if data is not None:
        st.info(f"Dataset in use: **{md_escape(state.dataset_label(data))}**")
