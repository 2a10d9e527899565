"""Lark parse tree -> typed AST nodes (``dsl.ast``): the one Transformer of the front end.

``dsl.parser`` drives the grammar (parsing, syntax-error recovery, depth limits) and hands the
parse tree here; every grammar rule has a method of the same name below.
"""

from __future__ import annotations

import re

import lark
from lark import Token, Transformer

from dsl import ast
from dsl.codes import diag
from lowering.source import CompileError, Span

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


def _unquote(s: str) -> str:
    """The text of a string literal: ``\\n``, ``\\t`` and ``\\r`` are control characters,
    any other escaped character stands for itself (``\\"``, ``\\\\``); non-ASCII text
    is kept as written."""
    body = s[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.S)


class ToAst(Transformer):
    """The single place where lark parse trees become AST nodes.

    Every rule method takes ``(meta, children)``. ``_call_userfunc`` calls them directly:
    lark's ``v_args(meta=True)`` builds a fresh wrapper (``functools.update_wrapper``) on
    every node, a fifth of the transform time."""

    def __init__(self, file: str):
        super().__init__(visit_tokens=False)
        self.file = file

    def _call_userfunc(self, tree, new_children=None):
        children = new_children if new_children is not None else tree.children
        method = getattr(type(self), tree.data, None)
        if method is None:
            return self.__default__(tree.data, children, tree.meta)
        try:
            return method(self, tree.meta, children)
        except Exception as err:
            raise lark.exceptions.VisitError(tree.data, tree, err) from err

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.file, 1, 1, 1, 1)
        return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok(self, tok: Token) -> Span:
        return Span(self.file, tok.line, tok.column, tok.end_line, tok.end_column)

    # ---- module and layer
    def start(self, meta, layers):
        return ast.Module(self._span(meta), tuple(layers))

    def layer(self, meta, children):
        name, *rest = children
        params = tuple(c for c in rest if isinstance(c, ast.Param))
        body = tuple(c for c in rest if c is not None and not isinstance(c, ast.Param))
        return ast.Layer(self._span(meta), str(name), params, body)

    def param(self, meta, children):
        name, default, domain = children
        return ast.Param(self._span(meta), str(name), default, domain)

    def range_domain(self, meta, children):
        lo, hi, step = children
        return ast.Domain(self._span(meta), lo=lo, hi=hi, step=step)

    def set_domain(self, meta, children):
        return ast.Domain(self._span(meta), values=tuple(children))

    def const_def(self, meta, children):
        return ast.ConstDef(self._span(meta), str(children[0]), children[1])

    def assert_stmt(self, meta, children):
        cond, msg = children
        return ast.AssertStmt(self._span(meta), cond, _unquote(str(msg)) if msg is not None else None)

    def scalar_decl(self, meta, children):
        name, dtype, domain = children
        return ast.ScalarDecl(self._span(meta), str(name), str(dtype), self._tok(dtype), domain)

    def golden_decl(self, meta, children):
        return ast.GoldenDecl(self._span(meta), _unquote(str(children[0])))

    def reduction_decl(self, meta, children):
        tensor, splits, chunks = children
        return ast.ReductionDecl(self._span(meta), str(tensor), self._tok(tensor), splits, chunks)

    def scalar_def(self, meta, children):
        return ast.ScalarDef(self._span(meta), str(children[0]), children[1])

    def guard_stmt(self, meta, children):
        cond, msg = children
        return ast.GuardStmt(self._span(meta), cond, _unquote(str(msg)) if msg is not None else None)

    def ranks_decl(self, meta, children):
        return ast.RanksDecl(self._span(meta), children[0])

    def tensor_decl(self, meta, children):
        direction, name, (dtype, dtype_span, shape), manual = children
        return ast.TensorDecl(
            self._span(meta), str(direction), str(name), dtype, dtype_span, shape, bool(manual)
        )

    def tensor_type(self, meta, children):
        dtype, *dims = children
        return (str(dtype), self._tok(dtype), tuple(dims))

    def taskid_decl(self, meta, children):
        return ast.TaskIdDecl(self._span(meta), str(children[0]))

    def layer_for(self, meta, children):
        var, kind, (args, _kwargs), body = children
        return ast.LayerFor(self._span(meta), str(var), str(kind), args, body)

    def layer_if(self, meta, children):
        cond, then, orelse = children
        return ast.LayerIf(self._span(meta), cond, then, orelse or ())

    def layer_body(self, meta, children):
        return tuple(children)

    def body(self, meta, children):
        return tuple(children)

    def layer_call(self, meta, children):
        alias, layer, *kwargs = children
        bindings = tuple(k for k in kwargs if k is not None)
        return ast.LayerCall(self._span(meta), str(alias), str(layer), self._tok(layer), bindings)

    def kwarg(self, meta, children):
        return (str(children[0]), children[1], self._tok(children[0]))

    def kwarg_ref(self, meta, children):
        return (str(children[0]), children[1], self._tok(children[0]))

    def dotted_ref(self, meta, children):
        *path, index = children
        return ast.TaskRef(self._span(meta), tuple(str(p) for p in path), index)

    # ---- tasks
    def task_def(self, meta, children):
        name, index, *rest, body = children
        attrs: dict = {"after": ()}
        for c in rest:
            if isinstance(c, tuple) and c and c[0] == "attr":
                _, key, value = c
                if key == "after":
                    attrs["after"] = attrs["after"] + value
                elif key == "core":
                    attrs["core"], attrs["core_span"] = value
                else:
                    attrs[key] = value
        return ast.TaskDef(self._span(meta), str(name), index, body=body, **attrs)

    def attr_spmd(self, meta, children):
        return ("attr", "spmd", children[0])

    def attr_core(self, meta, children):
        return ("attr", "core", (str(children[0]), self._tok(children[0])))

    def attr_after(self, meta, children):
        return ("attr", "after", tuple(children))

    def attr_early(self, meta, children):
        return ("attr", "early_resolve", True)

    def attr_sync(self, meta, children):
        return ("attr", "sync_start", True)

    def attr_manual(self, meta, children):
        return ("attr", "manual", True)

    def attr_when(self, meta, children):
        return ("attr", "predicate", children[0])

    def task_ref(self, meta, children):
        *path, index = children
        return ast.TaskRef(self._span(meta), tuple(str(p) for p in path), index)

    def prev_ref(self, meta, children):
        (ref,) = children
        return ast.TaskRef(self._span(meta), ref.path, ref.index, previous=True)

    # ---- statements
    def let_stmt(self, meta, children):
        return ast.Let(self._span(meta), str(children[0]), children[1])

    def assign_stmt(self, meta, children):
        return ast.Assign(self._span(meta), str(children[0]), children[1])

    def store_stmt(self, meta, children):
        return ast.Store(self._span(meta), children[0], children[1])

    def accum_stmt(self, meta, children):
        target, value, atomic = children
        return ast.Accumulate(self._span(meta), target, value, atomic is not None)

    def for_stmt(self, meta, children):
        var, kind, (args, kwargs), body = children
        return ast.For(self._span(meta), str(var), str(kind), args, kwargs, body)

    def if_stmt(self, meta, children):
        cond, then, orelse = children
        return ast.If(self._span(meta), cond, then, orelse or ())

    def else_block(self, meta, children):
        return children[0]

    def else_if(self, meta, children):
        return (children[0],)

    def remote_stmt(self, meta, children):
        target, peer, op, value = children
        return ast.RemoteStore(self._span(meta), target, peer, value, str(op) == "+=")

    def notify_stmt(self, meta, children):
        cell, peer, op, value = children
        return ast.Notify(self._span(meta), cell, peer, "add" if str(op) == "+=" else "set", value)

    def wait_stmt(self, meta, children):
        cell, cmp, expected = children
        return ast.Wait(self._span(meta), cell, "ge" if str(cmp) == ">=" else "eq", expected)

    def barrier_stmt(self, meta, children):
        return ast.Barrier(self._span(meta), children[0] is not None)

    def return_stmt(self, meta, children):
        return ast.Return(self._span(meta), children[0])

    def reduce_sum(self, meta, children):
        var, (args, _kwargs), body = children
        return ast.ReduceSum(self._span(meta), str(var), args, body)

    def expr_stmt(self, meta, children):
        return ast.ExprStmt(self._span(meta), children[0])

    # ---- expressions
    def access(self, meta, children):
        name, *subs = children
        return ast.Access(self._span(meta), str(name), self._tok(name), tuple(subs))

    def slice(self, meta, children):
        start, stop, step = children
        return ast.Slice(self._span(meta), start, stop, step)

    def _chain(self, meta, children, op):
        out = children[0]
        for rhs in children[1:]:
            out = ast.Binary(self._span(meta), op, out, rhs)
        return out

    def or_chain(self, meta, children):
        return self._chain(meta, children, "or")

    def and_chain(self, meta, children):
        return self._chain(meta, children, "and")

    def not_op(self, meta, children):
        return ast.Unary(self._span(meta), "not", children[0])

    def assign_op(self, meta, children):
        return str(children[0])

    wait_cmp = cmp_op = add_op = mul_op = assign_op

    def compare(self, meta, children):
        if len(children) == 1:
            return children[0]
        left, op, right = children
        return ast.Binary(self._span(meta), str(op), left, right)

    def arith(self, meta, children):
        out = children[0]
        for i in range(1, len(children), 2):
            op, rhs = children[i], children[i + 1]
            span = Span(self.file, out.span.line, out.span.col, rhs.span.end_line, rhs.span.end_col)
            out = ast.Binary(span, str(op), out, rhs)
        return out

    def neg(self, meta, children):
        return ast.Unary(self._span(meta), "-", children[0])

    def int_lit(self, meta, children):
        text = str(children[0])
        span = self._tok(children[0])
        try:
            value = int(text, 16) if text.startswith("0x") else int(text)
        except ValueError:  # past Python's digit limit for int(): no layer needs such a number
            raise CompileError(
                [diag("E101", span, f"integer literal of {len(text)} digits is too large")]
            ) from None
        return ast.IntLit(span, value)

    def float_lit(self, meta, children):
        return ast.FloatLit(self._tok(children[0]), float(str(children[0])), str(children[0]))

    def inf_lit(self, meta, children):
        return ast.FloatLit(self._span(meta), float("inf"), "inf")

    def true_lit(self, meta, children):
        return ast.BoolLit(self._span(meta), True)

    def false_lit(self, meta, children):
        return ast.BoolLit(self._span(meta), False)

    def list_lit(self, meta, children):
        return ast.ListLit(self._span(meta), tuple(c for c in children if c is not None))

    def name(self, meta, children):
        return ast.Name(self._tok(children[0]), str(children[0]))

    def call(self, meta, children):
        name, args = children
        pos, kw = args if args is not None else ((), ())
        return ast.Call(self._span(meta), str(name), pos, kw)

    def call_args(self, meta, children):
        pos = tuple(c for c in children if c is not None and not isinstance(c, tuple))
        kw = tuple(c for c in children if isinstance(c, tuple))
        return pos, kw

    def kwarg_arg(self, meta, children):
        return (str(children[0]), children[1])
