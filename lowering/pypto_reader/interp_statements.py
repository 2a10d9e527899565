"""Straight-line statements of the static interpreter, each counted against the read's budget.

A block runs statement by statement (``exec_block``), dispatching on the node type to the
interpreter's ``s_<Node>`` method; every statement ticks the :class:`~interp_control.Budget`
the read shares. A statement the reader itself fails on is a P004 note and reading goes on,
because one statement must not lose the whole file. The statements here run straight through:
expressions, assignments, ``del``, ``with`` and imports (resolved by the loader; opaque without
one). A statement kind that is not run at all makes the names it binds unknown (``havoc``).
The functions take the :class:`~lowering.pypto_reader.interp.PyInterpreter` they run on.
"""

from __future__ import annotations

import ast
import traceback
from typing import TYPE_CHECKING

from lowering.pypto_reader import std_modules
from lowering.pypto_reader.interp_control import Break, BudgetExceeded, Continue, Return
from lowering.pypto_reader.notes import span_of
from lowering.pypto_reader.py_exceptions import PyRaise
from lowering.pypto_reader.values import UNKNOWN, DictVal, SeqVal, Unknown, Val

if TYPE_CHECKING:
    from lowering.pypto_reader.interp import PyInterpreter


def tick(it: PyInterpreter, node: ast.AST) -> None:
    b = it.budget
    b.steps += 1
    if b.steps > b.limit:
        if b.hit_at is None:
            b.hit_at = node
        raise BudgetExceeded()


def exec_block(it: PyInterpreter, stmts: list[ast.stmt]) -> None:
    for s in stmts:
        tick(it, s)
        try:
            exec_stmt(it, s)
        except (Return, Break, Continue, PyRaise, BudgetExceeded, RecursionError):
            raise
        except Exception as err:  # noqa: BLE001 - one statement must not stop the file
            reader_failure(it, s, err)


def reader_failure(it: PyInterpreter, node: ast.AST, err: Exception) -> None:
    """A bug of the reader on one statement: P004 with the traceback for ``--debug``."""
    it.notes.add(
        "P004",
        span_of(it.file, node),
        f"the reader failed on this statement ({type(err).__name__}: {err})",
        trace="".join(traceback.format_exception(err)),
    )


def exec_stmt(it: PyInterpreter, s: ast.stmt) -> None:
    handler = it.statements.get(type(s))
    if handler is None:
        it.unsupported_statement(s)
        return
    handler(it, s)


def havoc(it: PyInterpreter, *stmts: ast.stmt) -> None:
    """Names bound in ``stmts`` become unknown (their values depend on what was not run)."""
    for name in _assigned_names(stmts):
        it.bind_name(name, Unknown("a value computed where the reader cannot follow"), stmts[0])


def expression_statement(it: PyInterpreter, s: ast.Expr) -> None:
    if not isinstance(s.value, ast.Constant):
        it.eval(s.value)


def assignment(it: PyInterpreter, s: ast.Assign) -> None:
    value = it.eval(s.value)
    for t in s.targets:
        it.bind_target(t, value)


def annotated_assignment(it: PyInterpreter, s: ast.AnnAssign) -> None:
    if s.value is not None:
        it.bind_target(s.target, it.eval(s.value))


def augmented_assignment(it: PyInterpreter, s: ast.AugAssign) -> None:
    target = s.target
    if isinstance(target, ast.Name):
        old = it.lookup(target.id, target)
    elif isinstance(target, ast.Attribute | ast.Subscript):
        old = it.eval(target)
    else:
        return
    new = augment(it, s.op, old, it.eval(s.value), s)
    it.bind_target(target, new)


def augment(it: PyInterpreter, op: ast.operator, old: Val, value: Val, node: ast.AST) -> Val:
    """``old op= value``: lists and dicts extend in place, as in Python."""
    if isinstance(op, ast.Add) and isinstance(old, SeqVal) and old.kind == "list":
        items = it.iterate(value)
        if items is not None:
            old.items = (*old.items, *items)
            return old
    if isinstance(op, ast.BitOr) and isinstance(old, DictVal) and isinstance(value, DictVal):
        old.items.update(value.items)
        return old
    return it.binary(op, old, value, node)


def no_effect(it: PyInterpreter, s: ast.Pass | ast.Nonlocal) -> None:
    """``pass``; ``nonlocal`` too: closures share the enclosing scope's dict, so a nonlocal
    store already lands there."""


def global_statement(it: PyInterpreter, s: ast.Global) -> None:
    it.frame.declared_global.update(s.names)


def delete(it: PyInterpreter, s: ast.Delete) -> None:
    for t in s.targets:
        if isinstance(t, ast.Name):
            it.frame.locals.pop(t.id, None)
        elif isinstance(t, ast.Subscript):
            base = it.eval(t.value)
            if isinstance(base, DictVal):
                k = it.static(it.eval(t.slice))
                if k is not UNKNOWN:
                    base.items.pop(k, None)  # type: ignore[arg-type]


def with_statement(it: PyInterpreter, s: ast.With) -> None:
    for item in s.items:
        it.eval(item.context_expr)
        if item.optional_vars is not None:
            it.bind_target(item.optional_vars, Unknown("a context manager's value"))
    it.exec_block(s.body)


def import_statement(it: PyInterpreter, s: ast.Import) -> None:
    for alias in s.names:
        bound = alias.asname or alias.name.split(".")[0]
        it.bind_name(bound, import_module(it, alias.name, alias.asname is not None, s), s)


def import_from_statement(it: PyInterpreter, s: ast.ImportFrom) -> None:
    for alias in s.names:
        values = import_from(it, s.module or "", s.level, alias.name, s)
        if alias.name == "*":
            for k, v in values.items():
                it.bind_name(k, v, s)
        else:
            it.bind_name(alias.asname or alias.name, values.get(alias.name, UNKNOWN), s)


def import_module(it: PyInterpreter, name: str, as_alias: bool, node: ast.AST) -> Val:
    if it.loader is None:
        return std_modules.import_extern(name)
    return it.loader.import_module(it.frame.module, name, as_alias, node)


def import_from(it: PyInterpreter, module: str, level: int, name: str, node: ast.AST) -> dict[str, Val]:
    if it.loader is None:
        return {name: std_modules.module_attribute(module, name)}
    return it.loader.import_from(it.frame.module, module, level, name, node)


def _assigned_names(stmts) -> list[str]:
    """Names a statement list binds (cached on its first statement: havoc runs often)."""
    key = "_dslc_assigned"
    if len(stmts) == 1 and hasattr(stmts[0], key):
        return getattr(stmts[0], key)
    out: dict[str, None] = {}

    def target(t: ast.expr) -> None:
        if isinstance(t, ast.Name):
            out[t.id] = None
        elif isinstance(t, ast.Tuple | ast.List):
            for e in t.elts:
                target(e)
        elif isinstance(t, ast.Starred):
            target(t.value)

    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    target(t)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For):
                target(node.target)
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                out[node.name] = None
    names = list(out)
    if len(stmts) == 1:
        setattr(stmts[0], key, names)
    return names
