"""Generated layers on the simulator: the failures the runtime really has, reproduced."""

from __future__ import annotations

from pathlib import Path

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
