"""The bottom line of a triage: one or two sentences saying what to do.

:func:`recommend` reads the finished experiments of :func:`featagg_core.triage.battery.run_triage`
and the data-health alerts and says

* **multi-label** — which classifier (the raw-feature classifier with the higher P@1 on the
  validation rows; KTXMLC that kept one flat tree *is* one-vs-all and is not a second
  candidate), on which features (DEFRAG at the largest d0 whose mean validation P@1 over
  the seeds keeps at least ``KEEP_P1`` = 98 % of the raw features', the DEFRAG paper's
  "no real loss" rule; raw features otherwise), whether to re-rank with REFRAG (yes when
  its tuning on the validation rows moved α off 1, i.e. found a setting that raises
  coverage@5 within the allowed P@5 drop), and the evidence: validation P@1 mean and range
  over :data:`N_SEEDS` seeds. The choice is made on validation rows only, never on the test
  rows the report's tables show (a split without validation rows leaves only the test
  rows: the sentence then says so and asks for a validation share), and never on a timing (a timing is measured again on
  every run; the same triage twice gives the same recommendation).
* **graph** — which selector and how many features d: the (method, d) of the protocol with
  the highest k-means ACC on the held-out nodes (mean over the protocol's k-means seeds,
  its standard deviation as the spread), "keep all features" when none beats them.
* **table** — which budget: the smallest m of the budget curve that keeps 99 % of the
  held-out I(X;C), else the default budget with its held-out share.

Then the health alerts to fix first: every ``error`` and, when there is none, the first
``warning`` (most serious first, :mod:`featagg_core.health`).

**Seeds.** The battery fits each configuration with one seed. The two configurations the
recommendation weighs (the raw classifier and the chosen DEFRAG) are fitted again with
``N_SEEDS - 1`` more seeds (classifier and DEFRAG seeds both moved) when that fits in the
time left — estimated from their own measured fit and scoring times, within
``share`` of what is left; otherwise the sentence says it rests on one seed.
"""
from __future__ import annotations

import copy
import math
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["recommend", "N_SEEDS", "KEEP_P1"]

#: seeds behind every validation figure of the recommendation
N_SEEDS = 3
#: share of the raw validation P@1 DEFRAG features must keep (the DEFRAG paper's rule)
KEEP_P1 = 0.98
_SEVERITY = {"error": 0, "warning": 1, "info": 2}


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _spread(values: Sequence[float]) -> str:
    v = [float(x) for x in values]
    if len(v) < 2:
        return f"{_pct(v[0])} (one seed)"
    return f"{_pct(float(np.mean(v)))} (range {100 * min(v):.1f}–{100 * max(v):.1f} over " \
           f"{len(v)} seeds)"


def _reseeded(spec: dict, seed: int) -> dict:
    out = copy.deepcopy(spec)
    for part in ("classifier", "defrag"):
        if part in out:
            out[part]["random_state"] = int(seed)
    return out


def _p1_of(run, part: str = "valid") -> Optional[float]:
    m = run.metrics.get(part) or {}
    return float(m["P@1"]) if "P@1" in m else None


def _seed_values(data, split, run, seed: int, allowed: bool, cancel,
                 part: str = "valid") -> List[float]:
    """Validation P@1 of ``run``'s spec with seeds ``seed``, ``seed+1``, ... (the run's
    own value first); only the run's own when ``allowed`` is False."""
    from featagg_core.runs.run import run_pipeline
    vals = [_p1_of(run, part)]
    if not allowed:
        return vals
    for k in range(1, N_SEEDS):
        if cancel is not None and cancel.is_set():
            break
        again = run_pipeline(data, split, _reseeded(run.spec, seed + k), cancel=cancel)
        if again.status != "done" or _p1_of(again, part) is None:
            break
        vals.append(_p1_of(again, part))
    return vals


def _health_clause(alerts: Sequence[dict]) -> str:
    ordered = sorted(alerts, key=lambda a: _SEVERITY.get(a.get("severity"), 3))
    first = [a for a in ordered if a.get("severity") == "error"] or \
        [a for a in ordered if a.get("severity") == "warning"][:1]
    if not first:
        return ("The health checks found nothing to fix first." if alerts is not None
                else "")
    names = "; ".join(a.get("message", a.get("type", "")).rstrip(".") for a in first[:3])
    more = f" (and {len(first) - 3} more)" if len(first) > 3 else ""
    return f"Fix first: {names}{more}."


def _multilabel(data, split, experiments, seed, time_left_s, share, cancel) -> Dict[str, Any]:
    trade = next((e for e in experiments if e.kind == "defrag_tradeoff"), None)
    if trade is None or not trade.tables.get("rows"):
        return {"text": "No classifier finished within the budget: give the triage more "
                        "time.", "choice": {}}
    rows, runs = trade.tables["rows"], trade.runs
    # validation rows decide; a split without them leaves only the test rows (said so)
    part = "valid" if split.valid.size else "test"
    where = "validation" if part == "valid" else "test"
    p1 = (lambda run: _p1_of(run, part))
    done = [(r, run) for r, run in zip(rows, runs) if r.get("status") == "done"
            and run.status == "done" and p1(run) is not None]
    raws = [(r, run) for r, run in done if r["d0"] is None and r["kind"] != "per_tree"
            and not r.get("same model as")]
    if not raws:
        return {"text": "No raw-feature classifier finished within the budget: give the "
                        "triage more time.", "choice": {}}
    # the higher validation P@1; a tie goes to the first in the battery's order (KTXMLC)
    raw, raw_run = max(raws, key=lambda p: (round(p1(p[1]), 12), -raws.index(p)))
    kind = raw["kind"]
    base = p1(raw_run)
    mine = sorted(((r, run) for r, run in done if r["kind"] == kind and r["d0"] is not None),
                  key=lambda p: -p[0]["d0"])
    cand = next(((r, run) for r, run in mine if p1(run) >= KEEP_P1 * base), None)
    cost = sum(float(run.timings.get("total_s", 0.0)) for run in
               [raw_run] + ([cand[1]] if cand else [])) * (N_SEEDS - 1)
    allowed = cost <= share * max(time_left_s, 0.0)
    t0 = time.monotonic()
    raw_vals = _seed_values(data, split, raw_run, seed, allowed, cancel, part)
    dfr_vals = _seed_values(data, split, cand[1], seed, allowed, cancel, part) if cand else []
    use_defrag = bool(dfr_vals) and float(np.mean(dfr_vals)) >= KEEP_P1 * float(
        np.mean(raw_vals))
    title = raw["classifier"]
    choice: Dict[str, Any] = {"classifier": kind, "features": "raw", "d0": None}
    if use_defrag:
        r = cand[0]
        choice.update(features="defrag", d0=int(r["d0"]))
        text = (f"Train {title} on DEFRAG features at d0 = {r['d0']} ({raw['features']:,} → "
                f"{r['features']:,} features): its {where} P@1 is {_spread(dfr_vals)} "
                f"against {_spread(raw_vals)} on the raw features (at least "
                f"{100 * KEEP_P1:.0f} % kept).")
    else:
        why = (f"DEFRAG at d0 = {cand[0]['d0']} keeps less than {100 * KEEP_P1:.0f} % of it "
               f"over the seeds ({_spread(dfr_vals)})" if cand else
               f"no DEFRAG d0 tried keeps {100 * KEEP_P1:.0f} % of it on the {where} rows")
        text = (f"Train {title} on the raw features: its {where} P@1 is "
                f"{_spread(raw_vals)}; {why}.")
    others = [p for p in raws if p[0] is not raw]
    if others:
        o = others[0]
        text = text[:-1] + (f"; {o[0]['classifier']} reaches {_pct(p1(o[1]))} there "
                            "(one seed).")
    if part == "test":
        text += (" The split has no validation rows, so this rests on the test rows the "
                 "report scores: give the split a validation share to choose on other rows.")
    ref = next((e for e in experiments if e.kind == "refrag_tuning" and e.tables.get("rows")),
               None)
    if ref is not None:
        rr = ref.tables["rows"][0]
        tuned = "the validation rows" if rr.get("tuned on") == "validation" else \
            "rows carved from the training rows"
        if rr.get("alpha") is not None and float(rr["alpha"]) < 1.0:
            choice["refrag"] = True
            text += (f" Re-rank with REFRAG (α = {rr['alpha']:g}, γ = {rr['gamma']:g}, β = "
                     f"{rr['beta']:g}, tuned on {tuned}): coverage@5 "
                     f"{_pct(rr['base coverage@5'])} → {_pct(rr['coverage@5'])} at P@5 "
                     f"{_pct(rr['base P@5'])} → {_pct(rr['P@5'])} on the test rows.")
        else:
            choice["refrag"] = False
            text += (f" Do not re-rank with REFRAG: tuned on {tuned} it found no "
                     "setting that raises coverage@5 without losing P@5 (α = 1).")
    choice["seeds"] = len(raw_vals)
    return {"text": text, "choice": choice,
            "evidence": {"metric": f"{where} P@1", "raw": raw_vals, "defrag": dfr_vals,
                         "defrag d0": None if cand is None else int(cand[0]["d0"]),
                         "seeds": [int(seed) + k for k in range(len(raw_vals))],
                         "extra_seconds": time.monotonic() - t0 if allowed else 0.0}}


def _graph(experiments) -> Dict[str, Any]:
    prot = next((e for e in experiments if e.kind == "bmgufs_protocol"
                 and e.tables.get("selection")), None)
    if prot is None:
        return {"text": "The feature-selection protocol did not finish within the budget: "
                        "give the triage more time.", "choice": {}}
    rows = [r for r in prot.tables["selection"] if r.get("status") == "done" and "ACC" in r]
    allf = next((r for r in rows if r["method"] == "all features"), None)
    sel = [r for r in rows if r["method"] != "all features"]
    if not sel:
        return {"text": "No selector finished within the budget.", "choice": {}}
    best = max(sel, key=lambda r: (round(float(r["ACC"]), 12), -int(r["d"])))
    sd = best.get("ACC sd")
    spread = f" ± {100 * float(sd):.1f}" if sd is not None and math.isfinite(float(sd)) else ""
    if allf is not None and float(allf["ACC"]) > float(best["ACC"]):
        return {"text": f"Keep all {allf.get('d used', allf['d']):,} features: k-means on them "
                        f"scores ACC {_pct(allf['ACC'])} on the held-out nodes, more than the "
                        f"best selection ({best['method']}, d = {best['d']}: "
                        f"{_pct(best['ACC'])}{spread}).",
                "choice": {"selector": None, "d": None}}
    rival = max((r for r in sel if r["method"] != best["method"] and r["d"] == best["d"]),
                key=lambda r: float(r["ACC"]), default=None)
    text = (f"Select d = {best['d']} features with {best['method']}"
            + (f" (γ = {best['gamma']:g})" if best.get("gamma") is not None else "")
            + f": k-means ACC on the held-out nodes {_pct(best['ACC'])}{spread}"
            + (f" against {_pct(rival['ACC'])} for {rival['method']}" if rival else "")
            + (f" and {_pct(allf['ACC'])} with all features" if allf else "") + ".")
    return {"text": text, "choice": {"selector": best["method"], "d": int(best["d"])}}


def _table(experiments) -> Dict[str, Any]:
    curve = next((e for e in experiments if e.kind == "budget_curve"
                  and e.tables.get("curve")), None)
    voc = next((e for e in experiments if e.kind == "vocabulary"), None)
    if curve is not None:
        reach = next((r for r in curve.tables["curve"] if r["MI loss"] <= 0.01), None)
        if reach is not None:
            return {"text": f"Compress every column to m = {int(reach['m'])} buckets with "
                            f"{curve.params.get('method', 'submodular')}: the smallest budget "
                            f"tried that keeps 99 % of I(X;C) on the held-out rows "
                            f"({_pct(1 - reach['MI loss'])}).",
                    "choice": {"budget": int(reach["m"]),
                               "method": curve.params.get("method")}}
    if voc is not None and voc.summary.get("held-out MI kept") is not None:
        m = voc.params.get("budget")
        meth = (voc.params.get("methods") or ["submodular"])[0]
        return {"text": f"Compress every column to m = {m} buckets with {meth} (the default "
                        f"budget): it keeps {_pct(voc.summary['held-out MI kept'])} of "
                        "I(X;C) on the held-out rows; no budget tried reached 99 %."
                        if curve is not None else
                        f"Compress every column to m = {m} buckets with {meth} (the default "
                        f"budget): it keeps {_pct(voc.summary['held-out MI kept'])} of "
                        "I(X;C) on the held-out rows.",
                "choice": {"budget": m, "method": meth}}
    return {"text": "The vocabulary compression did not finish within the budget: give the "
                    "triage more time.", "choice": {}}


def recommend(data, split, experiments, alerts: Optional[Sequence[dict]] = None, *,
              seed: int = 0, time_left_s: float = math.inf, share: float = 0.7,
              cancel=None) -> Dict[str, Any]:
    """The recommendation of a triage (module docstring).

    Parameters
    ----------
    data : MultiLabelData, GraphData or CategoricalData
        The triaged dataset.
    split : Split
        Its split (the validation rows decide).
    experiments : list of Experiment
        The triage's finished experiments.
    alerts : list of dict, optional
        The health alerts (``Alert.to_dict()``); None when the checks did not run.
    seed : int, default=0
        The triage's seed; the extra seeds are ``seed + 1``, ``seed + 2``.
    time_left_s : float, default=inf
        Seconds left for the extra seeds.
    share : float, default=0.7
        Share of ``time_left_s`` the extra seeds may be planned to take.
    cancel : threading.Event-like, optional
        Stops the extra seeds.

    Returns
    -------
    dict
        ``text`` (one or two sentences, then the alerts to fix first), ``choice`` (what is
        recommended, JSON-able), ``evidence`` (the validation figures per seed, multi-label
        only) and ``health`` (the alert sentence).
    """
    if data.kind == "multilabel":
        out = _multilabel(data, split, experiments, int(seed), time_left_s, share, cancel)
    elif data.kind == "graph":
        out = _graph(experiments)
    else:
        out = _table(experiments)
    health = _health_clause(alerts) if alerts is not None else ""
    out["health"] = health
    out["text"] = (out["text"] + (" " + health if health else "")).strip()
    return out
