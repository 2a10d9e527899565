"""What a harness tells the reader about its tensors: the golden harness's ``TensorSpec`` /
``ScalarSpec`` records, and the torch tensors it launches an entry on.

The records are kept in ``read_context.host()`` while ``__main__`` and the spec builders run (never
executed: interpreted); ``bindings`` turns them into dynamic-axis values and the shapes and
dtypes of bare ``pl.Tensor`` parameters.
"""

from __future__ import annotations

from lowering.pypto_reader.read_context import host
from lowering.pypto_reader.values import (
    BuiltinVal,
    FuncVal,
    HostTensorVal,
    ObjVal,
    PyVal,
    SeqVal,
    Unknown,
    Val,
)

HARNESS_RECORDS = ("TensorSpec", "ScalarSpec")


def harness_record(callee: str, args: list[Val], kwargs: dict[str, Val]) -> Val:
    """A ``TensorSpec(name, shape, dtype, ...)`` the reader keeps for the dynamic-axis bindings."""
    kind = callee.rsplit(".", 1)[-1]
    names = ("name", "shape", "dtype") if kind == "TensorSpec" else ("name", "dtype", "value")
    attrs: dict[str, Val] = dict(zip(names, args, strict=False))
    attrs.update(kwargs)
    attrs["__harness__"] = PyVal(kind)
    obj = ObjVal(None, attrs)
    host().records.append(obj)
    return obj


LAUNCH_METHODS = ("lower", "compile")


def _bound(func: FuncVal, args: list[Val], kwargs: dict[str, Val]) -> dict[str, Val]:
    """Parameter name -> argument of a call of the entry ``func`` (Python's binding, without
    defaults: a parameter the call does not pass has no tensor to describe)."""
    a = func.node.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    by_keyword = {p.arg for p in (*a.args, *a.kwonlyargs)}
    out = dict(zip(positional, args, strict=False))
    out.update((k, v) for k, v in kwargs.items() if k in by_keyword and k not in out)
    return out


def launch_method(func: FuncVal, attr: str) -> BuiltinVal | None:
    """``entry.lower`` / ``entry.compile`` of a ``@pl.jit`` entry: records its tensor arguments."""
    if func.kind != "jit" or attr not in LAUNCH_METHODS:
        return None

    def call(ev, args, kwargs, node):
        launch_records(func, args, kwargs)
        return Unknown(f"the program {attr}d from '{func.name}'")

    return BuiltinVal(attr, call)


def launch_records(func: FuncVal, args: list[Val], kwargs: dict[str, Val]) -> None:
    """``entry(*inputs, out)``, ``entry.lower(...)`` or ``entry.compile(...)`` on torch tensors:
    a harness that launches the kernel on tensors it built describes each parameter as a
    ``TensorSpec`` would (its shape and dtype), so record one per tensor argument, for that
    entry only (``__entry__``: another entry's parameter of the same name is another tensor)."""
    for name, v in _bound(func, args, kwargs).items():
        if isinstance(v, HostTensorVal) and (v.shape is not None or v.dtype is not None):
            attrs: dict[str, Val] = {"name": PyVal(name)}
            if v.shape is not None:
                attrs["shape"] = SeqVal(v.shape, "list")
            if v.dtype is not None:
                attrs["dtype"] = PyVal(v.dtype)
            attrs["__harness__"] = PyVal("TensorSpec")
            attrs["__entry__"] = PyVal(func.node.name)
            host().records.append(ObjVal(None, attrs))
