"""``topk(row, k, valid=n)`` -> sort32 plus exactly the mrgsort stages ``n`` requires.

sort32 leaves sorted runs of 32 records and every ``mrgsort(block_len)`` merges 4 runs
(``block_len`` counts columns, two per record), so after m stages a run holds 32 * 4**m
records. The pass takes the largest ``n`` over every admissible parameter value (and the
ranges of runtime scalars) and picks the smallest m whose first run holds all of them and
the k selected, so the chain is right for the whole range by construction -- the S301 bug
(two stages while up to 1024 candidates are finite) cannot be written. Columns at or past
``n`` are masked to -inf and the row is padded to a whole number of runs.

A range that the row itself cannot hold (``n`` may exceed the row width) is an error
naming the parameter values (E310).
"""

from __future__ import annotations

import dataclasses

from lowering import body as ir_body
from lowering.ir import Graph, Loop, Task
from lowering.passes.walk import map_stmts
from lowering.regions import loop_env, task_env
from lowering.source import Diagnostic, Severity
from lowering.symbolic import Const, EvalError, bounds, evaluate


class _NotBounded(Exception):
    pass


def run_length(stages: int) -> int:
    """Records in the first sorted run after sort32 and ``stages`` merge stages."""
    return 32 * 4**stages


def stages_for(candidates: int) -> int:
    m = 0
    while run_length(m) < candidates:
        m += 1
    return m


def _max_over_points(graph: Graph, task: Task, expr, loops) -> tuple[int, dict]:
    best, where = None, {}
    for point in graph.admissible_points():
        env = task_env(
            point, evaluate(task.grid, point), evaluate(graph.ranks, point), graph.scalar_ranges(point)
        )
        scoped = loop_env(loops, env)
        if scoped is None:
            continue
        try:
            _, hi = bounds(expr, scoped)
        except EvalError as err:
            raise _NotBounded(str(err)) from None
        if best is None or hi > best:
            best, where = hi, point
    if best is None:
        raise _NotBounded("no admissible point")
    return best, where


class _Rewriter:
    """Rewrites the topk calls of one task, tracking the loops and statement around each."""

    def __init__(self, graph: Graph, task: Task, errors: list[Diagnostic]):
        self.graph, self.task, self.errors = graph, task, errors
        self.loops: list[Loop] = []
        self.span = task.span
        self.ranged = [p.name for p in graph.params.values() if p.domain is not None]

    def on_loop(self, s: ir_body.ForS, entering: bool) -> None:
        if entering:
            self.loops.append(Loop(s.var, s.start, s.stop, s.step, s.kind, s.span))
        else:
            self.loops.pop()

    def on_stmt(self, s) -> None:
        self.span = s.span

    def rewrite(self, v):
        if not (isinstance(v, ir_body.CallV) and v.op == "topk"):
            return v
        row, k = v.args
        attrs = dict(v.attrs)
        width = row.type.shape[1]
        n = attrs["valid"].expr if "valid" in attrs else width
        graph, task = self.graph, self.task
        try:
            k_max, _ = _max_over_points(graph, task, k.expr, tuple(self.loops))
            n_max, point = _max_over_points(graph, task, n, tuple(self.loops))
            w = evaluate(width, graph.env())
        except (_NotBounded, EvalError) as err:
            message = f"topk: valid= must be bounded by parameters or ranged scalars ({err})"
            self.errors.append(Diagnostic("E310", message, self.span))
            return v
        if n_max > w:
            at = ", ".join(f"{name}={point[name]}" for name in self.ranged) or "the current parameters"
            self.errors.append(
                Diagnostic(
                    "E310",
                    f"topk: up to {n_max} candidates can be valid (at {at}) but the row holds {w}",
                    self.span,
                    Severity.ERROR,
                    "widen the row or narrow the parameter range",
                )
            )
            return v
        stages = stages_for(max(n_max, k_max, 1))
        run = run_length(stages)
        padded = -(-w // run) * run
        f32 = ir_body.TileType("f32", (Const(1), Const(padded)))
        pairs_t = ir_body.TileType("f32", (Const(1), Const(2 * padded)))
        masked = ir_body.CallV("mask_tail", (row, ir_body.IntV(n), ir_body.IntV(Const(padded))), (), f32)
        out = ir_body.CallV(
            "sort32", (masked, ir_body.CallV("iota", (ir_body.IntV(Const(padded)),), (), f32)), (), pairs_t
        )
        for m in range(stages):
            out = ir_body.CallV("mrgsort", (out, ir_body.IntV(Const(2 * run_length(m)))), (), pairs_t)
        return ir_body.CallV("topk_pairs", (out, k), (), v.type)


def expand_topk(graph: Graph) -> list[Diagnostic]:
    """Rewrite every ``topk`` in place; returns E310 errors for ranges a row cannot hold."""
    errors: list[Diagnostic] = []
    for i, task in enumerate(graph.tasks):
        if "topk" not in task.ops:
            continue
        r = _Rewriter(graph, task, errors)
        body = map_stmts(task.body, r.rewrite, r.on_loop, r.on_stmt)
        ops = (task.ops - {"topk"}) | {"sort32", "mrgsort", "topk_pairs"}
        graph.tasks[i] = dataclasses.replace(task, body=body, ops=frozenset(ops))
    return errors
