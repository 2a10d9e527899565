"""N201: floating-point atomic adds whose order is the tasks' completion order.

## What it catches

`t[...] += value atomic` (and `remote_store t[...] @ peer += value`) on an `f32`, `f16` or
`bf16` tensor, when two executions that no edge orders add into the same elements. An
execution is one (rank, task, block, loop iteration). Two of them are ordered when they
are the same block of the same task (program order), when a `barrier` separates them, or
when one task is a transitive predecessor of the other. Integer atomics are exempt (exact
and associative), and so are signal counters (docs/runtime-semantics.md §17.4, R4).

Executions whose target depends on data (a scatter through `read(...)`) are taken to hit
the whole extent of that dimension, and the message says "up to".

**Two adds onto an exact zero are a note, not an error.** When exactly two unordered adds
are the first to land in some elements, onto an exact zero (a `zeros(...)` or `full(..., 0)`
store ordered before both, or a PyPTO `init_value=0` buffer) that no other write can replace
in between, and every other add into them is ordered after both, the result is the same bit
for bit in either order: (0 + a) + b and (0 + b) + a both round a + b once. The note says
why it is safe today and what makes it unsafe: a third unordered writer, an add ordered
between the seed and the two, or a seed that is not exactly zero
(`tests/fixtures/rules/N201/note_two_adds.dsl`, `bad_three_adds.dsl`).

## Why it breaks on the device

A hardware atomic add applies the adds in the order the blocks finish: ((0 + p_a) + p_b)
+ ... Floating-point addition is not associative, so the last bits depend on which AIC got
which split and in which wave. Repeated runs of the same input differ bitwise; through
rsqrt, sigmoid and Sinkhorn the difference reaches the logits, a greedy argmax can flip
and autoregressive decode compounds it (hc_pre split-K, pypto-lib #951, #953, #982). No
single run fails its tolerance, so tests do not see it.

## Example

    task hc_pre_linear spmd(T / 16 * LINEAR_OK) on aic {
      ...
      mixes_raw[t0 : t0 + 16, :] += acc atomic          # N201: LINEAR_OK splits per row-block
    }

## Use instead

    task hc_pre_linear spmd(T / 16 * LINEAR_OK) on aic {
      ...
      mixes_partials[s * T + t0 : s * T + t0 + 16, :] = acc     # disjoint per-split partials
    }
    task hc_pre_linear_reduce spmd(T / 16) on aiv after hc_pre_linear {
      let total = mixes_partials[t0 : t0 + 16, :]
      for s in range(1, LINEAR_OK) { total = total + mixes_partials[s * T + t0 : s * T + t0 + 16, :] }
      mixes_raw[t0 : t0 + 16, :] = total                        # ascending split order, every run
    }

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round: adds of two rounds are ordered by the tensor map (an atomic add is a
read-modify-write).
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.access_instances import (
    Hit,
    distinct,
    hits,
    hits_ordered,
    intersection_text,
    overlapping_pairs,
    regions_meet,
)
from lowering.checks.bodies import zero_stores
from lowering.checks.index import accesses_of
from lowering.checks.rule import CheckContext, finding
from lowering.ir import FLOAT_DTYPES, Access, Graph, Task
from lowering.source import Diagnostic

CODE = "N201"
NAME = "float_atomic_accumulation"
FAMILY = "numerics"
SEVERITY = "error"
SUMMARY = "floating-point atomic adds into the same elements from executions no edge orders"


def _atomics(graph: Graph) -> list[tuple[Task, Access]]:
    out = []
    for task in graph.tasks:
        for a in task.accesses:
            tensor = graph.tensors[a.tensor]
            if a.mode == "atomic" and tensor.kind != "signal" and tensor.dtype in FLOAT_DTYPES:
                out.append((task, a))
    return out


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    by_tensor: dict[str, list[tuple[Task, Access]]] = {}
    for task, a in _atomics(graph):
        by_tensor.setdefault(a.tensor, []).append((task, a))
    for sites in by_tensor.values():
        all_hits: list[Hit] = []
        for task, a in sites:
            all_hits.extend(distinct(hits(graph, task, a), key=_writer))
        partners: dict[int, set[int]] = {}
        index = {id(h): i for i, h in enumerate(all_hits)}
        for x, y in overlapping_pairs(all_hits, accept=lambda p, q: not hits_ordered(ctx.ancestors, p, q)):
            i, j = index[id(x)], index[id(y)]
            partners.setdefault(i, set()).add(j)
            partners.setdefault(j, set()).add(i)
        for task, a in sites:
            mine = [index[id(h)] for h in all_hits if h.access is a and h.task == task.name]
            worst = max(mine, key=lambda i: len(partners.get(i, ())), default=None)
            if worst is None or not partners.get(worst):
                continue
            others = [all_hits[j] for j in sorted(partners[worst])]
            pairs = [(all_hits[i], all_hits[j]) for i in mine for j in partners.get(i, ())]
            safe = all(len(partners[i]) == 1 for i in mine if i in partners) and all(
                len(partners[j]) == 1 for i in mine for j in partners.get(i, ())
            )
            if safe and all(_two_adds_on_zero(graph, ctx, sites, x, y) for x, y in pairs):
                yield _two_writers_note(graph, task, a, all_hits[worst], others[0])
                continue
            yield _finding(graph, task, a, all_hits[worst], others)


def _two_adds_on_zero(graph: Graph, ctx: CheckContext, sites, x: Hit, y: Hit) -> bool:
    """Whether the unordered adds ``x`` and ``y`` are the first two into the elements they share,
    onto an exact zero written by a seed ordered before both, and every other add into those
    elements is ordered after both: then (0 + a) + b == (0 + b) + a, and the rest adds in order."""
    if not (x.exact and y.exact and not x.maybe and not y.maybe) or x.rank != y.rank:
        return False
    tensor = graph.tensors[x.access.tensor]
    if tensor.kind not in ("output", "scratch"):
        return False  # an inout starts from the caller's values: (c + a) + b is not (c + b) + a
    both = tuple((max(p[0], q[0]), min(p[1], q[1]), 1) for p, q in zip(x.region, y.region, strict=True))
    anc = ctx.ancestors
    for task, a in sites:
        for h in hits(graph, task, a):
            if h.rank != x.rank or not regions_meet(h.region, both) or _writer(h) in (_writer(x), _writer(y)):
                continue
            if h.task in (x.task, y.task) or x.task not in anc[h.task] or y.task not in anc[h.task]:
                return False
    if tensor.init_value == 0 and not any(w.mode == "write" for _t, w in accesses_of(graph, tensor.name)):
        return True  # zeroed when it is created (PyPTO init_value=0)
    for seeder, w in accesses_of(graph, tensor.name):
        if w.mode != "write" or not (seeder.name in anc[x.task] and seeder.name in anc[y.task]):
            continue
        if not any(s.span == w.span or _within(w.span, s.span) for s in zero_stores(seeder)):
            continue
        if any(h.exact and not h.maybe and _covers(h.region, both) for h in hits(graph, seeder, w)):
            return _only_seed(graph, ctx, tensor.name, seeder, both)
    return False


def _only_seed(graph: Graph, ctx: CheckContext, tensor: str, seeder: Task, both) -> bool:
    """Every other plain write into those elements is ordered before the seed."""
    before_seed = ctx.ancestors[seeder.name]
    for t, w in accesses_of(graph, tensor):
        if w.mode == "write" and t.name != seeder.name and t.name not in before_seed:
            if any(regions_meet(h.region, both) for h in hits(graph, t, w)):
                return False
    return True


def _within(inner, outer) -> bool:
    return (outer.line, outer.col) <= (inner.line, inner.col) and (inner.end_line, inner.end_col) <= (
        outer.end_line,
        outer.end_col,
    )


def _covers(outer, inner) -> bool:
    return all(o[2] == 1 and o[0] <= i[0] and i[1] <= o[1] for o, i in zip(outer, inner, strict=True))


def _two_writers_note(graph: Graph, task: Task, a: Access, h: Hit, other: Hit) -> Diagnostic:
    where = a.tensor + intersection_text(h.region, other.region)
    return finding(
        CODE,
        "note",
        a.span,
        f"{task.name} ({describe.grid(task)}): exactly two unordered {graph.tensors[a.tensor].dtype} atomic adds "
        f"({_who([h, other])}) land in {where}, onto an exact zero seed ordered before both: (0 + a) + b "
        f"equals (0 + b) + a bit for bit, so today the result does not depend on which finishes first; a "
        f"third writer into these elements, an add ordered between the seed and them, or a seed that is "
        f"not an exact zero makes the sum order-dependent",
        fix=f"keep it to two writers, or write per-split partials and sum them in a reduce task `after {task.name}`",
    )


def _finding(graph: Graph, task: Task, a: Access, h: Hit, others: list[Hit]) -> Diagnostic:
    tensor = graph.tensors[a.tensor]
    writers = [h, *others]
    where = a.tensor + intersection_text(h.region, others[0].region)
    if not all(w.exact for w in writers):
        where = a.tensor + h.text()
    exact = all(w.exact and not w.maybe for w in writers)
    n = len({_writer(w) for w in writers})
    who = _who(writers)
    count = f"{n}" if exact else f"up to {n}"
    remote = " (remote_store)" if a.peer is not None else ""
    same = "the same elements" if all(w.region == h.region for w in others) else "overlapping elements"
    return finding(
        CODE,
        SEVERITY,
        a.span,
        f"{task.name} ({describe.grid(task)}) accumulates {tensor.dtype} into {where} with an atomic "
        f"add{remote}; {count} unordered writers ({who}) add into {same}, so the sum order "
        f"is task-completion order and results are not bit-reproducible",
        fix=f"write per-split partials with plain stores (e.g. scratch {a.tensor}_partials: "
        f"{tensor.dtype}[{n} * {_shape(tensor)}]) and sum splits 0..{n - 1} in ascending order in a "
        f"reduce task `after {task.name}`",
    )


def _shape(tensor) -> str:
    dims = [str(d) for d in tensor.shape]
    return ", ".join([f"({dims[0]})" if " " in dims[0] else dims[0], *dims[1:]])


def _writer(h: Hit) -> tuple:
    """Executions of one writer are ordered among themselves (one block, program order)."""
    return (h.rank, h.task, h.block, h.phase)


def _who(writers: list[Hit]) -> str:
    tasks = sorted({w.task for w in writers})
    ranks = sorted({w.rank for w in writers})
    blocks = sorted({w.block for w in writers})
    parts = []
    if len(ranks) > 1:
        parts.append(f"ranks {_list(ranks)}")
    if len(tasks) > 1:
        parts.append(f"tasks {', '.join(tasks)}")
    if len(blocks) > 1:
        parts.append(f"blocks {_list(blocks)}")
    return "; ".join(parts) or "one block"


def _list(values: list[int]) -> str:
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    if len(values) > 6:
        return ", ".join(map(str, values[:6])) + ", ..."
    return ", ".join(map(str, values))
