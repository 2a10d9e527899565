"""Rebuilding IR task bodies with a function applied to every value (bottom-up) or to every
statement that holds no statements."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from lowering import body as ir_body

VALUE_TYPES = (
    ir_body.IntV,
    ir_body.FloatV,
    ir_body.DtypeV,
    ir_body.ListV,
    ir_body.LocalV,
    ir_body.LoadV,
    ir_body.BinV,
    ir_body.CallV,
)


def map_value(value, fn: Callable):
    if isinstance(value, ir_body.BinV):
        value = dataclasses.replace(value, a=map_value(value.a, fn), b=map_value(value.b, fn))
    elif isinstance(value, ir_body.CallV):
        args = tuple(map_value(a, fn) for a in value.args)
        attrs = tuple((k, map_value(v, fn)) for k, v in value.attrs)
        value = dataclasses.replace(value, args=args, attrs=attrs)
    return fn(value)


def map_stmts(
    stmts: tuple, fn: Callable, on_loop: Callable | None = None, on_stmt: Callable | None = None
) -> tuple:
    """Apply ``fn`` to every value; ``on_loop(for_stmt, entering)`` brackets loop bodies and
    ``on_stmt(stmt)`` is called before the values of each statement are mapped."""
    out = []
    for s in stmts:
        if on_stmt:
            on_stmt(s)
        if isinstance(s, ir_body.ForS):
            if on_loop:
                on_loop(s, True)
            s = dataclasses.replace(s, body=map_stmts(s.body, fn, on_loop, on_stmt))
            if on_loop:
                on_loop(s, False)
        elif isinstance(s, ir_body.IfS):
            s = dataclasses.replace(
                s,
                cond=map_value(s.cond, fn),
                then=map_stmts(s.then, fn, on_loop, on_stmt),
                orelse=map_stmts(s.orelse, fn, on_loop, on_stmt),
            )
        elif hasattr(s, "value") and isinstance(s.value, VALUE_TYPES):
            s = dataclasses.replace(s, value=map_value(s.value, fn))
        out.append(s)
    return tuple(out)


def map_leaf_stmts(stmts: tuple, fn: Callable) -> tuple:
    """The statements with every one that holds no statements replaced by ``fn(stmt)``; loops
    and branches are rebuilt around what it returns (their conditions and bounds unchanged)."""
    out = []
    for s in stmts:
        if isinstance(s, ir_body.ForS):
            s = dataclasses.replace(s, body=map_leaf_stmts(s.body, fn))
        elif isinstance(s, ir_body.IfS):
            s = dataclasses.replace(s, then=map_leaf_stmts(s.then, fn), orelse=map_leaf_stmts(s.orelse, fn))
        else:
            s = fn(s)
        out.append(s)
    return tuple(out)
