"""Admissible parameter points, shared by rules that must hold for every admissible value."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lowering.checks.rule import CheckContext
from lowering.ir import Graph, SignalOp, Task
from lowering.symbolic import PARAM, Bin, EvalError, Expr, Sym, binop, evaluate, free_symbols

CONST = "const"  # Sym kind of a layer constant (dsl.elaborate_ints)


def admissible_envs(graph: Graph, ctx: CheckContext) -> list[dict[str, int]]:
    """Every admissible parameter point (cached per graph); the default point if none is."""
    envs = ctx.cache.get("admissible_envs")
    if envs is None:
        envs = list(graph.admissible_points()) or [graph.env()]
        ctx.cache["admissible_envs"] = envs
    return envs


def own_point_first(graph: Graph, limit: int = 4096) -> Iterator[dict[str, int]]:
    """The graph's own point (defaults and ``--set``), then every other admissible point of its
    structure class: a rule that reports each site once reports it where the user compiled."""
    own = graph.env()
    yield own
    key = tuple(sorted(own.items()))
    for env in graph.admissible_points(limit=limit):
        if tuple(sorted(env.items())) != key:
            yield env


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


# ---------------------------------------------------------------- probe points

MAX_PROBES = 8  # parameter points per structure class besides the graph's own (docs/lint.md)

_SWITCHES = ("==", "!=", "<", "<=", ">", ">=", "and", "or")
_POINT_KINDS = (PARAM, CONST)


@dataclass(frozen=True)
class Probes:
    """Where the rules that judge a graph at its own point also have to look.

    ``points`` are parameter points of the graph's structure class, other than its own, one
    per *piece* it has to visit; ``pieces`` is how many pieces the class has and ``points_total``
    how many admissible points; ``bounded`` when ``points`` leaves some piece out (the cap).
    """

    points: list[dict[str, int]]
    pieces: int
    points_total: int
    bounded: bool


def graph_exprs(graph: Graph) -> Iterator[Expr]:
    """Every integer expression of the graph a rule may evaluate."""
    yield graph.ranks
    for tensor in graph.tensors.values():
        yield from tensor.shape
    for task in graph.tasks:
        yield task.grid
        if task.predicate is not None:
            yield from task.predicate.index
            yield task.predicate.value
        for acc in task.accesses:
            for r in acc.region:
                yield from (r.start, r.stop, r.step)
            yield from _scope_exprs(acc.loops, acc.conds)
            if acc.peer is not None:
                yield acc.peer
        for op in task.signals:
            yield from op.index
            yield from _scope_exprs(op.loops, op.conds)
            yield from (e for e in (op.peer, op.value, op.expected) if e is not None)
        for b in task.barriers:
            yield from _scope_exprs(b.loops, b.conds)


def _scope_exprs(loops, conds) -> Iterator[Expr]:
    for loop in loops:
        yield from (loop.start, loop.stop, loop.step)
    for c in conds:
        yield c.expr


class _Switches:
    """The parameter-only comparisons and ``min``/``max`` of a graph (the *switches*), and the
    ranged parameters that also enter its arithmetic (the *scales*)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.ranged = {p.name for p in graph.params.values() if p.domain is not None}
        self.atoms: dict[Expr, None] = {}
        self.scales: set[str] = set()
        self._only: dict[Expr, bool] = {}
        self._visited: set[tuple[int, bool]] = set()
        for expr in graph_exprs(graph):
            self._walk(expr, True)
        for expr, _value in graph.structure:
            self._walk(expr, True)

    def _point_only(self, expr: Expr) -> bool:
        hit = self._only.get(expr)
        if hit is None:
            hit = self._only[expr] = all(s.kind in _POINT_KINDS for s in free_symbols(expr))
        return hit

    def _walk(self, expr: Expr, arith: bool) -> None:
        key = (id(expr), arith)
        if key in self._visited:
            return
        self._visited.add(key)
        if isinstance(expr, Sym):
            if expr.kind == PARAM and arith and expr.name in self.ranged:
                self.scales.add(expr.name)
            elif expr.kind == CONST and expr.name in self.graph.consts:
                self._walk(self.graph.consts[expr.name].expr, arith)
            return
        if not isinstance(expr, Bin):
            return
        if expr.op in _SWITCHES and self._point_only(expr):
            self.atoms[expr] = None
            arith = False
        elif expr.op in ("min", "max") and self._point_only(expr):
            self.atoms[binop("<=", expr.a, expr.b)] = None
        self._walk(expr.a, arith)
        self._walk(expr.b, arith)

    def piece(self, env: dict[str, int]) -> tuple:
        out = []
        for atom in self.atoms:
            try:
                out.append(evaluate(atom, env))
            except EvalError:
                out.append(None)
        return tuple(out)


def probe_points(graph: Graph, limit: int = MAX_PROBES) -> Probes:
    """The parameter points of ``graph``'s structure class a point rule must also be run at.

    Two points give every such rule the same answer when every parameter-only comparison and
    ``min``/``max`` choice of the graph (a *switch*: ``S > 1``, ``min(T, 256)``, a condition on
    ``OVERLAP``) takes the same value at both and every ranged parameter that enters the graph's
    arithmetic (a *scale*: a grid ``T / 16``, a stride) has the same value: they are one
    *piece*. A parameter that only appears in switches (a flag, a layer index compared with a
    constant) is then covered by one point per branch. When the pieces are more than ``limit``,
    the points are, in this order: one per distinct setting of the switches, then each scale
    at the lowest and at the highest value its class admits, then the all-lowest and
    all-highest corners -- each the admissible point of that kind closest to the graph's own,
    the first ``limit`` of them (``bounded``). Overlaps, splits and counts that grow or shrink
    with a scale between two switches are caught at the extremes.
    """
    own = graph.env()
    envs = [e for e in graph.admissible_points() if not _same_params(graph, e, own)]
    if not envs:
        return Probes([], 1, 1, False)
    switches = _Switches(graph)
    scales = sorted(switches.scales)
    order = closeness(graph, own)
    by_piece: dict[tuple, list[dict[str, int]]] = {}
    for env in envs:
        key = (switches.piece(env), tuple(env[n] for n in scales))
        by_piece.setdefault(key, []).append(env)
    own_key = (switches.piece(own), tuple(own[n] for n in scales))
    pieces = [min(group, key=order) for key, group in by_piece.items() if key != own_key]
    total = len(pieces) + 1
    if len(pieces) <= limit:
        return Probes(sorted(pieces, key=order), total, len(envs) + 1, False)
    chosen: list[dict[str, int]] = []
    per_switch: dict[tuple, dict[str, int]] = {}
    for (setting, _scale), group in by_piece.items():
        best = min(group, key=order)
        if setting not in per_switch or order(best) < order(per_switch[setting]):
            per_switch[setting] = best
    chosen += sorted((e for s, e in per_switch.items() if s != own_key[0]), key=order)
    for name in scales:
        lo = min(e[name] for e in envs)
        hi = max(e[name] for e in envs)
        chosen.append(min((e for e in envs if e[name] == lo), key=order))
        chosen.append(min((e for e in envs if e[name] == hi), key=order))
    if scales:
        chosen.append(min(envs, key=lambda e: (tuple(e[n] for n in scales), order(e))))
        chosen.append(min(envs, key=lambda e: (tuple(-e[n] for n in scales), order(e))))
    unique: list[dict[str, int]] = []
    seen: set[tuple] = set()
    for env in chosen:
        k = tuple(sorted(env.items()))
        if k not in seen:
            seen.add(k)
            unique.append(env)
    return Probes(unique[:limit], total, len(envs) + 1, True)


def _same_params(graph: Graph, a: dict[str, int], b: dict[str, int]) -> bool:
    return all(a.get(n) == b.get(n) for n in graph.params)


def closeness(graph: Graph, own: dict[str, int]):
    """Sort key of points: fewest parameters that differ from ``own``, then nearest in domain order."""
    ranged = [p for p in graph.params.values() if p.domain is not None]
    index = {p.name: {v: i for i, v in enumerate(p.domain)} for p in ranged if p.domain.size <= 1 << 16}

    def key(env: dict[str, int]) -> tuple[int, int]:
        differ = 0
        far = 0
        for p in ranged:
            if env[p.name] != own[p.name]:
                differ += 1
                pos = index.get(p.name)
                far += (
                    abs(pos[env[p.name]] - pos.get(own[p.name], 0)) if pos else abs(env[p.name] - own[p.name])
                )
        return differ, far

    return key
