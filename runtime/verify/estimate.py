"""How big the unreduced search would be: Knuth's estimator over random schedules.

A search with no state hashing, no sleep or persistent sets and no symmetry executes one
transition per edge of the tree of all schedules.  That tree is usually far too large to walk,
so its size is estimated: a *probe* is one random schedule, and at every choice point the
product of the branching factors seen so far (runnable blocks times the options of every
dispatch choice the step's settle made) estimates how many nodes the tree has at that depth
(Knuth, "Estimating the efficiency of backtrack programs", 1975).  The estimate is unbiased;
its variance grows with the tree's irregularity, which is why several probes are averaged and
the spread is reported.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.decisions import Decider
from runtime.program import Program
from runtime.sim_errors import SimulatorError
from runtime.verify.space import Config, Space


@dataclass(frozen=True)
class Estimate:
    """Mean over ``probes`` random schedules: transitions (tree edges) and complete schedules
    (leaves) of the unreduced tree; ``low``/``high`` are the smallest and largest probe."""

    transitions: float
    schedules: float
    probes: int
    low: float
    high: float


class _Probe(Decider):
    name = "probe"

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.width = 1

    def decide(self, kind: str, options: Sequence[Any]) -> int:
        self.width *= len(options)
        return self.rng.randrange(len(options))


def estimate_naive(
    program: Program,
    inputs: dict | list[dict],
    config: Config,
    probes: int = 64,
    seed: int = 0,
    timeout: float = 10.0,
) -> Estimate:
    """Estimate the unreduced search tree of ``program`` for ``config`` (at most ``timeout``
    seconds: fewer probes are taken when they are slow)."""
    rng = random.Random(seed)
    deadline = time.monotonic() + timeout
    edges_seen: list[float] = []
    leaves_total = 0.0
    for _ in range(probes):
        if edges_seen and time.monotonic() > deadline:
            break
        decider = _Probe(rng)
        space = Space(program, inputs, config, decider)
        weight = 1.0
        edges = 0.0
        try:
            space.execute(None)
            weight = float(decider.width)
            edges = weight
            while True:
                runnable = space.runnable_blocks()
                if not runnable:
                    break
                decider.width = len(runnable)
                space.execute(runnable[rng.randrange(len(runnable))])
                weight *= decider.width
                edges += weight
        except SimulatorError:
            pass  # a kernel error ends the schedule; the tree ends there too
        edges_seen.append(edges)
        leaves_total += weight
    n = len(edges_seen)
    return Estimate(sum(edges_seen) / n, leaves_total / n, n, min(edges_seen), max(edges_seen))
