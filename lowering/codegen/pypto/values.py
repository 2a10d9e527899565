"""IR values -> PyPTO expressions inside a kernel scope.

Tile ops map to their ``pl`` names (``a + b`` on tiles is ``pl.add``, a comparison
``pl.cmp`` with its ``cmp_type``); scalar arithmetic stays Python operators; the few DSL ops
PyPTO lacks are written with ops it has (``sigmoid(x)`` = ``recip(1 + exp(-x))``, its operand
bound to a ``logit`` local first unless it is one already, as pypto-lib's models write it). A value
that must be a name (an operand PyPTO takes only as a tile variable) is bound to a
temporary first. The statements are ``lowering.codegen.pypto.body``, the names and index text
``lowering.codegen.pypto.scope``.
"""

from __future__ import annotations

import math

from lowering import body as ir_body
from lowering.codegen.pypto.scope import TaskScope
from lowering.codegen.pypto.text import (
    Cat,
    Doc,
    Group,
    UnsupportedForPyPTO,
    call,
    flat,
    lst,
    py_float,
)
from lowering.symbolic import Const

DTYPE_NAMES = {
    "f32": "pl.FP32",
    "f16": "pl.FP16",
    "bf16": "pl.BF16",
    "i8": "pl.INT8",
    "u8": "pl.UINT8",
    "i16": "pl.INT16",
    "i32": "pl.INT32",
    "u32": "pl.UINT32",
    "i64": "pl.INT64",
    "bool": "pl.BOOL",
}
_TILE_BINOPS = {
    "add": "pl.add",
    "sub": "pl.sub",
    "mul": "pl.mul",
    "div": "pl.div",
    "and": "pl.and_",
    "or": "pl.or_",
}
_CMP_TYPES = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}
_PY_OPS = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "eq": "==", "ne": "!=",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "and", "or": "or",
}  # fmt: skip
_SAME_NAME = {
    "exp", "sqrt", "rsqrt", "recip", "relu", "abs", "neg", "maximum", "minimum", "row_sum", "row_max", "row_min",
    "col_sum", "col_max", "col_min", "row_expand_mul", "row_expand_div", "row_expand_sub", "row_expand_add",
    "col_expand_mul", "col_expand_div", "col_expand_sub", "col_expand_add", "log", "concat",
}  # fmt: skip


def dtype_name(dtype: str) -> str:
    try:
        return DTYPE_NAMES[dtype]
    except KeyError:
        raise UnsupportedForPyPTO(f"dtype {dtype!r} has no PyPTO name") from None


class ValueWriter:
    """Writes IR values of one task as PyPTO expressions, in the task's names (``scope``)."""

    def __init__(self, scope: TaskScope):
        self.scope = scope

    def value(self, v: ir_body.Value) -> Doc:
        if isinstance(v, ir_body.IntV):
            return self.scope.int(v.expr)
        if isinstance(v, ir_body.FloatV):
            return py_float(v.value)
        if isinstance(v, ir_body.DtypeV):
            return dtype_name(v.dtype)
        if isinstance(v, ir_body.ListV):
            return lst([self.scope.int(i) for i in v.items])
        if isinstance(v, ir_body.LocalV):
            return self.scope.py(v.name)
        if isinstance(v, ir_body.LoadV):
            base = self.scope.py(v.tensor) if v.local else self.scope.tensor(v.tensor)
            dims = self.scope.region_items(v.region, None if v.local else self.scope.shape(v.tensor))
            if len(dims) < 2:
                return f"{base}[{', '.join(dims)}]"
            return Group(base, list(dims), "[", "]")
        if isinstance(v, ir_body.BinV):
            return self.binary(v)
        if isinstance(v, ir_body.CallV):
            return self.call(v)
        raise UnsupportedForPyPTO(f"cannot write {type(v).__name__} in PyPTO")

    def scalar(self, v: ir_body.Value, need: int = 0) -> str:
        """A scalar operand in Python operator syntax (parenthesised when it is an operation)."""
        text = flat(self.value(v))
        atom = (
            text.replace("_", "").replace(".", "").isalnum()
            or text.endswith(("]", ")"))
            and not (isinstance(v, ir_body.BinV) or " " in text.split("(")[0])
        )
        return f"({text})" if need and not atom else text

    def binary(self, v: ir_body.BinV) -> Doc:
        if isinstance(v.type, ir_body.TileType):
            a, b = self.value(v.a), self.value(v.b)
            if v.op in _TILE_BINOPS:
                return call(_TILE_BINOPS[v.op], a, b)
            if v.op == "floordiv" and v.type.dtype not in ("f32", "f16", "bf16"):
                return call("pl.div", a, b)  # integer tiles divide to an integer (operands are >= 0)
            if v.op == "mod":
                tmp = call(
                    "pl.create_tile",
                    lst([self.scope.int(d) for d in v.type.shape]),
                    dtype=dtype_name(v.type.dtype),
                )
                return call("pl.rem" if isinstance(v.b.type, ir_body.TileType) else "pl.rems", a, b, tmp)
            if v.op in _CMP_TYPES:
                return call("pl.cmp", a, b, cmp_type=str(_CMP_TYPES[v.op]))
            raise UnsupportedForPyPTO(f"the tile operation {v.op!r} has no PyPTO op")
        op = _PY_OPS[v.op]
        return f"{self.scalar(v.a, 1)} {op} {self.scalar(v.b, 1)}"

    def call(self, v: ir_body.CallV) -> Doc:
        op, args, attrs = v.op, v.args, dict(v.attrs)
        if op in _SAME_NAME:
            if op == "neg" and isinstance(args[0], ir_body.FloatV):
                x = args[0].value
                return py_float(-x) if not math.isinf(x) else ('-float("inf")' if x > 0 else 'float("inf")')
            return call(f"pl.{op}", *(self.value(a) for a in args))
        if op == "transpose":
            return call("pl.transpose", self.value(args[0]), "0", "1")
        if op in ("sigmoid", "silu"):
            x: Doc = self.value(args[0])
            if not isinstance(args[0], ir_body.LocalV):  # one line, not the operand nested four calls deep
                name = self.scope.fresh("logit")
                self.scope.before(Cat([f"{name} = ", x]))
                x = name
            return self._sigmoid(x) if op == "sigmoid" else call("pl.mul", x, self._sigmoid(x))
        if op in ("zeros", "full"):
            dt = args[0]
            assert isinstance(dt, ir_body.DtypeV)
            fill: Doc = (
                ("0.0" if dt.dtype in ("f32", "f16", "bf16") else "0")
                if op == "zeros"
                else self.value(args[2])
            )
            return call("pl.full", self.value(args[1]), dtype=dtype_name(dt.dtype), value=fill)
        if op in ("matmul", "matmul_acc"):
            flags = {k: "True" for k in ("a_trans", "b_trans") if k in attrs}
            if op == "matmul":
                out = v.type.dtype if isinstance(v.type, ir_body.TileType) else "f32"
                return call("pl.matmul", *(self.value(a) for a in args), out_dtype=dtype_name(out), **flags)
            return call("pl.matmul_acc", *(self.value(a) for a in args), **flags)
        if op == "cast":
            return call("pl.cast", self.value(args[0]), self.value(args[1]))
        if op == "sort32":
            return call("pl.sort32", self.value(args[0]), self.value(args[1]))
        if op == "mrgsort":
            return call("pl.mrgsort", self.value(args[0]), block_len=self.value(args[1]))
        if op == "topk_pairs":
            s = args[0]
            name = self.scope.py(s.name) if isinstance(s, ir_body.LocalV) else self.bind_temp(s)
            k = args[1]
            width = self.scope.int(k.expr) if isinstance(k, ir_body.IntV) else flat(self.value(k))
            width = f"2 * {width}" if width.replace("_", "").isalnum() else f"2 * ({width})"
            return f"{name}[:, 0 : {width}]"
        if op in ("even_lanes", "odd_lanes"):
            pattern = "pl.tile.MaskPattern.P0101" if op == "even_lanes" else "pl.tile.MaskPattern.P1010"
            kw: dict[str, Doc] = {"mask_pattern": pattern}
            src = getattr(args[0].type, "dtype", None)
            if isinstance(v.type, ir_body.TileType) and src is not None and v.type.dtype != src:
                kw["output_dtype"] = dtype_name(v.type.dtype)
            return call("pl.gather", self.value(args[0]), **kw)
        if op == "gather":
            return call("pl.gather", self.value(args[0]), dim="-1", index=self.value(args[1]))
        if op == "select":
            t = v.type
            if not isinstance(t, ir_body.TileType):
                raise UnsupportedForPyPTO("select on scalars has no PyPTO op")
            tmp = call("pl.create_tile", lst([self.scope.int(d) for d in t.shape]), dtype=dtype_name(t.dtype))
            return call("pl.sel", *(self.value(a) for a in args), tmp)
        if op == "read":
            load = args[0]
            assert isinstance(load, ir_body.LoadV)
            base = self.scope.py(load.tensor) if load.local else self.scope.tensor(load.tensor)
            return call("pl.read", base, lst([self.scope.int(r.start) for r in load.region]))
        if op in ("min", "max"):
            return call(f"pl.{op}", *(self.value(a) for a in args))
        if op == "cdiv":
            return f"-(-{self.scalar(args[0], 1)} // {self.scalar(args[1], 1)})"
        if op == "gather_rows":
            return self.gather_rows(v)
        if op == "iota":
            return call("pl.arange", "0", lst(["1", self.value(args[0])]), dtype="pl.UINT32")
        if op == "valid":
            return self.valid(v)
        if op == "fillpad":
            x, cols, pad = args
            return call("pl.fillpad", self.valid_of(x, None, cols), pad_value=self.pad(pad))
        if op == "mask_tail":
            x, n, width = args
            return call(
                "pl.fillpad_expand",
                self.valid_of(x, ir_body.IntV(Const(1)), n),
                lst(["1", self.value(width)]),
                pad_value="pl.PadValue.min",
            )
        raise UnsupportedForPyPTO(f"the op {op!r} has no PyPTO equivalent")

    def _sigmoid(self, x: Doc) -> Doc:
        return call("pl.recip", call("pl.add", call("pl.exp", call("pl.neg", x)), "1.0"))

    def pad(self, v: ir_body.Value) -> str:
        """The ``pad_value`` of a fillpad: ``pl.PadValue.zero`` for 0, ``.max``/``.min`` for
        +-inf (a float's maximum and minimum), and the constant itself otherwise (PyPTO takes an
        int or a float): ``-1`` stays -1, never the dtype's minimum."""
        negative = (
            isinstance(v, ir_body.CallV)
            and v.op == "neg"
            and isinstance(v.args[0], ir_body.FloatV | ir_body.IntV)
        )
        inner = v.args[0] if negative else v  # type: ignore[union-attr]
        if isinstance(inner, ir_body.FloatV):
            x = -inner.value if negative else inner.value
        elif isinstance(inner, ir_body.IntV) and isinstance(inner.expr, Const):
            x = -inner.expr.value if negative else inner.expr.value
        else:
            raise UnsupportedForPyPTO("fillpad pads with a constant in PyPTO")
        if x == 0:
            return "pl.PadValue.zero"
        if isinstance(x, float) and math.isinf(x):
            return "pl.PadValue.max" if x > 0 else "pl.PadValue.min"
        return py_float(x) if isinstance(x, float) else str(x)

    def valid(self, v: ir_body.CallV) -> Doc:
        ints = [a for a in v.args[1:]]
        rows = ints[0] if len(ints) == 2 else None
        return self.valid_of(v.args[0], rows, ints[-1])

    def valid_of(self, x: ir_body.Value, rows: ir_body.Value | None, cols: ir_body.Value) -> Doc:
        t = x.type
        if isinstance(x, ir_body.LoadV) and not x.local and isinstance(t, ir_body.TileType):
            ext = self.scope.extents(x.region)
            shape = lst([self.scope.int(e) for e in ext])
            vshape = lst(
                [self.value(rows) if rows is not None else self.scope.int(ext[-2]), self.value(cols)]
            )
            return call(
                "pl.slice",
                self.scope.tensor(x.tensor),
                shape,
                self.scope.offsets(x.region),
                valid_shape=vshape,
            )
        if rows is None:
            if not isinstance(t, ir_body.TileType) or len(t.shape) < 2:
                raise UnsupportedForPyPTO("valid() of a value without a known 2-D shape")
            rows = ir_body.IntV(t.shape[-2])
        return call("pl.set_validshape", self.value(x), self.value(rows), self.value(cols))

    def bind_temp(self, v: ir_body.Value) -> str:
        """Bind a nested sort chain to a local (the top-k readout slices a named sorted row)."""
        chain = []
        cur = v
        while isinstance(cur, ir_body.CallV) and cur.op == "mrgsort":
            chain.append(cur.args[1])
            cur = cur.args[0]
        name = self.scope.fresh("sorted_tile")
        self.scope.before(Cat([f"{name} = ", self.value(cur)]))
        for bl in reversed(chain):
            self.scope.before(Cat([f"{name} = ", call("pl.mrgsort", name, block_len=self.value(bl))]))
        return name

    def gather_rows(self, v: ir_body.CallV) -> str:
        """``gather_rows(src, rows)``: one ``pl.gather_row`` per row into a tile bound first."""
        src, rows = v.args
        t = v.type
        if not (isinstance(src, ir_body.LoadV) and not src.local and isinstance(t, ir_body.TileType)):
            raise UnsupportedForPyPTO("gather_rows needs a tensor source in PyPTO")
        index = (
            self.value(rows) if isinstance(rows, ir_body.LocalV) else self.bind_value(rows, "index")
        )  # before the loop
        name, r = self.scope.fresh(self.scope.hint(src.tensor, "rows")), self.scope.fresh("row")
        n, c = (self.scope.int(d) for d in t.shape)
        self.scope.before(Cat([f"{name} = ", call("pl.create_tile", lst([n, c]), dtype=dtype_name(t.dtype))]))
        self.scope.before(f"for {r} in pl.range({n}):")
        row = call("pl.read", index, lst(["0", r]))
        start = [self.scope.int(x.start) for x in src.region]
        src_off = lst([Cat([row, f" + {start[0]}"]) if start[0] != "0" else row, start[1]])
        gather = call(
            "pl.gather_row", name, self.scope.tensor(src.tensor), lst([r, "0"]), src_off, lst(["1", c])
        )
        self.scope.before(Cat([f"{name} = ", gather]), 1)
        return name

    def bind_value(self, v: ir_body.Value, hint: str) -> str:
        """Bind ``v`` to a local named after what it is (``hint``) before the statement."""
        name = self.scope.fresh(hint)
        self.scope.before(Cat([f"{name} = ", self.value(v)]))
        return name
