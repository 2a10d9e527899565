"""Frames of the static interpreter and the places a value is bound to.

Python's scoping is modelled by a stack of :class:`Frame`: a name is looked up in the frame's
locals, ``self``, the enclosing functions' locals (a closure shares their dicts, so a
``nonlocal`` store lands in the enclosing scope), then the module's globals. A comprehension
pushes its own frame, so its targets do not leak. :class:`ScopedEvaluator` adds the frames to
the expression evaluator (``exprs.Evaluator``), together with the targets a value is stored
to -- names, unpacked sequences, attributes, items of lists and dicts -- and the ``KeyError``
or ``IndexError`` that reading an item known to be missing raises.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lowering.pypto_reader import read_context
from lowering.pypto_reader.exprs import Evaluator
from lowering.pypto_reader.interp_control import Budget
from lowering.pypto_reader.notes import Notes
from lowering.pypto_reader.py_exceptions import PyRaise
from lowering.pypto_reader.values import (
    UNKNOWN,
    ClassVal,
    DictVal,
    ModuleVal,
    ObjVal,
    PyVal,
    SeqVal,
    Unknown,
    Val,
)

if TYPE_CHECKING:
    from lowering.pypto_reader.modules import Loader, ModuleInfo


@dataclass
class Frame:
    """One activation: its locals (the module's globals at module level), the enclosing
    functions' locals for a nested ``def``, and ``self`` in a ``@pl.program`` method."""

    module: ModuleInfo
    locals: dict[str, Val] = field(default_factory=dict)
    closure: tuple[dict[str, Val], ...] = ()
    self_val: Val | None = None
    kind: str = "function"  # module | class | function
    declared_global: set[str] = field(default_factory=set)


class ScopedEvaluator(Evaluator):
    """The expression evaluator with Python's frames: where names are looked up and stored."""

    def __init__(
        self,
        module: ModuleInfo,
        notes: Notes,
        env: Callable[[], dict[str, int]],
        loader: Loader | None,
        budget: Budget,
    ):
        super().__init__(module.file, notes, env)
        self.loader = loader
        self.budget = budget
        self.frames: list[Frame] = [Frame(module, module.globals, kind="module")]
        self.depth = 0

    # ---------------------------------------------------------------- frames and names
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def lookup(self, name: str, node: ast.AST) -> Val:
        f = self.frame
        if name in f.locals:
            return f.locals[name]
        if name == "self" and f.self_val is not None:
            return f.self_val
        for scope in f.closure:
            if name in scope:
                return scope[name]
        g = f.module.globals
        if name in g:
            return g[name]
        if name == "__name__":
            return PyVal(self.module_name(f.module))
        if name == "__file__":
            return PyVal(f.module.file)
        return Unknown(f"unknown name '{name}'")

    def module_name(self, module: ModuleInfo) -> str:
        return module.name

    def bind_name(self, name: str, value: Val, node: ast.AST) -> None:
        f = self.frame
        if f.kind == "module" or name in f.declared_global:
            self.bind_global(f.module, name, value, node)
        else:
            f.locals[name] = value

    def bind_global(self, module: ModuleInfo, name: str, value: Val, node: ast.AST) -> None:
        """A module-level name bound (the module interpreter makes integers parameters)."""
        module.globals[name] = value

    def push_scope(self) -> object:
        """A comprehension's own scope: its targets do not leak (Python 3)."""
        f = self.frame
        closure = f.closure if f.kind in ("module", "class") else (f.locals, *f.closure)
        self.frames.append(Frame(f.module, {}, closure, f.self_val))
        return len(self.frames)

    def pop_scope(self, token: object) -> None:
        del self.frames[int(token) - 1 :]  # type: ignore[call-overload]

    def bind_target(self, target: ast.expr, value: Val) -> bool:
        """Bind an assignment, loop or comprehension target (a comprehension's stays local)."""
        if isinstance(target, ast.Name):
            self.bind_name(target.id, value, target)
            return True
        if isinstance(target, ast.Tuple | ast.List):
            return self.unpack(target.elts, value, target)
        if isinstance(target, ast.Starred):
            return self.bind_target(target.value, value)
        if isinstance(target, ast.Attribute):
            self.store_attribute(self.eval(target.value), target.attr, value, target)
            return True
        if isinstance(target, ast.Subscript):
            self.store_subscript(target, value)
            return True
        return False

    def unpack(self, elts: list[ast.expr], value: Val, node: ast.AST) -> bool:
        items = self.iterate(value)
        starred = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
        if items is None or (not starred and len(items) != len(elts)) or len(items) < len(elts) - 1:
            for e in elts:
                self.bind_target(e, Unknown("an unpacked value"))
            return True
        if starred:
            s = starred[0]
            tail = len(elts) - s - 1
            middle = items[s : len(items) - tail]
            items = [*items[:s], SeqVal(middle, "list"), *items[len(items) - tail :]]
        for e, v in zip(elts, items, strict=True):
            self.bind_target(e, v)
        return True

    def store_attribute(self, base: Val, attr: str, value: Val, node: ast.AST) -> None:
        if isinstance(base, ObjVal):
            base.attrs[attr] = value
        elif isinstance(base, ModuleVal):
            base.module.globals[attr] = self.on_store_attribute(base, attr, value, node)
        elif isinstance(base, ClassVal):
            base.attrs[attr] = value

    def store_subscript(self, target: ast.Subscript, value: Val) -> None:
        base = self.eval(target.value)
        key = self.eval(target.slice)
        if isinstance(base, DictVal | read_context.EnvironVal):
            k = self.static(key)
            if k is not UNKNOWN:
                try:
                    base.items[k] = value  # type: ignore[index]
                except TypeError:
                    pass
            return
        if isinstance(base, SeqVal) and base.kind == "list":
            k = self.static(key)
            items = list(base.items)
            try:
                if isinstance(k, slice):
                    new = self.iterate(value)
                    if new is not None:
                        items[k] = new
                elif isinstance(k, int):
                    items[k] = value
                else:
                    return
            except (IndexError, ValueError):
                return
            base.items = tuple(items)
            return
        self.store_other(base, target, value)

    def store_other(self, base: Val, target: ast.Subscript, value: Val) -> None:
        """``base[...] = value`` on anything but a list or dict (tensors, task-id arrays)."""
        return None

    def index(self, base: Val, key: Val) -> Val:
        """``base[key]``; a key a dict lacks or an index past a list's end raises, as in Python."""
        out = super().index(base, key)
        if isinstance(out, Unknown) and isinstance(base, DictVal | SeqVal):
            k = self.static(key)
            if (
                isinstance(base, DictVal)
                and k is not UNKNOWN
                and not any(isinstance(v, Unknown) for v in base.items.values())
            ):
                raise PyRaise(ObjVal(None, {"__exception__": PyVal("KeyError"), "args": SeqVal((key,))}))
            if isinstance(base, SeqVal) and isinstance(k, int):
                raise PyRaise(ObjVal(None, {"__exception__": PyVal("IndexError"), "args": SeqVal((key,))}))
        return out
