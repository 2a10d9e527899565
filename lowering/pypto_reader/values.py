"""Abstract values the reader's interpreters bind Python names to.

The reader evaluates a PyPTO file without running it: module constants, orchestration code
and kernel bodies are walked over ``ast`` nodes, and every expression becomes one of these.
Integers stay *symbolic* (``lowering.symbolic`` expressions over module constants, loop
indices, the block index, the rank and runtime scalars) so that the graph keeps grids and
regions as functions of the parameters, as the DSL front end does.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lowering import body as ir
from lowering.symbolic import Expr

if TYPE_CHECKING:
    from lowering.pypto_reader.modules import ModuleInfo


class Val:
    """Base of every abstract value."""

    __slots__ = ()


@dataclass(frozen=True)
class IntVal(Val):
    """A symbolic integer (``bool`` results of comparisons are integers too)."""

    expr: Expr


@dataclass(frozen=True)
class PyVal(Val):
    """A plain Python value known statically: str, float, bool, None."""

    value: object


@dataclass(frozen=True)
class SeqVal(Val):
    """A tuple or list of values (shapes, offsets, ``deps=`` lists, returned tuples)."""

    items: tuple[Val, ...]


@dataclass(frozen=True)
class DtypeVal(Val):
    """A dtype such as ``pl.FP32``; ``dtype`` is the IR name (``f32``) or None if unmapped."""

    name: str  # the PyPTO spelling, e.g. "FP32"
    dtype: str | None


@dataclass(frozen=True)
class PlRef(Val):
    """A name in the ``pl``/``pld`` namespaces: a function, type, enum or enum member.

    ``path`` is canonical (``pl.Level.CORE_GROUP``, ``pld.system.notify``) whatever alias the
    file imported the module under.
    """

    path: str


@dataclass(frozen=True)
class TensorVal(Val):
    """A GM tensor, or a view of one: ``root`` names the IR tensor; ``offsets`` (one per root
    dimension) and ``shape`` describe the window a slice view covers (None: the whole root);
    ``dropped`` lists root dimensions an integer index removed."""

    root: str
    offsets: tuple[Expr, ...] | None = None
    shape: tuple[Expr, ...] | None = None
    dropped: tuple[int, ...] = ()


@dataclass
class TaskIdVal(Val):
    """A TaskId: the tasks it stands for (one, or none for ``None``/an invalid id)."""

    tasks: tuple[str, ...]


@dataclass
class TaskArrayVal(Val):
    """``pl.array.create(n, pl.TASK_ID)``: element index -> tasks stored there."""

    size: Expr | None
    cells: dict[int, tuple[str, ...]] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()  # tasks stored at an index the reader could not evaluate

    def all_tasks(self) -> tuple[str, ...]:
        out: dict[str, None] = {}
        for k in sorted(self.cells):
            out.update(dict.fromkeys(self.cells[k]))
        out.update(dict.fromkeys(self.unknown))
        return tuple(out)


@dataclass(frozen=True)
class FuncVal(Val):
    """A function defined in some module: how it is decorated decides what a call means."""

    module: ModuleInfo
    node: ast.FunctionDef
    kind: str  # jit | host | inline | incore | extern | opaque | function | plain
    decorator: ast.expr | None = None
    owner: str | None = None  # class name for @pl.program methods


@dataclass(frozen=True)
class ModuleVal(Val):
    module: ModuleInfo


@dataclass(frozen=True)
class ClassVal(Val):
    """A ``@pl.program`` class (or any class): its methods by name."""

    module: ModuleInfo
    node: ast.ClassDef
    methods: tuple[tuple[str, FuncVal], ...]

    def method(self, name: str) -> FuncVal | None:
        return dict(self.methods).get(name)


@dataclass(frozen=True)
class SelfVal(Val):
    """``self`` inside a ``@pl.program`` method."""

    cls: ClassVal


@dataclass(frozen=True)
class ArgsVal(Val):
    """The result of ``parser.parse_args()``: attribute access yields argv defaults."""


@dataclass(frozen=True)
class TileVal(Val):
    """A value computed inside a kernel body: an IR value with its type."""

    value: ir.Value

    @property
    def type(self) -> ir.Type:
        return self.value.type


@dataclass(frozen=True)
class Unknown(Val):
    """Something the reader cannot evaluate; ``why`` is for the note."""

    why: str = ""


UNKNOWN = Unknown()


def unpacked(value: Val, count: int) -> list[Val]:
    """The items of ``value`` assigned to ``count`` targets (``a, b = value``): unknown unless
    it is a sequence of exactly that length."""
    if isinstance(value, SeqVal) and len(value.items) == count:
        return list(value.items)
    return [UNKNOWN] * count
