"""``featagg select-features GRAPH``: BMGUFS on the training nodes' subgraph."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from featagg_core.cli.command import _load, _progress, _require, _run, _split


def cmd_select_features(args) -> Dict[str, Any]:
    """``featagg select-features GRAPH``: BMGUFS feature selection on a graph.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``select-features``: GRAPH, the BMGUFS and split options.

    Returns
    -------
    dict
        The selected features (indices and names), fit seconds, the split and the held-out
        k-means ACC/NMI when the nodes have classes; ``artifact`` when the model was saved.

    Raises
    ------
    CliError
        For data that is not a graph (one line, in the user's terms).
    """
    from featagg_core.artifacts.store import save_artifact
    data = _require(_load(args.graph, "graph", features=args.features, classes=args.classes),
                    "graph", args.graph)
    split = _split(args, data)
    # with --n-blocks unset, k is the number of node classes (of the training nodes), or the
    # eigengap rule without classes
    spec = {"feature_selection": {"kind": "bmgufs", "d": args.d, "n_blocks": args.n_blocks,
                                  "beta_bar": args.beta_bar, "gamma": args.gamma,
                                  "n_candidates": args.n_candidates, "max_iter": args.max_iter,
                                  "random_state": args.seed}}
    _progress(f"BMGUFS on the {split.train.size} training nodes of {data.A.shape[0]}, "
              f"{data.X.shape[1]} features")
    run = _run(args, data, split, spec)
    model, selected = run.pipeline.selector, run.pipeline.selected_
    names = data.feature_names
    out: Dict[str, Any] = {"method": "BMGUFS", "name": run.name,
                           "fit_seconds": round(run.timings["selection_s"], 3), "d": args.d,
                           "selected": [int(j) for j in selected],
                           "n_nonzero_weights": int(np.count_nonzero(model.scores_)),
                           "split": run.split.to_record()}
    if run.message:
        out["note"] = run.message
    if names is not None:
        out["selected_names"] = [str(names[j]) for j in selected]
    test = run.metrics["test"]
    if "ACC" in test:
        out["clustering"] = {"evaluated_on": "test", "n_nodes": test["n_rows"],
                             **{k: test[k] for k in ("ACC", "ACC sd", "NMI", "NMI sd")}}
    if args.out:
        save_artifact(model, args.out, dataset_fingerprint=data.fingerprint,
                      metrics={"split_id": split.split_id, **test})
        out["artifact"] = args.out
    return out
