"""N202: atomic adds into an accumulator that no earlier write seeds.

## What it catches

An atomic add (`t[...] += value atomic`) into an `output` or `scratch` tensor where some
element it adds into is not written first by a plain write that precedes *every* atomic
add on it: a write in a task that is a transitive predecessor of the atomic task, or, in
the atomic task itself, a write earlier in the same block or separated from the add by a
`barrier` (the fused `sync_start` form). This applies to the atomics kept on purpose:
integer counters, and float accumulations whose N201 finding was suppressed with a reason
(docs/runtime-semantics.md §17.4, R4b). `inout` tensors are exempt (the adds accumulate onto the
caller's values by design), and so are windows (the runtime zeroes them; clearing is R9) and
buffers a PyPTO `pl.create_tensor(..., init_value=0)` zeroes when it creates them (the
runtime fills them before any task that uses them; that the fill runs on the AICPU, on the
orchestration path, is a performance matter, not a correctness one, pypto-lib #829).

Only writes whose region is known exactly count as a seed; an atomic whose target depends
on data must be covered over the whole extent it may hit.

**Across rounds.** A seed ordered before this round's adds must also be ordered after the
previous round's: a plain write takes no edge on the previous writer and the runtime adds none
between rounds, so round r + 1's zeroing can land while round r's adds still do. The finding
sits on the seed and names the adds it can overtake; the hint is `after prev(t)` for the last of
them (docs/language.md, "Ordering rounds"), which orders the others too
(`tests/fixtures/rules/N202/bad_rounds.dsl`, `good_rounds.dsl`).

## Why it breaks on the device

An atomic add is a read-modify-write of whatever the buffer holds. Without a seed, the
first round adds onto uninitialised memory and every later round onto the previous total;
with a seed that is not ordered before the adds, some adds land before the zeroing and are
wiped. pypto-lib moved the hc_pre seed from an AICPU `init_value` fill back to an on-core
task precisely so that the atomics' own edge orders it (#823, #829).

## Example

    task count spmd(4) on aiv {
      for t in range(16) { let e = read(idx[block * 16 + t, 0]) % E
                           counts[e : e + 1, :] += full(i32, [1, 1], 1) atomic }   # N202: never zeroed
    }

## Use instead

    task zero on aiv { counts[:, :] = zeros(i32, [E, 1]) }
    task count spmd(4) on aiv { ... }       # the atomic RMW reads `counts`: RAW edge on `zero`

## What dslc verify shows

Tensors start at zero in the simulator, so the histogram nothing zeroes sums correctly, and
the zeroing that runs after the adds wipes them in every schedule alike: ``dslc verify`` proves
``bad.dsl`` deterministic (2 clusters). The finding is about memory a previous user left.
``bad_rounds.dsl`` gives two schedules with different counts at 2 rounds; ``good_rounds.dsl``
(and ``good.dsl``, whose zeroing is `after prev(count)`) verify complete at 3.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: the adds of one round against its seeds, and each seed against the previous round's
adds (what the tensor edges carried over and `after prev(...)` order, `lowering.checks.rounds`).
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.access_instances import Hit, Region, distinct, hits, region_text
from lowering.checks.index import BoxIndex, accesses_of
from lowering.checks.rounds import ordered_before
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Access, Graph, Task
from lowering.source import Diagnostic

CODE = "N202"
NAME = "atomic_without_ordered_seed"
FAMILY = "numerics"
SEVERITY = "error"
SUMMARY = "atomic adds into an accumulator that no write ordered before every add seeds"

_SEEDED_KINDS = ("output", "scratch")


def _subtract(a: Region, b: Region) -> list[Region]:
    """``a`` minus ``b`` as disjoint boxes (strided dimensions: all or nothing)."""
    if any(x[2] != 1 or y[2] != 1 for x, y in zip(a, b, strict=True)):
        covered = all(
            y[0] <= x[0] and x[1] <= y[1] and (y[2] == 1 or (x[2] % y[2] == 0 and (x[0] - y[0]) % y[2] == 0))
            for x, y in zip(a, b, strict=True)
        )
        return [] if covered else [a]
    if any(min(x[1], y[1]) <= max(x[0], y[0]) for x, y in zip(a, b, strict=True)):
        return [a]
    out: list[Region] = []
    rest = list(a)
    for d, ((alo, ahi, _), (blo, bhi, _)) in enumerate(zip(a, b, strict=True)):
        if alo < blo:
            out.append(tuple(rest[:d]) + ((alo, blo, 1),) + tuple(rest[d + 1 :]))
        if bhi < ahi:
            out.append(tuple(rest[:d]) + ((bhi, ahi, 1),) + tuple(rest[d + 1 :]))
        rest[d] = (max(alo, blo), min(ahi, bhi), 1)
    return out


def _uncovered(region: Region, seeds: list[Region]) -> list[Region]:
    remaining = [region]
    for s in seeds:
        nxt: list[Region] = []
        for r in remaining:
            nxt.extend(_subtract(r, s))
        remaining = nxt
        if not remaining:
            break
    return remaining


def _block(h: Hit) -> tuple[int, int]:
    return (h.block, h.phase)


def _orders_before(ctx: CheckContext, task: Task, atomic: Access, h: Hit, seed_task: Task, s: Hit) -> bool:
    if seed_task.name != task.name:
        return ctx.reach.before(seed_task.name, task.name)
    if s.phase < h.phase:
        return True
    return s.block == h.block and s.access.order < atomic.order and task.blocks == 1


def _seeds(graph: Graph, tensor: str, cache: dict) -> tuple[list, list, BoxIndex]:
    """The plain writes of ``tensor``, their certain hits and an overlap index of those hits."""
    if tensor not in cache:
        writes = [(t, w) for t, w in accesses_of(graph, tensor) if w.mode == "write"]
        seed_hits = [
            (t, s)
            for t, w in writes
            for s in distinct(hits(graph, t, w), key=_block)
            if s.exact and not s.maybe
        ]
        cache[tensor] = (writes, seed_hits, BoxIndex([s.region for _t, s in seed_hits]))
    return cache[tensor]


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    cache: dict = {}
    for task in graph.tasks:
        for a in task.accesses:
            tensor = graph.tensors[a.tensor]
            if a.mode != "atomic" or a.peer is not None or tensor.kind not in _SEEDED_KINDS:
                continue
            if tensor.init_value == 0:
                continue  # zeroed when it is created, before any task that uses it (init_value=0)
            writes, seed_hits, index = _seeds(graph, a.tensor, cache)
            for h in distinct(hits(graph, task, a), key=_block):
                # a seed whose box misses h's cannot cover any of it: only the ones that meet count
                near = [seed_hits[i] for i in index.query(h.region)]
                ordered = [s.region for t, s in near if _orders_before(ctx, task, a, h, t, s)]
                missing = _uncovered(h.region, ordered)
                if missing:
                    yield _finding(graph, ctx, task, a, h, missing[0], writes)
                    break
    yield from _next_round_seeds(graph, ctx, cache)


def _next_round_seeds(graph: Graph, ctx: CheckContext, cache: dict) -> Iterator[Diagnostic]:
    """A seed of round r + 1 that nothing orders after round r's adds into what it zeroes
    (a pure write takes no edge on the previous writer; the runtime adds none between rounds)."""
    reported: set = set()
    for tensor, (_writes, seed_hits, _index) in cache.items():
        adders = [(t, a) for t, a in accesses_of(graph, tensor) if a.mode == "atomic" and a.peer is None]
        # every add's executions, indexed by box: a seed meets the few that touch what it zeroes
        adds = [
            (i, h) for i, (task, a) in enumerate(adders) for h in distinct(hits(graph, task, a), key=_block)
        ]
        boxes = BoxIndex([h.region for _i, h in adds])
        for seed_task, s in seed_hits:
            if s.access.span in reported:
                continue
            earlier = ordered_before(graph, ctx, seed_task.name)
            meeting = sorted({adds[k][0] for k in boxes.query(s.region)})  # in the adders' order
            late = [
                task
                for task, _a in (adders[i] for i in meeting)
                if earlier.first_gap(task.name) == 1  # round r's adds may still land
                and (task.name == seed_task.name or ctx.reach.before(seed_task.name, task.name))
            ]
            if late:
                reported.add(s.access.span)
                yield _round_finding(ctx, seed_task, s, list({t.name: t for t in late}.values()))


def _round_finding(ctx: CheckContext, seed_task: Task, s: Hit, late: list[Task]) -> Diagnostic:
    where = s.access.tensor + region_text(s.region)
    adders = " and ".join(t.name for t in late)
    # ordering the seed after the last adders orders it after the others too
    last = [t.name for t in late if not any(t.name in ctx.ancestors[o.name] for o in late if o is not t)]
    return finding(
        CODE,
        SEVERITY,
        s.access.span,
        f"{seed_task.name} seeds {where} for the adds of {adders}, but nothing orders it after "
        f"those of the previous round: round r + 1's seed can land while round r's adds still do (a "
        f"plain write takes no edge on the previous writer, and the runtime adds none between "
        f"rounds), so round r loses the sums it wiped or round r + 1 keeps round r's late adds",
        fix=f"add `after {', '.join(f'prev({n})' for n in last)}` to task {seed_task.name}",
        data=(("task", seed_task.name), ("add_after", f"prev({last[0]})")) if len(last) == 1 else (),
    )


def _finding(
    graph: Graph, ctx: CheckContext, task: Task, a: Access, h: Hit, hole: Region, writes
) -> Diagnostic:
    where = a.tensor + region_text(hole)
    others = [t for t, _w in writes if t.name != task.name]
    after = [t for t in others if task.name in ctx.ancestors[t.name]]
    unordered = [t for t in others if t.name not in ctx.ancestors[task.name] and t not in after]
    same = [w for t, w in writes if t.name == task.name]
    if unordered:
        seed = unordered[0].name
        why = f"{seed} writes it but is not ordered before {task.name}"
        fix = f"add `after {seed}` to task {task.name}"
    elif after:
        seed = after[0].name
        why = f"the only other write is {seed}, which runs after {task.name} and wipes the sums"
        fix = f"submit {seed} before {task.name} (the atomic read-modify-write then takes a RAW edge on it)"
    elif same:
        why = f"{task.name} writes it itself, but other blocks of the grid can add before that write lands"
        fix = f"zero it in a task that {task.name} follows, or put a `barrier` (with sync_start) between the two"
    else:
        why = "nothing in the layer writes it before the adds"
        fix = f"add a task that writes zeros to `{a.tensor}` before {task.name} (e.g. `{a.tensor}[...] = zeros(...)`)"
    return finding(
        CODE,
        SEVERITY,
        a.span,
        f"{task.name} adds atomically into {where} but no write seeds it before every add: {why}; "
        f"an atomic add is a read-modify-write of whatever the buffer holds (garbage, or the previous "
        f"round's total)",
        fix=fix,
    )
