"""Name resolution inside a task body: the body's own scopes (a loop body or an ``if`` arm opens
one), then ``outer`` -- the orchestration's names, or a helper module's globals while a helper
is spliced in (``KernelReader.splice``).

It also keeps what the reader knows about the names beyond their values: how often each is
assigned (an integer assigned once is inlined), which a loop carries (``unstable``: integer lets
of those are not inlined), which were read (``used``: an unused ``_ = pl.read(...)`` is an
anchor), and which locals hold a sorted tile or a tile with a valid shape.
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
