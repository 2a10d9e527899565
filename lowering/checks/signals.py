"""Concrete instances of signal operations, for the handshake and protocol rules.

Every rank runs the same graph (rank symmetry), so a notify on a peer is the local task of
the same name. We enumerate each notify and wait over ranks x blocks x loop iterations at
one parameter point, evaluating conditions, cells and peers exactly. An operation whose
trip counts, cells or conditions depend on data is reported as not countable.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from lowering.checks.fasteval import Compiled, compiled
from lowering.checks.index import notifiers
from lowering.ir import Graph, Loop, SignalOp, Task
from lowering.symbolic import EvalError, Expr, evaluate

MAX_INSTANCES = 400_000


class NotCountable(Exception):
    """The instances depend on data or runtime values (or are too many to enumerate)."""


@dataclass(frozen=True)
class Instance:
    task: str
    rank: int
    block: int
    env: tuple[tuple[str, int], ...]  # loop variable values

    def bound(self) -> dict[str, int]:
        return dict(self.env)


_UNSET = object()


def _iterate(
    loops: list[tuple[Loop, Compiled, Compiled, Compiled]],
    env: dict[str, int],
    budget: list[int],
    depth: int = 0,
) -> Iterator[dict[str, int]]:
    """``env`` with the loop variables bound, once per iteration (updated in place and
    restored when the loops are done: each yielded environment is valid until the next)."""
    if depth == len(loops):
        budget[0] -= 1
        if budget[0] < 0:
            raise NotCountable("too many instances to enumerate")
        yield env
        return
    loop, start_f, stop_f, step_f = loops[depth]
    try:
        start, stop, step = start_f(env), stop_f(env), step_f(env)
    except EvalError as err:
        raise NotCountable(f"loop '{loop.var}' has bounds that depend on data ({err})") from None
    saved = env.get(loop.var, _UNSET)
    try:
        for v in range(start, stop, max(step, 1)):
            env[loop.var] = v
            yield from _iterate(loops, env, budget, depth + 1)
    finally:
        if saved is _UNSET:
            env.pop(loop.var, None)
        else:
            env[loop.var] = saved


def instances(
    graph: Graph, task: Task, op: SignalOp, env: dict[str, int]
) -> Iterator[tuple[dict[str, int], int]]:
    """(environment, rank) for every execution of ``op`` whose conditions hold; the
    environment is one dict updated in place: read it before asking for the next."""
    nranks = evaluate(graph.ranks, env)
    budget = [MAX_INSTANCES]
    base = {**env, "nranks": nranks}
    loops = [(lp, compiled(lp.start), compiled(lp.stop), compiled(lp.step)) for lp in op.loops]
    tests = [compiled(c.expr) for c in op.conds]
    for rank in range(nranks):
        base["rank"] = rank
        for block in range(evaluate(task.grid, env)):
            base["block"] = block
            for scoped in _iterate(loops, base, budget):
                try:
                    if all(test(scoped) for test in tests):
                        yield scoped, rank
                except EvalError as err:
                    raise NotCountable(f"a condition depends on data ({err})") from None


def _cell(index: list[Compiled], env: dict[str, int]) -> tuple[int, ...]:
    try:
        return tuple(f(env) for f in index)
    except EvalError as err:
        raise NotCountable(f"the cell index depends on data ({err})") from None


def _cached(graph: Graph, kind: str, task: Task, op: SignalOp, env: dict[str, int], build):
    """``build()``, once per (task, op, point) of a graph; NotCountable is cached too."""
    cache = graph.__dict__.setdefault("_signal_instances", {})
    key = (kind, task.name, op.order, tuple(sorted(env.items())))
    hit = cache.get(key)
    if hit is None or hit[0] is not op:  # (a task replaced since: recompute)
        try:
            result = build()
        except NotCountable as err:
            result = err
        hit = cache[key] = (op, result)
    if isinstance(hit[1], NotCountable):
        raise hit[1]
    return hit[1]


def notify_counts(graph: Graph, task: Task, op: SignalOp, env: dict[str, int]) -> Counter:
    """Counter of (source rank, destination rank, cell) -> total value deposited per epoch
    (shared between callers: do not modify it)."""
    return _cached(graph, "notify", task, op, env, lambda: _notify_counts(graph, task, op, env))


def _notify_counts(graph: Graph, task: Task, op: SignalOp, env: dict[str, int]) -> Counter:
    out: Counter = Counter()
    peer_f, value_f = compiled(op.peer), compiled(op.value) if op.value is not None else None
    index = [compiled(i) for i in op.index]
    for scoped, rank in instances(graph, task, op, env):
        try:
            peer = peer_f(scoped)
            value = value_f(scoped) if value_f is not None else 1
        except EvalError as err:
            raise NotCountable(f"peer or value depends on data ({err})") from None
        out[(rank, peer, _cell(index, scoped))] += value
    return out


def waited_cells(
    graph: Graph, task: Task, op: SignalOp, env: dict[str, int]
) -> dict[tuple[int, tuple], Expr]:
    """(rank, cell) -> expected threshold expression (may involve ``epoch``); shared between
    callers: do not modify it."""
    return _cached(graph, "wait", task, op, env, lambda: _waited_cells(graph, task, op, env))


def _waited_cells(
    graph: Graph, task: Task, op: SignalOp, env: dict[str, int]
) -> dict[tuple[int, tuple], Expr]:
    out: dict[tuple[int, tuple], Expr] = {}
    index = [compiled(i) for i in op.index]
    for scoped, rank in instances(graph, task, op, env):
        out[(rank, _cell(index, scoped))] = op.expected
    return out


def notifiers_of(graph: Graph, signal: str) -> list[tuple[Task, SignalOp]]:
    return list(notifiers(graph, signal))
