"""D105: the per-epoch notify count is tied to a task's grid size.

## What it catches

A task whose blocks each notify the same (source, cell): more than one notify per
(source rank, destination rank, cell) and epoch, coming from more than one block of the
grid, so the threshold has to be ``epoch * <grid size>`` (docs/runtime-semantics.md §16.5, rule R3
lint). It is reported when some task waiting on those cells is *not* already ordered after the
notifying grid -- the combine form of #820, where the fix is to join the grid and notify
once per peer after it. A waiter that already runs after the grid is the form upstream kept
for ``dispatch_push`` after #893/#982 (docs/runtime-semantics.md §15.3); the count is exact there
(D103 checks it) and this note stays quiet. Checked at the default parameter point.

## Why it breaks on the device

Nothing hangs by itself, which is why this is a note; but the arithmetic is fragile. Every
change of the grid (a new tiling, another ``N_LOCAL``) must be mirrored in every threshold,
the per-block notify publishes only that block's remote stores (data-before-signal rests
on each block draining, see D114), and N blocks x (ranks - 1) notifies per epoch cost
signal traffic that one notify per peer does not (#968 stalled on notify volume).

## Example

    task combine spmd(N_LOCAL) on aiv {
      ...                                                     # remote_store rows to their origin
      for p in range(EP) { if p != rank { notify combine_arrived[rank] @ p += 1 } }
    }
    task combine_wait on aiv {
      read(recv_y[0, 0])                                      # anchor only
      for src in range(EP) { if src != rank { wait combine_arrived[src] >= epoch * N_LOCAL } }
    }

## Use instead

    task combine spmd(N_LOCAL) on aiv { ... }                 # stores only
    task combine_wait on aiv after combine {
      for p in range(EP) { if p != rank { notify combine_arrived[rank] @ p += 1 } }
      for src in range(EP) { if src != rank { wait combine_arrived[src] >= epoch } }
    }

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round (the per-epoch count).
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.index import waits_on
from lowering.checks.protocol import instances
from lowering.checks.protocol.instances import Uncountable
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph
from lowering.source import Diagnostic

CODE = "D105"
NAME = "notify_count_tied_to_grid"
FAMILY = "protocol"
SEVERITY = "note"
SUMMARY = "more than one notify per source and cell per epoch, scaling with a task's grid"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    anc = ctx.ancestors
    reported: set = set()
    signals = sorted({op.signal for t in graph.tasks for op in t.waits})
    for signal in signals:
        try:
            deps = [d for d in instances.deposits(graph, ctx, signal, env) if d.value > 0]
            waited: dict[tuple, set[str]] = {}
            first_wait: dict[str, tuple] = {}
            for t, w in waits_on(graph, signal):
                first_wait.setdefault(t.name, (t, w))
                for rank, cell, _s, _b in instances.wait_cells(graph, t, w, env):
                    waited.setdefault((rank, cell), set()).add(t.name)
        except Uncountable:
            continue  # D103 reports it
        per_task: dict[str, dict[tuple, list]] = {}
        for d in deps:
            per_task.setdefault(d.task, {}).setdefault((d.src, d.dst, d.cell), []).append(d)
        for name, groups in per_task.items():
            task = graph.task(name)
            tied = [k for k, ds in groups.items() if len(ds) > 1 and len({x.block for x in ds}) > 1]
            if not tied:
                continue
            waiters = set().union(*(waited.get((dst, cell), set()) for _src, dst, cell in tied))
            unjoined = sorted(w for w in waiters if w != name and name not in anc[w])
            if not unjoined:
                continue
            op = groups[tied[0]][0].op
            if op.span in reported:
                continue
            reported.add(op.span)
            per = len(groups[tied[0]])
            wt, w = first_wait[unjoined[0]]
            yield finding(
                CODE,
                SEVERITY,
                op.span,
                f"{signal} expects {instances.expr_text(w.expected)} ({wt.name}): the per-epoch notify count is "
                f"tied to the grid size of `{name}` ({per} notifies per source and cell per epoch, one from each "
                f"of its blocks), and {wt.name} is not ordered after that grid; prefer one notify per peer "
                f"after the grid (expected = epoch)",
                fix=f"drop this notify; add `after {task.base}` to {wt.name}, notify each peer once there and wait for `epoch`",
                related=((w.span, "the wait whose threshold carries the grid size"),),
            )
