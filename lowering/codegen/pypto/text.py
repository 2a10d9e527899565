"""Source text for the PyPTO emitter: names, literals, integer expressions and line layout.

The emitter writes code that ``ruff format`` (line length 110) leaves unchanged, without
running ruff: expressions get the minimal parentheses, slices the spacing ruff uses (spaces
around ``:`` only in a slice with a non-trivial bound), floats the normalised exponent, and
a statement that does not fit is split at its last bracket, one item per line with a
trailing comma -- the "magic trailing comma" form ruff keeps as it is.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from lowering.codegen.common import TargetLimit
from lowering.codegen.names import EMITTED, IDENTIFIER, UnsafeName, mangle
from lowering.codegen.python_text import INDENT, LINE_LENGTH, py_float_text, py_str, simple_bound, slice_text
from lowering.codegen.python_text import int_text as python_int_text
from lowering.symbolic import BLOCK, DYNAMIC, LOOP, NRANKS, PARAM, RANK, SCALAR, Expr, Sym

__all__ = ["py_str", "simple_bound", "slice_text"]  # re-exported too: the PyPTO writer imports them from here

# What a source name must not become, by where it is written (docs/naming.md). Python's
# keywords; the builtins and imports the module uses; a kernel's own locals (``block``,
# ``my_rank``). That is all a kernel local (a ``let``, a loop variable, a scratch tensor)
# must avoid. A name visible in more than one function -- a module constant, a tensor or
# scalar parameter -- must also avoid the module's other globals and the locals of every
# function that reads it: the host driver's ``r``, ``build_tensor_specs``'s imports, the
# golden's ``tensors``, the ``__main__`` block's names, and the functions named after the
# layer (added per module, ``module_reserved``). Everything else stays the author's: ``r``,
# ``I``, ``l`` and ``it`` as kernel locals are written as they are.
KEYWORDS = frozenset(keyword.kwlist)
BUILTINS = frozenset(
    {"float", "min", "max", "range", "isinstance", "len", "enumerate", "dict", "ValueError", "SystemExit"}
)
LOCAL_RESERVED = KEYWORDS | BUILTINS | {"pl", "pld", "block", "my_rank"}
RESERVED = LOCAL_RESERVED | {
    "r", "torch", "TensorSpec", "tensors", "argparse", "golden", "parser", "args", "result", "GOLDEN",
    "build_tensor_specs", "__name__", "__doc__",
}  # fmt: skip


class UnsupportedForPyPTO(TargetLimit):
    """The layer uses something PyPTO cannot express (a strided store, an op it lacks)."""

    def __init__(self, message: str, span=None):
        super().__init__(message, span, "pypto")


def py_name(name: str, reserved: frozenset[str] = RESERVED) -> str:
    """The Python identifier of a DSL name (``lowering.codegen.names.mangle``, injective):
    ``dispatch.x`` -> ``dispatch__x_``, a reserved ``in`` -> ``in_``, ``hc_pre`` unchanged."""
    try:
        return mangle(name, reserved)
    except UnsafeName as err:
        raise UnsupportedForPyPTO(str(err)) from None


def module_reserved(layer: str) -> frozenset[str]:
    """RESERVED plus the module's functions named after the layer (whose name is ``layer``)."""
    return RESERVED | {layer, f"{layer}_test", f"l3_{layer}", f"golden_{layer}"}


def py_float(x: float) -> str:
    if math.isnan(x):
        return 'float("nan")'
    if math.isinf(x):
        return 'float("inf")' if x > 0 else '-float("inf")'
    return py_float_text(x)


# ---------------------------------------------------------------- integer expressions


def int_text(e: Expr, name_of: Callable[[Sym], str], minmax: str = "pl.") -> str:
    """``e`` as Python source with minimal parentheses; ``min``/``max`` as ``pl.min``/``pl.max``
    inside kernels (``minmax=""`` at module level)."""
    return python_int_text(e, name_of, minmax)


def symbol_namer(ranks_text: str, names: Callable[[str], str] = py_name) -> Callable[[Sym], str]:
    """How a symbol is named in emitted code (source names through ``names``, the module's
    ``ModuleNames``); the rank count is spelled ``ranks_text``."""

    def name_of(s: Sym) -> str:
        if s.kind == EMITTED:
            return s.name
        if s.kind == BLOCK:
            return "block"
        if s.kind == RANK:
            return "my_rank"
        if s.kind == NRANKS:
            return ranks_text if IDENTIFIER.match(ranks_text) or ranks_text.isdigit() else f"({ranks_text})"
        if s.kind in (PARAM, "const", SCALAR, LOOP, DYNAMIC):
            if s.name.startswith("data@"):
                raise UnsupportedForPyPTO(f"a data-dependent value {s.name!r} cannot be named")
            return names(s.name)
        raise UnsupportedForPyPTO(f"unknown symbol {s.name!r}")

    return name_of


# ---------------------------------------------------------------- line layout


@dataclass
class Group:
    """``head(items...)`` or ``[items...]``: a bracketed, comma-separated list."""

    head: str
    items: list[Doc]
    open: str = "("
    close: str = ")"


@dataclass
class Cat:
    parts: list[Doc] = field(default_factory=list)


Doc = str | Group | Cat


def flat(doc: Doc) -> str:
    if isinstance(doc, str):
        return doc
    if isinstance(doc, Group):
        return doc.head + doc.open + ", ".join(flat(i) for i in doc.items) + doc.close
    return "".join(flat(p) for p in doc.parts)


def call(head: str, *args: Doc, **kwargs: Doc) -> Group:
    items: list[Doc] = list(args)
    items += [Cat([f"{k}=", v]) for k, v in kwargs.items()]
    return Group(head, items)


def lst(items: list[Doc]) -> Group:
    return Group("", list(items), "[", "]")


def paren(items: list[Doc]) -> Group:
    """``(items...)``: a parameter list."""
    return Group("", list(items))


def layout(doc: Doc, depth: int) -> list[str]:
    """Lines (indented ``depth`` levels) for ``doc``, split like ruff when it does not fit."""
    indent = INDENT * depth
    text = flat(doc)
    if len(indent) + len(text) <= LINE_LENGTH:
        return [indent + text]
    parts = doc.parts if isinstance(doc, Cat) else [doc]
    parts = _flatten(parts)
    idx = max((i for i, p in enumerate(parts) if isinstance(p, Group) and p.items), default=None)
    if idx is None:
        return [indent + text]
    group = parts[idx]
    assert isinstance(group, Group)
    head = "".join(flat(p) for p in parts[:idx]) + group.head + group.open
    tail = group.close + "".join(flat(p) for p in parts[idx + 1 :])
    lines = [indent + head]
    for item in group.items:
        lines.extend(layout(Cat([item, ","]), depth + 1))
    lines.append(indent + tail)
    return lines


def _flatten(parts: list[Doc]) -> list[Doc]:
    out: list[Doc] = []
    for p in parts:
        if isinstance(p, Cat):
            out.extend(_flatten(p.parts))
        else:
            out.append(p)
    return out
