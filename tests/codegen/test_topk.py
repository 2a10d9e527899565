"""topk(row, k, valid=n): merge stages from the admissible maximum of n, exact selection."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dsl.driver.api import compile_layer
from dsl.frontend import compile_file, compile_text
from lowering import body as ir_body
from lowering.source import CompileError

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run"

SMALL = """layer small(W = 256, K = 8, N = 200 in 1..256) {
  input  score: f32[N, W]
  output idx: i32[N, K]
  task select spmd(N) on aiv {
    let best = topk(score[block : block + 1, :], K, valid = block + 1)
    idx[block : block + 1, :] = odd_lanes(best)
  }
}
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def _mrgsort_block_lens(graph) -> list[int]:
    found = []

    def visit(v):
        if isinstance(v, ir_body.CallV):
            if v.op == "mrgsort":
                found.append(v.args[1].expr.value)
            for a in v.args:
                visit(a)

    for task in graph.tasks:
        for s in task.body:
            if hasattr(s, "value"):
                visit(s.value)
    return sorted(found)


@pytest.mark.parametrize(
    ("hi", "stages"), [(256, [64]), (1024, [64, 256]), (2048, [64, 256, 1024]), (4096, [64, 256, 1024])]
)
def test_stages_follow_the_admissible_maximum(hi, stages):
    src = (
        (RUN / "topk_row.dsl")
        .read_text()
        .replace("T = 512 in 128..4096 step 128", f"T = 128 in 128..{hi} step 128")
    )
    (graph,) = compile_text(src)
    # CAP = T / 2 candidates: runs of 32 * 4**m records must hold max(CAP, K).
    assert _mrgsort_block_lens(graph) == stages


def test_selection_matches_argsort_for_every_candidate_count(tmp_path):
    layer_path = tmp_path / "small.dsl"
    layer_path.write_text(SMALL)
    layer = compile_layer(layer_path, {"N": 256})
    rng = np.random.default_rng(5)
    score = rng.standard_normal((256, 256)).astype(np.float32)
    out = layer.run({"score": score}).outputs[0]["idx"]
    for n in range(1, 257):
        k = min(8, n)
        expected = np.argsort(-score[n - 1, :n], kind="stable")[:k]
        assert np.array_equal(out[n - 1, :k], expected), n


def test_range_the_row_cannot_hold_is_an_error_naming_the_bound():
    src = (
        (RUN / "topk_row.dsl")
        .read_text()
        .replace('assert CAP <= W, "the candidate cap must fit the score row"', "")
    )
    src = src.replace("T = 512 in 128..4096 step 128", "T = 512 in 128..8192 step 128")
    with pytest.raises(CompileError) as err:
        compile_text(src, "topk_row.dsl")
    (d,) = err.value.diagnostics
    assert (d.code, d.span.line) == ("E310", 11)
    assert "up to 4096 candidates can be valid (at T=8192) but the row holds 2048" in d.message


def test_fixture_compiles_with_three_stages():
    (graph,) = compile_file(RUN / "topk_row.dsl")
    assert _mrgsort_block_lens(graph) == [64, 256, 1024]
