"""What producers emit and what consumers keep, per request (runtime scalar values).

A producer *emits* a valid extent when it stores a tile marked ``valid(x, n)`` or
``fillpad(x, n, pad)``: per row, only the first ``n`` columns carry data. A consumer that
reads a prefix ``X[..., a:b]`` of such a tensor keeps ``b`` columns: a *capacity* (a packed
row count). Both are bounded at every request of the scalar space with :func:`vbounds`, with
the producer's and consumer's block and loop ranges (narrowed by enclosing ``if``s such as
``block < num_tokens``).

:func:`emitted_bound` is the symbolic twin of :func:`emissions` for one tensor: the same
store facts, block/loop ranges and narrowing, bounded with :func:`sbounds` instead of
:func:`vbounds`, so the result is a closed form over runtime scalars, parameters and
constants (``emitted(T)`` in the language; ``derived.py``) that the generated host guard can
evaluate per request and that equals the count C401 computes at every request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from lowering.checks.extents import SInterval, bind_loops, narrow, nonempty, sbounds, snarrow, vbounds
from lowering.checks.index import accesses_of
from lowering.checks.request_space import ScalarSpace
from lowering.checks.request_space_cache import space_at
from lowering.checks.validity import facts_for
from lowering.checks.validity_facts import StoreFact, TaskFacts
from lowering.ir import Access, Graph, Loop, Task
from lowering.symbolic import Const, EvalError, Expr, Sym, binop, difference, free_symbols


@dataclass
class Emission:
    store: StoreFact
    producer: Task
    count: np.ndarray  # upper bound of valid columns per row, per request
    end: np.ndarray  # upper bound of the last valid column + 1
    width: np.ndarray  # columns of the stored region (the producer-side capacity)
    runs: np.ndarray  # the store executes for this request


@dataclass
class Cut:
    """A consumer read of an emitted tensor: it keeps columns [.., stop) of each row (the whole
    row, or a packed prefix such as ``cmp_indices[t, 0:PREFILL_SPARSE_PAD - WIN]``)."""

    access: Access
    consumer: Task
    emission: Emission
    stop: np.ndarray  # the furthest column (+1) the consumer reads, over its blocks/iterations
    truncates: np.ndarray  # per request (before guards)


def task_env(graph: Graph, task: Task, point: Mapping[str, int], space: ScalarSpace | Mapping) -> dict:
    """The bounds environment of ``task`` at ``point``: the runtime scalars per request of
    ``space`` (or as given, e.g. one (lo, hi) interval each), block and rank as intervals."""
    blocks = int(vbounds(task.grid, point)[1])
    nranks = int(vbounds(graph.ranks, point)[1])
    env: dict = {**point, **(space.values if isinstance(space, ScalarSpace) else space)}
    env["block"] = (0, max(blocks - 1, 0))
    env["rank"] = (0, max(nranks - 1, 0))
    env["nranks"] = nranks
    return env


def _full(v, size: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(v), (size,))


def emissions(graph: Graph, ctx, point: Mapping[str, int], box: Mapping | None = None) -> list[Emission]:
    """The marked stores at ``point``, bounded per request of its space; with ``box`` (one
    interval per runtime scalar) one bound over all of it instead: ``count``/``end`` the highest,
    ``width`` the lowest, ``runs`` whether any may run; a bound the box cannot give raises
    EvalError rather than dropping the store."""
    space = space_at(ctx, point) if box is None else box
    size = 1 if box is not None else space.size
    facts = facts_for(ctx, point, "valid")  # exact for every task that stores a valid extent
    out = []
    for task in graph.tasks:
        for sf in facts[task.name].stores:
            if sf.finite is None or not sf.region:
                continue
            env = task_env(graph, task, point, space)
            try:
                runs = bind_loops(env, sf.loops)
                narrow(env, sf.conds)
                runs = runs & nonempty(env, ["block", *(lp.var for lp in sf.loops)])
                last = sf.region[-1]
                least, count = vbounds(sf.finite, env)
                _, end = vbounds(binop("+", last.start, sf.finite), env)
                width, widest = vbounds(difference(last.stop, last.start), env)
            except EvalError:
                if box is not None:
                    raise
                continue
            if np.all(np.asarray(least) >= np.asarray(widest)):
                continue  # every row is stored whole (a 2-D valid shape that bounds rows only)
            out.append(
                Emission(
                    sf, task, _full(count, size), _full(end, size), _full(width, size), _full(runs, size)
                )
            )
    return out


def cuts(
    graph: Graph, ctx, point: Mapping[str, int], emitted: list[Emission], box: Mapping | None = None
) -> list[Cut]:
    """The reads of emitted tensors, per request; with ``box`` as in :func:`emissions` (``stop``
    then the lowest column any block may stop at, so ``truncates`` may only over-approximate)."""
    space = space_at(ctx, point) if box is None else box
    size = 1 if box is not None else space.size
    out = []
    for em in emitted:
        tensor = graph.tensors[em.store.tensor]
        for task, acc in accesses_of(graph, tensor.name):  # in submission and program order
            if task.name == em.producer.name:
                continue
            if acc.mode != "read" or not acc.region:
                continue
            env = task_env(graph, task, point, space)
            try:
                runs = bind_loops(env, acc.loops)
                narrow(env, acc.conds)
                runs = runs & nonempty(env, ["block", *(lp.var for lp in acc.loops)])
                least, stop = vbounds(acc.region[-1].stop, env)
            except EvalError:
                if box is not None:
                    raise
                continue
            stop = _full(stop if box is None else least, size)
            truncates = em.runs & _full(runs, size) & (em.end > stop)
            out.append(Cut(acc, task, em, stop, truncates))
    return out


def _task_senv(graph: Graph, task: Task) -> dict[str, SInterval]:
    last = binop("-", graph.ranks, Const(1))
    return {
        "block": (Const(0), binop("-", task.grid, Const(1))),
        "rank": (Const(0), last),
        "nranks": (graph.ranks, graph.ranks),
    }


def _sbind_loops(env: dict[str, SInterval], loops: Sequence[Loop], positive: frozenset[str]) -> Expr:
    """:func:`bind_loops` with symbolic ends; returns the condition that every loop runs."""
    runs: Expr = Const(1)
    for loop in loops:
        lo, _ = sbounds(loop.start, env, positive)
        _, hi = sbounds(loop.stop, env, positive)
        last = binop("-", hi, Const(1))
        runs = binop("*", runs, binop("<=", lo, last))
        env[loop.var] = (lo, lo if last == lo else binop("max", last, lo))
    return runs


def emitted_bound(
    graph: Graph, facts: Mapping[str, TaskFacts], tensor: str, positive: frozenset[str] = frozenset()
) -> Expr | None:
    """The most valid columns per row that the producers of ``tensor`` store for one request,
    as an expression of the runtime scalars, parameters and constants: per marked store
    (``valid``/``fillpad``), the upper bound of its extent over the blocks and iterations that
    run (narrowed by enclosing ``if``s), times the condition that any runs; the max over
    stores. None when no task declares what it emits into ``tensor``. ``positive``: the
    parameters and constants positive at every admissible point (see :func:`sbounds`).
    Raises EvalError when an extent cannot be bounded in closed form."""
    forms: list[Expr] = []
    for task in graph.tasks:
        for sf in facts.get(task.name, TaskFacts()).stores:
            if sf.tensor != tensor or sf.finite is None or not sf.region:
                continue
            env = _task_senv(graph, task)
            runs = _sbind_loops(env, sf.loops, positive)
            snarrow(env, sf.conds, positive)
            for name in ("block", *(lp.var for lp in sf.loops)):
                lo, hi = env[name]
                runs = binop("*", runs, binop("<=", lo, hi))
            _, count = sbounds(sf.finite, env, positive)
            form = binop("*", runs, count)
            if form not in forms:
                forms.append(form)
    if not forms:
        return None
    out = forms[0]
    for f in forms[1:]:
        out = binop("max", out, f)
    return out


def emitted_counts(graph: Graph, ctx, point: Mapping[str, int], tensor: str) -> np.ndarray | None:
    """What C401 computes for ``tensor`` at every request of ``point``: the most valid columns
    per row over its stores (a store that does not run counts 0); None when nothing is
    declared. :func:`emitted_bound` evaluates to the same numbers."""
    space = space_at(ctx, point)
    found = [em for em in emissions(graph, ctx, point) if em.store.tensor == tensor]
    if not found:
        return None
    out = np.where(found[0].runs, found[0].count, 0)
    for em in found[1:]:
        out = np.maximum(out, np.where(em.runs, em.count, 0))
    return np.broadcast_to(out, (space.size,))


def constants(graph: Graph, exprs) -> set[str]:
    """Constants and parameters the expressions name, with constants expanded to their
    definitions (``CMP_COLS`` -> ``PREFILL_SPARSE_PAD``, ``WIN``, ``IDX_TOPK``)."""
    out: set[str] = set()
    stack: list[Expr] = [e for e in exprs if e is not None]
    while stack:
        for s in free_symbols(stack.pop()):
            if not isinstance(s, Sym) or s.kind not in ("const", "param") or s.name in out:
                continue
            out.add(s.name)
            c = graph.consts.get(s.name)
            if c is not None:
                stack.append(c.expr)
    ranged = {p.name for p in graph.params.values() if p.domain is not None}
    return out - ranged
