"""O601: a hard ``barrier`` in a task that is not one co-resident cohort filling its cores.

## What it catches

A task containing a hard ``barrier`` (the FFTS syncall; ``barrier soft`` is exempt) that is
not ``sync_start``, or whose grid is not exactly the number of cores of its shape on the
device preset (a2a3: 24 AIC, 48 AIV; for ``mix`` the 24 clusters) at some admissible
parameter point. A ``sync_start`` grid larger than the device is O602's finding.
(docs/runtime-semantics.md §9, D3; pypto's ``HardSyncallOccupancyValid`` verifier.)

## Why it breaks on the device

A hard syncall completes when every core of the shape has arrived. Without ``sync_start``
the blocks are dispatched as cores free up, in waves: the first wave spins in the barrier
holding every core, the rest never get one, and the kernel hangs (507018 on the device).
With a cohort smaller than the device the missing cores never arrive either. Soft barriers
poll global memory and count only the blocks of the task, so they work at partial
occupancy.

## Example

    task hc_pre_fused spmd(NUM_CORES) on mix early_resolve {   # no sync_start
      ...; barrier; ...
    }

## Use instead

    task hc_pre_fused spmd(24) on mix sync_start early_resolve { ...; barrier; ... }
    # or, at partial occupancy: barrier soft

## Parameter and round coverage

Parameters: every admissible point of each structure class, thinned beyond 4,096.
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.points import admissible_envs, blocks
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph, Task
from lowering.source import Diagnostic

CODE = "O601"
NAME = "hard_barrier_without_full_occupancy"
FAMILY = "occupancy"
SEVERITY = "error"
SUMMARY = "a hard barrier in a task that is not a sync_start cohort of exactly the device's cores"
POINTS = "all"  # visits every admissible parameter point of the structure class itself


def unit(task: Task) -> str:
    return "clusters" if task.core == "mix" else "cores"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    envs = admissible_envs(graph, ctx)
    for task in graph.tasks:
        hard = [b for b in task.barriers if not b.soft]
        if not hard:
            continue
        cores = ctx.cores[task.core]
        shape = task.core.upper()
        device = f"{cores} {shape} {unit(task)} of {ctx.preset}"
        if not task.sync_start:
            larger = [env for env in envs if blocks(task, env) > cores]
            waves = (
                f"; {describe.where(graph, larger, envs) or 'here'} its grid exceeds the {device}, so "
                f"blocks run in waves"
                if larger
                else ""
            )
            yield finding(
                CODE,
                SEVERITY,
                hard[0].span,
                f"{task.name} ({describe.grid_expr(graph, task)}) has a hard barrier but is not "
                f"sync_start: its blocks are dispatched as cores free up, and the ones that arrive first spin in the "
                f"barrier holding their cores while the rest wait for one{waves}; the syncall needs all "
                f"{device} to arrive",
                fix=f"declare task {task.name} `sync_start` with a grid of exactly {cores}, or use `barrier soft`",
            )
            continue
        partial = [env for env in envs if blocks(task, env) < cores]
        if not partial:
            continue
        smallest = min(partial, key=lambda env: blocks(task, env))
        everywhere = len(partial) == len(envs) and len({blocks(task, env) for env in envs}) == 1
        at = "" if everywhere else describe.where(graph, partial, envs)
        yield finding(
            CODE,
            SEVERITY,
            hard[0].span,
            f"{task.name} has a hard barrier but its sync_start grid ({describe.grid_expr(graph, task)}) is "
            f"{'as small as ' if not everywhere else ''}{blocks(task, smallest)}{f' {at}' if at else ''}, "
            f"fewer than the {device}: the syncall waits for every core of the shape and the idle ones "
            f"never arrive",
            fix=f"make the grid of task {task.name} exactly {cores} (stride the work over `block`), "
            f"or use `barrier soft`",
        )
