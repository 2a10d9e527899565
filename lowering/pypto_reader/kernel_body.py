"""The IR body of one task as it is built: nested blocks of ``lowering.body`` statements, the
kernel loops and ``if`` conditions enclosing the statement being read, program order, and what
the body uses (ops, cube/vector units, the two AIV lanes of ``pl.split_aiv``).

Every access, signal and barrier is recorded with the loops and conditions open here when it
is read (``loop_tuple``/``cond_tuple``) and a number from ``next_order``, as the DSL front end
does for a ``task { ... }``.
"""

from __future__ import annotations

from lowering import body as ir_body
from lowering.ir import Condition, Loop


class BodyBuilder:
    """The statements of a task body, block by block, and the loops and conditions around them."""

    def __init__(self) -> None:
        self.blocks: list[list[ir_body.Stmt]] = [[]]
        self.loops: list[Loop] = []
        self.conds: list[Condition] = []
        self.order = 0
        self.ops: set[str] = set()
        self.units: set[str] = set()
        self.dual_lanes = False

    def next_order(self) -> int:
        self.order += 1
        return self.order

    def loop_tuple(self) -> tuple[Loop, ...]:
        return tuple(self.loops)

    def cond_tuple(self) -> tuple[Condition, ...]:
        return tuple(self.conds)

    def emit(self, stmt: ir_body.Stmt) -> None:
        self.blocks[-1].append(stmt)

    def open_block(self) -> None:
        """Statements emitted from now on go into a new block (a loop body or an ``if`` arm)."""
        self.blocks.append([])

    def close_block(self) -> list[ir_body.Stmt]:
        return self.blocks.pop()

    def statements(self) -> tuple[ir_body.Stmt, ...]:
        """The top-level statements of the body."""
        return tuple(self.blocks[0])

    def unit(self, u: str) -> None:
        if u in ("cube", "vector"):
            self.units.add(u)
