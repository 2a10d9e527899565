"""The explorer's decider: how the search drives the engine through one transition.

Every dispatch choice point of a settle (which core, which cohort slots, which release order)
asks the engine's decider.  The search replays a script of answers, then takes the first
option not yet tried, and reads the log back to enumerate the alternatives left at each point
(:mod:`runtime.verify.explorer`).  Of the options that a permutation of interchangeable cores
maps onto each other only one is offered (the representatives come from
:mod:`runtime.verify.snapshots`).  Kept apart from the search because it is what the engine
calls back into, through the :class:`runtime.decisions.Decider` interface, while the search
only reads its log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.decisions import Decider
from runtime.machine import Core
from runtime.verify.space import Space


class ExploreDecider(Decider):
    """Answers dispatch choice points from a script, then with the first untried option, and
    logs every choice point so the search can enumerate the alternatives."""

    name = "verify"

    def __init__(self) -> None:
        self.space: Space | None = None
        self.script: Sequence[int] = ()
        self.pos = 0
        self.log: list[tuple[str, int, int, Sequence[int]]] = []
        self.picked: dict[Core, int] | None = None

    def start(self, script: Sequence[int]) -> None:
        self.script = script
        self.pos = 0
        self.log = []

    def decide(self, kind: str, options: Sequence[Any]) -> int:
        if kind == "release":
            reps: Sequence[int] = range(len(options))
        else:
            reps = self.space.snapshots.representatives(list(options), self.picked)
        i = self.script[self.pos] if self.pos < len(self.script) else reps[0]
        self.pos += 1
        self.log.append((kind, i, len(options), reps))
        return i

    def choose_cohort(self, options: Sequence[Any], n: int) -> list[Any]:
        remaining = list(options)
        picked: list[Any] = []
        self.picked = marks = {}
        for k in range(n):
            o = remaining.pop(self._pick("cohort", remaining))
            picked.append(o)
            for c in o if isinstance(o, tuple) else (o,):
                marks[c] = k
        self.picked = None
        return picked
