"""O602: a ``sync_start`` cohort needs more blocks than the device has cores of its shape.

## What it catches

A ``sync_start`` task whose grid, at some admissible parameter point, is larger than the
number of cores of its shape on the device preset (a2a3: 24 AIC, 48 AIV, 24 MIX clusters;
``--preset`` picks another device). (docs/runtime-semantics.md §9, D4.)

## Why it breaks on the device

A sync_start cohort is launched all or nothing: every block must hold a core at the same
time. A cohort larger than the device can never be placed, and the runtime fails the launch
(fatal error code 7). Cohort sizes written for one chip (36 AIC on A5) fail on another (24
on a2a3), and grids derived from a parameter fail only at its large values.

## Example

    layer hc_pre(NUM_CORES = 24 in {24, 36}) {
      task hc_pre_fused spmd(NUM_CORES) on mix sync_start { ... }   # 36 clusters > 24 on a2a3
    }

## Use instead

    task hc_pre_fused spmd(24) on mix sync_start { ... }   # and stride the work over `block`

## Parameter and round coverage

Parameters: every admissible point of each structure class, thinned beyond 4,096.
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.occupancy.hard_barrier_without_full_occupancy import unit
from lowering.checks.points import admissible_envs, blocks
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph
from lowering.source import Diagnostic

CODE = "O602"
NAME = "cohort_larger_than_device"
FAMILY = "occupancy"
SEVERITY = "error"
SUMMARY = "a sync_start grid is larger than the cores of its shape on the device"
POINTS = "all"  # visits every admissible parameter point of the structure class itself


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    envs = admissible_envs(graph, ctx)
    for task in graph.tasks:
        if not task.sync_start:
            continue
        cores = ctx.cores[task.core]
        over = [env for env in envs if blocks(task, env) > cores]
        if not over:
            continue
        largest = max(over, key=lambda env: blocks(task, env))
        everywhere = len(over) == len(envs) and len({blocks(task, env) for env in envs}) == 1
        at = "" if everywhere else describe.where(graph, over, envs)
        shape = task.core.upper()
        yield finding(
            CODE,
            SEVERITY,
            task.header_span,
            f"{task.name} ({describe.grid_expr(graph, task)}) is a sync_start cohort of up to "
            f"{blocks(task, largest)} {shape} blocks{f' {at}' if at else ''}, but {ctx.preset} has "
            f"{cores} {shape} {unit(task)}: the cohort is launched all or nothing and can never be "
            f"placed, so the runtime fails the launch (fatal code 7)",
            fix=f"cap the grid of task {task.name} at {cores} and stride the work over `block`",
        )
