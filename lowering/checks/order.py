"""Order facts of a graph shared by several rule families (cached on the check context)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set

from lowering.checks.reach import Reach, ReachMap
from lowering.checks.rule import CheckContext
from lowering.ir import Edge, Graph


class DescendantSet(Set):
    """The descendants of one task, as a read-only set backed by :class:`Reach`."""

    __slots__ = ("_reach", "_name")

    def __init__(self, r: Reach, name: str):
        self._reach = r
        self._name = name

    def __contains__(self, other: object) -> bool:
        r = self._reach
        return isinstance(other, str) and other in r.position and r.before(self._name, other)

    def __iter__(self) -> Iterator[str]:
        return self._reach.descendants_of(self._name)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @classmethod
    def _from_iterable(cls, it) -> frozenset[str]:
        return frozenset(it)


def descendants(graph: Graph, ctx: CheckContext) -> Mapping[str, Set[str]]:
    """Transitive successors of each task (membership is O(1); iteration walks the successors)."""
    cached = ctx.cache.get("descendants")
    if cached is None:
        cached = ctx.cache["descendants"] = ReachMap(ctx.reach, DescendantSet)
    return cached


def predecessors(graph: Graph, ctx: CheckContext) -> dict[str, set[str]]:
    """Direct producers of each task: every in-round edge the runtime tracks. A host ordering
    (``DepRef.host``) is left out: the task is submitted after that producer completed, so it
    is no early-dispatch candidate of it and never waits on it in a ready queue."""
    cached = ctx.cache.get("predecessors")
    if cached is None:
        cached = ctx.cache["predecessors"] = graph.predecessors(host=False)
    return cached


def host_waits(graph: Graph, ctx: CheckContext) -> dict[str, set[str]]:
    """The tasks the orchestrator waited for before submitting each task (host edges only)."""
    cached = ctx.cache.get("host_waits")
    if cached is None:
        cached = ctx.cache["host_waits"] = {t.name: set() for t in graph.tasks}
        for e in graph.edges:
            if e.kind == "host":
                cached[e.dst].add(e.src)
    return cached


def submitted_while(graph: Graph, ctx: CheckContext, task: str, running: str, below: frozenset[str]) -> bool:
    """Whether ``task`` can be submitted while ``running`` (and its descendants ``below``) is
    incomplete: not when the host waited for one of them before submitting it."""
    return not any(p == running or p in below for p in host_waits(graph, ctx)[task])


def successors(graph: Graph, ctx: CheckContext) -> dict[str, list[str]]:
    """Direct consumers of each task (every in-round edge), in submission order."""
    cached = ctx.cache.get("successors")
    if cached is None:
        r = ctx.reach
        cached = ctx.cache["successors"] = {
            name: [r.names[s] for s in r.succs[i]] for i, name in enumerate(r.names)
        }
    return cached


def incoming(graph: Graph, ctx: CheckContext) -> dict[str, list[Edge]]:
    """The in-round edges into each task, in the graph's edge order."""
    cached = ctx.cache.get("incoming")
    if cached is None:
        cached = ctx.cache["incoming"] = {}
        for e in graph.edges:
            cached.setdefault(e.dst, []).append(e)
    return cached


def unordered(ctx: CheckContext, a: str, b: str, reach: Reach | None = None) -> bool:
    """Both can be in flight in one dispatch: neither is an ancestor of the other (in ``reach``,
    the graph's edges by default), and they are not on different arms of one run-time branch
    (``Task.excludes``)."""
    r = reach if reach is not None else ctx.reach
    return a != b and not r.ordered(a, b) and not ctx.graph.task(a).excludes(ctx.graph.task(b))
