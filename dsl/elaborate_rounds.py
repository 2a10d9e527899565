"""``after prev(t)``: order a task after task ``t``'s instance of the previous round.

A layer runs round after round, and the runtime orders round r + 1's tasks after round r's
only where a tensor edge does (docs/runtime-semantics.md §3: the tensor map lives across
submissions): a round can overtake the previous one wherever nothing does. ``prev(t)`` states
the order explicitly, and is lowered to the runtime's own means, an *ordering token* (the idiom
of the runtime's host-level ``_ord`` tensor, docs/runtime-semantics.md §7.6): a one-element
``i32`` scratch per ordered task, which block 0 of ``t`` increments (a read-modify-write, so
``t`` of each round also follows ``t`` of the round before) and the waiting task reads (an
anchor read). The tensor map then gives the edge ``t`` (round r) -> task (round r + 1). When
``t`` comes before the task in the layer, the read also orders the task after ``t`` of its own
round (the token's latest writer). The token is ordinary data: every target emits it, and every
rule sees its edges.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from dsl import ast
from dsl.elaborate_body import BodyElaborator
from dsl.elaborate_exprs import LayerNames
from lowering import ir
from lowering.source import Diagnostic, Span
from lowering.symbolic import Const

TOKEN_PREFIX = "round_token_"


def token_name(task: ir.Task, taken: dict) -> str:
    """The token tensor of ``task``: ``round_token_meta``, ``dispatch.round_token_mm_3``."""
    prefix, _, base = task.name.rpartition(".")
    name = f"{prefix + '.' if prefix else ''}{TOKEN_PREFIX}{re.sub(r'[^A-Za-z0-9_]', '_', base).strip('_')}"
    while name in taken and taken[name].kind != "scratch":
        name += "_"
    return name


def order_after_previous_round(
    tasks: list[ir.Task],
    tensors: dict[str, ir.Tensor],
    pairs: list[tuple[str, str, Span]],
    nranks,
    report: Callable[[Diagnostic], None],
) -> None:
    """Lower every (consumer, producer, span of ``prev(...)``) in place: the producer's token
    tensor and increment, the consumer's anchor read."""
    index = {t.name: i for i, t in enumerate(tasks)}
    for consumer, producer, span in pairs:
        name = token_name(tasks[index[producer]], tensors)
        if name not in tensors:
            tensors[name] = ir.Tensor(name, "i32", (Const(1), Const(1)), (1, 1), "scratch", False, span)
            tasks[index[producer]] = _append(
                tasks[index[producer]], _increment(span), tensors[name], nranks, report
            )
        if consumer != producer:
            tasks[index[consumer]] = _append(
                tasks[index[consumer]], _anchor(span), tensors[name], nranks, report
            )


_LOCAL = "token"  # the token's name inside the appended statements


def _cell(span: Span) -> ast.Access:
    zero = ast.IntLit(span, 0)
    return ast.Access(span, _LOCAL, span, (zero, zero))


def _increment(span: Span) -> tuple[ast.Stmt, ...]:
    """``if block == 0 { token[0, 0] = read(token[0, 0]) + 1 }``"""
    read = ast.Call(span, "read", (_cell(span),), ())
    store = ast.Store(span, _cell(span), ast.Binary(span, "+", read, ast.IntLit(span, 1)))
    first = ast.Binary(span, "==", ast.Name(span, "block"), ast.IntLit(span, 0))
    return (ast.If(span, first, (store,), ()),)


def _anchor(span: Span) -> tuple[ast.Stmt, ...]:
    """``read(token[0, 0])``"""
    return (ast.ExprStmt(span, ast.Call(span, "read", (_cell(span),), ())),)


def _append(task: ir.Task, stmts, token: ir.Tensor, nranks, report) -> ir.Task:
    """``task`` with ``stmts`` elaborated and run after its body (their accesses renumbered)."""
    names = LayerNames(ints={}, tensors={_LOCAL: token}, scalars={}, nranks=nranks)
    result = BodyElaborator(names, report).run(stmts)
    last = max((x.order for x in (*task.accesses, *task.signals, *task.barriers)), default=0)
    accesses = tuple(dataclasses.replace(a, order=a.order + last, name="") for a in result.accesses)
    return dataclasses.replace(
        task,
        body=task.body + tuple(result.body),
        accesses=task.accesses + accesses,
        ops=task.ops | frozenset(result.ops),
    )
