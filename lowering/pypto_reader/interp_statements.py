"""Straight-line statements of the static interpreter, each counted against the read's budget.

:class:`StatementRunner` runs a block statement by statement, dispatching on the node type to
an ``s_<Node>`` method; every statement ticks the :class:`~interp_control.Budget` the read
shares. A statement the reader itself fails on is a P004 note and reading goes on, because one
statement must not lose the whole file. The statements here run straight through: expressions,
assignments, ``del``, ``global``, ``with`` and imports (resolved by the loader; opaque without
one). A statement kind that is not run at all makes the names it binds unknown.
"""

from __future__ import annotations

import ast
import traceback

from lowering.pypto_reader import std_modules
from lowering.pypto_reader.interp_control import Break, BudgetExceeded, Continue, Return
from lowering.pypto_reader.interp_frames import ScopedEvaluator
from lowering.pypto_reader.notes import span_of
from lowering.pypto_reader.py_exceptions import PyRaise
from lowering.pypto_reader.values import UNKNOWN, DictVal, SeqVal, Unknown, Val


class StatementRunner(ScopedEvaluator):
    """Runs blocks of statements; the kinds that only bind names or evaluate are here."""

    # ---------------------------------------------------------------- running code
    def tick(self, node: ast.AST) -> None:
        b = self.budget
        b.steps += 1
        if b.steps > b.limit:
            if b.hit_at is None:
                b.hit_at = node
            raise BudgetExceeded()

    def exec_block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.tick(s)
            try:
                self.exec_stmt(s)
            except (Return, Break, Continue, PyRaise, BudgetExceeded, RecursionError):
                raise
            except Exception as err:  # noqa: BLE001 - one statement must not stop the file
                self.reader_failure(s, err)

    def reader_failure(self, node: ast.AST, err: Exception) -> None:
        """A bug of the reader on one statement: P004 with the traceback for ``--debug``."""
        self.notes.add(
            "P004",
            span_of(self.file, node),
            f"the reader failed on this statement ({type(err).__name__}: {err})",
            trace="".join(traceback.format_exception(err)),
        )

    def exec_stmt(self, s: ast.stmt) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            self.unsupported_statement(s)
            return
        method(s)

    def unsupported_statement(self, s: ast.stmt) -> None:
        """A statement kind the interpreter does not run (``match``, ``async``): its names are unknown."""
        self.havoc(s)

    def havoc(self, *stmts: ast.stmt) -> None:
        """Names bound in ``stmts`` become unknown (their values depend on what was not run)."""
        for name in _assigned_names(stmts):
            self.bind_name(name, Unknown("a value computed where the reader cannot follow"), stmts[0])

    def s_Expr(self, s: ast.Expr) -> None:
        if not isinstance(s.value, ast.Constant):
            self.eval(s.value)

    def s_Assign(self, s: ast.Assign) -> None:
        value = self.eval(s.value)
        for t in s.targets:
            self.bind_target(t, value)

    def s_AnnAssign(self, s: ast.AnnAssign) -> None:
        if s.value is not None:
            self.bind_target(s.target, self.eval(s.value))

    def s_AugAssign(self, s: ast.AugAssign) -> None:
        target = s.target
        if isinstance(target, ast.Name):
            old = self.lookup(target.id, target)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            old = self.eval(target)
        else:
            return
        new = self.augment(s.op, old, self.eval(s.value), s)
        self.bind_target(target, new)

    def augment(self, op: ast.operator, old: Val, value: Val, node: ast.AST) -> Val:
        """``old op= value``: lists and dicts extend in place, as in Python."""
        if isinstance(op, ast.Add) and isinstance(old, SeqVal) and old.kind == "list":
            items = self.iterate(value)
            if items is not None:
                old.items = (*old.items, *items)
                return old
        if isinstance(op, ast.BitOr) and isinstance(old, DictVal) and isinstance(value, DictVal):
            old.items.update(value.items)
            return old
        return self.binary(op, old, value, node)

    def s_Delete(self, s: ast.Delete) -> None:
        for t in s.targets:
            if isinstance(t, ast.Name):
                self.frame.locals.pop(t.id, None)
            elif isinstance(t, ast.Subscript):
                base = self.eval(t.value)
                if isinstance(base, DictVal):
                    k = self.static(self.eval(t.slice))
                    if k is not UNKNOWN:
                        base.items.pop(k, None)  # type: ignore[arg-type]

    def s_Pass(self, s: ast.Pass) -> None:
        return None

    def s_Global(self, s: ast.Global) -> None:
        self.frame.declared_global.update(s.names)

    def s_Nonlocal(self, s: ast.Nonlocal) -> None:
        return None  # closures are shared dicts: a nonlocal store lands in the enclosing scope

    def s_With(self, s: ast.With) -> None:
        for item in s.items:
            self.eval(item.context_expr)
            if item.optional_vars is not None:
                self.bind_target(item.optional_vars, Unknown("a context manager's value"))
        self.exec_block(s.body)

    def s_Import(self, s: ast.Import) -> None:
        for alias in s.names:
            bound = alias.asname or alias.name.split(".")[0]
            self.bind_name(bound, self.import_module(alias.name, alias.asname is not None, s), s)

    def s_ImportFrom(self, s: ast.ImportFrom) -> None:
        for alias in s.names:
            values = self.import_from(s.module or "", s.level, alias.name, s)
            if alias.name == "*":
                for k, v in values.items():
                    self.bind_name(k, v, s)
            else:
                self.bind_name(alias.asname or alias.name, values.get(alias.name, UNKNOWN), s)

    def import_module(self, name: str, as_alias: bool, node: ast.AST) -> Val:
        if self.loader is None:
            return std_modules.import_extern(name)
        return self.loader.import_module(self.frame.module, name, as_alias, node)

    def import_from(self, module: str, level: int, name: str, node: ast.AST) -> dict[str, Val]:
        if self.loader is None:
            return {name: std_modules.module_attribute(module, name)}
        return self.loader.import_from(self.frame.module, module, level, name, node)


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
