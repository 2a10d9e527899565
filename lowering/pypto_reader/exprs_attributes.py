"""Attribute access in expressions: ``x.name`` on ``pl``, modules, instances, classes and tensors.

``pl.X`` paths stay paths (``pl.FP32`` and the other dtype names become dtypes); a module of the
model tree gives its globals, a module outside it what :mod:`~lowering.pypto_reader.std_modules`
models; an instance gives its attributes, then its class's, where methods bind and properties
run; ``t.shape`` of a tensor is the evaluator's ``tensor_shape``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering.pypto_reader import builtin_methods, harness, host_tensors, std_modules
from lowering.pypto_reader.values import (
    BoundMethod,
    ClassVal,
    DtypeVal,
    ExternVal,
    FuncVal,
    HostTensorVal,
    ModuleVal,
    ObjVal,
    PlRef,
    PyVal,
    SelfVal,
    TensorVal,
    Unknown,
    Val,
)

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator

DTYPES = {
    "FP32": "f32",
    "FP16": "f16",
    "BF16": "bf16",
    "INT8": "i8",
    "UINT8": "u8",
    "INT16": "i16",
    "UINT16": "i16",
    "INT32": "i32",
    "UINT32": "u32",
    "INT64": "i64",
    "UINT64": "i64",
    "INDEX": "i64",
    "BOOL": "bool",
    "TASK_ID": "i64",
}


def attribute_reference(ev: Evaluator, node: ast.Attribute) -> Val:
    return ev.attribute(ev.eval(node.value), node.attr, node)


def attribute(ev: Evaluator, base: Val, attr: str, node: ast.AST) -> Val:
    """``base.attr`` (``x.attr`` once ``x`` is evaluated)."""
    if isinstance(base, PlRef):
        path = f"{base.path}.{attr}"
        if base.path in ("pl", "pl.tile", "pl.tensor") and attr in DTYPES:
            return DtypeVal(attr, DTYPES[attr])
        if base.path in ("pl", "pl.tile", "pl.tensor") and attr.startswith(("FP", "HF")):
            return DtypeVal(attr, None)
        return PlRef(path)
    if isinstance(base, ModuleVal):
        return base.module.globals.get(attr, Unknown(f"'{attr}' of module {base.module.name}"))
    if isinstance(base, ExternVal):
        return std_modules.module_attribute(base.name, attr)
    if isinstance(base, TensorVal) and attr == "shape":
        return ev.tensor_shape(base)
    if isinstance(base, HostTensorVal):
        found = host_tensors.attribute(ev, base, attr)
        return found if found is not None else Unknown(f"'{attr}' of a torch tensor")
    if isinstance(base, ObjVal):
        if attr in base.attrs:
            return base.attrs[attr]
        if base.cls is not None:
            return class_attribute(ev, base.cls, attr, base, node)
    if isinstance(base, ClassVal):
        return class_attribute(ev, base, attr, None, node)
    if isinstance(base, SelfVal):
        m = base.cls.method(attr)
        return m if m is not None else Unknown(f"self.{attr}")
    if isinstance(base, FuncVal):
        launch = harness.launch_method(base, attr)
        if launch is not None:
            return launch
    method = builtin_methods.method_of(base, attr)
    if method is not None:
        return method
    return Unknown(f"attribute '{attr}'")


def class_attribute(ev: Evaluator, cls: ClassVal, attr: str, instance: ObjVal | None, node: ast.AST) -> Val:
    """``cls.attr`` or ``instance.attr`` through the class: methods bind, properties run."""
    v = cls.lookup(attr)
    if v is None:
        if attr == "__name__":
            return PyVal(cls.name)
        return Unknown(f"attribute '{attr}' of {cls.name}")
    if isinstance(v, FuncVal) and v.kind == "plain":
        if v.wrapper == "property":
            return ev.call_value(v, [instance or cls], {}, node) if instance is not None else v
        if v.wrapper == "staticmethod":
            return v
        if v.wrapper == "classmethod":
            return BoundMethod(v, cls)
        if instance is not None:
            return BoundMethod(v, instance)
    return v
