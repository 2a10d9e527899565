"""Name resolution inside a task body: the body's own scopes (a loop body or an ``if`` arm opens
one), then ``outer`` -- the orchestration's names, or a helper module's globals while a helper
is spliced in (``KernelReader.splice``).

It also keeps what the reader knows about the names beyond their values: how often each is
assigned (an integer assigned once is inlined), which a loop carries (``unstable``: integer lets
of those are not inlined), which were read (``used``: an unused ``_ = pl.read(...)`` is an
anchor), and which locals hold a sorted tile or a tile with a valid shape. ``assignment_counts``
and ``loop_carried`` count and classify the assignments of a body before it is read.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable

from lowering import body as ir_body
from lowering.pypto_reader.values import Val


class KernelNames:
    """The scopes of a task body over the names it captures (``outer``)."""

    def __init__(self, outer: Callable[[str, ast.AST], Val]) -> None:
        self.outer = outer
        self.scopes: list[dict[str, Val]] = [{}]
        self.assigned: Counter[str] = Counter()
        self.unstable: set[str] = set()  # loop-carried names: integer lets of them are not inlined
        self.used: set[str] = set()
        self.temp = 0
        self.sorted_locals: set[str] = set()
        self.valid_locals: dict[str, ir_body.CallV] = {}  # local -> the valid-shape call it holds

    def lookup(self, name: str, node: ast.AST) -> Val:
        for scope in reversed(self.scopes):
            if name in scope:
                self.used.add(name)
                return scope[name]
        return self.outer(name, node)

    def find(self, name: str) -> Val | None:
        """The body's own binding of ``name``, innermost first (not a use of it)."""
        return next((sc[name] for sc in reversed(self.scopes) if name in sc), None)

    def bind(self, name: str, value: Val) -> None:
        self.scopes[-1][name] = value

    def bind_declared(self, name: str, value: Val) -> None:
        """Rebind ``name`` where it is bound already (an assignment to a declared local)."""
        for scope in reversed(self.scopes):
            if name in scope:
                scope[name] = value
                return
        self.scopes[-1][name] = value

    def is_local(self, name: str) -> bool:
        return any(name in s for s in self.scopes)

    def push(self, scope: dict[str, Val] | None = None) -> None:
        self.scopes.append({} if scope is None else scope)

    def pop(self) -> dict[str, Val]:
        return self.scopes.pop()

    def fresh(self, prefix: str = "_r") -> str:
        """A temporary's name that no scope binds and the body never assigns."""
        while True:
            self.temp += 1
            name = f"{prefix}{self.temp}"
            if not any(name in s for s in self.scopes) and name not in self.assigned:
                return name


def loop_carried(stmts: list[ast.stmt]) -> set[str]:
    """Names whose value a loop carries from one iteration to the next or out of the loop:
    read in the loop body before it assigns them, or read after the loop that assigns them.
    Any other integer assignment can be inlined where it is used, however often the name is
    reassigned (``n0 = nb * TILE`` in four loops is four lets, not one mutable local)."""
    out: set[str] = set()

    def names_read(node: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}

    def linear(body: list[ast.stmt]) -> list[tuple[str, set[str]]]:
        """(kind, names) events in source order: reads of a statement before its stores."""
        events: list[tuple[str, set[str]]] = []
        for s in body:
            if isinstance(s, ast.For | ast.AsyncFor):
                events.append(("read", names_read(s.iter)))
                events.append(("store", _targets(s.target)))
                events.extend(linear(s.body))
                events.extend(linear(s.orelse))
            elif isinstance(s, ast.While):
                events.append(("read", names_read(s.test)))
                events.extend(linear(s.body))
            elif isinstance(s, ast.If):
                events.append(("read", names_read(s.test)))
                events.extend(linear(s.body))
                events.extend(linear(s.orelse))
            elif isinstance(s, ast.With):
                for item in s.items:
                    events.append(("read", names_read(item.context_expr)))
                events.extend(linear(s.body))
            elif isinstance(s, ast.AugAssign):
                events.append(("read", names_read(s.value) | names_read(s.target) | _targets(s.target)))
                events.append(("store", _targets(s.target)))
            elif isinstance(s, ast.Assign | ast.AnnAssign):
                if s.value is not None:
                    events.append(("read", names_read(s.value)))
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                for t in targets:
                    events.append(("read", names_read(t)))  # the indices of a subscript target
                    events.append(("store", _targets(t)))
            elif not isinstance(s, ast.FunctionDef | ast.ClassDef):
                events.append(("read", names_read(s)))
        return events

    def visit(body: list[ast.stmt]) -> None:
        for i, s in enumerate(body):
            if isinstance(s, ast.For | ast.AsyncFor | ast.While):
                events = linear(s.body)
                assigned = {n for kind, names in events if kind == "store" for n in names}
                out.update(assigned & _live(events))
                out.update(assigned & _live(linear(body[i + 1 :])))
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, ast.If):
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, ast.With):
                visit(s.body)

    visit(list(stmts))
    return out


def _live(events: list[tuple[str, set[str]]]) -> set[str]:
    """Names read before the events store them (the values that flow in from before)."""
    stored: set[str] = set()
    out: set[str] = set()
    for kind, names in events:
        if kind == "read":
            out |= names - stored
        else:
            stored |= names
    return out


def _targets(t: ast.expr) -> set[str]:
    """The names an assignment target binds: ``a``, ``a, (b, *c)``. A subscript or attribute
    target (``y[tg : tg + 16, :] = ...``) binds none: the names in it are read."""
    if isinstance(t, ast.Name):
        return {t.id}
    if isinstance(t, ast.Tuple | ast.List):
        return {n for e in t.elts for n in _targets(e)}
    if isinstance(t, ast.Starred):
        return _targets(t.value)
    return set()


def assignment_counts(stmts: list[ast.stmt]) -> Counter[str]:
    """How often each name is assigned in ``stmts`` (loop targets count once per loop).

    Only statements are walked (assignment targets sit there), not every expression node.
    """
    out: Counter[str] = Counter()

    def target(t: ast.expr) -> None:
        if isinstance(t, ast.Name):
            out[t.id] += 1
        elif isinstance(t, ast.Tuple | ast.List):
            for e in t.elts:
                target(e)
        elif isinstance(t, ast.Starred):
            target(t.value)

    def walk(body: list[ast.stmt]) -> None:
        for s in body:
            if isinstance(s, ast.Assign):
                for t in s.targets:
                    target(t)
            elif isinstance(s, ast.AnnAssign | ast.AugAssign):
                target(s.target)
                if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                    out[s.target.id] += 1
            elif isinstance(s, ast.For | ast.AsyncFor):
                target(s.target)
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, ast.While | ast.If):
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, ast.With | ast.AsyncWith):
                for item in s.items:
                    if item.optional_vars is not None:
                        target(item.optional_vars)
                walk(s.body)
            elif isinstance(s, ast.Try):
                walk(s.body)
                walk(s.orelse)
                walk(s.finalbody)
                for h in s.handlers:
                    walk(h.body)

    walk(list(stmts))
    return out
