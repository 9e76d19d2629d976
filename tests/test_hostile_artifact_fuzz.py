"""A fuzz test of the artifact loader: 2,000 tampered artifacts (every class, with run
pipelines when the run model is there, the same number each: damaged
bytes, edited manifests, consistent forgeries, zip tricks) loaded **and used** in a
subprocess; only ArtifactError or an equal model (for consistent forgeries: a model whose
every use runs cleanly) is accepted."""
from __future__ import annotations

from hostile_helpers import run_script


def test_two_thousand_tampered_artifacts_load_and_use_in_a_subprocess():
    """Every tampered file is refused with ArtifactError or loads into a model equal to the
    original (for consistent forgeries with every checksum recomputed: a model whose every
    use runs without an exception). One subprocess runs them all: a crash in a kernel kills
    it and fails the test, naming the case being run."""
    rows = run_script("""
        import json, sys, numpy as np, hostile_corpus as hc
        from featagg_core.artifacts.store import artifact_bytes
        models = hc.fit_models()
        rng = np.random.default_rng(7)
        per = -(-2000 // len(models))          # at least 2,000 in all
        for name, obj in models.items():
            blob = artifact_bytes(obj)
            orig = hc.load_and_use(blob)[1]
            for cat, what, data in hc.tampered_artifacts(blob, rng, per):
                print(f"case {name} {cat} {what}", file=sys.stderr, flush=True)
                out, det = hc.load_and_use(data)
                print(json.dumps(dict(model=name, cat=cat, what=what, outcome=out,
                                      verdict=hc.judge_artifact(cat, out, det, orig))))
    """, timeout=900)
    assert len(rows) >= 2000
    bad = [r for r in rows if r["verdict"] != "ok"]
    assert not bad, bad[:5]
    outcomes = {r["outcome"] for r in rows}
    assert outcomes <= {"ArtifactError", "loaded"}
    # the sample is not vacuous: every category refused and loaded something
    for cat in ("bytes", "manifest", "forged", "zip"):
        assert any(r["cat"] == cat and r["outcome"] == "ArtifactError" for r in rows), cat
    assert any(r["cat"] == "forged" and r["outcome"] == "loaded" for r in rows)


