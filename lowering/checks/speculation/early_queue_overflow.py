"""D110: one flagged producer publishes more early-dispatch candidates than the early queue holds.

## What it catches

A task flagged ``early_resolve`` whose direct consumers that become early candidates (every
other incomplete direct producer flagged, no predicate) add up, per core shape, to more
blocks than the runtime's per-shape early-dispatch queue holds (``--early-queue``,
``early-queue`` in ``[tool.dslc]``; sync_start consumers share one queue). Grids are evaluated
at every admissible parameter point (docs/runtime-semantics.md §21.1, rule R12).

The capacity is a property of the runtime version. simpler before #1812 held 64 per shape;
pypto-lib requires the runtime after #1812, whose capacity the references do not give, and
which is known to run the 128 candidates that overflowed the older queue (pypto-lib #899). The
default is therefore 128: the rule reports the fan-outs nobody has shown to run. Pass
``--early-queue 64`` to check a layer for the older runtime.

## Why it breaks on the device

When a flagged producer is fully published, the scheduler pushes all its early candidates
into ``early_dispatch_queues[shape]`` at once. The queue has a fixed capacity: a producer
that publishes more candidates than fit cannot be handled by the runtime. This is why
pypto-lib #899 made EP8 depend on simpler#1812: a routed-expert producer published 128
candidates against a capacity of 64, a number that grows with EP while CI ran EP2.

## Example

    task w2_mm spmd(RECV_MAX / 128) on aic early_resolve { ... }
    task w2_act spmd(RECV_MAX / 16) on aiv { ... }       # RECV_MAX = EP * 128: 256 blocks at EP=32

## Use instead

    task w2_act spmd(RECV_MAX / 32) on aiv { ... }       # at most 128 blocks for every admissible EP
    # or drop early_resolve from w2_mm

## What dslc verify shows

``dslc verify`` proves ``bad.dsl`` deadlock-free at EP 2 (1-2 rounds): in the runtime model a
candidate that does not fit the early queue waits for normal readiness, so overflow costs the
speculation, not progress.

## Parameter and round coverage

Parameters: every admissible point of each structure class, thinned beyond 4,096.
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.order import descendants, predecessors, submitted_while, successors
from lowering.checks.points import admissible_envs, blocks
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph, Task
from lowering.source import Diagnostic
from runtime.device import EARLY_QUEUE_CAPACITY, EARLY_QUEUE_CAPACITY_BEFORE_1812

CODE = "D110"
NAME = "early_queue_overflow"
FAMILY = "speculation"
SEVERITY = "warning"
SUMMARY = "a flagged producer publishes more early-dispatch candidate blocks than the early queue holds"
POINTS = "all"  # visits every admissible parameter point of the structure class itself


def candidates(graph: Graph, ctx: CheckContext, producer: Task) -> list[Task]:
    """Direct consumers of ``producer`` that early dispatch can stage while it runs."""
    preds = predecessors(graph, ctx)
    below = descendants(graph, ctx)[producer.name]
    out = []
    for name in successors(graph, ctx)[producer.name]:  # in submission order
        t = graph.task(name)
        if t.predicate is not None or not submitted_while(graph, ctx, name, producer.name, below):
            continue
        if all(p == producer.name or p not in below or graph.task(p).early_resolve for p in preds[t.name]):
            out.append(t)
    return out


def _grids(members: list[Task], env: dict[str, int]) -> str:
    """``w2_act spmd 128`` or ``exp_up[0..15] (16 tasks) spmd 16 each``."""
    groups: dict[str, list[Task]] = {}
    for t in members:
        groups.setdefault(t.base, []).append(t)
    parts = []
    for group in groups.values():
        sizes = {blocks(t, env) for t in group}
        if len(group) > 1 and len(sizes) == 1:
            parts.append(f"{describe.names(group)} spmd {sizes.pop()} each")
        else:
            parts.extend(f"{t.name} spmd {blocks(t, env)}" for t in group)
    return ", ".join(parts)


def _queue(task: Task) -> str:
    return "sync_start" if task.sync_start else task.core


def _beyond(cap: int, what: str) -> str:
    if cap == EARLY_QUEUE_CAPACITY:
        return (
            f"more than the {cap} candidates one flagged producer is known to publish on simpler after "
            f"#1812 (pypto-lib #899 needed #1812 for 128 routed-expert candidates at EP8, over the 64 of "
            f"the older runtime; the newer capacity is not documented)"
        )
    if cap == EARLY_QUEUE_CAPACITY_BEFORE_1812:
        return (
            f"more than the {cap} entries of the {what} early queue of simpler before #1812 (pypto-lib #899)"
        )
    return f"more than the {cap} entries of the {what} early queue (--early-queue {cap})"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    envs = admissible_envs(graph, ctx)
    cap = ctx.early_queue_capacity
    for producer in graph.tasks:
        if not producer.early_resolve:
            continue
        by_queue: dict[str, list[Task]] = {}
        for t in candidates(graph, ctx, producer):
            by_queue.setdefault(_queue(t), []).append(t)
        for queue, members in by_queue.items():
            over = [(env, sum(blocks(t, env) for t in members)) for env in envs]
            over = [(env, n) for env, n in over if n > cap]
            if not over:
                continue
            env, n = max(over, key=lambda o: o[1])
            point = describe.point(graph, env) if len({o[1] for o in over}) > 1 else ""
            at = describe.where(graph, [o[0] for o in over], envs)
            grids = _grids(members, env)
            what = "sync_start" if queue == "sync_start" else queue.upper()
            yield finding(
                CODE,
                SEVERITY,
                producer.header_span,
                f"{producer.name} ({describe.grid_expr(graph, producer)}) is early_resolve and publishes {n} "
                f"early-dispatch candidate {what} blocks at once ({grids}"
                f"{f' at {point}' if point else ''}), {_beyond(cap, what)}{f' ({at})' if at else ''}",
                fix=f"remove early_resolve from task {producer.name} (or tile its consumers into at most "
                f"{cap} {what} blocks)",
            )
