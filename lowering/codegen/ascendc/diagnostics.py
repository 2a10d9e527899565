"""The located errors of the AscendC target (codes A7xx), raised before any file is written.

A7 codes say what the target cannot express (A70x), what would not fit or not be aligned
on the device (A71x, the lint that runs before emission), and what the host cannot launch
(A72x). Each one points at the statement, value or task header it is about; ``dslc explain
A7xx`` prints the entry.
"""

from __future__ import annotations

from lowering.codes import Code
from lowering.source import CompileError, Diagnostic, Severity, Span

CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code(
            "A701",
            "op not supported by the AscendC target",
            "The op (or this form of it) has no AscendC lowering in dslc yet: the target refuses it "
            "rather than emit code that computes something else. docs/ascendc.md lists what maps.",
        ),
        Code(
            "A702",
            "dtype not supported by the AscendC target",
            "The vector unit of A2/A3 (dav-2201) has no arithmetic in this dtype (bf16 and int8 are "
            "storage types: cast to f32 or f16 first), or the cube has no matmul for it.",
        ),
        Code(
            "A703",
            "mix task the AscendC target cannot split",
            "A mix task becomes one MIX kernel: its cube statements run on the AIC, the rest on "
            "an AIV, with hand-offs through GM workspace slots and cross-core flags. What cannot "
            "be split that way is refused: a tile both cores write, a loop bound or branch "
            "condition that needs a value only one core computes, a GM slice both cores bind, "
            "or a scalar read both cores make of a tensor the task writes. Bind the matmul "
            "result to a new name, or compute the condition from indices and GM reads.",
        ),
        Code(
            "A704",
            "shape not supported by the AscendC target",
            "Tiles are 2-D with extents known at compile time; tensors are at most 2-D with "
            "static dims. A shape that depends on a runtime scalar, or a tile of rank > 2, is "
            "refused.",
        ),
        Code(
            "A705",
            "cross-rank op not supported here",
            "remote_store, notify and wait are emitted for aiv tasks only (GM window pointers, "
            "atomic int32 adds, cache-invalidating spins); on the cube core they are refused.",
        ),
        Code(
            "A711",
            "on-chip buffer does not fit",
            "The buffers this kernel allocates (UB: the in/out queues and the calc buffer; L1; "
            "L0A/L0B; L0C) exceed the core's capacity at these parameter values. Use smaller "
            "tiles (chunk the loop), or split the task.",
        ),
        Code(
            "A712",
            "transfer or view not aligned",
            "AscendC moves UB data in 32-byte blocks and vector ops address UB at 32-byte "
            "boundaries. A view of a UB tile that starts inside a block can only be copied "
            "element by element; past a small size the target refuses it. Slice on 32-byte "
            "boundaries (8 f32, 16 f16/bf16, 32 int8 elements).",
        ),
        Code(
            "A713",
            "transfer parameters out of range",
            "A DataCopy/DataCopyPad, Nd2Nz or Fixpipe parameter (block count, block length, "
            "stride) does not fit its hardware field (e.g. more than 4095 rows in one DataCopy).",
        ),
        Code(
            "A721",
            "grid cannot be launched",
            "A task that holds a hard barrier must have all its blocks resident at once: its "
            "grid cannot exceed the cores of its kind, so it cannot be looped over GetBlockNum().",
        ),
    )
}


class UnsupportedForAscendC(Exception):
    """A located reason why the layer cannot be emitted (carries one A7xx diagnostic)."""

    def __init__(self, code: str, message: str, span: Span, hint: str | None = None):
        assert code in CODES, code
        super().__init__(message)
        self.diagnostic = Diagnostic(code, message, span, Severity.ERROR, hint)


def refuse(code: str, message: str, span: Span, hint: str | None = None) -> UnsupportedForAscendC:
    """The exception to raise for a construct the target cannot emit."""
    return UnsupportedForAscendC(code, message, span, hint)


def as_compile_error(errors: list[UnsupportedForAscendC]) -> CompileError:
    return CompileError([e.diagnostic for e in errors])
