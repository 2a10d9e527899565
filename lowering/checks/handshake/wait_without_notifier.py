"""D106: a blocking wait on a signal (or a cell) that no task of the graph ever notifies.

## What it catches

A ``wait sig[i] >= e`` whose cell no ``notify`` of the layer can reach: either no task
notifies ``sig`` at all, or the notifies that exist never land on some cell this wait spins
on, on some rank (every rank runs the same graph, so the notifies a rank receives are the
peers' instances of the same tasks). Cells, peers and conditions are enumerated exactly over
ranks x blocks x loop iterations at every admissible parameter point; a notify whose
destination depends on data is assumed to reach every cell.

## Why it breaks on the device

Only something outside the graph (the host, another program) can release such a wait. If
nothing does, the block spins in TWAIT forever while holding its core; the stall surfaces
as a TENSOR_WAIT_TIMEOUT or the generic 507018 after the scheduler watchdog, far from the
line that forgot the notify. A signal released from outside is a protocol the lint cannot
see: suppress the finding and say who notifies.

## Example

    task publish spmd(N_LOCAL) on aiv { remote_store recv[...] @ dst = x[...] }
    task arrive on aiv after publish {
      for src in range(EP) { if src != rank { wait ready[src] >= epoch } }   # nobody notifies ready
    }

## Use instead

    task arrive on aiv after publish {
      for peer in range(EP) { if peer != rank { notify ready[rank] @ peer += 1 } }
      for src in range(EP) { if src != rank { wait ready[src] >= epoch } }
    }

## Parameter and round coverage

Parameters: every admissible point of each structure class, grouped by the values the waits'
cells and the notifiers depend on, thinned beyond 4,096.
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.points import admissible_envs, group_envs, signal_exprs
from lowering.checks.rule import CheckContext, finding
from lowering.checks.signals import NotCountable, notifiers_of, notify_counts, waited_cells
from lowering.ir import Graph, SignalOp, Task
from lowering.source import Diagnostic

CODE = "D106"
NAME = "wait_without_notifier"
FAMILY = "handshake"
SEVERITY = "warning"
SUMMARY = "a blocking wait on a signal or cell that no task of the graph notifies"
COUNTS = True
POINTS = "all"  # visits every admissible parameter point of the structure class itself


def _cell_text(signal: str, cell: tuple[int, ...]) -> str:
    return f"{signal}[{', '.join(map(str, cell))}]"


def _unreached(
    graph: Graph, waiter: Task, wait: SignalOp, env: dict[str, int]
) -> tuple[list[tuple[int, tuple]], int]:
    """(rank, cell) pairs the wait spins on that no notify reaches, and how many it spins on."""
    cells = waited_cells(graph, waiter, wait, env)
    reached: set[tuple[int, tuple]] = set()
    for task, op in notifiers_of(graph, wait.signal):
        reached |= {(dst, cell) for (_src, dst, cell) in notify_counts(graph, task, op, env)}
    missing = sorted(key for key in cells if key not in reached)
    return missing, len(cells)


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    envs = admissible_envs(graph, ctx)
    for waiter in graph.tasks:
        for wait in waiter.waits:
            shape = waiter.core.upper()
            if not notifiers_of(graph, wait.signal):
                yield finding(
                    CODE,
                    SEVERITY,
                    wait.span,
                    f"{waiter.name} ({describe.grid(waiter)}) blocks on {wait.signal} (expects "
                    f"{wait.expected}) but no task of layer {graph.name} notifies {wait.signal}: only "
                    f"something outside the graph can release it, and until then the block spins in "
                    f"TWAIT holding its {shape} core",
                    fix=f"notify {wait.signal} from the task that publishes what {waiter.name} waits for",
                )
                continue
            exprs = signal_exprs(waiter, wait)
            for task, op in notifiers_of(graph, wait.signal):
                exprs += signal_exprs(task, op)
            failing: list[tuple[dict[str, int], list, int]] = []
            try:
                for rep, group in group_envs(graph, envs, exprs):
                    missing, total = _unreached(graph, waiter, wait, rep)
                    if missing:
                        failing.extend((env, missing, total) for env in group)
            except NotCountable:
                continue
            if not failing:
                continue
            default = graph.env()
            env, missing, total = next((f for f in failing if f[0] == default), failing[-1])
            rank, cell = missing[0]
            point = describe.point(graph, env)
            others = (
                f" (and {len(missing) - 1} more of the {total} (rank, cell) pairs it waits on"
                f"{f' at {point}' if point else ''})"
                if len(missing) > 1
                else ""
            )
            at = describe.where(graph, [f[0] for f in failing], envs)
            yield finding(
                CODE,
                SEVERITY,
                wait.span,
                f"{waiter.name} blocks on {wait.signal}, but no notify of the graph ever reaches "
                f"{_cell_text(wait.signal, cell)} on rank {rank}{others}{f', {at}' if at else ''}: only "
                f"something outside the graph can release that wait, and until then the block spins in "
                f"TWAIT holding its {shape} core",
                fix=f"make the notifies of {wait.signal} reach every cell its waiters spin on",
            )
