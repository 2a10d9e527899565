"""What the adversarial policy does differently from random (runtime/policies.py), one behaviour
per test: each fails when that behaviour is taken out, the others keep passing."""

from __future__ import annotations

from runtime.program import Program, TaskSpec, TensorSpec
from runtime.simulator import DeadlockError, simulate

SEEDS = range(20)


def noop(ctx):
    return None


def wait_ready(ctx):
    yield ctx.wait("ready", 0, "ge", 1)


def notify_ready(ctx):
    ctx.notify("ready", 0, ctx.rank, 1)


def _parking_program() -> Program:
    """4 AIV cores: a spinner on one, 3 long busy blocks on the others; at t = 1 the notifier
    the spinner waits for is released and only pending slots are free. Behind the spinner is
    the worst slot (it never runs: a deadlock); behind a busy block it runs at t = 100."""
    return Program(
        "parking",
        (TensorSpec("ready", (1,), "int32", "signal"),),
        (),
        (
            TaskSpec("spinner", "aiv", 1, wait_ready),
            TaskSpec("busy", "aiv", 3, noop, cost=100),
            TaskSpec("gate", "aic", 1, noop),
            TaskSpec("notifier", "aiv", 1, notify_ready, deps=(2,)),
        ),
    )


def _deadlocks(policy: str) -> int:
    found = 0
    for seed in SEEDS:
        try:
            simulate(_parking_program(), cores=(2, 4), policy=policy, seed=seed, sched_threads=1)
        except DeadlockError:
            found += 1
    return found


def test_adversarial_parks_the_notifier_behind_the_spinner_most_of_the_time():
    """Random takes one of the 4 pending slots (1 in 4 behind the spinner); the adversary
    takes the worst one with probability greed = 0.8 (+ 0.2 / 4 by chance)."""
    assert _deadlocks("random") <= 8
    assert _deadlocks("adversarial") >= 14


def _stretch(policy: str) -> dict[str, set[int]]:
    """(end - start) - cost of every block, by task, over the seeds."""
    tasks = (
        TaskSpec("notifier", "aiv", 8, notify_ready, cost=10),
        TaskSpec("plain", "aiv", 8, noop, cost=10),
    )
    program = Program("delays", (TensorSpec("ready", (1,), "int32", "signal"),), (), tasks)
    out: dict[str, set[int]] = {"notifier": set(), "plain": set()}
    for seed in SEEDS:
        for r in simulate(program, policy=policy, seed=seed).schedule:
            out[r.task].add(r.end - r.start - 10)
    return out


def test_adversarial_delays_notifier_blocks_by_up_to_their_cost_and_nothing_else():
    assert _stretch("random") == {"notifier": {0}, "plain": {0}}
    stretch = _stretch("adversarial")
    assert stretch["plain"] == {0}
    assert max(stretch["notifier"]) > 0 and stretch["notifier"] <= set(range(11))
    assert len(stretch["notifier"]) > 5  # a random 0..cost extra, not one fixed delay
