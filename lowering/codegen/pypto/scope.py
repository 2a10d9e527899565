"""The names and index text of one task body in PyPTO: what the statements and the values
of a kernel scope share.

A source name is written as the module's names say (``lowering.codegen.names.ModuleNames``),
a front-end temporary (``_v1``) under a name made from what it holds, unique against every name
of the module and of this task; an integer ``let`` is written once and its name wherever its
expression occurs (``NamedInts``). Lines that a value needs written before the statement that
holds it (a temporary bound first) wait in ``pre``.
"""

from __future__ import annotations

from collections.abc import Callable

from lowering import body as ir_body
from lowering.codegen.names import NamedInts, own_name
from lowering.codegen.pypto.text import (
    Doc,
    Group,
    UnsupportedForPyPTO,
    int_text,
    lst,
    slice_text,
    symbol_namer,
)
from lowering.symbolic import Const, Expr, difference


class TaskScope:
    """Names, temporaries and regions of one task, and the lines waiting before its statement."""

    def __init__(self, tensors: dict, ranks_text: str, used: set[str], names: Callable[[str], str]):
        self.tensors = tensors
        self.names = names  # the module's source names (``ModuleNames``)
        self.name_of = symbol_namer(ranks_text, self.py)
        self.pre: list[tuple[Doc, int]] = []  # lines to put before the statement (doc, extra depth)
        self.used = used  # names taken in the module (temporaries must not collide)
        self.local_used: set[str] = set()  # this task's temporaries (another task may reuse them)
        self.temps: dict[str, str] = {}  # a front-end temporary (``_v1``) -> its name in this task
        self.uses_block = False
        self.named = NamedInts()

    def before(self, doc: Doc, extra_depth: int = 0) -> None:
        """Write ``doc`` before the statement being written (``extra_depth`` levels deeper)."""
        self.pre.append((doc, extra_depth))

    def take_pending(self) -> list[tuple[Doc, int]]:
        """The lines waiting before the statement being written, handed over once."""
        pending, self.pre = self.pre, []
        return pending

    def py(self, name: str) -> str:
        return self.temps.get(name) or self.names(name)

    def fresh(self, hint: str) -> str:
        """A temporary named ``hint`` (``hint2``, ... when that is taken in the module or task)."""
        k = 1
        while True:
            name = hint if k == 1 else f"{hint}{k}"
            if name not in self.used and name not in self.local_used:
                self.local_used.add(name)
                return name
            k += 1

    def hint(self, tensor: str, what: str) -> str:
        """A temporary's name for something of ``tensor``: its last name part and ``what``."""
        last = own_name(tensor)
        return f"{last}_{what}" if last else what

    def int(self, e: Expr) -> str:
        return int_text(self.named.rename(e), self.symbol)

    def symbol(self, s) -> str:
        text = self.name_of(s)
        if text == "block":
            self.uses_block = True
        return text

    def tensor(self, name: str) -> str:
        return self.py(name)

    def shape(self, name: str) -> tuple[Expr, ...] | None:
        t = self.tensors.get(name)
        return t.shape if t is not None else None

    def region(self, region: tuple[ir_body.Range, ...], shape: tuple[Expr, ...] | None = None) -> str:
        return ", ".join(self.region_items(region, shape))

    def region_items(
        self, region: tuple[ir_body.Range, ...], shape: tuple[Expr, ...] | None = None
    ) -> list[str]:
        parts = []
        for i, r in enumerate(region):
            if r.point:
                parts.append(self.int(r.start))
                continue
            if (
                r.start == Const(0)
                and r.step == Const(1)
                and shape is not None
                and i < len(shape)
                and r.stop == shape[i]
            ):
                parts.append(":")
                continue
            start = None if r.start == Const(0) else self.int(r.start)
            stop = self.int(r.stop)
            step = None if r.step == Const(1) else self.int(r.step)
            parts.append(slice_text(start, stop, step))
        return parts

    def offsets(self, region: tuple[ir_body.Range, ...]) -> Group:
        for r in region:
            if r.step != Const(1):
                raise UnsupportedForPyPTO(
                    "a strided store has no PyPTO form (pl.assemble takes offsets only)"
                )
        return lst([self.int(r.start) for r in region])

    def extents(self, region: tuple[ir_body.Range, ...]) -> list[Expr]:
        return [Const(1) if r.point else difference(r.stop, r.start) for r in region]
