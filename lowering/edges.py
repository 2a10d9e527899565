"""Edge inference exactly as the task runtime does it (docs/runtime-semantics.md §3).

Per task, in submission order:

1. explicit deps (``after``);
2. creator retention: a task that uses a buffer another task allocates
   (``Tensor.created_by``: only graphs read from PyPTO have them, a tile that outlives its
   scope) waits for that task; the allocating task's own argument is ``OUTPUT`` (no lookup,
   no registration);
3. lookup, for ``INPUT`` and ``INOUT`` arguments of tensors that are not ``manual_dep``:
   a wait edge on every registered producer whose byte range overlaps (RAW, or WAW when
   the task only writes); an ``INOUT`` that covers an entry removes it;
4. registration of ``INOUT`` and ``OUTPUT_EXISTING`` arguments as the new producers.

Inside a ``manual`` task only step 1 applies. A pure reader leaves no trace, so no WAR
edge ever exists. A write-only argument is ``OUTPUT_EXISTING`` (no lookup) unless the
compiler promotes it to ``INOUT``: under a sequential layer loop (R-seq), after an earlier
task wrote the same tensor (R-prior), or when the tensor is an ``inout`` of the layer
(R-enclosing). A graph read from PyPTO may declare directions per task (``Task.arg_tags``:
a kernel's ``pl.Out``/``pl.InOut`` annotations, ``pl.no_dep``); those replace the ones the
accesses imply, an ``Out`` is still promoted by the same three rules, and a ``NoDep``
argument neither looks up nor registers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lowering.ir import Edge, Graph, Task
from lowering.regions import Footprint, task_env, task_footprints

INPUT, INOUT, OUTPUT_EXISTING, OUTPUT, NO_DEP = "INPUT", "INOUT", "OUTPUT_EXISTING", "OUTPUT", "NO_DEP"


@dataclass(eq=False, slots=True)
class _Entry:
    task: str
    lo: int
    hi: int  # exclusive
    footprint: Footprint
    seq: int  # submission order
    keys: tuple[int, int, int] = field(default=(0, 0, -1))  # (level, first bucket, last bucket)


class _TensorMap:
    """The producers of one tensor, indexed by byte range in a multi-level grid.

    An entry of ``n`` bytes lives at level ``l = bit_length(n - 1)``, whose buckets are
    ``2**l`` bytes wide, so it touches at most two of them. A lookup visits, at every
    occupied level, the buckets its own range touches (or, when that is more, the occupied
    buckets of that level). Lookup and registration cost O(levels + matches), however many
    entries the map holds, which keeps edge inference linear in the number of tasks.
    """

    def __init__(self) -> None:
        self.levels: dict[int, dict[int, dict[int, _Entry]]] = {}

    def register(self, entry: _Entry) -> None:
        level = (entry.hi - entry.lo - 1).bit_length()
        first, last = entry.lo >> level, (entry.hi - 1) >> level
        entry.keys = (level, first, last)
        grid = self.levels.setdefault(level, {})
        for key in range(first, last + 1):
            grid.setdefault(key, {})[entry.seq] = entry

    def remove(self, entry: _Entry) -> None:
        level, first, last = entry.keys
        grid = self.levels[level]
        for key in range(first, last + 1):
            bucket = grid[key]
            del bucket[entry.seq]
            if not bucket:
                del grid[key]
        if not grid:
            del self.levels[level]

    def overlapping(self, lo: int, hi: int) -> list[_Entry]:
        """Live entries whose byte range intersects ``[lo, hi)``, in submission order."""
        seen: dict[int, _Entry] = {}
        for level, grid in self.levels.items():
            first, last = lo >> level, (hi - 1) >> level
            if last - first < len(grid):
                keys = range(first, last + 1)
            else:
                keys = [k for k in grid if first <= k <= last]
            for key in keys:
                bucket = grid.get(key)
                if bucket is None:
                    continue
                for e in bucket.values():
                    if e.lo < hi and lo < e.hi:
                        seen[e.seq] = e
        if len(seen) < 2:
            return list(seen.values())
        return [seen[k] for k in sorted(seen)]


def argument_tags(graph: Graph) -> dict[str, dict[str, str]]:
    """The runtime direction of every (task, tensor) argument, after Out->InOut promotion.

    R-prior looks at earlier *statements*: the instances of one task statement in a layer
    ``parallel`` loop are one call site, so they do not promote each other (disjointness is
    assumed, as in ``pl.parallel``); in a ``range`` loop R-seq promotes them anyway.
    """
    env = graph.env()
    writers: dict[str, set[str]] = {}  # buffer -> bases of the task statements that wrote it
    tags: dict[str, dict[str, str]] = {}
    for task in graph.tasks:
        fps = _footprints(graph, task, env)
        tags[task.name] = {fp.tensor: _tag(graph, task, fp, writers) for fp in fps}
        for fp in fps:
            if fp.writes:
                writers.setdefault(base_buffer(graph, fp.tensor)[0], set()).add(task.base)
    return tags


def base_buffer(graph: Graph, name: str) -> tuple[str, int]:
    """The buffer a tensor's bytes belong to, and the byte offset of its element 0 there.

    A PyPTO ``reshape``/view names bytes of another tensor (``Tensor.view_of``); the runtime's
    tensor map keys every argument by its base address, so accesses through different views of
    one buffer meet there (docs/runtime-semantics.md §3). A layer written in dslc has no views.
    """
    tensor = graph.tensors[name]
    if tensor.view_of is None:
        return name, 0
    offset, seen = 0, set()
    while tensor.view_of is not None and tensor.name not in seen and tensor.view_of in graph.tensors:
        seen.add(tensor.name)
        offset += tensor.view_offset
        tensor = graph.tensors[tensor.view_of]
    return tensor.name, offset


def view_placed(graph: Graph, name: str) -> bool:
    """Whether every view from ``name`` down to its base buffer has a known offset."""
    tensor, seen = graph.tensors[name], set()
    while tensor.view_of is not None and tensor.name not in seen and tensor.view_of in graph.tensors:
        if not tensor.view_placed:
            return False
        seen.add(tensor.name)
        tensor = graph.tensors[tensor.view_of]
    return tensor.view_placed


def _tag(graph: Graph, task: Task, fp: Footprint, writers: dict[str, set[str]]) -> str:
    if graph.tensors[fp.tensor].created_by == task.name:
        return OUTPUT  # the runtime allocates it for this task
    declared = task.arg_tags.get(fp.tensor) if task.arg_tags else None  # PyPTO kernel calls
    if declared == "nodep":
        return NO_DEP
    if declared in ("in", "inout"):
        return INPUT if declared == "in" else INOUT
    if fp.reads and declared is None:
        return INOUT if fp.writes else INPUT
    earlier = writers.get(base_buffer(graph, fp.tensor)[0], ())
    prior = any(base != task.base for base in earlier)
    promoted = task.in_sequential_loop or prior or graph.tensors[fp.tensor].kind == "inout"
    return INOUT if promoted else OUTPUT_EXISTING


def task_footprints_cached(graph: Graph, task: Task, env: dict[str, int]) -> list[Footprint]:
    """The footprints edge inference computed for ``task`` (one per tensor, at this point)."""
    return _footprints(graph, task, env)


def _footprints(graph: Graph, task: Task, env: dict[str, int]) -> list[Footprint]:
    cache = graph.__dict__.setdefault("_footprints", {})
    fps = cache.get(task.name)
    if fps is None:
        envs = graph.__dict__.setdefault("_task_envs", {})  # per grid size; read-only
        scoped = envs.get(task.blocks)
        if scoped is None:
            scoped = envs[task.blocks] = task_env(env, task.blocks, graph.nranks, graph.scalar_ranges())
        fps = task_footprints(task.accesses, graph.tensors, scoped)
        cache[task.name] = fps
    return fps


def infer_edges(graph: Graph) -> tuple[list[Edge], list[Edge]]:
    """Edges within one round, and edges from a round to the previous one.

    The second list comes from replaying the submissions twice with one tensor map, as
    the runtime does when a layer runs back to back: an entry that survives round r is
    a producer for the readers of round r + 1 that come before any new writer. Only
    edges onto such survivors are cross-round; the second replay's edges onto its own
    producers repeat the first list and are not reported again.

    For one consumer, edges are listed tensor by tensor (in the order the body first
    touches them) and, per tensor, in the producers' submission order.
    """
    env = graph.env()
    maps: dict[str, _TensorMap] = {}
    tags = argument_tags(graph)
    tensors = graph.tensors
    bases: dict[str, tuple[str, int]] = {}  # tensor -> (buffer, offset), as base_buffer gives it

    in_round: list[Edge] = []
    cross: list[Edge] = []
    seq = 0
    for round_index in range(2):
        out = in_round if round_index == 0 else cross
        for task in graph.tasks:
            if round_index == 0:
                for dep in task.after:
                    out.append(Edge(dep.target, task.name, "host" if dep.host else "explicit", dep.span))
            if task.manual:
                continue
            fps = _footprints(graph, task, env)
            found: dict[tuple[str, str], Edge] = {}
            registrations = []
            task_tags = tags[task.name]
            consumer = task.name
            for fp in fps:
                name = fp.tensor
                tensor = tensors[name]
                if tensor.manual_dep:
                    continue
                tag = task_tags[name]
                if tag == NO_DEP or tag == OUTPUT:
                    continue
                where = bases.get(name)
                if where is None:
                    where = bases[name] = base_buffer(graph, name)
                buffer, offset = where
                # Creator retention is on the buffer's owner: a view (a reshape of a task's
                # runtime-allocated output) waits for the task that allocated its bytes.
                creator = tensor.created_by if tensor.created_by is not None else tensors[buffer].created_by
                if (
                    creator is not None
                    and creator != consumer
                    and round_index == 0
                    and (creator, name) not in found
                ):
                    found[(creator, name)] = Edge(
                        creator, consumer, "creator", _access_span(task, name), name, "", False
                    )
                lo, hi = fp.byte_lo + offset, fp.byte_hi + offset
                tmap = maps.get(buffer)
                if tmap is None:
                    tmap = maps[buffer] = _TensorMap()
                if tag == INPUT or tag == INOUT:
                    producers = tmap.overlapping(lo, hi)
                    if producers:
                        kind = "raw" if fp.reads else "waw"
                        span = _access_span(task, name)
                        anchor = fp.anchor_only
                        covering = tag == INOUT
                        for entry in producers:
                            key = (entry.task, name)
                            if key not in found:
                                written = entry.footprint
                                region = (
                                    written.text()
                                    if written.tensor == name
                                    else f" (written as {written.tensor}{written.text()})"
                                )
                                found[key] = Edge(entry.task, consumer, kind, span, name, region, anchor)
                            if covering and lo <= entry.lo and entry.hi <= hi:
                                tmap.remove(entry)
                if (tag == INOUT or tag == OUTPUT_EXISTING) and round_index == 0:
                    # A second-round producer could only be found by second-round readers,
                    # whose edges repeat the first round's: it is never registered, so the
                    # map holds first-round producers only.
                    seq += 1
                    registrations.append((tmap, _Entry(consumer, lo, hi, fp, seq)))
            out.extend(found.values())
            for tmap, entry in registrations:
                tmap.register(entry)
    return in_round, cross


def _access_span(task: Task, tensor: str):
    for acc in task.accesses:
        if acc.tensor == tensor:
            return acc.span
    return task.span
