"""``dataclasses`` on the classes of the file being read: ``@dataclass``, ``field``,
``replace``, ``asdict``.

Model configuration is often a (frozen) dataclass instance that later code copies with
``dataclasses.replace``. ``@dataclass`` marks a class of the file and lists its annotated
fields, whose defaults move from the class to its instances; the interpreter builds instances
from those fields, reading a ``field(...)`` default through :func:`field_marker`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from lowering.pypto_reader.builtin_calls import StaticError, check_arity
from lowering.pypto_reader.values import BuiltinVal, ClassVal, DictVal, ObjVal, PyVal, Val


def _dataclass(ev, args, kwargs, node):
    if not args:  # @dataclass(frozen=True): a decorator
        return BuiltinVal("dataclasses.dataclass", lambda ev2, a, k, n: _dataclass(ev2, a, kwargs, n))
    cls = args[0]
    if not isinstance(cls, ClassVal):
        raise StaticError("dataclass() of something that is not a class")
    cls.dataclass = True
    cls.frozen = bool(ev.static(kwargs.get("frozen", PyVal(False))))
    cls.fields = []
    for stmt in cls.node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if "ClassVar" in ast.unparse(stmt.annotation):
                continue
            cls.fields.append((stmt.target.id, stmt.value))
            cls.attrs.pop(stmt.target.id, None)  # a default lives on instances, not the class
    return cls


def _field(ev, args, kwargs, node):
    return ObjVal(None, {"__field__": PyVal(True), **kwargs})


def field_marker(v: Val) -> ObjVal | None:
    """``v`` if it is what ``dataclasses.field(...)`` returned, else None."""
    return v if isinstance(v, ObjVal) and "__field__" in v.attrs else None


def _replace(ev, args, kwargs, node):
    check_arity(args, 1, 1, "dataclasses.replace")
    obj = args[0]
    if not isinstance(obj, ObjVal):
        raise StaticError("dataclasses.replace() of something that is not an instance")
    new = ObjVal(obj.cls, obj.attrs)
    new.attrs.update(kwargs)
    return new


def _asdict(ev, args, kwargs, node):
    obj = args[0]
    if not isinstance(obj, ObjVal):
        raise StaticError("asdict() of something that is not an instance")
    return DictVal(obj.attrs)


#: The attributes of ``dataclasses`` the reader implements.
DATACLASSES_ATTRIBUTES: dict[str, Callable[[], Val]] = {
    "dataclass": lambda: BuiltinVal("dataclasses.dataclass", _dataclass),
    "field": lambda: BuiltinVal("dataclasses.field", _field),
    "replace": lambda: BuiltinVal("dataclasses.replace", _replace),
    "asdict": lambda: BuiltinVal("dataclasses.asdict", _asdict),
}
