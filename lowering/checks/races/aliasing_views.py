"""R502: two views of one buffer are accessed by unordered tasks and their bytes overlap.

## What it catches

Two names for the same bytes, accessed by two tasks that no edge orders, where the bytes
overlap and at least one access writes. Two sources of such names:

- **a call that binds one tensor twice** (``call c = fold(src = buf, dst = buf)``): the called
  layer reads ``src`` and writes ``dst`` as if they were two buffers. Its accesses carry the
  name they were written with (``c.src``, ``c.dst``); a conflict between two of them is this
  rule's, not R501's;
- **views of one buffer in a graph read from PyPTO** (``reshape``/``view``, recorded in the IR as
  ``Tensor.view_of`` and ``view_offset``), a known trap (pypto-lib "traps" list;
  docs/runtime-semantics.md §21.3 R16).

The language has no view declaration, on purpose: a reshape is written as index arithmetic
on one name (``kv[t * H + h, :]``), which every rule and edge sees as that one buffer, so the
only way a layer written in dslc gives one buffer two names is a call binding it twice.

## Why it breaks on the device

The runtime compares byte ranges on one base address, so it may add a RAW or WAW edge
across views, but it never adds a WAR edge, and strided views are compared conservatively.
A reader through one view and a writer through another therefore run in any order: the
decode KV writeback wrote the cache through one view while the gather still read it through
another, and `x_out` was wrong in 7 % of the runs. Per-name reasoning (a reviewer's, or a
checker's) does not see the alias at all.

A view whose start the PyPTO reader cannot evaluate (an offset that depends on data or on a
loop the reader reads once) is not judged: its bytes are unknown, and the reader's P001 note
at the view says so. When both accesses take their rows from data (a commit at a slot from
`slot_mapping` through one view, a gather of the rows a table names through the other) and
no pair of exactly evaluated executions shares a byte, the finding is a note naming the tables
and the assumption: the data keeps the rows apart (R501 explains why).

## Example

    kv      = buffer [T, D]
    kv_flat = view of kv as [T * D, 1]
    task gather    { out = kv[0:16, :] }
    task writeback { kv_flat[0:512, :] = ... }          # R502: WAR through two views

## Use instead

Access the buffer through one name, or order the tasks explicitly (`writeback` after
`gather`); in PyPTO, `deps=[gather_tid]` on the writeback.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from lowering.checks.access_instances import Hit, distinct_hits, local_tensor, widened_hits
from lowering.checks.races.conflicts import call_alias, conflicts, grouped, instances_text
from lowering.checks.races.data_rows import assumed_text, data_symbols
from lowering.checks.rule import CheckContext, finding
from lowering.checks.translation import shifted
from lowering.edges import base_buffer, task_footprints_cached, view_placed
from lowering.ir import Access, Graph, Task, Tensor
from lowering.regions import Footprint
from lowering.source import Diagnostic

CODE = "R502"
NAME = "aliasing_views"
FAMILY = "races"
SEVERITY = "error"
SUMMARY = "two views of one buffer are accessed by unordered tasks and their bytes overlap"


def _bytes(h: Hit, tensor: Tensor, offset: int) -> tuple[int, int] | None:
    """Bytes of the base buffer a hit spans (None when an extent is known only at run time)."""
    if None in tensor.dims:
        return None
    first = last = 0
    for (lo, hi, _step), extent in zip(h.region, tensor.dims, strict=True):
        first = first * extent + lo
        last = last * extent + hi - 1
    return offset + first * tensor.itemsize, offset + (last + 1) * tensor.itemsize


def _chosen_by_data(task: Task, access: Access, memo: dict[tuple[str, int], bool]) -> bool:
    key = (task.name, access.order)
    if key not in memo:
        memo[key] = bool(data_symbols(access, loops=True))
    return memo[key]


def _spans(graph: Graph, task: Task, access: Access, offset: int, exact: bool) -> list:
    """The sorted byte spans of an access's distinct executions (None for an unknown one),
    kept on the graph: one access meets many others."""
    return _memo_spans(
        graph,
        task,
        access,
        (offset, exact),
        lambda: [h for h in distinct_hits(graph, task, access) if h.exact or not exact],
    )


def _hull_spans(graph: Graph, task: Task, access: Access, offset: int) -> list:
    """One span per block around all its executions (``widened_hits``): a superset of
    :func:`_spans`, cheap to take, to rule pairs out before their executions are listed."""
    return _memo_spans(graph, task, access, (offset, "hull"), lambda: widened_hits(graph, task, access))


def _memo_spans(graph: Graph, task: Task, access: Access, kind: tuple, hits_of) -> list:
    memo = graph.__dict__.setdefault("_view_spans", {})
    key = (task.name, access.order, access.tensor, kind)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _shifted_spans(graph, task, access, kind, hits_of)
    return found


def _shifted_spans(graph: Graph, task: Task, access: Access, kind: tuple, hits_of) -> list:
    """The spans of one access, from those of the same kernel's access at other constant
    offsets when there is one (the tasks of a model's layers): its executions are the same
    moved by the difference, and so are their bytes (row-major, nothing clipped)."""
    offset, tensor = kind[0], graph.tensors[access.tensor]
    moved = shifted(graph, task, [access])
    if moved is None:
        return _sorted([_bytes(h, tensor, offset) for h in hits_of()])
    (shape,), (at,) = moved
    bases = graph.__dict__.setdefault("_view_spans_shifted", {})
    base_key = (task.blocks, tensor.itemsize, kind[1], shape)
    base = bases.get(base_key)
    if base is None:
        base = bases[base_key] = (at, _sorted([_bytes(h, tensor, 0) for h in hits_of()]))
    flat = 0
    for a, b, extent in zip(at, base[0], tensor.dims, strict=True):
        flat = flat * extent + (0 if a is None else a - b)  # a dimension taken whole stays whole
    delta = offset + flat * tensor.itemsize
    return [None if s is None else (s[0] + delta, s[1] + delta) for s in base[1]]


def _sorted(spans: list) -> list:
    if None not in spans:
        spans.sort()
    return spans


def _overlap(
    graph: Graph, t1: Task, a: Access, t2: Task, b: Access, offsets: dict[str, int], exact: bool = False
):
    """The first bytes the two accesses share, ``"unknown"`` when some extent is dynamic and
    they may, None when they do not. ``exact``: only executions evaluated exactly count."""
    if (
        _meet(_hull_spans(graph, t1, a, offsets[a.tensor]), _hull_spans(graph, t2, b, offsets[b.tensor]))
        is None
    ):
        return None  # no block's hull meets another's: no execution can
    return _meet(
        _spans(graph, t1, a, offsets[a.tensor], exact), _spans(graph, t2, b, offsets[b.tensor], exact)
    )


def _meet(ra: list, rb: list):
    """The first bytes two sorted span lists share, ``"unknown"``, or None."""
    if not ra or not rb:
        return None
    if None in ra or None in rb:
        return "unknown"
    i = j = 0
    while i < len(ra) and j < len(rb):
        (alo, ahi), (blo, bhi) = ra[i], rb[j]  # type: ignore[misc]
        if alo < bhi and blo < ahi:
            return (max(alo, blo), min(ahi, bhi))
        if ahi <= bhi:
            i += 1
        else:
            j += 1
    return None


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from _call_aliases(graph, ctx)
    yield from _views(graph, ctx)


def _call_aliases(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    """Conflicts between two names a call binds to one tensor."""
    if not graph.aliases:
        return
    for group in grouped(conflicts(graph, ctx)):
        c = group[0]
        alias = call_alias(graph, c)
        if alias is None:
            continue
        kind = {"war": "WAR", "raw": "RAW", "waw": "WAW"}[c.kind]
        names = " and ".join(f"`{n}`" for n in (c.a.name, c.b.name))
        yield finding(
            CODE,
            SEVERITY,
            c.b.span,
            f"{kind} through two names of buffer `{c.tensor}`: the call on line {alias.span.line} binds it as "
            f"{names}, {c.second.name} {'writes' if c.b.writes else 'reads'} {c.where} and {c.first.name} "
            f"{'writes' if c.a.writes else 'reads'} it, and nothing orders the two tasks; the called layer treats "
            f"them as two tensors, and the runtime never adds a WAR edge{instances_text(group)}",
            fix=f"bind distinct tensors in the call, or add `after {c.first.base}` to task {c.second.base}",
            related=((c.a.span, f"the access of {c.first.name}"), (alias.span, "the call")),
        )


def _views(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    groups: dict[str, dict[str, int]] = {}
    for name, tensor in graph.tensors.items():
        if local_tensor(tensor) and view_placed(graph, name):  # where else it sits is unknown
            base, offset = base_buffer(graph, name)
            groups.setdefault(base, {})[name] = offset
    env = graph.env()
    by_tensor = _footprints_by_tensor(graph, env, {name for offsets in groups.values() for name in offsets})
    by_data: dict[tuple[str, int], bool] = {}
    for base, offsets in groups.items():
        if len(offsets) < 2:
            continue
        for t1, accs1, t2, accs2 in _candidates(graph, by_tensor, offsets):
            if t1.name in ctx.ancestors[t2.name] or t1.excludes(t2):
                continue
            hit = _first(graph, t1, accs1, t2, accs2, offsets)
            if hit is None:
                continue
            a, b, shared = hit
            kind = "WAR" if not a.writes else ("RAW" if not b.writes else "WAW")
            assumed = (
                _chosen_by_data(t1, a, by_data)
                and _chosen_by_data(t2, b, by_data)
                and _overlap(graph, t1, a, t2, b, offsets, exact=True) is None
            )
            if assumed:
                memo = ctx.cache.setdefault("races.data_rows.sources", {})
                where = f"which may share bytes of `{base}`{assumed_text([(t1, a), (t2, b)], memo)}"
            elif isinstance(shared, tuple):
                where = f"which share bytes {shared[0]}:{shared[1]} of `{base}`"
            else:
                where = f"which may share bytes of `{base}` (an extent is known only at run time)"
            yield finding(
                CODE,
                "note" if assumed else SEVERITY,
                b.span,
                f"{kind} through two views of buffer `{base}`: {t2.name} "
                f"{'writes' if b.writes else 'reads'} `{b.tensor}` and {t1.name} "
                f"{'writes' if a.writes else 'reads'} `{a.tensor}`, {where}, and nothing orders the two "
                f"tasks; the runtime never adds a WAR edge and compares strided views only conservatively",
                fix=f"access `{base}` through one name, or add `after {t1.name}` to task {t2.name}",
                related=((a.span, f"the access of {t1.name}"),),
            )


Placed = tuple[int, int, Task, Footprint]  # (submission index, footprint index, task, footprint)


def _footprints_by_tensor(graph: Graph, env, views: set[str]) -> dict[str, list[Placed]]:
    """Every footprint on one of ``views``, per tensor: one pass over the tasks, shared by every
    buffer's sweep."""
    out: dict[str, list[Placed]] = {}
    for order, task in enumerate(graph.tasks):
        for k, fp in enumerate(task_footprints_cached(graph, task, env)):
            if fp.tensor in views and not fp.anchor_only:
                out.setdefault(fp.tensor, []).append((order, k, task, fp))
    return out


def _candidates(graph: Graph, by_tensor: dict[str, list[Placed]], offsets: dict[str, int]):
    """Pairs of tasks (in submission order) whose footprints on two different views of one
    buffer overlap in bytes and one of which writes: a sweep over the byte intervals."""
    placed = sorted((p for tensor in offsets for p in by_tensor.get(tensor, ())), key=lambda p: p[:2])
    spans = []  # (lo, hi, order, task, tensor, writes), in submission and footprint order
    for order, _k, task, fp in placed:
        off = offsets[fp.tensor]
        spans.append((fp.byte_lo + off, fp.byte_hi + off, order, task, fp.tensor, fp.writes))
    spans.sort(key=lambda s: (s[0], s[2]))
    pairs: dict[tuple[int, int], None] = {}
    # The spans open at the current start, in sweep order (dicts keep it as entries expire), all
    # of them and the writers alone: a read only pairs with writers, and many readers of one
    # region (a table every task reads) would otherwise be compared with each other.
    active: dict[int, tuple] = {}
    writers: dict[int, tuple] = {}
    expiry: list[tuple[int, int]] = []  # (stop, index), a heap
    for n, span in enumerate(spans):
        lo, _hi, order, _task, tensor, writes = span
        while expiry and expiry[0][0] <= lo:
            _stop, k = heapq.heappop(expiry)
            del active[k]
            writers.pop(k, None)
        for other in (active if writes else writers).values():
            if other[4] != tensor and other[2] != order:
                pairs[(other[2], order) if other[2] < order else (order, other[2])] = None
        active[n] = span
        if writes:
            writers[n] = span
        heapq.heappush(expiry, (span[1], n))
    for i, j in pairs:
        t1, t2 = graph.tasks[i], graph.tasks[j]
        accs1 = [a for a in t1.accesses if a.tensor in offsets and a.mode != "anchor"]
        accs2 = [a for a in t2.accesses if a.tensor in offsets and a.mode != "anchor"]
        yield t1, accs1, t2, accs2


def _first(graph, t1, accs1, t2, accs2, offsets):
    for a in accs1:
        for b in accs2:
            if a.tensor == b.tensor or not (a.writes or b.writes):
                continue
            if a.mode == "atomic" and b.mode == "atomic":
                continue
            found = _overlap(graph, t1, a, t2, b, offsets)
            if found is not None:
                return a, b, found
    return None
