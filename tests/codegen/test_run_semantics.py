"""Generated layers on the simulator: the failures the runtime really has, reproduced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dsl.driver.api import compile_layer
from runtime.sim_errors import DeadlockError

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def _bit_patterns(name: str, seeds: range) -> set[bytes]:
    layer = compile_layer(RUN / f"{name}.dsl")
    (inputs,) = layer.make_inputs(seed=0)
    return {layer.run(inputs, policy="random", seed=s).outputs[0]["y"].tobytes() for s in seeds}


def test_fp32_atomic_split_k_depends_on_the_schedule():
    assert len(_bit_patterns("splitk_atomic", range(20))) >= 2


def test_ordered_split_k_gives_one_bit_pattern():
    assert len(_bit_patterns("splitk_ordered", range(20))) == 1


def test_missing_push_wait_edge_deadlocks_and_names_the_parked_notifier():
    layer = compile_layer(RUN / "handshake_pre.dsl")
    reports = []
    for seed in range(20):
        try:
            layer.run(policy="adversarial", seed=seed, rounds=3, cores=(1, 2))
        except DeadlockError as err:
            reports.append(str(err))
    assert reports, "the adversarial policy never found the handshake deadlock"
    assert any("push[" in r and "parked in pending slot" in r and "behind wait[0]" in r for r in reports)
    assert all("spinning on cell arrived[" in r for r in reports)


def test_push_wait_edge_completes_under_200_adversarial_seeds():
    layer = compile_layer(RUN / "handshake_post.dsl")
    (inputs, peer) = layer.make_inputs(seed=0)
    for seed in range(200):
        result = layer.run([inputs, peer], policy="adversarial", seed=seed, rounds=2, cores=(1, 2))
        assert result.deadlock is None


def test_non_atomic_accumulate_loses_updates_when_blocks_interleave():
    """`+=` without `atomic` is a read, then a write, and the generated kernel yields between
    them: blocks that read before another's write lose its update (R505 bad.dsl, 4 blocks).
    Small integers add exactly in fp32, so a short sum is a lost update, not rounding."""
    layer = compile_layer(RUN.parent / "rules" / "R505" / "bad.dsl")
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32) % 7
    per_block = [x[16 * b : 16 * b + 16].sum(axis=0) for b in range(4)]

    def total(policy, seed):
        return layer.run({"x": x}, policy=policy, seed=seed).outputs[0]["total"].ravel()

    # fifo starts all four blocks at t = 0: each reads the zero, the last write wins
    assert any(np.array_equal(total("fifo", 0), s) for s in per_block)
    seen = {total("random", s).tobytes() for s in range(5)}
    assert len(seen) > 1  # how many updates survive depends on the schedule


def test_a_let_tile_is_a_copy_that_later_stores_do_not_change(tmp_path):
    """A tile loaded by `let` lives in on-chip memory: overwriting its source in GM afterwards
    leaves the tile (and what is stored from it) as loaded."""
    src = tmp_path / "copy.dsl"
    src.write_text(
        "layer copy(R = 4, C = 8) {\n  inout x: f32[R, C]\n  output y: f32[R, C]\n"
        "  task t on aiv {\n    let a = x[:, :]\n    x[:, :] = zeros(f32, [R, C])\n    y[:, :] = a\n  }\n}\n"
    )
    layer = compile_layer(src)
    x = np.arange(32, dtype=np.float32).reshape(4, 8) + 1
    out = layer.run({"x": x.copy()}).outputs[0]
    np.testing.assert_array_equal(out["y"], x)
    assert not out["x"].any()
