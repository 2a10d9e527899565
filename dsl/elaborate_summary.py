"""What a task body does, as the checks see it: its accesses, signals, barriers, ops and units.

Every access, signal operation and barrier is recorded with the loops and conditions it is
nested in and its position in the body (``order``), by the expression half of body
elaboration (reads) and the statement half (stores, notifies, waits, barriers) alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lowering import body as ir_body
from lowering.ir import Access, BarrierOp, Condition, Loop, SignalOp, Tensor
from lowering.source import Span
from lowering.symbolic import Expr


@dataclass
class BodyResult:
    body: tuple[ir_body.Stmt, ...]
    accesses: list[Access] = field(default_factory=list)
    signals: list[SignalOp] = field(default_factory=list)
    barriers: list[BarrierOp] = field(default_factory=list)
    ops: set[str] = field(default_factory=set)
    units: set[str] = field(default_factory=set)


class BodySummary:
    """Records into ``result`` at the current nesting (``loops``, ``conds``), in body order."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix  # the call path of the layer instance ("dispatch."), "" at the root
        self.result = BodyResult(())
        self.loops: list[Loop] = []
        self.conds: list[Condition] = []
        self.order = 0

    def next(self) -> int:
        self.order += 1
        return self.order

    def access(
        self, tensor: Tensor, region, mode: str, span: Span, peer: Expr | None = None, written: str = ""
    ) -> None:
        # the name the body used, when a call binds it to another layer's tensor ("c.a" for x)
        name = self.prefix + written if written and tensor.name != self.prefix + written else ""
        self.result.accesses.append(
            Access(
                tensor.name, mode, region, tensor.dtype, tuple(self.loops), tuple(self.conds), span,
                self.next(), peer, name=name,
            )
        )  # fmt: skip
