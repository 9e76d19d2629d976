"""One test per attack class of the hostile-input issue (small inputs: zip and .mat
bombs, lying .npy headers, huge declared dimensions, long node names, quadratic-time
GML/GraphML/MULAN XML/CSV inputs, XML entities in any encoding, parquet bombs, tampered
artifacts). All run in forked children of one subprocess (``hostile_corpus.ForkServer``),
each child's peak RSS measured; the big sweep with times is ``benchmarks/fuzz_bench.py``."""
from __future__ import annotations

import os

import pytest

from hostile_helpers import RSS_LIMIT, run_script

os.environ.setdefault("FEATAGG_WARMUP", "0")


# ---------------------------------------------------------------------------- attacks
@pytest.fixture(scope="module")
def attack_results():
    """Every attack of the issue (small sizes), each in a forked child: outcome, seconds,
    peak RSS growth."""
    rows = run_script("""
        import json, hostile_corpus as hc
        hc.prepare_parent()
        fs = hc.ForkServer(timeout=60, mem_limit=2 << 30)
        for a in hc.reader_attacks(big=False):
            r = fs.run(hc.read_and_use, a["fmt"], a["data"])
            print(json.dumps(dict(name=a["name"], expect=a["expect"], size=len(a["data"]), **r)))
        for a in hc.artifact_attacks(big=False):
            r = fs.run(hc.load_and_use, a["data"])
            print(json.dumps(dict(name=a["name"], expect=a["expect"], size=len(a["data"]), **r)))
    """)
    return {r["name"]: r for r in rows}


def _attack_names():
    names = [
        "npz: unused member inflating to 512 MiB", "npz: X_data inflating to 300 MiB",
        "npz: member header declaring 128 GiB", ".mat: network inflating to 274 MiB",
        ".mat: unused variable inflating to 274 MiB",
        ".mat: sparse network declaring 2^31-1 x 2^31-1",
        "XC: 40-byte header declaring d = L = 2^31-1",
        "GML: 3,000 nodes each with its own attribute",
        "GraphML: 3,000 nodes each with its own attribute",
        "MULAN XML: 20,000 labels, a duplicate at the end", "CSV: 20,000 columns",
        "MULAN XML in UTF-16 with an entity", "GraphML billion laughs (utf-8)",
        "GraphML billion laughs (utf-16)", "GraphML external entity",
        "parquet: a few kB declaring 10^7 rows",
        "Defrag n_clusters_ = 1 (checksums recomputed)",
        "Defrag n_clusters_ = -5 (checksums recomputed)",
        "Defrag labels_ and tree_order swapped with their entries",
        "Defrag tree child index outside the tree (SHA-256 recomputed)",
        "Defrag cluster id beyond n_clusters (SHA-256 recomputed)", "duplicate member name",
        "compression method 12", "compression method 14", "compression method 99",
        "encryption flag", "corrupt deflate stream (zlib.error)",
        "manifest nested 100,000 deep (RecursionError)", "array shape 10^30 (OverflowError)",
        "OneVsAll with its class edited to KTXMLC (digest recomputed)"]
    return names


@pytest.mark.parametrize("name", _attack_names() + ["edge list", "manifest deflate bomb"])
def test_attack_is_refused_or_loaded_within_memory(attack_results, name):
    hits = [r for n, r in attack_results.items() if n == name or n.startswith(name)]
    assert hits, f"attack {name!r} not generated; have {sorted(attack_results)}"
    r = hits[0]
    want = {"refused": ("DatasetError", "ArtifactError"), "loaded": ("loaded",)}[r["expect"]]
    assert r["outcome"] in want, (r["outcome"], r["detail"])
    assert r["peak_rss_growth"] < RSS_LIMIT, f"peak RSS grew by {r['peak_rss_growth'] >> 20} MiB"
    if r["size"] < 1 << 20:
        assert r["peak_rss_growth"] < 200 << 20


def test_attack_messages_say_what_is_wrong(attack_results):
    msg = {n: r["detail"] for n, r in attack_results.items()}
    assert "max_bytes" in msg["npz: X_data inflating to 300 MiB"]
    assert "DTD" in msg["MULAN XML in UTF-16 with an entity"]
    assert "named twice" in msg["MULAN XML: 20,000 labels, a duplicate at the end"]
    assert "n_clusters_" in msg["Defrag n_clusters_ = -5 (checksums recomputed)"]
    assert "labels_" in msg["Defrag cluster id beyond n_clusters (SHA-256 recomputed)"]
    assert "tree_left" in msg["Defrag tree child index outside the tree (SHA-256 recomputed)"]
    assert "appears twice" in msg["duplicate member name"]
    assert "compression method 99" in msg["compression method 99"]
    assert "encrypted" in msg["encryption flag"]
    assert "nests deeper" in msg["manifest nested 100,000 deep (RecursionError)"]


