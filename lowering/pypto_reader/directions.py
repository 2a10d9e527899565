"""Parameter directions: ``pl.Out[...]`` / ``pl.InOut[...]`` annotations and call-site tags.

For a ``pl.at``/``pl.spmd`` scope PyPTO infers the outlined kernel's directions from how the
body uses each captured tensor (read only: In; only written: Out; both: InOut) -- which is
what ``lowering.edges`` derives from the recorded accesses, so such tasks carry no declared
tags. For a call to an InCore kernel the directions are the callee's annotations, whatever
the body does: they become ``Task.arg_tags`` (``in``/``out``/``inout``, ``nodep`` for
``pl.no_dep(x)``). ``lowering.edges`` then applies the compiler's Out -> InOut promotion to
a declared ``out`` exactly as to an inferred one: R-seq (under a sequential orchestration
loop), R-prior (an earlier statement wrote the same buffer) and R-enclosing (the buffer is
an ``InOut`` parameter of the entry; for windows the reader resolves this itself).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering.pypto_reader.exprs import Evaluator, dotted
from lowering.pypto_reader.values import DtypeVal, PlRef, SeqVal, TensorVal
from lowering.symbolic import Expr

if TYPE_CHECKING:
    from lowering.pypto_reader.interp_frames import Frame
    from lowering.pypto_reader.orchestration import OrchestrationReader
    from lowering.pypto_reader.values import FuncVal

_RANK = {"in": 0, "out": 1, "inout": 2, "nodep": 3}


def annotation_direction(ev: Evaluator, ann: ast.expr | None) -> tuple[str, ast.expr | None]:
    """(direction, inner annotation) of ``pl.Out[T]`` / ``pl.InOut[T]`` / ``T``."""
    if isinstance(ann, ast.Subscript):
        base = ev.eval(ann.value)
        if isinstance(base, PlRef) and base.path in ("pl.Out", "pl.InOut"):
            return ("out" if base.path == "pl.Out" else "inout"), ann.slice
    return "in", ann


def tensor_param(ev: Evaluator, node: ast.expr | None) -> tuple[str, tuple[Expr, ...] | None, bool] | None:
    """(dtype, shape, distributed) of a ``pl.Tensor[[dims], dtype]`` / ``pld.DistributedTensor``
    annotation; None when the annotation is not a tensor."""
    if node is None:
        return None
    base_node = node.value if isinstance(node, ast.Subscript) else node
    base = ev.eval(base_node)
    if not isinstance(base, PlRef) or base.path not in (
        "pl.Tensor",
        "pld.DistributedTensor",
        "pl.TensorView",
    ):
        return None
    distributed = base.path == "pld.DistributedTensor"
    if not isinstance(node, ast.Subscript):
        return "f32", None, distributed
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    shape: tuple[Expr, ...] | None = None
    dtype = "f32"
    if parts:
        dims = ev.eval(parts[0])
        if isinstance(dims, SeqVal):
            exprs = [ev.int_expr(d) for d in dims.items]
            if all(e is not None for e in exprs):
                shape = tuple(exprs)  # type: ignore[arg-type]
    if len(parts) >= 2:
        d = ev.eval(parts[1])
        if isinstance(d, DtypeVal) and d.dtype:
            dtype = d.dtype
    return dtype, shape, distributed


def call_tags(
    ev: OrchestrationReader, callee: FuncVal, frame: Frame, bound: dict[str, ast.expr]
) -> dict[str, str]:
    """Declared direction of every tensor argument of a kernel call, by IR tensor name."""
    tags: dict[str, str] = {}
    args = callee.node.args
    for p in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        v = frame.locals.get(p.arg)
        if not isinstance(v, TensorVal):
            continue
        tag, _ = annotation_direction(ev, p.annotation)
        node = bound.get(p.arg)
        if isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("no_dep"):
            tag = "nodep"
        old = tags.get(v.root)
        if old is None or _RANK[tag] > _RANK[old]:
            tags[v.root] = tag
    return tags
