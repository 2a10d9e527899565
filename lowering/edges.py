"""Edge inference exactly as the task runtime does it (runtime-model.md §1.4).

Per task, in submission order:

1. explicit deps (``after``);
2. creator retention (the DSL has no task-allocated buffers, so none arise here; the kind
   exists for graphs read from PyPTO);
3. lookup, for ``INPUT`` and ``INOUT`` arguments of tensors that are not ``manual_dep``:
   a wait edge on every registered producer whose byte range overlaps (RAW, or WAW when
   the task only writes); an ``INOUT`` that covers an entry removes it;
4. registration of ``INOUT`` and ``OUTPUT_EXISTING`` arguments as the new producers.

Inside a ``manual`` task only step 1 applies. A pure reader leaves no trace, so no WAR
edge ever exists. A write-only argument is ``OUTPUT_EXISTING`` (no lookup) unless the
compiler promotes it to ``INOUT``: under a sequential layer loop (R-seq), after an earlier
task wrote the same tensor (R-prior), or when the tensor is an ``inout`` of the layer
(R-enclosing).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from lowering.ir import Edge, Graph, Task, Tensor
from lowering.regions import Footprint, task_env, task_footprints

INPUT, INOUT, OUTPUT_EXISTING = "INPUT", "INOUT", "OUTPUT_EXISTING"
_BUCKETS = 256


@dataclass
class _Entry:
    task: str
    lo: int
    hi: int
    text: str
    alive: bool = True


class _TensorMap:
    """Producers per tensor, bucketed by byte offset so that lookups stay near-linear."""

    def __init__(self, tensor: Tensor):
        dims = tensor.dims
        size = tensor.itemsize
        for d in dims:
            size = size * d if d is not None else 1 << 62
        self.size = max(size, 1)
        self.width = max(1, -(-self.size // _BUCKETS))
        self.buckets: dict[int, list[_Entry]] = defaultdict(list)

    def _span(self, lo: int, hi: int) -> range:
        first = min(lo // self.width, _BUCKETS)
        last = min((hi - 1) // self.width, _BUCKETS)
        return range(first, last + 1)

    def overlapping(self, lo: int, hi: int) -> list[_Entry]:
        seen: dict[int, _Entry] = {}
        for b in self._span(lo, hi):
            bucket = self.buckets.get(b)
            if not bucket:
                continue
            live = [e for e in bucket if e.alive]
            if len(live) != len(bucket):
                self.buckets[b] = live
            for e in live:
                if e.lo < hi and lo < e.hi:
                    seen[id(e)] = e
        return list(seen.values())

    def register(self, entry: _Entry) -> None:
        for b in self._span(entry.lo, entry.hi):
            self.buckets[b].append(entry)


def argument_tags(graph: Graph) -> dict[str, dict[str, str]]:
    """The runtime direction of every (task, tensor) argument, after Out->InOut promotion."""
    env = graph.env()
    written_before: set[str] = set()
    tags: dict[str, dict[str, str]] = {}
    for task in graph.tasks:
        fps = _footprints(graph, task, env)
        tags[task.name] = {fp.tensor: _tag(graph, task, fp, written_before) for fp in fps}
        written_before.update(fp.tensor for fp in fps if fp.writes)
    return tags


def _tag(graph: Graph, task: Task, fp: Footprint, written_before: set[str]) -> str:
    if fp.reads:
        return INOUT if fp.writes else INPUT
    promoted = (
        task.in_sequential_loop or fp.tensor in written_before or graph.tensors[fp.tensor].kind == "inout"
    )
    return INOUT if promoted else OUTPUT_EXISTING


def _footprints(graph: Graph, task: Task, env: dict[str, int]) -> list[Footprint]:
    cache = graph.__dict__.setdefault("_footprints", {})
    fps = cache.get(task.name)
    if fps is None:
        fps = task_footprints(
            task.accesses, graph.tensors, task_env(env, task.blocks, graph.nranks, graph.scalar_ranges())
        )
        cache[task.name] = fps
    return fps


def infer_edges(graph: Graph) -> tuple[list[Edge], list[Edge]]:
    """Edges within one round, and edges from a round to the previous one.

    The second list comes from replaying the submissions twice with one tensor map, as
    the runtime does when a layer runs back to back: an entry that survives round r is
    a producer for the readers of round r + 1 that come before any new writer.
    """
    env = graph.env()
    maps: dict[str, _TensorMap] = {}
    tags = argument_tags(graph)

    in_round: list[Edge] = []
    cross: list[Edge] = []
    for round_index in range(2):
        out = in_round if round_index == 0 else cross
        for task in graph.tasks:
            if round_index == 0:
                for dep in task.after:
                    out.append(Edge(dep.target, task.name, "explicit", dep.span))
            if task.manual:
                continue
            fps = _footprints(graph, task, env)
            found: dict[tuple[str, str], Edge] = {}
            registrations = []
            for fp in fps:
                tensor = graph.tensors[fp.tensor]
                if tensor.manual_dep:
                    continue
                tag = tags[task.name][fp.tensor]
                tmap = maps.get(fp.tensor)
                if tmap is None:
                    tmap = maps[fp.tensor] = _TensorMap(tensor)
                if tag in (INPUT, INOUT):
                    kind = "raw" if fp.reads else "waw"
                    for entry in tmap.overlapping(fp.byte_lo, fp.byte_hi):
                        is_self = entry.task == task.name and round_index == 0
                        if is_self:
                            continue
                        key = (entry.task, fp.tensor)
                        if key not in found:
                            found[key] = Edge(
                                entry.task,
                                task.name,
                                kind,
                                _access_span(task, fp.tensor),
                                fp.tensor,
                                entry.text,
                                fp.anchor_only,
                            )
                        if tag == INOUT and fp.byte_lo <= entry.lo and entry.hi <= fp.byte_hi:
                            entry.alive = False
                if tag in (INOUT, OUTPUT_EXISTING):
                    registrations.append((tmap, _Entry(task.name, fp.byte_lo, fp.byte_hi, fp.text())))
            out.extend(found.values())
            for tmap, entry in registrations:
                tmap.register(entry)
    return in_round, cross


def _access_span(task: Task, tensor: str):
    for acc in task.accesses:
        if acc.tensor == tensor:
            return acc.span
    return task.span
