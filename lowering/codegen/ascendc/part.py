"""What every piece of the AIV body writer holds: the writer it serves, the UB placement they
share and the text they write into (``aiv.VectorWriter`` composes the pieces)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lowering.codegen.ascendc.aiv import VectorWriter


class WriterPart:
    def __init__(self, w: VectorWriter) -> None:
        self.w = w
        self.ub = w.ub
        self.text = w.text
