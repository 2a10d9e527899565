"""Indexes of a graph's tasks by tensor and by signal, built once and shared by the rules.

Rules used to find "every task that notifies ``sig``" or "every write of tensor ``t``" by
scanning all tasks; on a graph with thousands of signals and tensors (one per layer chunk)
those scans are quadratic. The index keeps the same lists, in the same order (submission
order, then program order inside a task), so results do not change.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from lowering.ir import Access, Graph, SignalOp, Task


@dataclass
class GraphIndex:
    notifies: dict[str, list[tuple[Task, SignalOp]]] = field(default_factory=dict)
    waits: dict[str, list[tuple[Task, SignalOp]]] = field(default_factory=dict)
    accesses: dict[str, list[tuple[Task, Access]]] = field(default_factory=dict)
    waiters: list[Task] = field(default_factory=list)  # tasks with a wait, in submission order


def graph_index(graph: Graph) -> GraphIndex:
    """The index of ``graph`` (cached on it; rebuilt if its task list changes)."""
    key = (id(graph.tasks), len(graph.tasks))
    cached = graph.__dict__.get("_lint_index")
    if cached is not None and cached[0] == key:
        return cached[1]
    index = GraphIndex()
    for task in graph.tasks:
        has_wait = False
        for op in task.signals:
            if op.kind == "notify":
                index.notifies.setdefault(op.signal, []).append((task, op))
            elif op.kind == "wait":
                index.waits.setdefault(op.signal, []).append((task, op))
                has_wait = True
        if has_wait:
            index.waiters.append(task)
        for a in task.accesses:
            index.accesses.setdefault(a.tensor, []).append((task, a))
    graph.__dict__["_lint_index"] = (key, index)
    return index


def notifiers(graph: Graph, signal: str) -> list[tuple[Task, SignalOp]]:
    """Every notify on ``signal``: (task, op) in submission and program order."""
    return graph_index(graph).notifies.get(signal, [])


def waits_on(graph: Graph, signal: str) -> list[tuple[Task, SignalOp]]:
    """Every wait on ``signal``: (task, op) in submission and program order."""
    return graph_index(graph).waits.get(signal, [])


def accesses_of(graph: Graph, tensor: str) -> list[tuple[Task, Access]]:
    """Every access of ``tensor``: (task, access) in submission and program order."""
    return graph_index(graph).accesses.get(tensor, [])


class BoxIndex:
    """Boxes (regions of one tensor) indexed on their first dimension, for overlap queries.

    ``query(region)`` returns, in insertion order, the positions of the boxes whose bounding
    box meets ``region`` in every dimension. Boxes are grouped by the power of two that
    bounds their first-dimension length; within a group a box meeting ``[lo, hi)`` starts in
    ``(lo - 2**level, hi)``, found by bisection, so a query costs O(levels x log n + matches).
    """

    def __init__(self, regions: list[tuple[tuple[int, int, int], ...]]):
        self.regions = regions
        levels: dict[int, list[tuple[int, int]]] = {}
        for pos, region in enumerate(regions):
            lo, hi = region[0][0], region[0][1]
            levels.setdefault(max(hi - lo - 1, 0).bit_length(), []).append((lo, pos))
        self.levels = [(level, sorted(items)) for level, items in levels.items()]
        self.starts = [[lo for lo, _pos in items] for _level, items in self.levels]

    def query(self, region: tuple[tuple[int, ...], ...]) -> list[int]:
        lo, hi = region[0][0], region[0][1]
        found: list[int] = []
        for (level, items), starts in zip(self.levels, self.starts, strict=True):
            first = bisect_right(starts, lo - (1 << level))
            last = bisect_left(starts, hi)
            for _start, pos in items[first:last]:
                other = self.regions[pos]
                if all(min(x[1], y[1]) > max(x[0], y[0]) for x, y in zip(region, other, strict=True)):
                    found.append(pos)
        found.sort()
        return found
