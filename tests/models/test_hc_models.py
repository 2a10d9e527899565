"""hc_pre (separate and fused) and hc_post, written in the language, against their goldens.

Every layer runs at its reduced configuration (the file header and models/deepseek_v4_flash/
README.md): hc_mult 4 and the reduction structure (4 linear splits, 32 RMS chunks, 16 RMS
splits) kept, HC_DIM 16384 -> 1024.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dsl
from lowering.checks import run_rules
from lowering.checks.rule import CheckContext
from models.deepseek_v4_flash import hc_pre_golden
from models.deepseek_v4_flash.golden import hc_pre as hc_pre_ref

MODELS = Path(__file__).resolve().parents[2] / "models" / "deepseek_v4_flash"
SEED_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "seed"

HC_PRE_REDUCED = {"T": 16, "HC_DIM": 1024, "LINEAR_K_CHUNK": 64, "RMS_K_CHUNK": 32}
HC_POST_REDUCED = {"T": 16, "HC_DIM": 1024}
OUTPUTS = ("x_mixed", "post", "comb")


@pytest.fixture(scope="module")
def hc_pre():
    return dsl.load(MODELS / "hc_pre.dsl", **HC_PRE_REDUCED)


@pytest.fixture(scope="module")
def hc_pre_fused():
    return dsl.load(MODELS / "hc_pre_fused.dsl", **HC_PRE_REDUCED)


def _failures(validation) -> list[str]:
    return [f"{c.name}: {c.message}" for c in validation.checks if not c.passed]


@pytest.mark.parametrize("seed", [0, 1])
def test_hc_pre_matches_its_golden(hc_pre, seed):
    inputs = hc_pre.make_inputs(seed)
    result = hc_pre.run(inputs)
    validation = hc_pre.validate(inputs, result)
    assert validation.passed, _failures(validation)
    assert [c.name for c in validation.checks] == list(OUTPUTS)


def test_hc_pre_split_k_tree_is_the_goldens_bit_for_bit(hc_pre):
    """The linear partials (cube order, k_group = 4) folded 0, 1, 2, 3: the golden's mixes_raw."""
    inputs = hc_pre.make_inputs(0)
    mem = hc_pre.run(inputs).memory[0]
    cfg = hc_pre_golden.config(hc_pre.params)
    x = inputs[0]["x"]
    want = hc_pre_ref.fold_ascending(hc_pre_ref.linear_partials(x, inputs[0]["hc_fn"], cfg.splits, 4))
    np.testing.assert_array_equal(mem["mixes_raw"], want)
    # the RMS tree is the golden's too; only the sum inside a chunk (row_sum in fp32 vs the
    # golden's float64) may differ, by at most a few ulp
    sq = hc_pre_ref.rms_sum(x, cfg.rms_chunk, 1)
    np.testing.assert_allclose(mem["sq_sum"][:, 0], sq, rtol=4 * 2.0**-23)


def test_hc_pre_fused_matches_its_golden(hc_pre_fused):
    inputs = hc_pre_fused.make_inputs(0)
    result = hc_pre_fused.run(inputs, cores="a2a3")  # one block per cluster: 24
    validation = hc_pre_fused.validate(inputs, result)
    assert validation.passed, _failures(validation)
    assert result.blocks_run == 24


def test_hc_pre_fused_and_separate_share_the_linear_tree(hc_pre, hc_pre_fused):
    inputs = hc_pre.make_inputs(3)
    separate = hc_pre.run(inputs).memory[0]
    fused = hc_pre_fused.run(inputs, cores="a2a3").memory[0]
    np.testing.assert_array_equal(fused["mixes_raw"], separate["mixes_raw"])


def _bits(result, names) -> dict[str, bytes]:
    return {n: np.ascontiguousarray(result.memory[0][n]).tobytes() for n in names}


def test_atomic_split_k_differs_across_schedules_and_the_model_does_not(hc_pre, hc_pre_fused):
    """docs/runtime-semantics.md §17: FP32 atomics sum in completion order; the ordered reduce does not."""
    atomic = dsl.load(SEED_FIXTURES / "hc_pre_pre.dsl", T=128, HC_DIM=1024, K_CHUNK=64, RMS_K_CHUNK=32)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((128, 1024)) * 0.05).astype(np.float32)
    w = (rng.standard_normal((32, 1024)) * 0.2).astype(np.float32)
    runs = [_bits(atomic.run({"x": x, "w": w}, policy="random", seed=s), ["mixes"]) for s in range(4)]
    assert len({r["mixes"] for r in runs}) > 1  # the pre-fix form: other bits on other schedules

    inputs = hc_pre.make_inputs(0)
    names = [*OUTPUTS, "mixes_raw", "sq_sum"]
    model = [_bits(hc_pre.run(inputs, policy="random", seed=s), names) for s in range(4)]
    assert all(m == model[0] for m in model)
    fused = [_bits(hc_pre_fused.run(inputs, policy="random", seed=s, cores="a2a3"), names) for s in range(3)]
    assert all(m == fused[0] for m in fused)


@pytest.fixture(scope="module")
def hc_post():
    return dsl.load(MODELS / "hc_post.dsl", **HC_POST_REDUCED)


# The goldens are checked under fifo; every other schedule must leave the same bits. The fused
# layer needs one block per cluster of the device (a2a3).
@pytest.mark.parametrize(
    ("name", "policy", "seed", "cores"),
    [
        ("hc_pre", "adversarial", 1, "sim"),
        ("hc_pre_fused", "adversarial", 2, "a2a3"),
        ("hc_post", "random", 1, "sim"),
        ("hc_post", "adversarial", 3, "a2a3"),
    ],
)
def test_hc_layers_are_the_fifo_result_bit_for_bit_under_every_policy(request, name, policy, seed, cores):
    layer = request.getfixturevalue(name)
    inputs = layer.make_inputs(seed)
    fifo = layer.run(inputs, cores=cores)
    other = layer.run(inputs, policy=policy, seed=seed, cores=cores)
    assert _bits(other, other.outputs[0]) == _bits(fifo, fifo.outputs[0])


def test_hc_post_matches_its_golden_exactly(hc_post):
    layer = hc_post
    inputs = layer.make_inputs(0)
    result = layer.run(inputs)
    validation = layer.validate(inputs, result)
    assert validation.passed, _failures(validation)
    # the same fp32 operations in the same order: equal bit for bit
    want = layer.golden_module().golden(inputs, layer.params)["y"]
    np.testing.assert_array_equal(result.outputs[0]["y"], want)


@pytest.mark.parametrize("name", ["hc_pre.dsl", "hc_pre_fused.dsl", "hc_post.dsl"])
def test_hc_layers_are_lint_clean_over_their_admissible_range(name):
    """`dslc check` at the real configuration, every rule over every admissible T."""
    from dsl.frontend import compile_file

    (graph,) = compile_file(MODELS / name)
    assert [f"{d.code} {d.message}" for d in run_rules(graph, CheckContext(graph, preset="a2a3"))] == []
