"""The server's warm-up does what its first visitor would otherwise wait for
(featagg_app/server/first_visit.py): the pages' modules are imported and the default
sample sits in the shared cache, so the first page's load of it is a cache hit."""
import sys

from featagg_app import state
from featagg_app.server.first_visit import warm_server
from featagg_core.data.samples import load_sample


def test_warm_server_fills_the_shared_sample_cache_and_imports_the_views(monkeypatch):
    state.load_sample_cached.clear()
    line = warm_server()
    name = state.DEFAULT_SAMPLES["multilabel"]
    assert f"default sample {name}" in line

    def no_reading(*a, **k):
        raise AssertionError("the first visit read the sample again")

    monkeypatch.setattr(state, "load_sample", no_reading)
    cached = state.load_sample_cached(name)                  # a hit: nothing read
    fresh = load_sample(name)
    assert cached.fingerprint == fresh.fingerprint and cached.n_samples == fresh.n_samples
    for mod in ("featagg_app.views.charts", "featagg_app.health_ui", "featagg_app.runs_ui",
                "plotly.graph_objects", "featagg_app.intake.sidebar"):
        assert mod in sys.modules, mod
