"""N201: floating-point atomic adds whose order is the tasks' completion order.

## What it catches

`t[...] += value atomic` (and `remote_store t[...] @ peer += value`) on an `f32`, `f16` or
`bf16` tensor, when two executions that no edge orders add into the same elements. An
execution is one (rank, task, block, loop iteration). Two of them are ordered when they
are the same block of the same task (program order), when a `barrier` separates them, or
when one task is a transitive predecessor of the other. Integer atomics are exempt (exact
and associative), and so are signal counters (seed-bugs.md §4.4, R4).

Executions whose target depends on data (a scatter through `read(...)`) are taken to hit
the whole extent of that dimension, and the message says "up to".

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
)
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
            yield _finding(graph, task, a, all_hits[worst], [all_hits[j] for j in sorted(partners[worst])])


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
