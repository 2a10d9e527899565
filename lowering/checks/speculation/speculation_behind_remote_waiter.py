"""D102: early dispatch can gate more work behind a cross-rank waiter than the device has cores.

## What it catches

For every task W that spins in a blocking ``wait``, the cone of W: the tasks early dispatch
can pre-stage while W is incomplete -- consumers reachable from W along paths on which
every incomplete direct producer is flagged ``early_resolve`` (docs/runtime-semantics.md §15.5, R2).
The cone is compared, at every admissible parameter point, with the cores of the device preset
(a2a3: 24 AIC, 48 AIV; a MIX block takes a cluster, 1 AIC + 2 AIV), and it must not contain
another task that spins on a signal. The finding sits on the ``early_resolve`` flag whose
removal keeps the largest cone that fits: often a flag deep in the cone (the gather in
front of the experts), sometimes the waiter's own.

## Why it breaks on the device

A pre-staged (gated) block sits on a core's running or pending slot and holds it until its
producers' doorbell rings, that is, for the whole remote wait when the producer is a
cross-rank waiter. Gated blocks beyond the core count take pending slots behind running
tasks, notifiers included; gated spinners hold cores for two handshakes at once. The
scheduler stages speculative work only when the normal queues are empty, but nothing moves
it off the cores later, so the notifiers and the local work the handshake needs starve: the
pre-fix MoE dispatch gated the routed-expert cube grids behind ``dispatch_wait``, and the
combine gated the 128 blocks of ``shared_routed`` on 48 AIV cores behind ``combine_wait``.

## Example

    task arrive on aiv after scatter early_resolve { ...; wait arrived[src] >= epoch }
    task reduce spmd(T) on aiv after arrive { ... }      # T = 64 gated AIV blocks > 48 cores

## Use instead

    task arrive on aiv after scatter { ... }             # no early_resolve next to a cross-rank wait

## What dslc verify shows

``dslc verify`` proves ``bad.dsl`` (one round) and ``bad_2.dsl`` (two rounds) deadlock-free at
EP 2 on one cluster: the gated blocks hold cores, but the handshake notifies before it waits and never
needs a core after its cone is staged. The finding is a core budget at the device's size (64
gated blocks on 48 AIV cores); the hang needs a notifier that still wants one of those cores.

## Parameter and round coverage

Parameters: every admissible point of each structure class, thinned beyond 4,096.
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.handshake.need import waiters
from lowering.checks.order import predecessors
from lowering.checks.points import admissible_envs, blocks
from lowering.checks.rule import CheckContext, finding
from lowering.checks.speculation.cone import RESOURCES, capacity, cone, demand
from lowering.ir import Graph, Task
from lowering.source import Diagnostic

CODE = "D102"
NAME = "speculation_behind_remote_waiter"
FAMILY = "speculation"
SEVERITY = "warning"
SUMMARY = "early_resolve lets more work be gated behind a cross-rank waiter than the device has cores"
POINTS = "all"  # visits every admissible parameter point of the structure class itself

Overflow = tuple[dict[str, int], str, int]  # (point, resource, gated blocks)


def _violations(ctx: CheckContext, members: list[Task], envs: list[dict[str, int]]):
    """(spinners inside the cone, [(point, resource, blocks)] where the cone exceeds the cores)."""
    cap = capacity(ctx)
    spinners = [t for t in members if t.waits]
    over: list[Overflow] = []
    for env in envs:
        need = demand(members, env)
        worst = max(RESOURCES, key=lambda r: need[r] / cap[r])
        if need[worst] > cap[worst]:
            over.append((env, worst, need[worst]))
    return spinners, over


def _best_fix(
    graph: Graph, ctx: CheckContext, waiter: Task, members: list[Task], envs
) -> tuple[Task, list[Task]]:
    """The flag whose removal leaves the largest cone that fits (the waiter's always fits)."""
    default = graph.env()
    best: tuple[tuple[int, int], Task, list[Task]] | None = None
    for task in [waiter, *members]:
        if not task.early_resolve:
            continue
        kept = cone(graph, ctx, waiter, frozenset({task.name}))
        spinners, over = _violations(ctx, kept, envs)
        if spinners or over:
            continue
        key = (sum(blocks(t, default) for t in kept), task.order)
        if best is None or key > best[0]:
            best = (key, task, kept)
    assert best is not None  # without the waiter's flag the cone is empty
    return best[1], best[2]


def _cores(tasks: list[Task]) -> str:
    return "/".join(sorted({t.core.upper() for t in tasks}))


def _message(graph: Graph, ctx: CheckContext, flag: Task, entries, envs) -> str:
    entries = sorted(entries, key=lambda e: e[0] is not flag)  # the flag's own cone first
    waiter, members, kept, spinners, over = entries[0]
    waiting = ", ".join(e[0].name for e in entries)
    plural = "s" if len(entries) > 1 else ""
    let_in = [t for t in members if t not in kept]
    if len(let_in) == 1:
        gated = f"{let_in[0].name} ({describe.grid_expr(graph, let_in[0])})"
    else:
        gated = f"{describe.names(let_in)} on {_cores(let_in)}"
    preds = predecessors(graph, ctx)
    if flag is waiter:
        flagged_producers = sorted(
            {p for t in let_in for p in preds[t.name] if graph.task(p).early_resolve} - {waiter.name}
        )
        verb = "is" if len(flagged_producers) == 1 else "are"
        producers = f", and so {verb} {', '.join(flagged_producers)}" if flagged_producers else ""
        lead = (
            f"{gated} can be pre-staged while cross-rank waiter {waiter.name} "
            f"({describe.grid_expr(graph, waiter)}) is incomplete ({waiter.name} is early_resolve{producers})"
        )
    else:
        lead = (
            f"{flag.name} ({describe.grid_expr(graph, flag)}) is early_resolve and can itself be "
            f"pre-staged behind cross-rank waiter{plural} {waiting}; through it {gated} can be gated onto cores for "
            f"the whole remote wait"
        )
    parts = [lead]
    if spinners:
        signals = ", ".join(dict.fromkeys(w.signal for t in spinners for w in t.waits))
        parts.append(f"the cone contains {describe.names(spinners)}, which spins on {signals} itself")
    if over:
        env, res, n = max(over, key=lambda o: o[2] / capacity(ctx)[o[1]])
        point = describe.point(graph, env) if len({(o[1], o[2]) for o in over}) > 1 else ""
        at = describe.where(graph, [o[0] for o in over], envs)
        parts.append(
            f"{'up to ' if point else ''}{n} gated {res.upper()} blocks"
            f"{f' (at {point})' if point else ''} exceed the "
            f"{capacity(ctx)[res]} {res.upper()} cores of {ctx.preset}{f', {at}' if at else ''}"
        )
    waiter_preds = sorted(preds[waiter.name])
    if waiter_preds and all(graph.task(p).early_resolve for p in waiter_preds):
        parts.append(
            f"{waiter.name} itself can be pre-staged behind its flagged producer {', '.join(waiter_preds)}"
        )
    return (
        "; ".join(parts) + ". Gated blocks hold running and pending slots until the waiter completes, "
        "starving the notifiers and the local work the handshake needs"
    )


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    envs = admissible_envs(graph, ctx)
    by_flag: dict[str, list] = {}
    for waiter in waiters(graph):
        members = cone(graph, ctx, waiter)
        if not members:
            continue
        spinners, over = _violations(ctx, members, envs)
        if not spinners and not over:
            continue
        flag, kept = _best_fix(graph, ctx, waiter, members, envs)
        by_flag.setdefault(flag.name, []).append((waiter, members, kept, spinners, over))
    for name, entries in by_flag.items():
        flag = graph.task(name)
        yield finding(
            CODE,
            SEVERITY,
            flag.header_span,
            _message(graph, ctx, flag, entries, envs),
            fix=f"remove early_resolve from task {flag.name}",
            related=tuple((e[0].header_span, "the cross-rank waiter") for e in entries),
        )
