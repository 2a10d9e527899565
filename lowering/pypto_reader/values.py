"""Abstract values the reader's interpreters bind Python names to.

The reader evaluates a PyPTO file without running it: module-level code, host helpers,
orchestration code and kernel bodies are walked over ``ast`` nodes, and every expression
becomes one of these. Integers stay *symbolic* (``lowering.symbolic`` expressions over module
constants, loop indices, the block index, the rank and runtime scalars) so that the graph
keeps grids and regions as functions of the parameters, as the DSL front end does.

Plain Python data that configuration code builds (lists, dicts, dataclass instances,
functions and classes of the file) has a value of its own here, mutable where Python's is,
so that ``config.FLASH = dataclasses.replace(config.FLASH, ...)`` or ``sys.argv[:] = rest``
behave as they would at import time -- without anything being imported or run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lowering import body as ir_body
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
    """A plain immutable Python value known statically: str, float, bool, None, bytes."""

    value: object


class SeqVal(Val):
    """A tuple, list or set of values (shapes, offsets, ``deps=`` lists, returned tuples).

    Lists are mutable as in Python: ``append`` replaces ``items`` on the same object, so every
    name bound to the list sees the change.
    """

    __slots__ = ("items", "kind")

    def __init__(self, items: tuple[Val, ...] | list[Val], kind: str = "tuple"):
        self.items: tuple[Val, ...] = tuple(items)
        self.kind = kind  # tuple | list | set

    def __repr__(self) -> str:
        return f"SeqVal({self.items!r}, {self.kind!r})"


class DictVal(Val):
    """A dict whose keys are static Python values (str, int, tuples of them)."""

    __slots__ = ("items",)

    def __init__(self, items: dict[object, Val] | None = None):
        self.items: dict[object, Val] = dict(items or {})

    def __repr__(self) -> str:
        return f"DictVal({self.items!r})"


@dataclass(frozen=True)
class RangeVal(Val):
    """``range(start, stop, step)`` with static bounds (iterated lazily)."""

    start: int
    stop: int
    step: int

    def __len__(self) -> int:
        return len(range(self.start, self.stop, self.step))


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
class ExternVal(Val):
    """Something from a module outside the model tree (``torch``, ``numpy``, ``golden``):
    never loaded; attributes are more of the same, calls are unknown."""

    name: str


@dataclass(frozen=True)
class HostTensorVal(Val):
    """A torch tensor a harness builds (``lowering.pypto_reader.host_tensors``): its shape
    (None when not followed) and canonical torch dtype name (``bfloat16``; None: unknown)."""

    shape: tuple[Val, ...] | None
    dtype: str | None


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


@dataclass(frozen=True, eq=False)
class FuncVal(Val):
    """A function defined in some module: how it is decorated decides what a call means.

    ``closure`` holds the locals of the enclosing function activation for a nested ``def``
    (the factories that define a kernel inside a function and return it).
    """

    module: ModuleInfo
    node: ast.FunctionDef | ast.Lambda
    kind: str  # jit | host | inline | incore | extern | opaque | function | plain
    decorator: ast.expr | None = None
    owner: str | None = None  # class name for methods
    closure: tuple[dict[str, Val], ...] = ()
    wrapper: str | None = None  # property | staticmethod | classmethod
    defaults: tuple[Val, ...] | None = None  # evaluated where the ``def`` ran (None: not yet)
    kw_defaults: tuple[tuple[str, Val], ...] = ()

    @property
    def name(self) -> str:
        return self.node.name if isinstance(self.node, ast.FunctionDef) else "<lambda>"


@dataclass(frozen=True)
class ModuleVal(Val):
    module: ModuleInfo


class ClassVal(Val):
    """A class of the file: a ``@pl.program`` class, a dataclass, or a plain class.

    ``attrs`` holds class attributes and methods (``FuncVal``); ``fields`` the dataclass
    fields in order, with their defaults (an ``ast`` node, evaluated at construction).
    """

    __slots__ = ("module", "node", "attrs", "bases", "fields", "dataclass", "frozen")

    def __init__(self, module: ModuleInfo, node: ast.ClassDef, bases: tuple[ClassVal, ...] = ()):
        self.module = module
        self.node = node
        self.attrs: dict[str, Val] = {}
        self.bases = bases
        self.fields: list[tuple[str, ast.expr | None]] = []
        self.dataclass = False
        self.frozen = False

    @property
    def name(self) -> str:
        return self.node.name

    def lookup(self, name: str) -> Val | None:
        """An attribute of the class or, in order, of its bases."""
        if name in self.attrs:
            return self.attrs[name]
        for base in self.bases:
            found = base.lookup(name)
            if found is not None:
                return found
        return None

    def method(self, name: str) -> FuncVal | None:
        v = self.lookup(name)
        return v if isinstance(v, FuncVal) else None

    @property
    def methods(self) -> tuple[tuple[str, FuncVal], ...]:
        return tuple((k, v) for k, v in self.attrs.items() if isinstance(v, FuncVal))

    def all_fields(self) -> list[tuple[str, ast.expr | None]]:
        out: dict[str, ast.expr | None] = {}
        for base in reversed(self.bases):
            out.update(dict(base.all_fields()))
        out.update(dict(self.fields))
        return list(out.items())

    def __repr__(self) -> str:
        return f"ClassVal({self.name})"


class ObjVal(Val):
    """An instance of a class of the file (a dataclass config, an argparse namespace)."""

    __slots__ = ("cls", "attrs")

    def __init__(self, cls: ClassVal | None, attrs: dict[str, Val] | None = None):
        self.cls = cls
        self.attrs: dict[str, Val] = dict(attrs or {})

    def __repr__(self) -> str:
        return f"ObjVal({self.cls.name if self.cls else 'object'}, {list(self.attrs)})"


@dataclass(frozen=True, eq=False)
class BoundMethod(Val):
    """``obj.method`` of an instance or class of the file: the function with ``self`` bound."""

    func: FuncVal
    self_val: Val


@dataclass(frozen=True, eq=False)
class BuiltinVal(Val):
    """A builtin or standard-library callable the reader implements without side effects.

    ``fn(interp, args, kwargs, node)`` receives evaluated arguments and returns a value.
    """

    name: str
    fn: Callable[..., Val]
    self_val: Val | None = None  # for methods of builtin values (``list.append``)


@dataclass(frozen=True)
class SelfVal(Val):
    """``self`` inside a ``@pl.program`` method."""

    cls: ClassVal


@dataclass(frozen=True)
class TileVal(Val):
    """A value computed inside a kernel body: an IR value with its type."""

    value: ir_body.Value

    @property
    def type(self) -> ir_body.Type:
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
