"""N204: a huge float literal used as a min/max sentinel that is not the dtype's extreme.

## What it catches

A floating-point literal in a task body whose magnitude says "sentinel" (at least 1e30,
or between 60000 and 65520, the neighbourhood of the f16 maximum) but that, rounded to
the dtype it is used with, is neither infinite nor exactly the largest finite value of
that dtype (`-3.402823e38` instead of `-3.4028234663852886e38`, `-1e30`, `-65504` in an
`f32` computation). The dtype is the one of the surrounding operation (the tensor stored
to, the tile it is compared or combined with, the dtype of `full`), `f32` by default
(docs/runtime-semantics.md §21.2 R15).

## Why it breaks on the device

A max-scan seeded with a finite guess returns the sentinel (and its index, often 0) for
every row whose true maximum lies at or below the guess. pypto-lib #991 seeded a greedy
scan with -3.402823e38, which is *greater* than -FLT_MAX, and rows of very negative logits
picked token 0. The bug needs extreme inputs, so it never shows in tests with random data.

## Example

    let best = full(f32, [1, 1], -3.402823e38)        # N204: not -FLT_MAX
    best = maximum(best, row_max(scores[r : r + 1, :]))

## Use instead

    let best = full(f32, [1, 1], -inf)                  # or the exact -3.4028234663852886e38

## What dslc verify shows

The sentinel is wrong only for data below it: with the fixture's inputs ``dslc verify``
finds every schedule gives the same result. The finding is about data, not schedules.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: not round-dependent.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator, Mapping
from dataclasses import fields, is_dataclass

from lowering import body as ir_body
from lowering.checks.rule import CheckContext, finding
from lowering.ir import FLOAT_DTYPES, Graph, Tensor
from lowering.source import Diagnostic, Span
from lowering.symbolic import Expr

CODE = "N204"
NAME = "sentinel_not_dtype_extreme"
FAMILY = "numerics"
SEVERITY = "warning"
SUMMARY = "a large float literal used as a min/max sentinel is not -inf or the exact dtype extreme"

FINFO_MAX = {"f32": 3.4028234663852886e38, "bf16": 3.3895313892515355e38, "f16": 65504.0}


def round_to(value: float, dtype: str) -> float:
    """``value`` rounded to nearest-even in ``dtype`` (inf when it overflows)."""
    try:
        if dtype == "f16":
            return struct.unpack("<e", struct.pack("<e", value))[0]
        as_f32 = struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    if dtype != "bf16":
        return as_f32
    bits = struct.unpack("<I", struct.pack("<f", as_f32))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def suspicious(value: float, dtype: str) -> bool:
    magnitude = abs(value)
    if math.isinf(magnitude) or math.isnan(magnitude):
        return False
    if not (magnitude >= 1e30 or 60000.0 <= magnitude <= 65520.0):
        return False
    rounded = round_to(value, dtype)
    return not (math.isinf(rounded) or abs(rounded) == FINFO_MAX[dtype])


def _float_dtype(t) -> str | None:
    dtype = getattr(t, "dtype", None)
    return dtype if dtype in FLOAT_DTYPES else None


def _context(node, outer: str) -> str:
    own = _float_dtype(getattr(node, "type", None))
    if own is not None:
        return own
    for arg in (*getattr(node, "args", ()), getattr(node, "a", None), getattr(node, "b", None)):
        if arg is not None and not isinstance(arg, ir_body.FloatV):
            d = _float_dtype(getattr(arg, "type", None))
            if d is not None:
                return d
    return outer


def literals(tensors: Mapping[str, Tensor], stmts) -> Iterator[tuple[ir_body.FloatV, str]]:
    """Every float literal with a span, with the dtype it is used with (in program order), the
    tensors stored into looked up in ``tensors``."""
    out: list[tuple[ir_body.FloatV, str]] = []
    for s in stmts:
        _visit(tensors, s, "f32", out)
    return iter(out)


# Body node classes that hold no value (only names, expressions, types and spans): no literal.
_NO_LITERALS = (
    ir_body.IntV, ir_body.DtypeV, ir_body.ListV, ir_body.LocalV, ir_body.LoadV, ir_body.NotifyS, ir_body.WaitS, ir_body.BarrierS,
    ir_body.ScalarType, ir_body.TileType, ir_body.ListType, ir_body.DtypeType, ir_body.Range,
)  # fmt: skip


def _visit(tensors: Mapping[str, Tensor], node, dtype: str, out: list) -> None:
    """Depth-first, fields in declaration order (what a walk over every dataclass field
    visits, minus the subtrees that cannot hold a float literal)."""
    cls = type(node)
    if cls is ir_body.FloatV:
        if node.span is not None:
            out.append((node, dtype))
    elif cls is tuple or cls is list:
        for x in node:
            _visit(tensors, x, dtype, out)
    elif cls in _NO_LITERALS:
        return
    elif cls is ir_body.CallV:
        inner = _context(node, dtype)
        for a in node.args:
            _visit(tensors, a, inner, out)
        for attr in node.attrs:
            _visit(tensors, attr, inner, out)
    elif cls is ir_body.BinV:
        inner = _context(node, dtype)
        _visit(tensors, node.a, inner, out)
        _visit(tensors, node.b, inner, out)
    elif cls is ir_body.StoreS or cls is ir_body.RemoteStoreS:
        tensor = tensors.get(node.tensor)
        inner = (_float_dtype(tensor) or dtype) if tensor is not None else _context(node, dtype)
        _visit(tensors, node.value, inner, out)
    elif cls is ir_body.LetS or cls is ir_body.AssignS or cls is ir_body.EvalS:
        _visit(tensors, node.value, _context(node, dtype), out)
    elif cls is ir_body.ForS:
        _visit(tensors, node.body, _context(node, dtype), out)
    elif cls is ir_body.IfS:
        inner = _context(node, dtype)
        _visit(tensors, node.cond, inner, out)
        _visit(tensors, node.then, inner, out)
        _visit(tensors, node.orelse, inner, out)
    else:
        _visit_any(tensors, node, dtype, out)


def _visit_any(tensors: Mapping[str, Tensor], node, dtype: str, out: list) -> None:
    """Any other node: every field of a dataclass (expressions and spans aside)."""
    if isinstance(node, ir_body.FloatV):
        if node.span is not None:
            out.append((node, dtype))
        return
    if isinstance(node, tuple | list):
        for x in node:
            _visit(tensors, x, dtype, out)
        return
    if isinstance(node, Expr | Span) or not is_dataclass(node):
        return
    if isinstance(node, ir_body.StoreS | ir_body.RemoteStoreS) and node.tensor in tensors:
        inner = _float_dtype(tensors[node.tensor]) or dtype
    else:
        inner = _context(node, dtype)
    for f in fields(node):
        _visit(tensors, getattr(node, f.name), inner, out)


class _Renamed(Mapping):
    """The graph's tensors under a template's names (an instance's ``renames``)."""

    def __init__(self, tensors: Mapping[str, Tensor], renames: Mapping[str, str]):
        self.tensors, self.renames = tensors, renames

    def __getitem__(self, name: str) -> Tensor:
        return self.tensors[self.renames.get(name, name)]

    def __iter__(self):
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)


def _bodies(graph: Graph, task, visited: set) -> list[tuple[object, Mapping[str, Tensor]]]:
    """The statements of ``task`` to look for literals in, each with its tensors. An instance
    made from a template (the PyPTO reader's) is looked at through the template, once per
    template and float dtypes of the tensors it is given: its literals and their dtypes are the
    same for every such instance."""
    body = task.body
    template = getattr(body, "template", None)
    if template is None:
        return [(body, graph.tensors)]
    dtypes = tuple(
        sorted(
            (old, new in graph.tensors, _float_dtype(graph.tensors.get(new)))
            for old, new in body.renames.items()
        )
    )
    out: list[tuple[object, Mapping[str, Tensor]]] = [(body.extra, graph.tensors)]
    if (id(template), dtypes) not in visited:
        visited.add((id(template), dtypes))
        out.insert(0, (template, _Renamed(graph.tensors, body.renames)))
    return out


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    seen: set[Span] = set()
    visited: set = set()
    for task in graph.tasks:
        for stmts, tensors in _bodies(graph, task, visited):
            for lit, dtype in literals(tensors, stmts):
                if lit.span in seen or not suspicious(lit.value, dtype):
                    continue
                seen.add(lit.span)
                side, word = ("-", "minimum") if lit.value < 0 else ("", "maximum")
                yield finding(
                    CODE,
                    SEVERITY,
                    lit.span,
                    f"{lit.value!r} looks like a {word} sentinel but is not the {dtype} extreme "
                    f"({side}{FINFO_MAX[dtype]!r}) or {side}inf: a max/min scan seeded with it returns the "
                    f"sentinel for every row whose values all lie beyond it",
                    fix=f"use {side}inf (or the exact {side}{FINFO_MAX[dtype]!r}, finfo({dtype}).{'min' if side else 'max'})",
                )
