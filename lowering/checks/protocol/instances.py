"""Instances of signal ops: who notifies which cell how much, and which cells a wait spins on.

The enumeration under the counting model (``lowering.checks.protocol.counting``) and the order
a wait's count implies (``implied_order``): every AtomicAdd notify instance of one round
(:class:`Deposit`), every Set instance (:class:`SetWrite`), the cells a wait's instances spin
on, and the threshold a wait expects at an epoch. Ranks x blocks x loop iterations are
enumerated at one parameter point by ``lowering.checks.signals``; a count that depends on
data raises :class:`Uncountable`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lowering.checks.fasteval import Compiled, compiled
from lowering.checks.index import notifiers, waits_on
from lowering.checks.points import own_point_first, signal_exprs
from lowering.checks.rule import CheckContext
from lowering.checks.signals import NotCountable, cell_envs, env_key, run
from lowering.ir import Graph, SignalOp, Task
from lowering.symbolic import DYNAMIC, SCALAR, Const, EvalError, Expr, free_symbols

POINT_LIMIT = 256  # admissible points visited per rule; thinned beyond (see Graph.admissible_points)

#: A count that depends on data (the enumerator's NotCountable: ``reason``, ``task``, ``span``).
Uncountable = NotCountable


class DataThreshold(NotCountable):
    """The threshold depends on data (an epoch the orchestration computes from a tensor it
    reads, a value read in the kernel), while the notifies may still be countable."""


class Unchecked(Exception):
    """A threshold dslc does not model (several runtime scalars): rules skip the wait."""


# ------------------------------------------------------------------ parameter points


def signal_key(graph: Graph, signal: str, env: dict[str, int]) -> tuple:
    """The values of ``env`` that the instances of ``signal``'s ops can read: the rank count,
    the signal's shape, and the grid, loops, conditions, cell index, peer, value and threshold
    of every notify and wait on it. Two points with the same key give the same deposits, Set
    writes and wait cells on ``signal``: the protocol rules visit every admissible point, and
    most parameters never reach a given signal."""
    cache = graph.__dict__.setdefault("_signal_reads", {})
    names = cache.get(signal)
    if names is None:
        tensor = graph.tensors.get(signal)
        exprs = [graph.ranks, *(tensor.shape if tensor is not None else ())]
        for task, op in (*notifiers(graph, signal), *waits_on(graph, signal)):
            exprs += signal_exprs(task, op)
        names = cache[signal] = tuple(sorted({s.name for e in exprs for s in free_symbols(e)}))
    return tuple(env.get(n) for n in names)


def points(graph: Graph, limit: int = POINT_LIMIT) -> Iterator[dict[str, int]]:
    """The default point first, then every other admissible point."""
    return own_point_first(graph, limit)


def point_label(graph: Graph, env: dict[str, int]) -> str:
    """`` (at EP=8)`` for a non-default point, ``""`` for the default one."""
    diff = [f"{p.name}={env[p.name]}" for p in graph.params.values() if env.get(p.name) != p.value]
    return f" (at {', '.join(diff)})" if diff else ""


# ------------------------------------------------------------------ instances


def evaluate_or_raise(expr: Expr, env: dict[str, int], what: str) -> int:
    return _value(compiled(expr), env, what)


def _value(fn: Compiled, env: dict[str, int], what: str) -> int:
    try:
        return fn(env)
    except EvalError:
        raise Uncountable(f"the {what} depends on data") from None


@dataclass(frozen=True)
class Deposit:
    """One AtomicAdd notify instance: ``src`` adds ``value`` to ``cell`` on rank ``dst``."""

    task: str
    op: SignalOp
    src: int
    dst: int
    cell: tuple[int, ...]
    value: int
    block: int


@dataclass(frozen=True)
class SetWrite:
    """One Set notify instance (``notify sig[..] @ peer = v``); ``clear`` when ``v`` is 0."""

    task: str
    op: SignalOp
    src: int
    dst: int
    cell: tuple[int, ...]
    clear: bool


def is_clear(op: SignalOp) -> bool:
    return op.kind == "notify" and op.op == "set" and op.value == Const(0)


def _cached(ctx: CheckContext, key: tuple, build):
    hit = ctx.cache.get(key)
    if hit is None:
        try:
            hit = build()
        except Uncountable as err:
            hit = err
        ctx.cache[key] = hit
    if isinstance(hit, Uncountable):
        raise hit
    return hit


def deposits(graph: Graph, ctx: CheckContext, signal: str, env: dict[str, int]) -> list[Deposit]:
    """Every AtomicAdd instance on ``signal`` in one round (raises Uncountable)."""

    def build() -> list[Deposit]:
        out: list[Deposit] = []
        for task, op in notifiers(graph, signal):
            if op.op == "add":
                out += op_instances(graph, task, op, env)
        return out

    return _cached(ctx, ("protocol.deposits", signal, signal_key(graph, signal, env)), build)


def op_instances(graph: Graph, task: Task, op: SignalOp, env: dict[str, int]) -> list[Deposit]:
    """The AtomicAdd instances of one notify op (raises Uncountable, blamed on the op), kept on
    the graph per point: every wait on the signal meets them (the caller must not change them)."""
    cache = graph.__dict__.setdefault("_op_instances", {})
    key = (task.name, op.order, op.span, env_key(env))
    found = cache.get(key)
    if found is None:
        try:
            found = _op_instances(graph, task, op, env)
        except Uncountable as err:
            found = err
        cache[key] = found
    if isinstance(found, Uncountable):
        raise found
    return found


def _op_instances(graph: Graph, task: Task, op: SignalOp, env: dict[str, int]) -> list[Deposit]:
    peer_f, value_f = compiled(op.peer), compiled(op.value) if op.value is not None else None
    index_f = [compiled(i) for i in op.index]
    out: list[Deposit] = []
    try:
        for scoped, rank, block in run(graph, task, op.loops, op.conds, env):
            out.append(
                Deposit(
                    task.name,
                    op,
                    rank,
                    _value(peer_f, scoped, "peer"),
                    tuple(_value(f, scoped, "cell index") for f in index_f),
                    _value(value_f, scoped, "value") if value_f is not None else 1,
                    block,
                )
            )
    except Uncountable as err:
        raise type(err)(err.reason, task.name, op.span) from None
    return out


def adds_around(
    graph: Graph, task: Task, wait: SignalOp, env: dict[str, int], is_after: Callable[[str, int], bool]
) -> Iterator[tuple[Deposit, bool]]:
    """Every AtomicAdd instance on ``wait``'s signal, with whether its notify is ordered after the
    wait (``is_after(task, op order)``). An op whose instances depend on data is skipped when it
    is after the wait -- what lands only once the wait passed cannot change what it sees -- and
    raises Uncountable otherwise."""
    for notifier, op in notifiers(graph, wait.signal):
        if op.op != "add":
            continue
        after = is_after(notifier.name, op.order)
        try:
            instances = op_instances(graph, notifier, op, env)
        except Uncountable:
            if after:
                continue
            raise
        for d in instances:
            yield d, after


def set_writes(graph: Graph, ctx: CheckContext, signal: str, env: dict[str, int]) -> list[SetWrite]:
    """Every Set instance on ``signal`` that may run (conditions on data assumed to hold)."""

    def build() -> list[SetWrite]:
        out: list[SetWrite] = []
        for task, op in notifiers(graph, signal):
            if op.op != "set":
                continue
            peer_f, index_f = compiled(op.peer), [compiled(i) for i in op.index]
            try:
                for scoped, rank, _block in run(graph, task, op.loops, op.conds, env, lenient=True):
                    peer = _value(peer_f, scoped, "peer")
                    cell = tuple(_value(f, scoped, "cell index") for f in index_f)
                    out.append(SetWrite(task.name, op, rank, peer, cell, is_clear(op)))
            except Uncountable as err:
                raise type(err)(err.reason, task.name, op.span) from None
        return out

    return _cached(ctx, ("protocol.sets", signal, signal_key(graph, signal, env)), build)


def wait_cells(
    graph: Graph, task: Task, wait: SignalOp, env: dict[str, int]
) -> Iterator[tuple[int, tuple[int, ...], dict[str, int], int]]:
    """(rank, cell, scoped environment, block) of every wait instance that may run.

    A cell index that is a value read from data (``wait ready[owner]`` with ``owner`` from a
    table) is taken at every cell of that dimension the wait's conditions admit: the wait is
    right only if each of them gets the count it expects, whatever the table holds."""
    index_f = [compiled(i) for i in wait.index]
    try:
        for at in cell_envs(graph, wait, env):
            for scoped, rank, block in run(graph, task, wait.loops, wait.conds, at, lenient=True):
                yield rank, tuple(_value(f, scoped, "cell index") for f in index_f), scoped, block
    except Uncountable as err:
        raise type(err)(err.reason, task.name, wait.span) from None


# ------------------------------------------------------------------ thresholds


def epoch_name(expected: Expr) -> str | None:
    """The runtime scalar a threshold is written with (the epoch), or None for a constant."""
    syms = free_symbols(expected)
    if any(s.kind == DYNAMIC for s in syms):
        raise DataThreshold("the threshold depends on data")
    scalars = sorted({s.name for s in syms if s.kind == SCALAR})
    if len(scalars) > 1:
        raise Unchecked(f"the threshold involves several runtime scalars ({', '.join(scalars)})")
    return scalars[0] if scalars else None


def threshold(expected: Expr, scoped: dict[str, int], epoch: str | None, e: int) -> int:
    env = dict(scoped)
    if epoch is not None:
        env[epoch] = e
    return evaluate_or_raise(expected, env, "threshold")


def cell_text(signal: str, cell: tuple[int, ...]) -> str:
    return f"{signal}[{', '.join(map(str, cell))}]"


def expr_text(expr: Expr | None) -> str:
    text = str(expr)
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(text) - 1:
                return text
        return text[1:-1]
    return text
