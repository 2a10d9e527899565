"""reduce_sum: lowered shape, bitwise determinism over schedules, equality with its evaluator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dsl.driver.api import compile_layer
from dsl.frontend import compile_text
from lowering.source import CompileError
from runtime import tileops
from runtime.reduction import reduce_splits

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def test_lowering_has_no_atomics_no_seed_and_an_ordered_reduce():
    layer = compile_layer(RUN / "splitk_reduce.dsl")
    g = layer.graph
    assert [t.name for t in g.tasks] == ["linear_splits", "linear", "scale"]
    assert g.task("linear_splits").blocks == 16 and g.task("linear").blocks == 2
    assert all(a.mode != "atomic" for t in g.tasks for a in t.accesses)
    assert g.tensors["linear_partials"].dims == (8 * 32, 16)
    kinds = {(e.src, e.dst, e.kind) for e in g.edges}
    assert ("linear_splits", "linear", "raw") in kinds and ("linear", "scale", "raw") in kinds


def test_bitwise_identical_over_100_adversarial_schedules_and_equal_to_the_evaluator():
    layer = compile_layer(RUN / "splitk_reduce.dsl")
    (inputs,) = layer.make_inputs(seed=7)
    outs = {layer.run(inputs, policy="adversarial", seed=s).outputs[0]["y"].tobytes() for s in range(100)}
    assert len(outs) == 1
    x, w, k = inputs["x"], inputs["w"], 1024 // 8
    expected = np.vstack(
        [
            reduce_splits(
                lambda s, t0=t0: tileops.matmul(
                    x[t0 : t0 + 16, s * k : (s + 1) * k], w[:, s * k : (s + 1) * k], b_trans=True
                ),
                8,
            )
            for t0 in (0, 16)
        ]
    )
    assert (
        np.frombuffer(outs.pop(), np.float32).reshape(32, 16).tobytes()
        == tileops.mul(expected, 2.0).tobytes()
    )


def test_reduce_sum_must_be_the_last_store():
    src = """layer a(T = 16) { input x: f32[T, 4]
 output y: f32[T, 4]
 task t { y[:, :] = reduce_sum s in range(2) { return x[:, :] }
 y[0, 0] = 1.0 } }"""
    with pytest.raises(CompileError) as err:
        compile_text(src)
    assert [(d.code, d.span.line) for d in err.value.diagnostics] == [("E405", 3)]
