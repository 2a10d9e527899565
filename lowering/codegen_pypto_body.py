"""Task bodies -> PyPTO kernel code (the statements inside a ``pl.at``/``pl.spmd`` scope).

Each IR statement has one PyPTO spelling that the reader (``lowering.pypto_reader``) maps
back to the same accesses and signals: a store is ``t = pl.assemble(t, v, [offsets])``
(``atomic=pl.AtomicType.Add`` only for an atomic store), a remote store
``pld.tile.remote_store``, notify/wait ``pld.system.notify``/``wait`` with their op and
comparison, a barrier ``pl.system.syncall``, an anchor read a bare ``pl.read``. Tile ops map
to their ``pl`` names; the few DSL ops PyPTO lacks are written with ops it has
(``sigmoid(x)`` = ``recip(1 + exp(-x))``). Long index expressions are bound to an ``_o``
temporary first (the reader inlines integers assigned once), so lines stay short.
"""

from __future__ import annotations

import math

from lowering import body as ir
from lowering.codegen_pypto_text import (
    INDENT,
    LINE_LENGTH,
    Cat,
    Doc,
    Group,
    UnsupportedForPyPTO,
    call,
    flat,
    int_text,
    layout,
    lst,
    py_float,
    py_name,
    slice_text,
    symbol_namer,
)
from lowering.symbolic import LOOP, Bin, Const, Expr, Sym, difference, free_symbols

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
CUBE_OPS = frozenset({"matmul", "matmul_acc"})
NO_UNIT_OPS = frozenset({"zeros", "full", "read", "valid", "min", "max", "cdiv"})
HOIST_AT = 44  # index expressions longer than this are bound to a temporary first
HOIST_LINE = 80  # a temporary's expression longer than this binds its operands first


def dtype_name(dtype: str) -> str:
    try:
        return DTYPE_NAMES[dtype]
    except KeyError:
        raise UnsupportedForPyPTO(f"dtype {dtype!r} has no PyPTO name") from None


def body_units(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    """Core units the ops of a body need, by the rule the DSL and the reader both apply."""
    units: set[str] = set()

    def value(v) -> None:
        if isinstance(v, ir.CallV):
            if v.op in CUBE_OPS:
                units.add("cube")
            elif v.op not in NO_UNIT_OPS:
                units.add("vector")
            for a in v.args:
                value(a)
        elif isinstance(v, ir.BinV):
            if isinstance(v.type, ir.TileType):
                units.add("vector")
            value(v.a)
            value(v.b)

    def walk(body) -> None:
        for s in body:
            if isinstance(s, ir.LetS | ir.AssignS | ir.StoreS | ir.RemoteStoreS | ir.EvalS):
                value(s.value)
            elif isinstance(s, ir.ForS):
                walk(s.body)
            elif isinstance(s, ir.IfS):
                value(s.cond)
                walk(s.then)
                walk(s.orelse)

    walk(stmts)
    return units


class BodyWriter:
    """Renders the statements of one task at a given indentation depth."""

    def __init__(self, tensors: dict, ranks_text: str, core: str, used: set[str]):
        self.tensors = tensors
        self.name_of = symbol_namer(True, ranks_text)
        self.core = core
        self.lines: list[str] = []
        self.pre: list[tuple[Doc, int]] = []  # lines to put before the statement (doc, extra depth)
        self.used = used  # names taken in the module (temporaries must not collide)
        self.temp = 0
        self.uses_block = False
        self.hoisted: dict[str, str] = {}  # index text -> temporary, for the current statement
        self.read_names: set[str] = set()

    # ---------------------------------------------------------------- helpers
    def fresh(self, prefix: str) -> str:
        while True:
            self.temp += 1
            name = f"{prefix}{self.temp}"
            if name not in self.used:
                self.used.add(name)
                return name

    def int(self, e: Expr, hoist: bool = False) -> str:
        text = int_text(e, self._name)
        if hoist and len(text) > HOIST_AT and not isinstance(e, Const):
            return self.hoist(e)
        return text

    def hoist(self, e: Expr) -> str:
        """Bind ``e`` to an ``_o`` temporary (long operands first, so every line stays short);
        the reader inlines integers assigned once, which rebuilds ``e`` exactly."""
        text = int_text(e, self._name)
        name = self.hoisted.get(text)
        if name is not None:
            return name
        if len(text) > HOIST_LINE and isinstance(e, Bin):
            a, b = e.a, e.b
            if len(int_text(a, self._name)) > HOIST_LINE // 2:
                a = Sym(self.hoist(a), LOOP)
            if len(int_text(b, self._name)) > HOIST_LINE // 2:
                b = Sym(self.hoist(b), LOOP)
            body = int_text(Bin(e.op, a, b), self._name)
        else:
            body = text
        name = self.hoisted[text] = self.fresh("_o")
        self.pre.append((f"{name} = {body}", 0))
        return name

    def _name(self, s) -> str:
        text = self.name_of(s)
        if text == "block":
            self.uses_block = True
        return text

    def tensor(self, name: str) -> str:
        return py_name(name)

    def shape(self, name: str) -> tuple[Expr, ...] | None:
        t = self.tensors.get(name)
        return t.shape if t is not None else None

    def emit(self, doc: Doc, depth: int) -> None:
        for p, extra in self.pre:
            self.lines.extend(layout(p, depth + extra))
        self.pre = []
        self.hoisted = {}
        self.lines.extend(layout(doc, depth))

    def region(self, region: tuple[ir.Range, ...], shape: tuple[Expr, ...] | None = None) -> str:
        return ", ".join(self.region_items(region, shape))

    def region_items(self, region: tuple[ir.Range, ...], shape: tuple[Expr, ...] | None = None) -> list[str]:
        parts = []
        for i, r in enumerate(region):
            if r.point:
                parts.append(self.int(r.start, hoist=True))
                continue
            if (
                r.start == Const(0)
                and r.step == Const(1)
                and shape is not None
                and i < len(shape)
                and r.stop == shape[i]
            ):
                parts.append(":")
                continue
            start = None if r.start == Const(0) else self.int(r.start, hoist=True)
            stop = self.int(r.stop, hoist=True)
            step = None if r.step == Const(1) else self.int(r.step, hoist=True)
            parts.append(slice_text(start, stop, step))
        return parts

    def offsets(self, region: tuple[ir.Range, ...]) -> Group:
        for r in region:
            if r.step != Const(1):
                raise UnsupportedForPyPTO(
                    "a strided store has no PyPTO form (pl.assemble takes offsets only)"
                )
        return lst([self.int(r.start, hoist=True) for r in region])

    def extents(self, region: tuple[ir.Range, ...]) -> list[Expr]:
        return [Const(1) if r.point else difference(r.stop, r.start) for r in region]

    # ---------------------------------------------------------------- values
    def value(self, v: ir.Value) -> Doc:
        if isinstance(v, ir.IntV):
            return self.int(v.expr, hoist=True)
        if isinstance(v, ir.FloatV):
            return py_float(v.value)
        if isinstance(v, ir.DtypeV):
            return dtype_name(v.dtype)
        if isinstance(v, ir.ListV):
            return lst([self.int(i, hoist=True) for i in v.items])
        if isinstance(v, ir.LocalV):
            return py_name(v.name)
        if isinstance(v, ir.LoadV):
            base = py_name(v.tensor) if v.local else self.tensor(v.tensor)
            dims = self.region_items(v.region, None if v.local else self.shape(v.tensor))
            if len(dims) < 2:
                return f"{base}[{', '.join(dims)}]"
            return Group(base, list(dims), "[", "]")
        if isinstance(v, ir.BinV):
            return self.binary(v)
        if isinstance(v, ir.CallV):
            return self.call(v)
        raise UnsupportedForPyPTO(f"cannot write {type(v).__name__} in PyPTO")

    def scalar(self, v: ir.Value, need: int = 0) -> str:
        """A scalar operand in Python operator syntax (parenthesised when it is an operation)."""
        text = flat(self.value(v))
        atom = (
            text.replace("_", "").replace(".", "").isalnum()
            or text.endswith(("]", ")"))
            and not (isinstance(v, ir.BinV) or " " in text.split("(")[0])
        )
        return f"({text})" if need and not atom else text

    def binary(self, v: ir.BinV) -> Doc:
        if isinstance(v.type, ir.TileType):
            a, b = self.value(v.a), self.value(v.b)
            if v.op in _TILE_BINOPS:
                return call(_TILE_BINOPS[v.op], a, b)
            if v.op == "floordiv" and v.type.dtype not in ("f32", "f16", "bf16"):
                return call("pl.div", a, b)  # integer tiles divide to an integer (operands are >= 0)
            if v.op == "mod":
                tmp = call(
                    "pl.create_tile", lst([self.int(d) for d in v.type.shape]), dtype=dtype_name(v.type.dtype)
                )
                return call("pl.rem" if isinstance(v.b.type, ir.TileType) else "pl.rems", a, b, tmp)
            if v.op in _CMP_TYPES:
                return call("pl.cmp", a, b, cmp_type=str(_CMP_TYPES[v.op]))
            raise UnsupportedForPyPTO(f"the tile operation {v.op!r} has no PyPTO op")
        op = _PY_OPS[v.op]
        return f"{self.scalar(v.a, 1)} {op} {self.scalar(v.b, 1)}"

    def call(self, v: ir.CallV) -> Doc:
        op, args, attrs = v.op, v.args, dict(v.attrs)
        if op in _SAME_NAME:
            if op == "neg" and isinstance(args[0], ir.FloatV):
                x = args[0].value
                return py_float(-x) if not math.isinf(x) else ('-float("inf")' if x > 0 else 'float("inf")')
            return call(f"pl.{op}", *(self.value(a) for a in args))
        if op == "transpose":
            return call("pl.transpose", self.value(args[0]), "0", "1")
        if op == "sigmoid":
            return self._sigmoid(self.value(args[0]))
        if op == "silu":
            x = self.value(args[0])
            return call("pl.mul", x, self._sigmoid(x))
        if op in ("zeros", "full"):
            dt = args[0]
            assert isinstance(dt, ir.DtypeV)
            fill: Doc = (
                ("0.0" if dt.dtype in ("f32", "f16", "bf16") else "0")
                if op == "zeros"
                else self.value(args[2])
            )
            return call("pl.full", self.value(args[1]), dtype=dtype_name(dt.dtype), value=fill)
        if op in ("matmul", "matmul_acc"):
            flags = {k: "True" for k in ("a_trans", "b_trans") if k in attrs}
            if op == "matmul":
                out = v.type.dtype if isinstance(v.type, ir.TileType) else "f32"
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
            name = s.name if isinstance(s, ir.LocalV) else self.bind_temp(s)
            k = args[1]
            width = self.int(k.expr) if isinstance(k, ir.IntV) else flat(self.value(k))
            width = f"2 * {width}" if width.replace("_", "").isalnum() else f"2 * ({width})"
            return f"{py_name(name)}[:, 0 : {width}]"
        if op in ("even_lanes", "odd_lanes"):
            pattern = "pl.tile.MaskPattern.P0101" if op == "even_lanes" else "pl.tile.MaskPattern.P1010"
            kw: dict[str, Doc] = {"mask_pattern": pattern}
            src = getattr(args[0].type, "dtype", None)
            if isinstance(v.type, ir.TileType) and src is not None and v.type.dtype != src:
                kw["output_dtype"] = dtype_name(v.type.dtype)
            return call("pl.gather", self.value(args[0]), **kw)
        if op == "gather":
            return call("pl.gather", self.value(args[0]), dim="-1", index=self.value(args[1]))
        if op == "select":
            t = v.type
            if not isinstance(t, ir.TileType):
                raise UnsupportedForPyPTO("select on scalars has no PyPTO op")
            tmp = call("pl.create_tile", lst([self.int(d) for d in t.shape]), dtype=dtype_name(t.dtype))
            return call("pl.sel", *(self.value(a) for a in args), tmp)
        if op == "read":
            load = args[0]
            assert isinstance(load, ir.LoadV)
            base = py_name(load.tensor) if load.local else self.tensor(load.tensor)
            return call("pl.read", base, lst([self.int(r.start, hoist=True) for r in load.region]))
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
                self.valid_of(x, ir.IntV(Const(1)), n),
                lst(["1", self.value(width)]),
                pad_value="pl.PadValue.min",
            )
        raise UnsupportedForPyPTO(f"the op {op!r} has no PyPTO equivalent")

    def _sigmoid(self, x: Doc) -> Doc:
        return call("pl.recip", call("pl.add", call("pl.exp", call("pl.neg", x)), "1.0"))

    def pad(self, v: ir.Value) -> str:
        """PyPTO pads with the dtype's minimum, maximum or zero: a negative sentinel (-inf, -1)
        is the minimum, a positive one the maximum."""
        if isinstance(v, ir.CallV) and v.op == "neg" and isinstance(v.args[0], ir.FloatV | ir.IntV):
            return "pl.PadValue.min"
        if isinstance(v, ir.FloatV):
            return (
                "pl.PadValue.zero"
                if v.value == 0
                else "pl.PadValue.max"
                if v.value > 0
                else "pl.PadValue.min"
            )
        if isinstance(v, ir.IntV) and isinstance(v.expr, Const):
            x = v.expr.value
            return "pl.PadValue.zero" if x == 0 else "pl.PadValue.max" if x > 0 else "pl.PadValue.min"
        raise UnsupportedForPyPTO("fillpad pads with a constant in PyPTO")

    def valid(self, v: ir.CallV) -> Doc:
        ints = [a for a in v.args[1:]]
        rows = ints[0] if len(ints) == 2 else None
        return self.valid_of(v.args[0], rows, ints[-1])

    def valid_of(self, x: ir.Value, rows: ir.Value | None, cols: ir.Value) -> Doc:
        t = x.type
        if isinstance(x, ir.LoadV) and not x.local and isinstance(t, ir.TileType):
            ext = self.extents(x.region)
            shape = lst([self.int(e) for e in ext])
            vshape = lst([self.value(rows) if rows is not None else self.int(ext[-2]), self.value(cols)])
            return call("pl.slice", self.tensor(x.tensor), shape, self.offsets(x.region), valid_shape=vshape)
        if rows is None:
            if not isinstance(t, ir.TileType) or len(t.shape) < 2:
                raise UnsupportedForPyPTO("valid() of a value without a known 2-D shape")
            rows = ir.IntV(t.shape[-2])
        return call("pl.set_validshape", self.value(x), self.value(rows), self.value(cols))

    def bind_temp(self, v: ir.Value) -> str:
        """Bind a nested sort chain to a local (the top-k readout slices a named sorted row)."""
        chain = []
        cur = v
        while isinstance(cur, ir.CallV) and cur.op == "mrgsort":
            chain.append(cur.args[1])
            cur = cur.args[0]
        name = self.fresh("_s")
        self.pre.append((Cat([f"{name} = ", self.value(cur)]), 0))
        for bl in reversed(chain):
            self.pre.append((Cat([f"{name} = ", call("pl.mrgsort", name, block_len=self.value(bl))]), 0))
        return name

    def gather_rows(self, v: ir.CallV) -> str:
        """``gather_rows(src, rows)``: one ``pl.gather_row`` per row into a tile bound first."""
        src, rows = v.args
        t = v.type
        if not (isinstance(src, ir.LoadV) and not src.local and isinstance(t, ir.TileType)):
            raise UnsupportedForPyPTO("gather_rows needs a tensor source in PyPTO")
        name, r = self.fresh("_g"), self.fresh("_r")
        n, c = (self.int(d) for d in t.shape)
        self.pre.append(
            (Cat([f"{name} = ", call("pl.create_tile", lst([n, c]), dtype=dtype_name(t.dtype))]), 0)
        )
        self.pre.append((f"for {r} in pl.range({n}):", 0))
        row = call(
            "pl.read",
            self.value(rows) if isinstance(rows, ir.LocalV) else self.bind_value(rows),
            lst(["0", r]),
        )
        start = [self.int(x.start) for x in src.region]
        src_off = lst([Cat([row, f" + {start[0]}"]) if start[0] != "0" else row, start[1]])
        gather = call("pl.gather_row", name, self.tensor(src.tensor), lst([r, "0"]), src_off, lst(["1", c]))
        self.pre.append((Cat([f"{name} = ", gather]), 1))
        return name

    def bind_value(self, v: ir.Value) -> str:
        name = self.fresh("_t")
        self.pre.append((Cat([f"{name} = ", self.value(v)]), 0))
        return name

    # ---------------------------------------------------------------- statements
    def start(self, body: tuple[ir.Stmt, ...]) -> None:
        """Note the names a body reads, so an unused binding can be marked for the linter."""
        self.read_names = _read_names(body)

    def stmts(self, body: tuple[ir.Stmt, ...], depth: int) -> None:
        if not body:
            self.emit("pass", depth)
        for s in body:
            self.stmt(s, depth)

    def stmt(self, s: ir.Stmt, depth: int) -> None:
        if isinstance(s, ir.LetS | ir.AssignS):
            unused = "  # noqa: F841" if s.name not in self.read_names else ""
            self.emit(Cat([f"{py_name(s.name)} = ", self.value(s.value), unused]), depth)
        elif isinstance(s, ir.StoreS):
            self.store(s, depth)
        elif isinstance(s, ir.RemoteStoreS):
            value = self.tile_value(s.value, s.region, s.tensor)
            kw: dict[str, Doc] = {"atomic": "pld.AtomicType.Add"} if s.atomic else {}
            doc = call(
                "pld.tile.remote_store",
                value,
                self.tensor(s.tensor),
                self.int(s.peer, hoist=True),
                self.offsets(s.region),
                **kw,
            )
            self.emit(doc, depth)
        elif isinstance(s, ir.ForS):
            bounds = [s.stop] if s.start == Const(0) and s.step == Const(1) else [s.start, s.stop]
            if s.step != Const(1):
                bounds = [s.start, s.stop, s.step]
            args: list[Doc] = [self.int(b) for b in bounds]
            if s.kind == "pipeline":
                head = call("pl.pipeline", *args, stage=str(s.stages))
            else:
                head = call("pl.range", *args)
            unused = "  # noqa: B007" if s.var not in self.read_names else ""
            self.emit(Cat([f"for {py_name(s.var)} in ", head, ":", unused]), depth)
            self.stmts(s.body, depth + 1)
        elif isinstance(s, ir.IfS):
            cond = self.condition(s.cond)
            self.emit(f"if {cond}:", depth)
            self.stmts(s.then, depth + 1)
            if s.orelse:
                self.emit("else:", depth)
                self.stmts(s.orelse, depth + 1)
        elif isinstance(s, ir.NotifyS):
            op = "pld.NotifyOp.AtomicAdd" if s.op == "add" else "pld.NotifyOp.Set"
            doc = call(
                "pld.system.notify",
                target=self.tensor(s.signal),
                peer=self.int(s.peer, hoist=True),
                offsets=lst([self.int(i, hoist=True) for i in s.index]),
                value=self.int(s.value, hoist=True),
                op=op,
            )
            self.emit(doc, depth)
        elif isinstance(s, ir.WaitS):
            cmp = "pld.WaitCmp.Ge" if s.cmp == "ge" else "pld.WaitCmp.Eq"
            doc = call(
                "pld.system.wait",
                signal=self.tensor(s.signal),
                offsets=lst([self.int(i, hoist=True) for i in s.index]),
                expected=self.int(s.expected, hoist=True),
                cmp=cmp,
            )
            self.emit(doc, depth)
        elif isinstance(s, ir.BarrierS):
            core_type = {"aiv": '"aiv_only"', "aic": '"aic_only"'}.get(self.core, '"mix"')
            mode = '"soft"' if s.soft else '"hard"'
            self.emit(call("pl.system.syncall", core_type=core_type, mode=mode), depth)
        elif isinstance(s, ir.EvalS):
            self.emit(self.value(s.value), depth)
        else:
            raise UnsupportedForPyPTO(f"cannot write {type(s).__name__} in PyPTO")

    def condition(self, cond: ir.Value) -> str:
        if isinstance(cond, ir.IntV):
            text = self.int(cond.expr)
            if len(text) > HOIST_AT:
                name = self.fresh("_c")
                self.pre.append((f"{name} = {text}", 0))
                return name
            return text
        return flat(self.value(cond))

    def tile_value(self, v: ir.Value, region: tuple[ir.Range, ...], tensor: str) -> Doc:
        """A tile for ``region`` of ``tensor``: a tensor slice is loaded, a scalar broadcast."""
        if isinstance(v, ir.LoadV) and not v.local:
            ext = self.extents(v.region)
            return call(
                "pl.load", self.tensor(v.tensor), self.offsets(v.region), lst([self.int(e) for e in ext])
            )
        if not isinstance(v.type, ir.TileType):
            dtype = self.tensors[tensor].dtype
            return call(
                "pl.full",
                lst([self.int(e) for e in self.extents(region)]),
                dtype=dtype_name(dtype),
                value=self.value(v),
            )
        return self.value(v)

    def store(self, s: ir.StoreS, depth: int) -> None:
        name = self.tensor(s.tensor)
        if s.region and all(r.point for r in s.region) and s.mode == "write":
            idx = lst([self.int(r.start, hoist=True) for r in s.region])
            self.emit(call("pl.write", name, idx, self.value(s.value)), depth)
            return
        value: Doc
        if s.mode == "accumulate":
            value = call(
                "pl.add", f"{name}[{self.region(s.region, self.shape(s.tensor))}]", self.value(s.value)
            )
        elif isinstance(s.value.type, ir.TileType):
            value = self.value(s.value)
        else:
            value = self.tile_value(s.value, s.region, s.tensor)
        if any(r.step != Const(1) for r in s.region) and s.mode == "write":
            # pl.assemble takes offsets only: a strided store keeps the subscript form
            if not isinstance(s.value, ir.LocalV):
                value = self.bind_value(s.value)
            text = f"{name}[{self.region(s.region, self.shape(s.tensor))}] = {flat(value)}"
            if len(INDENT * depth + text) > LINE_LENGTH:  # name every bound first
                parts = []
                for r in s.region:
                    bounds = [
                        None if r.start == Const(0) else r.start,
                        r.stop,
                        None if r.step == Const(1) else r.step,
                    ]
                    names = [
                        None if b is None else (self.int(b) if isinstance(b, Const) else self.hoist(b))
                        for b in bounds
                    ]
                    parts.append(names[0] if r.point else slice_text(*names))
                text = f"{name}[{', '.join(p for p in parts if p is not None)}] = {flat(value)}"
            self.emit(text, depth)
            return
        kw: dict[str, Doc] = {"atomic": "pl.AtomicType.Add"} if s.mode == "atomic" else {}
        self.emit(Cat([f"{name} = ", call("pl.assemble", name, value, self.offsets(s.region), **kw)]), depth)


_ = Group


def _read_names(body: tuple[ir.Stmt, ...]) -> set[str]:
    """Locals and loop variables a body reads (in values, indices, bounds and conditions)."""
    out: set[str] = set()

    def expr(e) -> None:
        for sym in free_symbols(e):
            out.add(sym.name)

    def value(v) -> None:
        if isinstance(v, ir.IntV):
            expr(v.expr)
        elif isinstance(v, ir.ListV):
            for i in v.items:
                expr(i)
        elif isinstance(v, ir.LocalV):
            out.add(v.name)
        elif isinstance(v, ir.LoadV):
            if v.local:
                out.add(v.tensor)
            for r in v.region:
                expr(r.start)
                expr(r.stop)
                expr(r.step)
        elif isinstance(v, ir.BinV):
            value(v.a)
            value(v.b)
        elif isinstance(v, ir.CallV):
            for a in v.args:
                value(a)
            for _, a in v.attrs:
                value(a)

    def region(rs) -> None:
        for r in rs:
            expr(r.start)
            expr(r.stop)
            expr(r.step)

    def walk(stmts) -> None:
        for s in stmts:
            if isinstance(s, ir.LetS | ir.AssignS | ir.EvalS):
                value(s.value)
            elif isinstance(s, ir.StoreS):
                value(s.value)
                region(s.region)
            elif isinstance(s, ir.RemoteStoreS):
                value(s.value)
                region(s.region)
                expr(s.peer)
            elif isinstance(s, ir.ForS):
                for e in (s.start, s.stop, s.step):
                    expr(e)
                walk(s.body)
            elif isinstance(s, ir.IfS):
                value(s.cond)
                walk(s.then)
                walk(s.orelse)
            elif isinstance(s, ir.NotifyS):
                for e in (*s.index, s.peer, s.value):
                    expr(e)
            elif isinstance(s, ir.WaitS):
                for e in (*s.index, s.expected):
                    expr(e)

    walk(body)
    return out
