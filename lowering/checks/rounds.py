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

from dataclasses import dataclass

from lowering.checks.rule import CheckContext
from lowering.ir import Graph

RING_TASK_WINDOW = 16384  # task slots of the runtime's ring (pypto-lib CI; runtime-semantics.md §4)
MAX_ROUNDS_APART = 16  # rounds apart followed at most (the sets repeat much sooner in practice)


@dataclass(frozen=True)
class EarlierRounds:
    """For a task Y: ``before[k - 1]`` holds the tasks whose round r instance is ordered before
    Y of round r + k, for every k the ring admits (``before`` repeats from there on, or the
    walk stopped at ``MAX_ROUNDS_APART`` and ``bounded`` says so)."""

    before: tuple[frozenset[str], ...]
    bounded: bool

    def first_gap(self, task: str) -> int | None:
        """The fewest rounds apart at which ``task`` is not ordered before Y (None: always)."""
        for k, done in enumerate(self.before, start=1):
            if task not in done:
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
    into: dict[str, list[str]] = ctx.cache.get("rounds.into")  # type: ignore[assignment]
    if into is None:
        into = ctx.cache["rounds.into"] = {}
        for e in graph.cross_round_edges:
            into.setdefault(e.dst, []).append(e.src)
    if not rounds_overlap(graph):
        hit = ctx.cache[key] = EarlierRounds((frozenset(t.name for t in graph.tasks),), False)
        return hit
    anc = ctx.ancestors
    apart = rounds_in_flight(graph) - 1
    current = frozenset([*anc[task], task])  # round r + k: what runs before the task itself
    seen: list[frozenset[str]] = []
    bounded = False
    while True:
        earlier: set[str] = set()
        for b in current:
            for a in into.get(b, ()):
                if a not in earlier:
                    earlier.add(a)
                    earlier.update(anc[a])
        current = frozenset(earlier)
        if current in seen:
            break  # the sets repeat from here on
        seen.append(current)
        if len(seen) >= min(apart, MAX_ROUNDS_APART):
            bounded = len(seen) < apart
            break
    hit = ctx.cache[key] = EarlierRounds(tuple(seen), bounded)
    return hit
