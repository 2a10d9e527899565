"""What reading one task body yields (``KernelSummary``): the record a task is built from, and
the template ``kernel_cache`` keeps for the other instances of the same scope."""

from __future__ import annotations

from dataclasses import dataclass

from lowering import body as ir_body
from lowering.ir import Access, BarrierOp, SignalOp
from lowering.source import Span


@dataclass(frozen=True)
class Export:
    """A tile the body computes that code after the scope uses: ``var``'s final value."""

    var: str
    type: ir_body.TileType
    value: ir_body.Value
    span: Span


@dataclass
class KernelSummary:
    """What reading one task body found."""

    body: tuple[ir_body.Stmt, ...]
    accesses: tuple[Access, ...]
    signals: tuple[SignalOp, ...]
    barriers: tuple[BarrierOp, ...]
    ops: frozenset[str]
    units: frozenset[str]
    signal_tensors: frozenset[str]
    window_tensors: frozenset[str]
    dual_lanes: bool
    exports: tuple[Export, ...] = ()
