"""The one enumerator of concrete executions of an op: ranks x blocks x loop iterations.

Every rank runs the same graph (rank symmetry), so a notify on a peer is the local task of
the same name. At one parameter point, :func:`run` yields every execution of an op (a
signal op, a store) whose conditions hold, evaluating loop bounds and conditions exactly.
An execution that depends on data raises :class:`NotCountable`, or, ``lenient``, is assumed
to happen. The handshake rules read notify and wait instances through :func:`notify_counts`
and :func:`waited_cells`; the protocol rules build their counting model on :func:`run`
(``lowering.checks.protocol.counting``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from lowering.checks.fasteval import Compiled, compiled
from lowering.checks.index import notifiers
from lowering.ir import Condition, Graph, Loop, SignalOp, Task
from lowering.source import Span
from lowering.symbolic import DYNAMIC, SCALAR, EvalError, Expr, Sym, evaluate, free_symbols

MAX_INSTANCES = 400_000


class NotCountable(Exception):
    """The executions depend on data or runtime values (or are too many to enumerate);
    ``span`` is the op responsible and ``task`` its task, when known."""

    def __init__(self, reason: str, task: str | None = None, span: Span | None = None):
        super().__init__(reason)
        self.reason = reason
        self.task = task
        self.span = span


class ScalarDependent(NotCountable):
    """The executions depend on a runtime scalar argument (``tp_rank``, a layer index passed
    as ``pl.Scalar``), not on data read at run time: a fact the layer's caller fixes, which
    the count cannot take from the graph (rules that need the count skip the op)."""


def _not_countable(reason: str, exprs, env: dict[str, int]) -> NotCountable:
    """``NotCountable(reason)``, or ``ScalarDependent`` when what is unbound in ``env`` is only
    runtime scalar arguments."""
    unbound = {s for e in exprs if e is not None for s in free_symbols(e) if s.name not in env}
    if unbound and all(s.kind == SCALAR for s in unbound):
        names = ", ".join(sorted(s.name for s in unbound))
        return ScalarDependent(reason.replace("depends on data", f"depends on the runtime scalar {names}"))
    return NotCountable(reason)


_UNSET = object()


def _prepared(loops: tuple[Loop, ...]) -> list[tuple[Loop, Compiled, Compiled, Compiled]]:
    return [(loop, compiled(loop.start), compiled(loop.stop), compiled(loop.step)) for loop in loops]


def _loops(
    loops: list[tuple[Loop, Compiled, Compiled, Compiled]],
    env: dict[str, int],
    budget: list[int],
    lenient: bool,
    depth: int = 0,
) -> Iterator[dict[str, int]]:
    """``env`` with the loop variables bound, once per iteration. ``env`` is updated in place
    (and restored when the loops are done): each yielded environment is valid until the next."""
    if depth == len(loops):
        budget[0] -= 1
        if budget[0] < 0:
            raise NotCountable("too many instances to enumerate")
        yield env
        return
    loop, start_f, stop_f, step_f = loops[depth]
    try:
        start, stop, step = start_f(env), stop_f(env), step_f(env)
    except EvalError:
        if not lenient:
            raise _not_countable(
                f"the trip count of loop '{loop.var}' depends on data",
                (loop.start, loop.stop, loop.step),
                env,
            ) from None
        yield from _loops(loops, env, budget, lenient, depth + 1)  # may run: one iteration, var unbound
        return
    saved = env.get(loop.var, _UNSET)
    try:
        for v in range(start, stop, max(step, 1)):
            env[loop.var] = v
            yield from _loops(loops, env, budget, lenient, depth + 1)
    finally:
        if saved is _UNSET:
            env.pop(loop.var, None)
        else:
            env[loop.var] = saved


def _holds(conds: list[tuple[Condition, Compiled]], env: dict[str, int], lenient: bool) -> bool:
    for c, holds in conds:
        try:
            if not holds(env):
                return False
        except EvalError:
            if not lenient:
                raise _not_countable(
                    f"the condition on line {c.span.line} depends on data", (c.expr,), env
                ) from None
    return True


def _executions(
    graph: Graph,
    task: Task,
    loops: tuple[Loop, ...],
    conds: tuple[Condition, ...],
    env: dict[str, int],
    lenient: bool,
    ignore_predicate: bool,
    budget: int,
) -> Iterator[tuple[Iterator[dict[str, int]], int, int]]:
    """Per (rank, block): the iterator of its executions whose conditions hold."""
    if task.predicate is not None and not lenient and not ignore_predicate:
        raise NotCountable(
            f"task {task.name} runs only when its `when` predicate on {task.predicate.tensor} holds"
        )
    nranks = evaluate(graph.ranks, env)
    left = [budget]
    base = {**env, "nranks": nranks}
    prepared = _prepared(loops)
    tests = [(c, compiled(c.expr)) for c in conds]
    for rank in range(nranks):
        base["rank"] = rank
        for block in range(evaluate(task.grid, env)):
            base["block"] = block
            yield (s for s in _loops(prepared, base, left, lenient) if _holds(tests, s, lenient)), rank, block


def run(
    graph: Graph,
    task: Task,
    loops: tuple[Loop, ...],
    conds: tuple[Condition, ...],
    env: dict[str, int],
    lenient: bool = False,
    ignore_predicate: bool = False,
    budget: int = MAX_INSTANCES,
) -> Iterator[tuple[dict[str, int], int, int]]:
    """(scoped environment, rank, block) of every execution whose conditions hold.

    ``lenient``: what depends on data is assumed to happen (a condition holds, a loop runs);
    otherwise it raises :class:`NotCountable`. ``ignore_predicate``: count the executions
    of a predicated task as if it runs (the predicate retires every block alike). The scoped
    environment is one dict updated in place: read it before asking for the next execution.
    """
    for executions, rank, block in _executions(
        graph, task, loops, conds, env, lenient, ignore_predicate, budget
    ):
        for scoped in executions:
            yield scoped, rank, block


def executors(
    graph: Graph,
    task: Task,
    loops: tuple[Loop, ...],
    conds: tuple[Condition, ...],
    env: dict[str, int],
    lenient: bool = False,
    budget: int = MAX_INSTANCES,
) -> set[tuple[int, int]]:
    """The (rank, block) pairs that run an op at least once (stops at each one's first)."""
    out: set[tuple[int, int]] = set()
    for executions, rank, block in _executions(graph, task, loops, conds, env, lenient, False, budget):
        if next(executions, None) is not None:
            out.add((rank, block))
    return out


# ---------------------------------------------------------------- the handshake rules' views


def _cell(index: list[Compiled], env: dict[str, int]) -> tuple[int, ...]:
    try:
        return tuple(f(env) for f in index)
    except EvalError as err:
        raise NotCountable(f"the cell index depends on data ({err})") from None


_ENV_KEYS: dict[int, tuple[dict[str, int], dict[str, int], tuple]] = {}  # id -> (env, its copy, key)


def env_key(env: dict[str, int]) -> tuple:
    """``env`` as a hashable key, ``tuple(sorted(env.items()))``. A point's environment holds
    every constant of the model (hundreds in a full model), and the rules look up cached
    instances tens of thousands of times with the same few dicts: the key of a dict is kept
    with the dict itself (so its id cannot be reused) and a copy of it, and recomputed when the
    dict no longer equals the copy (comparing two dicts is far cheaper than sorting one)."""
    hit = _ENV_KEYS.get(id(env))
    if hit is not None and hit[0] is env and hit[1] == env:
        return hit[2]
    key = tuple(sorted(env.items()))
    if len(_ENV_KEYS) > 4096:
        _ENV_KEYS.clear()
    _ENV_KEYS[id(env)] = (env, dict(env), key)
    return key


def _cached(graph: Graph, kind: str, task: Task, op: SignalOp, env: dict[str, int], build):
    """``build()``, once per (task, op, point) of a graph; NotCountable is cached too."""
    cache = graph.__dict__.setdefault("_signal_instances", {})
    key = (kind, task.name, op.order, env_key(env))
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
    for scoped, rank, _block in run(graph, task, op.loops, op.conds, env, ignore_predicate=True):
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
    for at in cell_envs(graph, op, env):
        for scoped, rank, _block in run(graph, task, op.loops, op.conds, at, ignore_predicate=True):
            out[(rank, _cell(index, scoped))] = op.expected
    return out


def cell_envs(graph: Graph, wait: SignalOp, env: dict[str, int]) -> list[dict[str, int]]:
    """The environments to enumerate ``wait``'s cells in: ``[env]``, or, when one index is a
    value read from data (``wait ready[owner]``, ``owner`` from a table), ``env`` with that
    value bound to every cell of its dimension -- the wait must be right whichever it names."""
    chosen = _data_chosen_cell(graph, wait, env)
    if chosen is None:
        return [env]
    name, extent = chosen
    return [{**env, name: v} for v in range(extent)]


def _data_chosen_cell(graph: Graph, wait: SignalOp, env: dict[str, int]) -> tuple[str, int] | None:
    """(name, extent) when one index of ``wait`` is exactly one value read from data and the
    other indices involve no data: the cells it can name are that dimension's (at ``env``)."""
    tensor = graph.tensors.get(wait.signal)
    found = None
    for i, index in enumerate(wait.index):
        if not any(s.kind == DYNAMIC for s in free_symbols(index)):
            continue
        if found is not None or not isinstance(index, Sym) or tensor is None or i >= len(tensor.shape):
            return None
        try:
            extent = evaluate(tensor.shape[i], env)
        except (EvalError, TypeError):
            return None
        if not 0 < extent <= 4096:
            return None
        found = (index.name, extent)
    return found


def notifiers_of(graph: Graph, signal: str) -> list[tuple[Task, SignalOp]]:
    return list(notifiers(graph, signal))
