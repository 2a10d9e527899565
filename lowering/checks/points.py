"""Admissible parameter points, shared by rules that must hold for every admissible value."""

from __future__ import annotations

from lowering.checks.rule import CheckContext
from lowering.ir import Graph, SignalOp, Task
from lowering.symbolic import EvalError, Expr, evaluate, free_symbols


def admissible_envs(graph: Graph, ctx: CheckContext) -> list[dict[str, int]]:
    """Every admissible parameter point (cached per graph); the default point if none is."""
    envs = ctx.cache.get("admissible_envs")
    if envs is None:
        envs = list(graph.admissible_points()) or [graph.env()]
        ctx.cache["admissible_envs"] = envs
    return envs


def blocks(task: Task, env: dict[str, int]) -> int:
    """The grid of ``task`` at one parameter point."""
    try:
        return evaluate(task.grid, env)
    except EvalError:
        return task.blocks


def signal_exprs(task: Task, op: SignalOp) -> list[Expr]:
    """Every expression the instances of ``op`` depend on (grid, loops, conditions, cell, peer)."""
    out = [task.grid, *op.index]
    for loop in op.loops:
        out += [loop.start, loop.stop, loop.step]
    out += [c.expr for c in op.conds]
    out += [e for e in (op.peer, op.value, op.expected) if e is not None]
    return out


def group_envs(
    graph: Graph, envs: list[dict[str, int]], exprs: list[Expr]
) -> list[tuple[dict[str, int], list[dict[str, int]]]]:
    """Points grouped by the values of every parameter ``exprs`` depend on: (representative, group).

    A check whose outcome depends only on ``exprs`` (and the rank count) runs once per group.
    """
    names: set[str] = set()
    pending = [*exprs, graph.ranks]
    while pending:
        for sym in free_symbols(pending.pop()):
            if sym.name in graph.consts and sym.name not in names:
                pending.append(graph.consts[sym.name].expr)
            names.add(sym.name)
    keys = sorted(n for n in names if n in graph.params or n in graph.consts)
    groups: dict[tuple, list[dict[str, int]]] = {}
    for env in envs:
        groups.setdefault(tuple(env.get(k) for k in keys), []).append(env)
    return [(group[0], group) for group in groups.values()]
