"""What a model-checking run reports: the violations, the search statistics and the result.

These records are what the search (:mod:`runtime.verify.explorer`) hands to whatever reads
its verdict -- ``dslc verify`` (``dsl.driver.cli_verify``, ``dsl.driver.verify_report``) and
the tests -- so they live apart from the search, and they hold no engine state: a
:class:`Violation` carries the decisions that replay it
(:func:`runtime.verify.witness.replay_witness`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.decisions import Decision

#: Violation kinds, in the order the report lists properties.
KINDS = ("deadlock", "nondeterminism", "golden", "kernel-error", "step-limit")


@dataclass
class Violation:
    """A property violated on a concrete schedule (``decisions`` replays it)."""

    kind: str
    message: str
    decisions: list[Decision]
    depth: int
    reference: list[Decision] | None = None  # nondeterminism: the schedule with the other outputs
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Stats:
    transitions: int = 0  # transitions executed (explored states, counting revisits)
    distinct: int = 0  # distinct states (fingerprints stored)
    revisits: int = 0  # transitions into a state already expanded (cut)
    terminals: int = 0  # complete schedules reached (distinct end states)
    outputs: int = 0  # distinct output bit patterns
    max_depth: int = 0
    sleep_pruned: int = 0  # block steps not taken because asleep
    persistent_pruned: int = 0  # block steps not taken because outside a persistent set
    symmetry_pruned: int = 0  # dispatch options skipped as images of another under core symmetry
    rebuilds: int = 0  # generators rebuilt from their trail
    replayed: int = 0  # block steps replayed from the step memo instead of run
    elapsed: float = 0.0

    @property
    def per_second(self) -> float:
        return self.distinct / self.elapsed if self.elapsed > 0 else 0.0


@dataclass
class Result:
    """Outcome of :func:`runtime.verify.explorer.explore`: ``complete`` is True when every equivalence class of
    schedules was explored; ``stopped`` says why not (``max-states`` | ``timeout``)."""

    complete: bool
    stopped: str
    violation: Violation | None
    stats: Stats
    shortest: bool  # the search for a shorter counterexample ran to the end
    outputs: set[tuple[bytes, ...]] = field(default_factory=set)  # distinct output bits seen
    pending: int = 0  # block steps still to explore on the search stack when it stopped
    deadlocks: set[tuple] = field(default_factory=set)  # exhaustive: every deadlocked state seen
