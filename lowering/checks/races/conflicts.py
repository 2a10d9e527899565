"""Unordered conflicting accesses between tasks, classified by why no edge orders them.

Shared by R501 (``unordered_conflicting_access``) and R503 (``out_must_be_inout``): each
unordered pair is found once here and reported by exactly one of them.

Two tasks conflict on a tensor when an execution of one shares an element with an
execution of the other and at least one of them writes (an atomic add is a write; anchor
reads carry no data and are ignored). They are ordered when one is a transitive
predecessor of the other through explicit ``after`` edges and the edges the runtime infers
(``graph.edges``). Windows and signal cells are left out: peers write them and a local read
is ordered by the wait/notify handshake, which the protocol rules check. Pairs of atomic
adds are left to the numerics rules (integer atomics commute; float atomics are N201), and
a plain write submitted before an atomic add on an ``output``/``scratch`` accumulator is the
zero-seed question of N202.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from lowering.checks.access_instances import (
    aligned,
    distinct_hits,
    first_overlap,
    hulls_meet,
    intersection_text,
    local_tensor,
)
from lowering.checks.index import accesses_of
from lowering.checks.races.data_rows import assumed_text, data_symbols
from lowering.checks.rule import CheckContext
from lowering.edges import OUTPUT_EXISTING, argument_tags
from lowering.ir import Access, Alias, Graph, Task
from lowering.symbolic import EvalError, bounds

#: Candidate pairs of tasks examined in one graph (the 50k-task lint benchmark needs ~43,000),
#: and later tasks searched for the reader of a WAW conflict: the analysis stays bounded when
#: thousands of tasks touch one region. Past the budget it stops and says so (``truncated``),
#: never silently.
MAX_PAIRS = 100_000
MAX_READER_SEARCH = 2_000

# Why no edge orders the pair.
WAR = "war"  # reader then writer: the runtime never adds WAR edges
MANUAL_DEP = "manual_dep"  # the tensor is manual_dep: no inferred edges at all
MANUAL_CONSUMER = "manual_consumer"  # the later task is `manual`: only `after` edges
MANUAL_PRODUCER = "manual_producer"  # the earlier task is `manual`: its write never registered
OUT = "out"  # the later write is a pure Out (OUTPUT_EXISTING): no WAW lookup
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Conflict:
    tensor: str
    first: Task  # submitted first
    second: Task
    a: Access  # the access of `first`
    b: Access  # the access of `second`
    kind: str  # war | raw | waw
    cause: str
    where: str  # elements both touch (one instance)
    reader: Task | None = None  # waw: a later task that reads the contested elements back
    # No pair of exact executions meets: the overlap needs a region the analysis widened to the
    # extent (an index or a loop bound that depends on data) or an access under a data condition.
    possible: bool = False
    # Possible only, and both regions are chosen by data (races.data_rows): assumed apart.
    assumed: bool = False


def call_alias(graph: Graph, c: Conflict) -> Alias | None:
    """The call that binds ``c.tensor`` under the two names the conflicting accesses use (R502
    reports those, not R501 or R503)."""
    if not c.a.name or not c.b.name or c.a.name == c.b.name:
        return None
    for alias in graph.aliases:
        if alias.tensor == c.tensor and c.a.name in alias.names and c.b.name in alias.names:
            return alias
    return None


def conflicts(graph: Graph, ctx: CheckContext) -> list[Conflict]:
    cached = ctx.cache.get("races.conflicts")
    if cached is None:
        cached = ctx.cache["races.conflicts"] = list(_find(graph, ctx))
    return cached


def truncated(graph: Graph, ctx: CheckContext) -> list[tuple[str, int]]:
    """(tensor, budget) where the pairs of tasks ran past the budget (only some were examined)."""
    conflicts(graph, ctx)
    return ctx.cache.get("races.truncated", [])


def _find(graph: Graph, ctx: CheckContext):
    tags = argument_tags(graph)
    anc = ctx.ancestors
    stopped = ctx.cache.setdefault("races.truncated", [])
    budget = MAX_PAIRS
    for name, tensor in graph.tensors.items():
        if not local_tensor(tensor):
            continue
        users = users_of(graph, name)
        pairs, complete = _candidates(graph, users, budget)
        budget -= len(pairs)
        if not complete:
            stopped.append((name, MAX_PAIRS))
        readers: dict[tuple[int, int], Task | None] = {}
        for i, j in pairs:
            (t1, accs1), (t2, accs2) = users[i], users[j]
            if t1.name in anc[t2.name] or t1.excludes(t2):
                continue
            found = _pair(graph, tensor.kind, t1, accs1, t2, accs2)
            if found is None:
                continue
            a, b, where, possible = found
            kind = "war" if not a.writes else ("raw" if not b.writes else "waw")
            cause = _cause(kind, tensor.manual_dep, t1, t2, tags[t2.name].get(name))
            reader = _reader(graph, users, j, b, readers) if kind == "waw" else None
            assumed = possible and bool(data_symbols(a, loops=True)) and bool(data_symbols(b, loops=True))
            yield Conflict(name, t1, t2, a, b, kind, cause, where, reader, possible, assumed)


def users_of(graph: Graph, tensor: str) -> list[tuple[Task, list[Access]]]:
    """The tasks that access ``tensor`` (anchors aside), with those accesses, in submission order."""
    users: list[tuple[Task, list[Access]]] = []
    for task, a in accesses_of(graph, tensor):
        if a.mode == "anchor":
            continue
        if users and users[-1][0] is task:
            users[-1][1].append(a)
        else:
            users.append((task, [a]))
    return users


def _candidates(
    graph: Graph, users: list[tuple[Task, list[Access]]], budget: int = MAX_PAIRS
) -> tuple[list[tuple[int, int]], bool]:
    """Pairs of users (i < j) whose footprints' bounding boxes meet and one of which writes,
    and whether that is all of them (False: the sweep stopped after ``budget`` pairs).

    A sweep over the boxes' first dimension, so that many tasks touching disjoint slices
    of one tensor (task arrays of experts, tiles) cost n log n, not n squared; a read is only
    compared with the writes open at its start, so many readers of one region (a weight
    every task reads) cost no more than its writers do.
    """
    if not any(a.writes for _task, accs in users for a in accs):
        return [], True
    if budget <= 0:
        return [], False
    boxes = []
    for i, (task, accs) in enumerate(users):
        for a in accs:
            box = _hull(graph, task, a)
            if box is not None:
                boxes.append((box, i, a.writes))
    boxes.sort(key=lambda x: x[0][0][0])
    out: set[tuple[int, int]] = set()
    # open boxes per kind (reads, writes): id -> (box, user); a heap of (stop, id) expires them
    active: tuple[dict[int, tuple], dict[int, tuple]] = ({}, {})
    expiry: list[tuple[int, int, bool]] = []
    for n, (box, i, writes) in enumerate(boxes):
        start = box[0][0]
        while expiry and expiry[0][0] <= start:
            _stop, k, w = heapq.heappop(expiry)
            del active[w][k]
        for side in (0, 1) if writes else (1,):
            for other, j in active[side].values():
                if j == i:
                    continue
                for x, y in zip(box, other, strict=True):  # hulls_meet, inlined: the hot loop of R501
                    if x[0] >= y[1] or y[0] >= x[1]:
                        break
                else:
                    out.add((i, j) if i < j else (j, i))
            if len(out) >= budget:
                return sorted(out)[:budget], False
        active[writes][n] = (box, i)
        heapq.heappush(expiry, (box[0][1], n, writes))
    return sorted(out), True


def _pair(graph: Graph, kind: str, t1: Task, accs1: list[Access], t2: Task, accs2: list[Access]):
    for a in accs1:
        for b in accs2:
            if not (a.writes or b.writes) or (a.mode == "atomic" and b.mode == "atomic"):
                continue
            if a.mode == "write" and b.mode == "atomic" and kind in ("output", "scratch"):
                continue  # the zero seed of an accumulator: N202
            if not hulls_meet(_hull(graph, t1, a), _hull(graph, t2, b)):
                continue
            ha, hb = aligned(graph, distinct_hits(graph, t1, a), distinct_hits(graph, t2, b))
            pair = first_overlap(ha, hb, accept=_shown)
            possible = pair is None
            if possible:
                pair = first_overlap(ha, hb)
            if pair is not None:
                where = graph.tensors[a.tensor].name + intersection_text(pair[0].region, pair[1].region)
                return a, b, where, possible
    return None


def _shown(x, y) -> bool:
    """Whether executions ``x`` and ``y`` (which meet) certainly overlap: both exact, or one
    exact and containing the whole hull the other was widened to (every element the widened
    one can touch is the exact one's)."""
    if x.maybe or y.maybe:
        return False
    if x.exact and y.exact:
        return True
    if x.exact == y.exact:
        return False
    exact, widened = (x, y) if x.exact else (y, x)
    return all(
        e_step == 1 and e_lo <= w_lo and w_hi <= e_hi
        for (e_lo, e_hi, e_step), (w_lo, w_hi, _) in zip(exact.region, widened.region, strict=True)
    )


def certainty(group: list[Conflict], severity: str, memo: dict | None = None) -> tuple[str, str]:
    """The severity of a finding on ``group`` (one site) and what its message adds: nothing for a
    shown overlap; "possible, not shown" when some region was widened; a note naming the
    assumption when every instance rests on regions both chosen by data."""
    if all(c.assumed for c in group):
        return "note", assumed_text([(c.first, c.a) for c in group] + [(c.second, c.b) for c in group], memo)
    if not all(c.possible for c in group):
        return severity, ""
    return severity, (
        " (possible, not shown: a region here depends on data or on a loop bound the analysis cannot "
        "evaluate and is taken over its whole extent; if the indices keep the accesses apart, suppress "
        "this with the reason)"
    )


def _hull(graph: Graph, task: Task, access: Access):
    """A box that contains every element the access touches (None: it never runs).

    Only a filter (pairs whose boxes miss each other cannot conflict; the others are compared
    execution by execution), so it is bounded over the intervals of block, rank, loop indices
    and runtime scalars instead of enumerating the executions, and ignores conditions.
    """
    cache = graph.__dict__.setdefault("_access_boxes", {})
    key = (task.name, access.order)
    if key not in cache:
        cache[key] = _box(graph, task, access)
    return cache[key]


def _box(graph: Graph, task: Task, access: Access) -> tuple[tuple[int, int], ...] | None:
    if task.blocks < 1:
        return None
    cache = graph.__dict__.setdefault("_access_boxes", {})
    base = cache.get(None)  # the environment shared by every access
    if base is None:
        nranks = max(graph.nranks, 1)
        base = cache[None] = {**graph.env(), "rank": (0, nranks - 1), "nranks": graph.nranks}
        base.update(graph.scalar_ranges())
    env: dict = {**base, "block": (0, task.blocks - 1)}
    for loop in access.loops:
        try:
            lo, _ = bounds(loop.start, env)
            _, hi = bounds(loop.stop, env)
        except EvalError:
            env.pop(loop.var, None)  # unknown trip count: the index stays unknown
            continue
        if hi - 1 < lo:
            return None  # the loop never runs
        env[loop.var] = (lo, hi - 1)
    box = []
    for rng, extent in zip(access.region, graph.tensors[access.tensor].dims, strict=True):
        top = extent if extent is not None else 1 << 40
        try:
            lo, _ = bounds(rng.start, env)
            _, hi = bounds(rng.stop, env)
        except EvalError:
            lo, hi = 0, top
        lo, hi = max(lo, 0), min(hi, top)
        if hi <= lo:
            return None
        box.append((lo, hi))
    return tuple(box)


def _cause(kind: str, manual_dep: bool, t1: Task, t2: Task, tag: str | None) -> str:
    if kind == "war":
        return WAR
    if manual_dep:
        return MANUAL_DEP
    if t2.manual:
        return MANUAL_CONSUMER
    if t1.manual:
        return MANUAL_PRODUCER
    if kind == "waw" and tag == OUTPUT_EXISTING:
        return OUT
    return UNKNOWN


def _reader(
    graph: Graph,
    users: list[tuple[Task, list[Access]]],
    j: int,
    b: Access,
    memo: dict[tuple[int, int], Task | None],
) -> Task | None:
    """The first task after ``users[j]`` (at most MAX_READER_SEARCH of them) that reads back
    elements its access ``b`` writes (one answer per writer access: many earlier writers
    conflict with the same one)."""
    key = (j, b.order)
    if key in memo:
        return memo[key]
    t2 = users[j][0]
    hb = distinct_hits(graph, t2, b)
    box = _hull(graph, t2, b)
    found = None
    for t3, accs in users[j + 1 : j + 1 + MAX_READER_SEARCH]:
        for c in accs:
            if c.mode == "read" and hulls_meet(box, _hull(graph, t3, c)):
                x, y = aligned(graph, hb, distinct_hits(graph, t3, c))
                if first_overlap(x, y) is not None:
                    found = t3
                    break
        if found is not None:
            break
    memo[key] = found
    return found


def after_fix(first: Task, second: Task, same_index: bool) -> str:
    """The `after` edge that orders the pair, in source terms."""
    if same_index and first.index is not None and second.index is not None:
        return (
            f"add `after {first.base}[i]` to task {second.base}[i] (the same layer-loop index; "
            f"e.g. {second.name} after {first.name})"
        )
    return f"add `after {first.name}` to task {second.name}"


def grouped(items: list[Conflict]) -> list[list[Conflict]]:
    """Conflicts of the same two statements (instances of task arrays) together."""
    groups: dict[tuple, list[Conflict]] = {}
    for c in items:
        groups.setdefault((c.a.span, c.b.span, c.kind, c.cause), []).append(c)
    return list(groups.values())


def same_index(group: list[Conflict]) -> bool:
    """Do the pairs include instances of one layer-loop iteration (``gather[2]``, ``wb[2]``)?"""
    return any(c.first.index is not None and c.first.index == c.second.index for c in group)


def instances_text(group: list[Conflict]) -> str:
    if len(group) == 1:
        return ""
    return f" ({len(group)} pairs of task instances, e.g. {group[0].first.name} / {group[0].second.name})"
