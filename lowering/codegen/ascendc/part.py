"""What every piece of the AIV body writer holds: the writer it serves, the UB placement they
share and the text they write into (``aiv.VectorWriter`` composes the pieces).

A piece that needs another's work asks the writer for it (``self.w.masks.compare(...)``):
the writer owns the pieces and their order of construction, so no piece holds a sibling
that may not exist yet, and each piece stays one job (transfers, masks, sorting, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lowering.codegen.ascendc.aiv import VectorWriter


class WriterPart:
    def __init__(self, w: VectorWriter) -> None:
        self.w = w
        self.ub = w.ub
        self.text = w.text
