"""Source text -> typed AST: the lark LALR parser plus the one Transformer that builds nodes.

Syntax errors do not stop at the first one: after an error the offending line is replaced
by a neutral one with the same block structure (its braces, each ``{`` opened by ``if 1``),
and the file is parsed again, so one run reports every broken statement (up to 20) without
inventing errors; when that does not help, the line before is neutralised too (a statement
broken at its end, such as ``let x =``, shows up on the next line).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from functools import cache
from pathlib import Path

import lark
from lark import Token, Transformer

from dsl import ast
from dsl.codes import diag
from dsl.limits import MAX_EXPRESSION_DEPTH, MAX_NESTING, MAX_SYNTAX_ERRORS, MAX_TREE_DEPTH
from lowering.perf import paused_gc
from lowering.source import CompileError, Diagnostic, Span

GRAMMAR = Path(__file__).with_name("grammar.lark")

_TOKEN_NAMES = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "COLON": "':'",
    "EQUAL": "'='",
    "DIRECTION": "a tensor direction",
    "$END": "end of file",
}


@cache
def _parser() -> lark.Lark:
    return lark.Lark(
        GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=True,
    )


@cache
def _terminal_names() -> dict[str, str]:
    """How each terminal is shown in "expected ..." hints: its text when it is a literal."""
    out = {}
    for t in _parser().terminals:
        if t.name in _TOKEN_NAMES:
            out[t.name] = _TOKEN_NAMES[t.name]
        elif isinstance(t.pattern, lark.lexer.PatternStr):
            out[t.name] = repr(t.pattern.value)
        else:
            out[t.name] = t.name.lower().replace("_", " ")
    return out


def _describe_expected(expected: set[str]) -> str:
    shown = _terminal_names()
    names = sorted({shown.get(t, _TOKEN_NAMES.get(t, t.lower())) for t in expected})
    if len(names) > 6:
        names = names[:6] + ["..."]
    return ", ".join(names)


def _syntax_diagnostic(err: lark.exceptions.UnexpectedInput, file: str, text: str) -> Diagnostic:
    line, col = max(err.line, 1), max(err.column, 1)
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        ch = err.char or "?"
        return diag("E101", Span(file, line, col, line, col + 1), f"unexpected character {ch!r}")
    if isinstance(err, lark.exceptions.UnexpectedToken):
        tok = err.token
        if tok.type == "$END":
            lines = text.splitlines() or [""]
            line, col = len(lines), len(lines[-1]) + 1
            return diag(
                "E101",
                Span(file, line, col, line, col),
                "unexpected end of file",
                hint=f"expected {_describe_expected(err.expected)}",
            )
        end = col + max(len(str(tok)), 1)
        return diag(
            "E101",
            Span(file, line, col, line, end),
            f"unexpected {str(tok)!r}",
            hint=f"expected {_describe_expected(err.expected)}",
        )
    return diag("E101", Span(file, line, col, line, col + 1), "syntax error")


def _code(line: str) -> str:
    """``line`` with its comment and string literals blanked (same length)."""
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "#":
            out.append(" " * (n - i))
            break
        if ch == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _neutralise_line(lines: list[str], idx: int) -> None:
    """Replace line ``idx`` by text that parses wherever the line stood and keeps the block
    structure: every brace stays, each ``{`` gets a neutral opener in front (``if 1 {``, or
    ``layer _() {`` at the top level), and everything else is blanked; a stray ``}`` at the
    top level is dropped. Parsing the result again finds the next error without a cascade
    of errors caused by the first (an ``else`` still has its ``if`` before it)."""
    depth = 0
    for line in lines[:idx]:
        code = _code(line)
        depth += code.count("{") - code.count("}")
    depth = max(depth, 0)
    parts: list[str] = []
    for ch in _code(lines[idx]):
        if ch == "{":
            parts.append("if 1 {" if depth > 0 else "layer _() {")
            depth += 1
        elif ch == "}" and depth > 0:
            parts.append("}")
            depth -= 1
    lines[idx] = " ".join(parts)


def _check_nesting(text: str, file: str) -> Diagnostic | None:
    depth = 0
    for lineno, line in enumerate(text.split("\n"), 1):
        for col, ch in enumerate(_code(line), 1):
            if ch in "([{":
                depth += 1
                if depth > MAX_NESTING:
                    return diag(
                        "E105",
                        Span(file, lineno, col, lineno, col + 1),
                        f"nesting deeper than {MAX_NESTING} levels",
                        hint="split the expression or block into named parts",
                    )
            elif ch in ")]}":
                depth -= 1
    return None


def parse(text: str, file: str = "<string>") -> ast.Module:
    """Parse a whole source file; raise CompileError with every syntax error found."""
    with paused_gc():  # lark allocates a tree node per token: keep the collector out
        return _parse(text, file)


def _parse(text: str, file: str) -> ast.Module:
    deep = _check_nesting(text, file)
    if deep:
        raise CompileError([deep])
    diagnostics: list[Diagnostic] = []
    lines = text.split("\n")
    neutralised: set[int] = set()
    seen: set[tuple[int, int]] = set()
    tree = None
    for _attempt in range(3 * MAX_SYNTAX_ERRORS):  # bounded: each attempt reparses the file
        if len(diagnostics) >= MAX_SYNTAX_ERRORS:
            break
        try:
            tree = _parser().parse("\n".join(lines))
            break
        except lark.exceptions.UnexpectedInput as err:
            eof = isinstance(err, lark.exceptions.UnexpectedToken) and err.token.type == "$END"
            if eof and diagnostics:
                break  # an end-of-file error after a blanked line is a cascade of the first error
            d = _syntax_diagnostic(err, file, text)
            if isinstance(err, lark.exceptions.UnexpectedToken) and err.token.type == "$END":
                diagnostics.append(d)  # braces are kept balanced, so this one is genuine
                break  # nothing after the end to recover into
            idx = min(max(d.span.line - 1, 0), len(lines) - 1)
            if (d.span.line, d.span.col) in seen or idx in neutralised:
                # Neutralising that line did not help: the statement that is really
                # broken starts earlier (``let x =`` with its value missing, say).
                earlier = [
                    i for i in range(idx - 1, -1, -1) if i not in neutralised and _code(lines[i]).strip()
                ]
                if not earlier:
                    break
                idx = earlier[0]
            else:
                seen.add((d.span.line, d.span.col))
                diagnostics.append(d)
            neutralised.add(idx)
            _neutralise_line(lines, idx)
    if diagnostics:
        raise CompileError(diagnostics)
    if tree is None:  # pragma: no cover - loop always parses or reports
        raise CompileError([diag("E101", Span.whole_file(file), "could not parse the file")])
    deep = _check_tree_depth(tree, file)
    if deep:
        raise CompileError([deep])
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit, 10000))
        module = _ToAst(file).transform(tree)
    except lark.exceptions.VisitError as err:
        if isinstance(err.orig_exc, CompileError):
            raise err.orig_exc from None
        if isinstance(err.orig_exc, RecursionError):
            raise CompileError([diag("E105", Span.whole_file(file), "program nests too deeply")]) from None
        raise
    except RecursionError:
        raise CompileError([diag("E105", Span.whole_file(file), "program nests too deeply")]) from None
    finally:
        sys.setrecursionlimit(limit)
    deep = _check_expression_depth(module, file)
    if deep:
        raise CompileError([deep])
    return module


_EXPRESSION_RULES = frozenset(
    {"neg", "not_op", "arith", "compare", "and_chain", "or_chain", "call", "access", "list_lit", "slice"}
)


def _check_tree_depth(tree: lark.Tree, file: str) -> Diagnostic | None:
    """Refuse a parse tree too deep to transform (``- - - ... 1``), at the start of the
    expression that nests (iterative: the check never runs out of stack)."""
    work: list[tuple[lark.Tree, int, object]] = [(tree, 1, None)]
    while work:
        node, depth, top = work.pop()
        top = (top or node.meta) if node.data in _EXPRESSION_RULES else None
        if depth > MAX_TREE_DEPTH:
            meta = top or node.meta
            line, col = (meta.line, meta.column) if not getattr(meta, "empty", True) else (0, 0)
            return diag(
                "E105",
                Span(file, line, col, line, col + 1) if line else Span.whole_file(file),
                f"expression nests deeper than {MAX_EXPRESSION_DEPTH} levels (each operator, call or "
                "subscript is one)",
                hint="name parts of it with `let`, e.g. sum the terms in a loop",
            )
        work.extend((c, depth + 1, top) for c in node.children if isinstance(c, lark.Tree))
    return None


_EXPRESSIONS = (ast.Unary, ast.Binary, ast.Access, ast.Call, ast.ListLit, ast.Slice)


def _check_expression_depth(module: ast.Module, file: str) -> Diagnostic | None:
    """Refuse an expression whose operators, calls and subscripts nest deeper than
    MAX_EXPRESSION_DEPTH (a 500-term sum, 500 minus signs): every later stage, and the
    Python that the targets generate, stays well inside its recursion and nesting limits.
    Iterative, so the check itself never runs out of stack."""
    work: list[tuple[object, int, ast.Node | None]] = [(module, 0, None)]
    while work:
        node, depth, root = work.pop()
        if isinstance(node, tuple | list):
            work.extend((c, depth, root) for c in node)
            continue
        if not isinstance(node, ast.Node):
            continue
        if isinstance(node, _EXPRESSIONS):
            depth, root = depth + 1, root or node
            if depth > MAX_EXPRESSION_DEPTH:
                return diag(
                    "E105",
                    root.span,
                    f"expression nests deeper than {MAX_EXPRESSION_DEPTH} levels (each operator, call or "
                    "subscript is one)",
                    hint="name parts of it with `let`, e.g. sum the terms in a loop",
                )
        else:
            depth, root = 0, None
        for f in dataclasses.fields(node):
            if f.name != "span":
                work.append((getattr(node, f.name), depth, root))
    return None


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


def _unquote(s: str) -> str:
    """The text of a string literal: ``\\n``, ``\\t`` and ``\\r`` are control characters,
    any other escaped character stands for itself (``\\"``, ``\\\\``); non-ASCII text
    is kept as written."""
    body = s[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.S)


class _ToAst(Transformer):
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
        return ast.IntLit(self._tok(children[0]), int(text, 16) if text.startswith("0x") else int(text))

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
