"""Dynamic axes and the requests that bind them: which values a ``pl.dynamic`` axis takes.

A ``pl.dynamic("T_DYN")`` axis is a parameter ranging over what the file's requests give it,
as a DSL parameter with a range does: the rules check every admissible value, and the graph
is built at the largest. An entry binds the axis to a dimension of its tensors, in the
parameter annotation (``x: pl.Tensor[[T_DYN, D], pl.BF16]``) or with
``x.bind_dynamic(0, T_DYN)``. The values come from the harness: the pypto-lib golden
harness describes each request as ``TensorSpec("x", [T, D], ...)`` built by
``build_tensor_specs``, which ``__main__`` calls for the modes the file tests (the reader
runs ``__main__`` with argv defaults, ``modules.Loader.run_main``); without such a call the
function's defaults make one request. A bare ``pl.Tensor`` parameter takes its shape from the
same records. An axis nothing binds gets no values: it is a runtime extent, and a note says
what that means for the verdict.
"""

from __future__ import annotations

import ast

from lowering.pypto_reader import read_context
from lowering.pypto_reader.constants import Params
from lowering.pypto_reader.directions import annotation_direction, tensor_param
from lowering.pypto_reader.interp import PyInterpreter
from lowering.pypto_reader.interp_control import BudgetExceeded
from lowering.pypto_reader.modules import ModuleInfo
from lowering.pypto_reader.notes import Notes
from lowering.pypto_reader.py_exceptions import PyRaise
from lowering.pypto_reader.values import DtypeVal, ExternVal, FuncVal, IntVal, ObjVal, PyVal, SeqVal
from lowering.symbolic import PARAM, Expr, Sym

SPEC_FUNCTIONS = ("build_tensor_specs",)
MAX_DYNAMIC_VALUES = 64


def axis_bindings(entry: FuncVal, ev: PyInterpreter, params: Params) -> dict[str, list[tuple[str, int]]]:
    """Dynamic parameter -> (entry tensor parameter, axis) pairs that bind it."""
    out: dict[str, list[tuple[str, int]]] = {}

    def add(dyn: Expr | None, name: str, axis: int) -> None:
        if (
            isinstance(dyn, Sym)
            and dyn.kind == PARAM
            and dyn.name in params.params
            and params.params[dyn.name].dynamic
        ):
            out.setdefault(dyn.name, []).append((name, axis))

    args = entry.node.args
    for p in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        _, inner = annotation_direction(ev, p.annotation)
        tp = tensor_param(ev, inner)
        if tp is not None and tp[1] is not None:
            for axis, dim in enumerate(tp[1]):
                add(dim, p.arg, axis)
    for node in ast.walk(entry.node):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "bind_dynamic"
            and isinstance(node.func.value, ast.Name)
            and len(node.args) == 2
        ):
            axis = ev.static(ev.eval(node.args[0]))
            dyn = ev.eval(node.args[1])
            if isinstance(axis, int) and isinstance(dyn, IntVal):
                add(dyn.expr, node.func.value.id, axis)
    return out


def harness_requests(module: ModuleInfo, ev: PyInterpreter) -> list[ObjVal]:
    """The TensorSpec records the harness built; ``build_tensor_specs()`` with its defaults
    when ``__main__`` built none."""
    records = [r for r in read_context.host().records if _kind(r) == "TensorSpec"]
    if records:
        return records
    func = next(
        (module.globals[n] for n in SPEC_FUNCTIONS if isinstance(module.globals.get(n), FuncVal)), None
    )
    if func is None:
        return []
    try:
        ev.call_value(func, [], {}, func.node)
    except (PyRaise, BudgetExceeded):
        pass
    return [r for r in read_context.host().records if _kind(r) == "TensorSpec"]


def resolve_dynamic_axes(
    params: Params,
    bindings: dict[str, list[tuple[str, int]]],
    records: list[ObjVal],
    ev: PyInterpreter,
    notes: Notes,
    module: ModuleInfo,
) -> None:
    """Give every bound dynamic axis its admissible values (and its value at the compiled point)."""
    by_name: dict[str, list[ObjVal]] = {}
    for r in records:
        name = ev.static(r.attrs.get("name", PyVal(None)))
        if isinstance(name, str):
            by_name.setdefault(name, []).append(r)
    for dyn, uses in bindings.items():
        p = params.params[dyn]
        if p.value is not None:
            continue
        values: set[int] = set()
        for tensor, axis in uses:
            for r in by_name.get(tensor, ()):
                shape = r.attrs.get("shape")
                items = ev.iterate(shape) if shape is not None else None
                if items is not None and -len(items) <= axis < len(items):
                    v = ev.static(items[axis])
                    if isinstance(v, int) and v > 0:
                        values.add(v)
        if values and len(values) <= MAX_DYNAMIC_VALUES:
            params.range_dynamic(dyn, sorted(values))
    for name, p in params.params.items():
        if p.dynamic and p.value is None and name in bindings:
            notes.not_modelled(
                p.span,
                f"the values of dynamic axis '{name}' (no request of the harness binds it)",
                "it is a runtime extent: grids and regions that depend on it are not checked for its values",
            )


def spec_shapes(records: list[ObjVal], ev: PyInterpreter) -> dict[str, tuple[Expr, ...]]:
    """Tensor name -> shape of its first TensorSpec (for bare ``pl.Tensor`` parameters)."""
    out: dict[str, tuple[Expr, ...]] = {}
    for r in records:
        name = ev.static(r.attrs.get("name", PyVal(None)))
        shape = r.attrs.get("shape")
        if not isinstance(name, str) or name in out or not isinstance(shape, SeqVal):
            continue
        dims = ev.int_items(shape)
        if dims is not None:
            out[name] = dims
    return out


# Spellings of the harness's dtypes (torch names, strings, ``pl`` dtypes) -> IR dtypes.
_SPEC_DTYPES = {
    "float32": "f32", "float": "f32", "fp32": "f32", "f32": "f32",
    "float16": "f16", "half": "f16", "fp16": "f16", "f16": "f16",
    "bfloat16": "bf16", "bf16": "bf16",
    "int8": "i8", "i8": "i8", "uint8": "u8", "u8": "u8", "int16": "i16", "i16": "i16",
    "int32": "i32", "int": "i32", "i32": "i32", "int64": "i64", "long": "i64", "i64": "i64",
    "bool": "bool",
}  # fmt: skip


def spec_dtypes(records: list[ObjVal], ev: PyInterpreter) -> dict[str, str]:
    """Tensor name -> IR dtype of its first TensorSpec (for bare ``pl.Tensor`` parameters)."""
    out: dict[str, str] = {}
    for r in records:
        name = ev.static(r.attrs.get("name", PyVal(None)))
        if not isinstance(name, str) or name in out:
            continue
        v = r.attrs.get("dtype")
        spelled = None
        if isinstance(v, DtypeVal):
            spelled = v.dtype
        elif isinstance(v, ExternVal):
            spelled = v.name.rsplit(".", 1)[-1]
        elif isinstance(v, PyVal) and isinstance(v.value, str):
            spelled = v.value
        dtype = _SPEC_DTYPES.get((spelled or "").lower())
        if dtype is not None:
            out[name] = dtype
    return out


def launched_for(r: ObjVal, ev: PyInterpreter) -> str | None:
    """The entry a record describes when the harness launched that entry on tensors (None: a
    ``TensorSpec``, which names tensors, not an entry)."""
    name = ev.static(r.attrs.get("__entry__", PyVal(None)))
    return name if isinstance(name, str) else None


def _kind(r: ObjVal) -> str | None:
    tag = r.attrs.get("__harness__")
    return str(tag.value) if isinstance(tag, PyVal) else None
