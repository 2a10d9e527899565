"""Frames of the static interpreter and the places a value is bound to.

Python's scoping is modelled by a stack of :class:`Frame`: a name is looked up in the frame's
locals, ``self``, the enclosing functions' locals (a closure shares their dicts, so a
``nonlocal`` store lands in the enclosing scope), then the module's globals. A comprehension
pushes its own frame, so its targets do not leak. The functions here work on the frames of the
:class:`~lowering.pypto_reader.interp.PyInterpreter` they are given: looking a name up, binding
it, and storing to a target -- names, unpacked sequences, attributes, items of lists and dicts
-- with the ``KeyError`` or ``IndexError`` that reading an item known to be missing raises.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lowering.pypto_reader import exprs_subscripts, read_context
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
    from lowering.pypto_reader.interp import PyInterpreter
    from lowering.pypto_reader.modules import ModuleInfo


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


def lookup(it: PyInterpreter, name: str, node: ast.AST) -> Val:
    f = it.frame
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
        return PyVal(it.module_name(f.module))
    if name == "__file__":
        return PyVal(f.module.file)
    return Unknown(f"unknown name '{name}'")


def bind_name(it: PyInterpreter, name: str, value: Val, node: ast.AST) -> None:
    f = it.frame
    if f.kind == "module" or name in f.declared_global:
        it.bind_global(f.module, name, value, node)
    else:
        f.locals[name] = value


def push_scope(it: PyInterpreter) -> object:
    """A comprehension's own scope: its targets do not leak (Python 3)."""
    f = it.frame
    closure = f.closure if f.kind in ("module", "class") else (f.locals, *f.closure)
    it.frames.append(Frame(f.module, {}, closure, f.self_val))
    return len(it.frames)


def bind_target(it: PyInterpreter, target: ast.expr, value: Val) -> bool:
    """Bind an assignment, loop or comprehension target (a comprehension's stays local)."""
    if isinstance(target, ast.Name):
        it.bind_name(target.id, value, target)
        return True
    if isinstance(target, ast.Tuple | ast.List):
        return unpack(it, target.elts, value, target)
    if isinstance(target, ast.Starred):
        return it.bind_target(target.value, value)
    if isinstance(target, ast.Attribute):
        store_attribute(it, it.eval(target.value), target.attr, value, target)
        return True
    if isinstance(target, ast.Subscript):
        store_subscript(it, target, value)
        return True
    return False


def unpack(it: PyInterpreter, elts: list[ast.expr], value: Val, node: ast.AST) -> bool:
    items = it.iterate(value)
    starred = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
    if items is None or (not starred and len(items) != len(elts)) or len(items) < len(elts) - 1:
        for e in elts:
            it.bind_target(e, Unknown("an unpacked value"))
        return True
    if starred:
        s = starred[0]
        tail = len(elts) - s - 1
        middle = items[s : len(items) - tail]
        items = [*items[:s], SeqVal(middle, "list"), *items[len(items) - tail :]]
    for e, v in zip(elts, items, strict=True):
        it.bind_target(e, v)
    return True


def store_attribute(it: PyInterpreter, base: Val, attr: str, value: Val, node: ast.AST) -> None:
    if isinstance(base, ObjVal):
        base.attrs[attr] = value
    elif isinstance(base, ModuleVal):
        base.module.globals[attr] = it.on_store_attribute(base, attr, value, node)
    elif isinstance(base, ClassVal):
        base.attrs[attr] = value


def store_subscript(it: PyInterpreter, target: ast.Subscript, value: Val) -> None:
    base = it.eval(target.value)
    key = it.eval(target.slice)
    if isinstance(base, DictVal | read_context.EnvironVal):
        k = it.static(key)
        if k is not UNKNOWN:
            try:
                base.items[k] = value  # type: ignore[index]
            except TypeError:
                pass
        return
    if isinstance(base, SeqVal) and base.kind == "list":
        k = it.static(key)
        items = list(base.items)
        try:
            if isinstance(k, slice):
                new = it.iterate(value)
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
    it.store_other(base, target, value)


def index(it: PyInterpreter, base: Val, key: Val) -> Val:
    """``base[key]``; a key a dict lacks or an index past a list's end raises, as in Python."""
    out = exprs_subscripts.index(it, base, key)  # the evaluator's own ``index``
    if isinstance(out, Unknown) and isinstance(base, DictVal | SeqVal):
        k = it.static(key)
        if (
            isinstance(base, DictVal)
            and k is not UNKNOWN
            and not any(isinstance(v, Unknown) for v in base.items.values())
        ):
            raise PyRaise(ObjVal(None, {"__exception__": PyVal("KeyError"), "args": SeqVal((key,))}))
        if isinstance(base, SeqVal) and isinstance(k, int):
            raise PyRaise(ObjVal(None, {"__exception__": PyVal("IndexError"), "args": SeqVal((key,))}))
    return out
