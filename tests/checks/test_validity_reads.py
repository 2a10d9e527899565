"""The validity analysis is shared by the parameter points on which the analysed tasks read the
same values (``lowering.checks.validity._Reads``): the sort and capacity rules visit every
admissible point, and re-running the interpreter at each of them made ``dslc check`` of the MoE
layer (344 points) spend most of its time there.

Sharing must never change a fact: at every admissible point of every layer below, the facts
``facts_for`` hands out equal a fresh analysis at that very point.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lintutil import FIXTURES

from dsl.frontend import compile_file
from lowering.checks import validity
from lowering.checks.points import own_point_first
from lowering.checks.request_space_cache import scalar_intervals
from lowering.checks.rule import CheckContext

ROOT = Path(__file__).resolve().parents[2]
_RANGED = re.compile(r"\bin (\d+\s*\.\.|\{)")
_ANALYSED = re.compile(r"sort32|topk|valid\(|fillpad|mask_tail|mrgsort")
LAYERS = sorted(
    p
    for p in [*FIXTURES.rglob("*.dsl"), *(ROOT / "models").rglob("*.dsl")]
    if _RANGED.search(text := p.read_text(encoding="utf-8")) and _ANALYSED.search(text)
)
MOE = ROOT / "models" / "deepseek_v4_flash" / "moe.dsl"


@pytest.mark.parametrize("path", LAYERS, ids=lambda p: p.name)
def test_shared_facts_equal_a_fresh_analysis_at_every_point(path):
    for graph in compile_file(path):
        ctx = CheckContext(graph)
        for i, point in enumerate(own_point_first(graph, limit=96)):
            if i >= 96:
                break
            for kind in ("sort", "valid"):
                shared = validity.facts_for(ctx, point, kind)
                only = ctx.cache[("validity.only", kind)]
                assert shared == validity.analyse(graph, point, scalar_intervals(ctx, point), only), (
                    kind,
                    point,
                )


def test_points_that_read_alike_share_one_analysis():
    (graph,) = compile_file(MOE)
    ctx = CheckContext(graph)
    validity.facts_for(ctx, graph.env(), "sort")
    reads = ctx.cache[("validity.reads", "sort")]

    def at(**changes):
        return reads.key({**graph.env(), **changes})

    # the gate reads LAYER_ID only through `if LAYER_ID < NUM_HASH_LAYERS`
    assert at(LAYER_ID=5) == at(LAYER_ID=42)
    assert at(LAYER_ID=0) == at(LAYER_ID=2) != at(LAYER_ID=3)
    # the number of experts it sorts (E = N_LOCAL * EP) is read as a value
    assert at(EP=8) != at(EP=16)
    points = list(own_point_first(graph))
    assert len(points) == 344
    assert len({reads.key(p) for p in points}) == 16  # EP (4) x the hash switch (2) x RETIRE (2)
