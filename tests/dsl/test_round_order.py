"""``after prev(t)``: a task of round r + 1 ordered after task t of round r, through a token."""

from __future__ import annotations

import numpy as np
import pytest

from dsl.driver.api import compile_layer
from dsl.frontend import compile_text
from lowering.source import CompileError

LAYER = """
layer rounds(D = 16) {
  input   x: f32[1, D]
  scratch s: f32[1, D]
  output  y: f32[1, D]
  output  z: f32[1, D]
  task first on aiv after prev(last) { s[:, :] = x[:, :] * 2.0 }
  task middle on aiv { y[:, :] = x[:, :] }
  task last on aiv after first, prev(last) { z[:, :] = s[:, :] + 1.0 }
}
"""


def _edges(edges):
    return sorted((e.src, e.dst, e.kind) for e in edges)


def test_prev_orders_across_rounds_through_a_token():
    (g,) = compile_text(LAYER, "rounds.dsl")
    assert g.tensors["round_token_last"].dims == (1, 1) and g.tensors["round_token_last"].kind == "scratch"
    # last increments the token (a read-modify-write: each round's last follows the previous one's)
    # and first, which comes before it in the layer, reads it: both wait for last of round r
    assert ("last", "first", "raw") in _edges(g.cross_round_edges)
    assert ("last", "last", "raw") in _edges(g.cross_round_edges)
    assert not any(e.src == "last" or e.dst == "middle" for e in g.edges if e.kind != "explicit")
    last = g.task("last")
    assert [a.mode for a in last.accesses if a.tensor == "round_token_last"] == ["read", "write"]
    assert min(a.order for a in last.accesses if a.tensor == "round_token_last") > max(
        a.order for a in last.accesses if a.tensor != "round_token_last"
    )  # appended after the body: program order of the body is unchanged


def test_without_prev_nothing_orders_the_rounds():
    (g,) = compile_text(LAYER.replace("after prev(last) ", "").replace(", prev(last)", ""), "rounds.dsl")
    assert "round_token_last" not in g.tensors
    cross = _edges(g.cross_round_edges)
    assert ("last", "first", "raw") not in cross and not any(
        d == "last" and s == "last" for s, d, _k in cross
    )


def test_the_token_runs_in_the_simulator(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "rounds.dsl"
    src.write_text(LAYER)
    layer = compile_layer(src)
    x = np.arange(16, dtype=np.float32).reshape(1, 16)
    result = layer.run({"x": x}, rounds=3)
    np.testing.assert_array_equal(result.outputs[0]["z"], x * 2.0 + 1.0)


@pytest.mark.parametrize(
    "text, code",
    [
        (LAYER.replace("prev(last)", "prev(nothing)", 1), "E401"),
        (LAYER.replace("task last on aiv after", "task last on aiv manual after"), "E401"),
    ],
)
def test_prev_of_an_unknown_or_manual_task_is_an_error(text, code):
    with pytest.raises(CompileError) as err:
        compile_text(text, "rounds.dsl")
    assert [d.code for d in err.value.diagnostics] == [code] or code in {
        d.code for d in err.value.diagnostics
    }
