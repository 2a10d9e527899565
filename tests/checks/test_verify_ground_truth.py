"""``dslc verify`` as the judge of the lint: every handshake, speculation, protocol and numerics
rule fixture and every seed fixture, explored at a small configuration (docs/verify.md).

* a bad fixture whose rule claims a hang must give a deadlock, one whose rule claims a
  schedule-dependent result must give two schedules with different bits (or a golden failure),
  and the counterexample must replay through ``simulate(replay=...)`` to the same violation;
* where the claim is not a reachable violation at that configuration, the case says why and the
  rule's docs say what verify shows (a section "What dslc verify shows");
* a good fixture must verify complete: every schedule, no violation.

Cases marked ``heavy`` (the big seed layers) take minutes; by default they run with a small
state budget and must show no violation in it, and ``DSLC_VERIFY_HEAVY=1`` explores them to the
end.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from dsl.driver.api import compile_layer
from runtime.simulator import simulate
from runtime.verify import Config, explore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CHECKS = Path(__file__).resolve().parents[2] / "lowering" / "checks"
HEAVY = bool(os.environ.get("DSLC_VERIFY_HEAVY"))

HANG, RESULT = "hang", "result"  # what a rule claims


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def combine_routing(layer, inputs: list[dict]) -> None:
    """A combine routing table as the dispatch produces it: every routed slot written once."""
    p = layer.params
    ep, n_local, t, slots = p["EP"], p["N_LOCAL"], p["T"], p["T"] * p["TOPK"]
    for q, per in enumerate(inputs):
        route = np.full((n_local * ep * t, 1), -1, np.int32)
        for e in range(n_local):
            for src in range(ep):
                for row in range(t):
                    route[e * ep * t + src * t + row, 0] = ((q * n_local + e) * t + row) % slots
        per["recv_r_route_out"] = route


def nonzero_counts(layer, inputs: list[dict]) -> None:
    """Expert row counts that are not all zero, so a stale offset shows in the routed rows."""
    for per in inputs:
        per["counts"] = np.arange(1, layer.params["E"] + 1, dtype=np.int32).reshape(-1, 1)


def alternating_modes(layer, inputs: list[dict]) -> None:
    """Mode flags 1, 0, 1, ... : every other block (or every block, for one flag) takes the branch."""
    for per in inputs:
        mode = per["mode"]
        per["mode"] = np.asarray([[1 - i % 2] for i in range(mode.shape[0])], dtype=mode.dtype)


@dataclass(frozen=True)
class Case:
    fixture: str  # under tests/fixtures
    expect: str  # deadlock | nondeterminism | golden | complete | unreachable
    params: dict[str, int] = field(default_factory=dict)
    rounds: int = 1
    clusters: int = 1
    claim: str = HANG  # for unreachable: what the rule claims
    rule: str = ""  # for unreachable: the rule module whose docs must say what verify shows
    why: str = ""  # for unreachable: why the claim is not a reachable violation here
    scalars: dict[str, int] = field(default_factory=dict)
    round_scalars: tuple[str, ...] = ()
    inputs: Any = None
    heavy: bool = False


EP2 = {"EP": 2}
EP2N2 = {"EP": 2, "N_LOCAL": 2}
MOE = {"EP": 2, "N_LOCAL": 2, "T": 64, "TOPK": 2}
FIFO = "no producer: push and wait enter the FIFO AIV queue in program order, pushes get slots first"

CASES = [
    # handshake
    Case(
        "rules/D101/bad.dsl",
        "unreachable",
        EP2N2,
        rounds=2,
        rule="handshake/wait_before_local_notifier",
        why=FIFO,
    ),
    Case("rules/D101/good.dsl", "complete", EP2N2),
    # a layer `if`: the lint reports the branch OVERLAP = 1 selects
    Case("rules/D101/bad_branch.dsl", "deadlock", {"OVERLAP": 1}),
    Case("rules/D101/bad_branch.dsl", "complete", rounds=2),  # the default branch is fine
    Case("rules/D101/good_branch.dsl", "complete", {"OVERLAP": 1}, rounds=2),
    Case("rules/D101/good_branch.dsl", "complete", rounds=2),
    # a grid that notifies before it waits: parked siblings deadlock it, a sync_start cohort cannot
    Case("rules/D101/bad_cohort.dsl", "deadlock", EP2),
    Case("rules/D101/good_cohort.dsl", "complete", EP2, clusters=2),
    # a retire of consumed credits: on the own rank after the wait it is safe, on the peer it undoes them
    Case("rules/D101/good_retire.dsl", "complete", EP2, rounds=2),
    Case("rules/D101/good_later_credit.dsl", "complete", EP2, rounds=2),
    Case("rules/D103/bad_retire.dsl", "deadlock", EP2, rounds=2),
    Case("rules/D106/bad.dsl", "deadlock", EP2),
    Case("rules/D106/bad_2.dsl", "deadlock", EP2),
    Case("rules/D106/good.dsl", "complete", EP2),
    Case("rules/D107/bad.dsl", "nondeterminism", EP2),
    Case("rules/D107/good.dsl", "complete", EP2),
    Case("rules/D108/bad.dsl", "unreachable", EP2N2, rule="handshake/anchor_read_is_not_a_join", why=FIFO),
    Case("rules/D108/good.dsl", "complete", EP2N2),
    Case(
        "rules/D109/bad.dsl",
        "deadlock",
        EP2N2,
        rounds=2,
        round_scalars=("moe_epoch",),
        heavy=True,
    ),
    Case("rules/D109/good.dsl", "complete", EP2N2, scalars={"moe_epoch": 1}),
    # rounds that overlap: a later round's waiter overtakes the earlier round's notifier
    Case("rules/D117/bad.dsl", "deadlock", EP2, rounds=3),
    Case("rules/D117/good.dsl", "complete", EP2, rounds=3),
    Case("rules/D117/bad_2.dsl", "deadlock", EP2, rounds=3),
    Case("rules/D117/good_2.dsl", "complete", EP2, rounds=3),
    # speculation
    Case(
        "rules/D102/bad.dsl",
        "unreachable",
        EP2,
        rule="speculation/speculation_behind_remote_waiter",
        why="the handshake notifies before it waits: no notifier needs the cores the gated reduce holds",
        heavy=True,
    ),
    Case(
        "rules/D102/bad_2.dsl",
        "unreachable",
        EP2,
        rounds=2,
        rule="speculation/speculation_behind_remote_waiter",
        why="each round's handshake notifies before it waits",
    ),
    Case("rules/D102/good.dsl", "complete", EP2, heavy=True),
    Case(
        "rules/D110/bad.dsl",
        "unreachable",
        EP2,
        rule="speculation/early_queue_overflow",
        why="a candidate that does not fit the early queue waits for normal readiness",
    ),
    Case("rules/D110/good.dsl", "complete", EP2),
    # protocol
    Case("rules/D103/bad.dsl", "nondeterminism", EP2N2),
    Case("rules/D103/bad_2.dsl", "deadlock", EP2N2),
    Case("rules/D103/bad_3.dsl", "nondeterminism", {"EP": 2, "N_LOCAL": 8}),
    Case("rules/D103/bad_waiter_param.dsl", "deadlock", {"N_LOCAL": 8}),
    Case("rules/D103/good.dsl", "complete", EP2N2),
    Case("rules/D104/bad.dsl", "deadlock", EP2N2, rounds=2),
    Case("rules/D104/good.dsl", "complete", EP2N2, rounds=2),
    Case("rules/D105/bad.dsl", "deadlock", EP2N2),
    Case("rules/D105/good.dsl", "complete", EP2N2),
    Case("rules/D111/bad.dsl", "deadlock", EP2N2),
    Case("rules/D111/good.dsl", "complete", EP2N2, rounds=2),
    Case("rules/D111/good.dsl", "complete", {"EP": 2, "N_LOCAL": 1}, rounds=3, heavy=True),
    Case(
        "rules/D112/bad.dsl",
        "unreachable",
        {"EP": 2, "N": 2},
        claim=RESULT,
        rule="protocol/notify_duplicated_on_mix_lanes",
        why="a MIX block runs its kernel once in the simulator: the notify is not duplicated",
    ),
    Case("rules/D112/good.dsl", "complete", {"EP": 2, "N": 2}),
    Case("rules/D113/bad.dsl", "nondeterminism", EP2N2, rounds=2),
    Case("rules/D113/bad_2.dsl", "deadlock", EP2N2),
    Case("rules/D113/bad_3.dsl", "nondeterminism", EP2N2),
    Case("rules/D113/good.dsl", "complete", EP2N2, rounds=2),
    Case("rules/D113/good_clear.dsl", "complete", EP2N2, rounds=2),
    Case("rules/D113/good_retire.dsl", "complete", EP2N2),
    Case("rules/D113/good_window.dsl", "complete", EP2N2, rounds=2),
    # a Set flag whose writers of two rounds are unordered (bad) or chained with after prev (good)
    Case("rules/D113/bad_set_rounds.dsl", "deadlock", EP2, rounds=2),
    Case("rules/D113/good_set_rounds.dsl", "complete", EP2, rounds=3),
    Case(
        "rules/D114/bad.dsl",
        "unreachable",
        EP2N2,
        claim=RESULT,
        rule="protocol/data_published_before_signal",
        why="a store lands when the kernel executes it: nothing is in flight when the notify goes out",
    ),
    Case("rules/D114/bad_2.dsl", "nondeterminism", EP2),
    Case("rules/D114/bad_3.dsl", "nondeterminism", EP2N2),
    Case("rules/D114/good.dsl", "complete", EP2N2),
    # a block that stores to its own rank needs no notify; one that stores to a peer does
    Case("rules/D114/bad_self.dsl", "nondeterminism", EP2),
    Case("rules/D114/good_self.dsl", "complete", EP2, rounds=2),
    Case(
        "rules/D115/bad.dsl",
        "unreachable",
        EP2,
        rule="protocol/rank_divergent_barrier",
        why="unpaced ranks hang nothing while the counters are monotonic",
    ),
    Case("rules/D115/bad_2.dsl", "deadlock", {"BLOCKS": 2}),
    Case(
        "rules/D115/bad_3.dsl",
        "unreachable",
        {"EP": 2, "BLOCKS": 2},
        rule="protocol/rank_divergent_barrier",
        why="the barrier spans one grid on one rank, whose blocks all take the same branch",
    ),
    Case("rules/D115/good.dsl", "complete", EP2),
    Case("rules/D115/good_2.dsl", "complete", {"EP": 2, "BLOCKS": 2}),
    # a data condition: read by every block alike (good) or per block (bad)
    Case("rules/D115/bad_uniform.dsl", "deadlock", {"BLOCKS": 2}, inputs=alternating_modes),
    Case("rules/D115/good_uniform.dsl", "complete", {"BLOCKS": 2}, inputs=alternating_modes),
    # root/leaf: every rank paced (good), the leaves paced by nothing (bad)
    Case("rules/D115/good_root_leaf.dsl", "complete", EP2, rounds=2),
    Case("rules/D115/bad_root_leaf.dsl", "nondeterminism", EP2, rounds=2),
    Case("rules/D116/bad.dsl", "deadlock", {"EP": 2, "CHUNKS": 2}, rounds=2),
    Case("rules/D116/good.dsl", "complete", {"EP": 2, "CHUNKS": 2}),
    # numerics: FP32 atomics race only where two AIC cores run the split blocks at once
    Case("rules/N201/bad.dsl", "nondeterminism", {"SPLITS": 4}, clusters=2),
    Case("rules/N201/good.dsl", "complete", {"SPLITS": 4}, clusters=2),
    Case("rules/N201/bad_split.dsl", "nondeterminism", {"SPLITS": 4}, clusters=2),  # reported at SPLITS=4
    Case("rules/N201/bad_split.dsl", "complete", clusters=2),  # one block at the default
    Case("rules/N201/good_split.dsl", "complete", {"SPLITS": 4}, clusters=2),
    Case("rules/N201/note_two_adds.dsl", "complete", clusters=2),  # the note: two adds onto zero commute
    Case("rules/N201/note_two_adds.dsl", "complete", rounds=3, clusters=2),  # seed after prev(add_bias)
    Case("rules/N201/bad_three_adds.dsl", "nondeterminism", clusters=2),
    # races: overlapping block writes at another admissible stride
    Case("rules/R505/bad_stride.dsl", "nondeterminism", {"STRIDE": 8}),
    Case("rules/R505/bad_stride.dsl", "complete"),
    Case("rules/R505/good_stride.dsl", "complete", {"STRIDE": 8}),
    Case("rules/R505/bad_loop.dsl", "nondeterminism"),  # the overlap is across loop iterations
    # aliasing through a call that binds one tensor twice
    Case("rules/R502/bad_call.dsl", "nondeterminism"),
    Case("rules/R502/good_call.dsl", "complete", rounds=2),
    Case(
        "rules/N202/bad.dsl",
        "unreachable",
        clusters=2,
        claim=RESULT,
        rule="numerics/atomic_without_ordered_seed",
        why="tensors start at zero, and a zeroing after the adds wipes them in every schedule alike",
    ),
    Case("rules/N202/good.dsl", "complete", clusters=2),
    # a seed of the next round that nothing orders after this round's adds
    Case("rules/N202/bad_rounds.dsl", "nondeterminism", rounds=2),
    Case("rules/N202/good_rounds.dsl", "complete", rounds=3),
    Case("rules/N202/good.dsl", "complete", rounds=2, clusters=2),
    Case(
        "rules/N203/bad.dsl",
        "unreachable",
        {"SPLITS": 2},
        claim=RESULT,
        rule="numerics/golden_tree_mismatch",
        why="the kernel is deterministic and within the golden's tolerances: the drift is hidden, not random",
    ),
    Case(
        "rules/N203/bad_undeclared.dsl",
        "unreachable",
        {"SPLITS": 2},
        claim=RESULT,
        rule="numerics/golden_tree_mismatch",
        why="an undeclared reduction tree is a note, not a schedule-dependent result",
    ),
    Case("rules/N203/good.dsl", "complete", {"SPLITS": 2}),
    Case(
        "rules/N204/bad.dsl",
        "unreachable",
        claim=RESULT,
        rule="numerics/sentinel_not_dtype_extreme",
        why="the sentinel is wrong only for data below it",
    ),
    Case("rules/N204/good.dsl", "complete"),
    # seeds (docs/runtime-semantics.md §14)
    Case("seed/dispatch_pre.dsl", "deadlock", MOE, scalars={"moe_epoch": 1}),
    Case("seed/dispatch_post.dsl", "complete", MOE, scalars={"moe_epoch": 1}),
    Case("seed/combine_pre.dsl", "deadlock", MOE, scalars={"moe_epoch": 1}, inputs=combine_routing),
    Case(
        "seed/combine_post.dsl",
        "complete",
        {"EP": 2, "N_LOCAL": 1, "T": 64, "TOPK": 2},
        scalars={"moe_epoch": 1},
        inputs=combine_routing,
        heavy=True,
    ),
    Case(
        "seed/epoch_restart_pre.dsl",
        "nondeterminism",
        {**EP2N2, "T": 16},
        rounds=2,
        round_scalars=("dispatch",),
    ),
    Case(
        "seed/epoch_restart_post.dsl", "complete", {**EP2N2, "T": 16}, rounds=2, round_scalars=("dispatch",)
    ),
    Case("seed/rowcount_handshake_pre.dsl", "nondeterminism", EP2N2, rounds=2),
    Case("seed/rowcount_handshake_post.dsl", "complete", EP2N2, rounds=2),
    Case("seed/kv_writeback_war_pre.dsl", "nondeterminism", {"STEPS": 2}, clusters=2),
    Case("seed/kv_writeback_war_post.dsl", "complete", {"STEPS": 2}, clusters=2),
    Case("seed/meta_manual_dep_pre.dsl", "nondeterminism", clusters=2, inputs=nonzero_counts),
    Case("seed/meta_manual_dep_post.dsl", "complete", clusters=2, inputs=nonzero_counts),
    Case("seed/gm_roundtrip_out_pre.dsl", "nondeterminism", {"TILES": 2}, clusters=2),
    Case("seed/gm_roundtrip_out_post.dsl", "complete", {"TILES": 2}, clusters=2),
    Case("seed/hc_pre_pre.dsl", "nondeterminism", {"HC_DIM": 1024}, clusters=2),
    Case("seed/hc_pre_post.dsl", "complete", {"HC_DIM": 512, "LINEAR_OK": 2}, heavy=True),
    Case(
        "seed/mixed_store_paths_pre.dsl",
        "unreachable",
        claim=RESULT,
        rule="races/mixed_store_paths",
        why="one block, and the simulator has one store path: tile and scalar stores land in program order",
    ),
    Case("seed/mixed_store_paths_post.dsl", "complete"),
]


def _prepare(case: Case):
    layer = compile_layer(FIXTURES / case.fixture, case.params or None)
    inputs = layer.make_inputs(0, layer.ranks)
    if case.inputs is not None:
        case.inputs(layer, inputs)
    for per in inputs:
        per.update(case.scalars)
    round_scalars = ("epoch", *case.round_scalars)
    per_rank, request = layer.split_scalars(inputs, round_scalars)
    config = Config(
        ranks=layer.ranks,
        n_aic=case.clusters,
        rounds=case.rounds,
        scalars=tuple(sorted(request.items())),
        round_scalars=round_scalars,
    )
    return layer, inputs, per_rank, config


def _golden(layer, inputs, config):
    if layer.graph.golden is None or config.rounds != 1:
        return None

    def check(outputs):
        v = layer.validate(inputs, SimpleNamespace(outputs=outputs))
        return [f"{c.name} r{c.rank}" for c in v.checks if not c.passed] if v else []

    return check


def _replay(layer, per_rank, config, decisions):
    return simulate(
        layer.program,
        per_rank,
        ranks=config.ranks,
        cores=(config.n_aic, 2 * config.n_aic),
        rounds=config.rounds,
        scalars=dict(config.scalars),
        round_scalars=config.round_scalars,
        replay=decisions,
        raise_on_deadlock=False,
    )


def _bits(result) -> list[bytes]:
    return [a.tobytes() for per in result.outputs for a in per.values()]


def _docs(rule: str) -> str:
    return ast.get_docstring(ast.parse((CHECKS / f"{rule}.py").read_text(encoding="utf-8"))) or ""


def _id(case: Case) -> str:
    return f"{case.fixture}@{case.rounds}r{case.clusters}c"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_verify_agrees_with_the_fixture(case: Case):
    if case.heavy and not HEAVY and case.expect in ("deadlock", "nondeterminism", "golden"):
        pytest.skip("heavy: the counterexample takes minutes; DSLC_VERIFY_HEAVY=1 runs it")
    layer, inputs, per_rank, config = _prepare(case)
    budget = 2_000_000 if HEAVY or not case.heavy else 3_000
    claim = case.claim if case.expect == "unreachable" else None
    res = explore(
        layer.program,
        per_rank,
        config,
        max_states=budget,
        timeout=3600,
        check_outputs=_golden(layer, inputs, config),
        determinism=case.expect != "deadlock" and claim != HANG,
        shortest=False,
    )
    v = res.violation
    if case.expect in ("deadlock", "nondeterminism", "golden"):
        assert v is not None and v.kind == case.expect, (v and v.kind, v and v.message, res.stats)
        replayed = _replay(layer, per_rank, config, v.decisions)
        if v.kind == "deadlock":
            assert replayed.deadlock is not None
        elif v.kind == "nondeterminism":
            reference = _replay(layer, per_rank, config, v.reference)
            assert _bits(replayed) != _bits(reference)
        return
    assert v is None, (v.kind, v.message)
    if case.heavy and not HEAVY:
        assert res.stats.distinct > 0  # bounded: no violation among the states explored
        return
    assert res.complete, res.stopped
    if case.expect == "unreachable":
        assert case.why and "## What dslc verify shows" in _docs(case.rule), case.rule
