"""Which instances of different rounds can be in flight together.

A layer runs round after round (epoch 1, 2, ...), every round submitted while the earlier ones
still run, and the runtime adds no edge between rounds of its own: task X of round r runs
before task Y of round r + 1 only when a chain of edges says so -- in-round edges of round r
from X to some A, an edge the tensor map carries into the next round from A to some B
(``Graph.cross_round_edges``: B of round r + 1 reads or rewrites what A of round r wrote), and
in-round edges of round r + 1 from B to Y. Rounds further apart compose such chains. Nothing
else orders rounds, so everything else can be in flight together, as far back as the task
ring holds rounds (``RING_TASK_WINDOW`` task slots, docs/runtime-semantics.md §4).

:func:`ordered_before` answers, for a task Y, which tasks of each earlier round are certainly
done before Y starts; ``after prev(t)`` (``dsl.elaborate_rounds``) is how a layer orders what
it needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from lowering.checks.reach import Reach
from lowering.checks.rule import CheckContext
from lowering.ir import Graph

RING_TASK_WINDOW = 16384  # task slots of the runtime's ring (pypto-lib CI; runtime-semantics.md §4)
MAX_ROUNDS_APART = 16  # rounds apart followed at most (the sets repeat much sooner in practice)


@dataclass(frozen=True, eq=False)
class EarlierRounds:
    """For a task Y: ``before[k - 1]`` holds the tasks whose round r instance is ordered before
    Y of round r + k, for every k the ring admits (``before`` repeats from there on, or the
    walk stopped at ``MAX_ROUNDS_APART`` and ``bounded`` says so). Each set is packed bits
    over the tasks' numbers in ``number`` (a graph of 50,000 tasks asks for a thousand of
    them: sets of names cost a quadratic time and memory)."""

    before: tuple[np.ndarray, ...]
    bounded: bool
    number: Mapping[str, int]

    def first_gap(self, task: str) -> int | None:
        """The fewest rounds apart at which ``task`` is not ordered before Y (None: always)."""
        x = self.number.get(task)
        for k, done in enumerate(self.before, start=1):
            if x is None or not (done[x >> 3] >> (7 - (x & 7))) & 1:
                return k
        return None


def rounds_overlap(graph: Graph) -> bool:
    """Whether round r + 1 can start before round r is done. A PyPTO program (read from ``.py``)
    runs one round per dispatch, and a chip worker runs one dispatch at a time
    (docs/runtime-semantics.md §7.6): its rounds never overlap. A DSL layer's rounds are
    submitted into one ring, back to back."""
    return not graph.file.endswith(".py")


def rounds_in_flight(graph: Graph) -> int:
    """How many rounds the ring can hold at once (at least 2 when a layer runs back to back)."""
    return max(2, RING_TASK_WINDOW // max(len(graph.tasks), 1))


def ordered_before(graph: Graph, ctx: CheckContext, task: str) -> EarlierRounds:
    key = ("rounds.before", task)
    hit = ctx.cache.get(key)
    if hit is not None:
        return hit
    closures = ctx.cache.get("rounds.closures")
    if closures is None:
        closures = ctx.cache["rounds.closures"] = _Closures(graph, ctx.reach)
    if not rounds_overlap(graph):
        everything = np.packbits(np.ones(len(graph.tasks), dtype=bool))
        hit = ctx.cache[key] = EarlierRounds((everything,), False, closures.number)
        return hit
    apart = rounds_in_flight(graph) - 1
    current = closures.of(task)  # round r + k: what runs before the task itself
    seen: list[np.ndarray] = []
    keys: set[bytes] = set()
    bounded = False
    while True:
        current = closures.one_round_back(current)
        packed = np.packbits(current)
        if packed.tobytes() in keys:
            break  # the sets repeat from here on
        keys.add(packed.tobytes())
        seen.append(packed)
        if len(seen) >= min(apart, MAX_ROUNDS_APART):
            bounded = len(seen) < apart
            break
    hit = ctx.cache[key] = EarlierRounds(tuple(seen), bounded, closures.number)
    return hit


class _Closures:
    """Sets of tasks closed under their ancestors, as boolean arrays over the numbering of
    ``Reach`` (whose compressed ancestor sets are an interval and a few bits each), and the
    cross-round edges as arrays of those numbers."""

    def __init__(self, graph: Graph, reach: Reach):
        self.reach = reach
        self.number = {name: reach.number(name) for name in reach.names}
        n = len(reach.names)
        self.size = n
        sets = [reach.ancestor_set(k) for k in range(n)]
        self.lo = np.fromiter((s[0] for s in sets), dtype=np.int64, count=n)
        self.hi = np.fromiter((s[1] for s in sets), dtype=np.int64, count=n)
        self.masked = {k: (s[2], s[3]) for k, s in enumerate(sets) if s[3]}
        self.with_mask = np.fromiter(sorted(self.masked), dtype=np.int64, count=len(self.masked))
        edges = [
            (self.number[e.src], self.number[e.dst])
            for e in graph.cross_round_edges
            if e.src in self.number and e.dst in self.number
        ]
        self.src = np.fromiter((a for a, _ in edges), dtype=np.int64, count=len(edges))
        self.dst = np.fromiter((b for _, b in edges), dtype=np.int64, count=len(edges))

    def of(self, task: str) -> np.ndarray:
        """The task and its ancestors."""
        chosen = np.zeros(self.size, dtype=bool)
        chosen[self.number[task]] = True
        return self._closed(chosen)

    def one_round_back(self, current: np.ndarray) -> np.ndarray:
        """The tasks of round r ordered before everything in ``current`` of round r + 1: the
        sources of the cross-round edges into ``current``, and their ancestors."""
        chosen = np.zeros(self.size, dtype=bool)
        chosen[self.src[current[self.dst]]] = True
        return self._closed(chosen)

    def _closed(self, chosen: np.ndarray) -> np.ndarray:
        """The ``chosen`` tasks and all their ancestors."""
        tasks = np.flatnonzero(chosen)
        edges = np.zeros(self.size + 1, dtype=np.int64)
        np.add.at(edges, self.lo[tasks], 1)
        np.add.at(edges, self.hi[tasks], -1)
        out = np.cumsum(edges[:-1]) > 0
        out |= chosen
        for k in self.with_mask[chosen[self.with_mask]].tolist():
            base, mask = self.masked[k]
            bits = [i for i in range(mask.bit_length()) if (mask >> i) & 1]
            out[base + np.asarray(bits, dtype=np.int64)] = True
        return out
