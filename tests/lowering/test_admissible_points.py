"""``Graph.admissible_points`` keeps the points it lists (the rules ask for them again and
again): every call must still see what a fresh listing sees, as its own copies."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from dsl.frontend import compile_file, compile_text

ROOT = Path(__file__).resolve().parents[2]
MOE = ROOT / "models" / "deepseek_v4_flash" / "moe.dsl"
DERIVED = ROOT / "tests" / "fixtures" / "derived_capacity" / "csa_derived.dsl"


def test_kept_points_equal_a_fresh_listing_and_are_copies():
    (graph,) = compile_file(MOE)
    first = list(graph.admissible_points())
    assert len(first) == 344
    assert first == list(graph._admissible_points(4096, False))
    first[0]["EP"] = -1
    assert next(graph.admissible_points())["EP"] != -1


def test_a_graph_changed_in_place_forgets_its_points():
    (graph,) = compile_file(MOE)
    assert {p["LAYER_ID"] for p in graph.admissible_points()} == set(range(43))
    graph.params["LAYER_ID"] = dataclasses.replace(graph.params["LAYER_ID"], domain=None)
    graph.forget_points()
    assert {p["LAYER_ID"] for p in graph.admissible_points()} == {0}


def test_derived_constants_are_in_every_point():
    # derive_capacities lists the points before it adds PREFILL_SPARSE_PAD to the graph
    text = DERIVED.read_text().replace(
        "IDX_TOPK = 512, COMPRESS", "IDX_TOPK = 512 in {64, 256, 512}, COMPRESS", 1
    )
    (graph, _) = compile_text(text, "x.dsl")
    points = list(graph.admissible_points())
    assert sorted(p["PREFILL_SPARSE_PAD"] - p["WIN"] for p in points) == [64, 256, 512]
    assert points == list(graph._admissible_points(4096, False))
