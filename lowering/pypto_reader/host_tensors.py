"""Torch tensors a harness builds, modelled statically: their shape and dtype, never their data.

A model file's harness makes its inputs with torch (``torch.randn(shape).to(torch.bfloat16)``,
``torch.zeros(r, c, dtype=torch.int32)``, ``w.float()``) and hands ``t.shape`` and ``t.dtype``
to the ``TensorSpec`` records that give bare ``pl.Tensor`` parameters their type. Nothing is
imported or run: a constructor call becomes a ``HostTensorVal`` with the shape its arguments
give and the dtype torch would choose (``float32`` for the float constructors without
``dtype=``), and the methods and operators that keep or change a dtype are followed. What the
model does not cover (``torch.load``, indexing, reductions) stays unknown, so the parameter
keeps the reader's default and a note says so.
"""

from __future__ import annotations

import ast

from lowering.pypto_reader.builtin_calls import StaticError
from lowering.pypto_reader.values import BuiltinVal, ExternVal, HostTensorVal, IntVal, PyVal, SeqVal, Val
from lowering.symbolic import Const

FLOAT_DEFAULT = "float32"  # torch's default dtype for float constructors

# torch dtype attribute names -> the canonical torch dtype name (``torch.half is torch.float16``).
DTYPE_NAMES = {
    "float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "float64": "float64", "double": "float64",
    "int8": "int8", "uint8": "uint8", "int16": "int16", "short": "int16", "int32": "int32",
    "int": "int32", "int64": "int64", "long": "int64", "bool": "bool",
}  # fmt: skip

# Constructors whose result dtype is ``dtype=`` or torch's default float dtype.
_FLOAT_CTORS = ("zeros", "ones", "empty", "randn", "rand")
# ``torch.X_like(t, dtype=...)``: the shape and dtype of ``t`` unless ``dtype=`` says otherwise.
_LIKE_CTORS = (
    "zeros_like",
    "ones_like",
    "empty_like",
    "randn_like",
    "rand_like",
    "full_like",
    "randint_like",
)
# Functions of tensors whose result has the dtype and shape of their first tensor argument.
_ELEMENTWISE = (
    "abs neg exp log sqrt rsqrt sigmoid tanh relu softmax log_softmax sin cos clamp clip clone "
    "round floor ceil sign square reciprocal"
).split()

# Methods that return a tensor of the same shape and dtype (or the tensor itself, in place).
_SAME = (
    "normal_ uniform_ zero_ fill_ random_ clamp clamp_ clip abs neg exp sqrt rsqrt sigmoid tanh "
    "relu softmax contiguous clone detach cpu cuda npu requires_grad_ add sub mul div pow add_ sub_ "
    "mul_ div_ round floor ceil square reciprocal pin_memory share_memory_"
).split()
# Methods that keep the dtype and change the shape in ways the model does not follow.
_RESHAPE = "unsqueeze squeeze transpose permute flatten repeat expand expand_as narrow t".split()
# Methods that convert to a fixed dtype.
_CAST = {
    "float": "float32", "half": "float16", "bfloat16": "bfloat16", "double": "float64",
    "int": "int32", "long": "int64", "short": "int16", "bool": "bool", "byte": "uint8", "char": "int8",
}  # fmt: skip


def dtype_of(v: Val) -> str | None:
    """The canonical torch dtype a value names: ``torch.bfloat16``, ``t.dtype``, a tensor."""
    if isinstance(v, HostTensorVal):
        return v.dtype
    if isinstance(v, ExternVal) and v.name.startswith("torch."):
        return DTYPE_NAMES.get(v.name.rsplit(".", 1)[-1])
    return None


def same_dtype(a: Val, b: Val) -> bool | None:
    """``a == b`` for two torch dtypes (``dtype == torch.int8`` in a harness helper), else None."""
    if not (isinstance(a, ExternVal) and isinstance(b, ExternVal)):
        return None
    da, db = dtype_of(a), dtype_of(b)
    return None if da is None or db is None else da == db


def is_constructor(name: str) -> bool:
    """``torch.<fn>`` calls this module models."""
    if not name.startswith("torch.") or name.count(".") != 1:
        return False
    fn = name.split(".", 1)[1]
    return fn in (
        *_FLOAT_CTORS,
        *_LIKE_CTORS,
        *_ELEMENTWISE,
        "full",
        "randint",
        "arange",
        "tensor",
        "cat",
        "stack",
    )


def construct(ev, name: str, args: list[Val], kwargs: dict[str, Val]) -> Val:
    """The tensor ``torch.<fn>(*args, **kwargs)`` returns (its shape and dtype)."""
    fn = name.split(".", 1)[1]
    given = dtype_of(kwargs["dtype"]) if "dtype" in kwargs else None
    if fn in _FLOAT_CTORS:
        return HostTensorVal(_shape_args(ev, args if "size" not in kwargs else [kwargs["size"]]),
                             given or FLOAT_DEFAULT)  # fmt: skip
    if fn in _LIKE_CTORS:
        like = args[0] if args else kwargs.get("input")
        if not isinstance(like, HostTensorVal):
            return HostTensorVal(None, given)
        return HostTensorVal(like.shape, given or like.dtype)
    if fn == "full":
        fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
        return HostTensorVal(_shape_args(ev, args[:1]), given or _scalar_dtype(ev, fill))
    if fn == "randint":
        size = kwargs.get("size", args[-1] if len(args) >= 2 else None)
        return HostTensorVal(_shape_args(ev, [size]) if size is not None else None, given or "int64")
    if fn == "arange":
        bounds = [ev.static(a) for a in args]
        ints = all(isinstance(b, int) for b in bounds)
        length = _arange_length(bounds) if ints else None
        shape = (IntVal(Const(length)),) if length is not None else None
        return HostTensorVal(shape, given or ("int64" if ints else FLOAT_DEFAULT if bounds else None))
    if fn == "tensor":
        return HostTensorVal(None, given or (_scalar_dtype(ev, args[0]) if args else None))
    if fn in ("cat", "stack"):
        parts = ev.iterate(args[0]) if args else None
        dtypes = {dtype_of(p) for p in parts or ()}
        return HostTensorVal(None, given or (dtypes.pop() if len(dtypes) == 1 else None))
    first = args[0] if args else None  # elementwise
    if isinstance(first, HostTensorVal):
        return HostTensorVal(first.shape, given or first.dtype)
    return HostTensorVal(None, given)


def attribute(ev, t: HostTensorVal, attr: str) -> Val | None:
    """``t.attr``: shape, dtype, ndim, T, or a method; None when the model does not know it."""
    if attr == "shape":
        return SeqVal(t.shape, "tuple") if t.shape is not None else None
    if attr == "dtype":
        return ExternVal(f"torch.{t.dtype}") if t.dtype is not None else None
    if attr == "ndim" and t.shape is not None:
        return IntVal(Const(len(t.shape)))
    if attr in ("T", "mT") and t.shape is not None:
        return HostTensorVal(tuple(reversed(t.shape)), t.dtype)
    if (
        attr in _SAME
        or attr in _RESHAPE
        or attr in _CAST
        or attr in ("to", "type", "view", "reshape", "size")
    ):
        return BuiltinVal(f"Tensor.{attr}", _method(attr), t)
    return None


def _method(name: str):
    def call(ev, args, kwargs, node: ast.AST) -> Val:
        t, rest = args[0], args[1:]
        if name in _SAME:
            return HostTensorVal(t.shape, t.dtype)
        if name in _CAST:
            return HostTensorVal(t.shape, _CAST[name])
        if name in _RESHAPE:
            return HostTensorVal(None, t.dtype)
        if name == "size":
            if t.shape is None:
                raise StaticError("the shape of a torch tensor")
            if not rest:
                return SeqVal(t.shape, "tuple")
            i = ev.static(rest[0])
            if not isinstance(i, int) or not -len(t.shape) <= i < len(t.shape):
                raise StaticError("a size() index")
            return t.shape[i]
        if name in ("to", "type", "view"):
            named = [dtype_of(v) for v in (kwargs.get("dtype"), *rest) if v is not None]
            dtype = next((d for d in named if d is not None), None)
            if dtype is None and name == "view":  # view(shape...): same dtype, new shape
                return HostTensorVal(_shape_args(ev, rest), t.dtype)
            if dtype is None:  # ``.to(device)``, ``.to("cpu")``: the dtype stays
                dtype = t.dtype if all(_is_device(v) for v in rest) and "dtype" not in kwargs else None
            # ``.view(dtype)`` reinterprets the bytes: the last dimension changes with the width
            return HostTensorVal(t.shape if name != "view" else None, dtype)
        return HostTensorVal(_shape_args(ev, rest), t.dtype)  # reshape

    return call


def binary(ev, a: Val, b: Val) -> Val:
    """``a <op> b`` with a torch tensor on either side: torch's type promotion, simplified to
    what harnesses do (a tensor with a Python scalar keeps the tensor's dtype unless an int
    tensor meets a float; two tensors of one dtype keep it; two floats widen to float32)."""
    ta = a if isinstance(a, HostTensorVal) else None
    tb = b if isinstance(b, HostTensorVal) else None
    if ta is not None and tb is not None:
        shape = ta.shape if ta.shape == tb.shape else None
        return HostTensorVal(shape, _promote(ta.dtype, tb.dtype))
    t, other = (ta, b) if ta is not None else (tb, a)
    assert t is not None
    scalar = _scalar_dtype(ev, other)
    if scalar is None:
        return HostTensorVal(None, None)
    if scalar == FLOAT_DEFAULT and t.dtype is not None and not _is_float(t.dtype):
        return HostTensorVal(t.shape, FLOAT_DEFAULT)
    return HostTensorVal(t.shape, t.dtype)


def _arange_length(bounds: list[int]) -> int | None:
    """How many values ``torch.arange(*bounds)`` holds; None for a zero step (torch refuses it)
    or a wrong argument count. Computed, not by ``len(range())``, which overflows past 2**63."""
    if not 1 <= len(bounds) <= 3:
        return None
    start, stop, step = (*([0] if len(bounds) == 1 else []), *bounds, 1)[:3]
    if step == 0:
        return None
    return max(0, -((start - stop) // step))


def _promote(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return None
    if a == b:
        return a
    if _is_float(a) != _is_float(b):
        return a if _is_float(a) else b
    if _is_float(a):
        return "float64" if "float64" in (a, b) else "float32"
    return None  # two integer widths: not followed


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _scalar_dtype(ev, v: Val | None) -> str | None:
    """The dtype torch gives a Python number (or nested list of them)."""
    s = ev.static(v) if v is not None else None
    while isinstance(s, list | tuple) and s:
        s = s[0]
    if isinstance(s, bool):
        return "bool"
    if isinstance(s, int):
        return "int64"
    if isinstance(s, float):
        return FLOAT_DEFAULT
    return None


def _shape_args(ev, args: list[Val]) -> tuple[Val, ...] | None:
    """A shape given as ints (``zeros(r, c)``) or as one sequence (``zeros([r, c])``)."""
    if len(args) == 1 and isinstance(args[0], SeqVal):
        items = args[0].items
    else:
        items = tuple(args)
    if items and all(ev.int_expr(i) is not None for i in items):
        return tuple(items)
    return None


def _is_device(v: Val | None) -> bool:
    return isinstance(v, PyVal) and isinstance(v.value, str) or isinstance(v, ExternVal)
