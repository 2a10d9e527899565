"""The body of one task (a ``pl.at``/``pl.spmd`` scope or an InCore kernel) -> IR body and summaries.

The body is read statement by statement into the DSL's typed statements (``lowering.body``)
while the access, signal and barrier summaries are recorded with their enclosing loops and
conditions, exactly as the DSL front end does for a ``task { ... }``:

- a subscript or ``pl.slice``/``pl.load``/``pl.read`` of a tensor is a read of that region;
  ``pl.assemble``/``pl.store``/``pl.write`` and ``t[a:b, :] = v`` are writes (atomic with
  ``atomic=pl.AtomicType.Add``); a ``pl.read`` whose value is unused is an *anchor* read;
- an integer assigned once is inlined as a symbolic expression (so regions stay affine in
  the block and loop indices); a scalar read from a tensor is a data value;
- kernel loops (``pl.range``/``pl.pipeline``/``pl.unroll``/``range``/``pl.split_aiv``) and
  ``if``s are kept, with symbolic bounds and conditions.

Unknown helpers and ops are opaque: their tensor arguments count as whole reads (the
direction PyPTO itself infers for unknown uses), with a P001 note.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from lowering import body as ir
from lowering.ir import Access, BarrierOp, Condition, Loop, SignalOp
from lowering.pypto_reader import signals as _signals  # noqa: F401 - registers the pld ops
from lowering.pypto_reader import sorting as _sorting
from lowering.pypto_reader.exprs import Evaluator
from lowering.pypto_reader.notes import Notes, line_span
from lowering.pypto_reader.ops import IGNORED, OPS, dtype_of, short_name, tile_type, unit_of
from lowering.pypto_reader.tensors import TensorTable
from lowering.pypto_reader.values import (
    UNKNOWN,
    FuncVal,
    IntVal,
    PlRef,
    PyVal,
    SeqVal,
    TensorVal,
    TileVal,
    Unknown,
    Val,
)
from lowering.symbolic import BLOCK, DYNAMIC, LOOP, Const, Expr, Sym, binop, difference

LOOP_KINDS = {
    "pl.range": "range",
    "pl.parallel": "parallel",
    "pl.pipeline": "pipeline",
    "pl.unroll": "range",
    "range": "range",
    "pl.split_aiv": "range",
}
_INT_DTYPES = ("i8", "u8", "i16", "i32", "u32", "i64", "bool")
MAX_INLINE_DEPTH = 32


class KernelReader(Evaluator):
    """Reads one task body. ``outer`` resolves names captured from the orchestration."""

    def __init__(
        self,
        file: str,
        notes: Notes,
        env: Callable[[], dict[str, int]],
        outer: Callable[[str, ast.AST], Val],
        tensors: TensorTable,
        task: str,
        grid: Expr,
        call_func: Callable[[KernelReader, FuncVal, ast.Call], Val] | None = None,
    ):
        super().__init__(file, notes, env)
        self.outer = outer
        self.tensors = tensors
        self.task = task
        self.grid = grid
        self.call_func = call_func
        self.scopes: list[dict[str, Val]] = [{}]
        self.blocks: list[list[ir.Stmt]] = [[]]
        self.loops: list[Loop] = []
        self.conds: list[Condition] = []
        self.order = 0
        self.temp = 0
        self.accesses: list[Access] = []
        self.signals: list[SignalOp] = []
        self.barriers: list[BarrierOp] = []
        self.ops: set[str] = set()
        self.units: set[str] = set()
        self.signal_tensors: set[str] = set()
        self.window_tensors: set[str] = set()
        self.sorted_locals: set[str] = set()
        self.assigned: Counter[str] = Counter()
        self.dual_lanes = False
        self.anchor_next = False
        self.read_lets: dict[str, int] = {}  # local bound to a pl.read -> index of its access
        self.used: set[str] = set()
        self.depth = 0
        self.returned: Val | None = None
        self.current: ast.AST | None = None  # the statement being read (for temporaries' spans)
        self.last_read: int | None = None  # access index of the last pl.read in this statement
        self.carried: list[list[str]] = []

    # ---------------------------------------------------------------- entry points
    def read(self, stmts: list[ast.stmt], bindings: dict[str, Val] | None = None) -> tuple[ir.Stmt, ...]:
        if bindings:
            self.scopes[0].update(bindings)
        self.assigned.update(_assigned(stmts))
        self.statements(stmts)
        self._finish_anchors()
        return tuple(self.blocks[0])

    def _finish_anchors(self) -> None:
        """A ``pl.read`` bound to a name that is never used orders the task and carries no data."""
        for name, index in self.read_lets.items():
            if name not in self.used and index < len(self.accesses):
                self.accesses[index] = replace(self.accesses[index], mode="anchor")

    # ---------------------------------------------------------------- bookkeeping
    def next_order(self) -> int:
        self.order += 1
        return self.order

    def loop_tuple(self) -> tuple[Loop, ...]:
        return tuple(self.loops)

    def cond_tuple(self) -> tuple[Condition, ...]:
        return tuple(self.conds)

    def emit(self, stmt: ir.Stmt) -> None:
        self.blocks[-1].append(stmt)

    def unit(self, u: str) -> None:
        if u in ("cube", "vector"):
            self.units.add(u)

    def fresh(self, prefix: str = "_r") -> str:
        while True:
            self.temp += 1
            name = f"{prefix}{self.temp}"
            if not any(name in s for s in self.scopes) and name not in self.assigned:
                return name

    # ---------------------------------------------------------------- names
    def lookup(self, name: str, node: ast.AST) -> Val:
        for scope in reversed(self.scopes):
            if name in scope:
                self.used.add(name)
                return scope[name]
        return self.outer(name, node)

    def bind(self, name: str, value: Val) -> None:
        self.scopes[-1][name] = value

    def is_local(self, name: str) -> bool:
        return any(name in s for s in self.scopes)

    # ---------------------------------------------------------------- values
    def int_expr(self, v: Val) -> Expr | None:
        out = super().int_expr(v)
        if out is not None:
            return out
        if isinstance(v, TileVal) and isinstance(v.type, ir.ScalarType) and v.type.dtype in _INT_DTYPES:
            if isinstance(v.value, ir.LocalV):
                return Sym(v.value.name, DYNAMIC)
            if isinstance(v.value, ir.IntV):
                return v.value.expr
            name = self.fresh()
            self.emit(ir.LetS(name, v.value, self.span(self.current)))
            return Sym(name, DYNAMIC)
        return None

    def int_list(self, node: ast.expr | None) -> tuple[Expr, ...] | None:
        if node is None:
            return None
        v = self.eval(node)
        if isinstance(v, SeqVal):
            out = [self.int_expr(i) for i in v.items]
            if all(e is not None for e in out):
                return tuple(out)  # type: ignore[arg-type]
            return None
        e = self.int_expr(v)
        return (e,) if e is not None else None

    def value(self, v: Val) -> ir.Value:
        """An IR value for ``v`` (a tensor used whole is a read of all of it)."""
        if isinstance(v, TileVal):
            return v.value
        if isinstance(v, IntVal):
            return ir.IntV(v.expr)
        if isinstance(v, PyVal):
            if isinstance(v.value, bool):
                return ir.IntV(Const(int(v.value)), ir.ScalarType("bool"))
            if isinstance(v.value, float):
                if v.value < 0:
                    return ir.CallV("neg", (ir.FloatV(-v.value),), (), ir.ScalarType("f32"))
                return ir.FloatV(v.value)
            if isinstance(v.value, int):
                return ir.IntV(Const(v.value))
        if isinstance(v, SeqVal):
            items = [self.int_expr(i) for i in v.items]
            if all(i is not None for i in items):
                return ir.ListV(tuple(items), ir.ListType(len(items)))  # type: ignore[arg-type]
        if isinstance(v, TensorVal):
            region = self.region_at(v, None, None, None)
            self.record(v, region, "read", None)
            return self.load_value(v, region).value  # type: ignore[union-attr]
        from lowering.pypto_reader.values import DtypeVal

        if isinstance(v, DtypeVal):
            return ir.DtypeV(v.dtype or "f32")
        return ir.CallV("opaque", (), (), ir.ScalarType("f32"))

    # ---------------------------------------------------------------- tensors and regions
    def tensor_of(self, node: ast.expr) -> TensorVal | None:
        v = self.eval(node)
        return v if isinstance(v, TensorVal) else None

    def tensor_shape_exprs(self, t: TensorVal) -> tuple[Expr, ...] | None:
        if t.shape is not None:
            return t.shape
        info = self.tensors.get(t.root)
        return info.shape if info is not None else None

    def tensor_shape(self, t: TensorVal) -> Val:
        shape = self.tensor_shape_exprs(t)
        return SeqVal(tuple(IntVal(d) for d in shape)) if shape is not None else UNKNOWN

    def dtype(self, t: TensorVal) -> str:
        info = self.tensors.get(t.root)
        return info.dtype if info is not None else "f32"

    def region_at(
        self, t: TensorVal, offsets: tuple[Expr, ...] | None, extent, node: ast.AST | None
    ) -> tuple[ir.Range, ...]:
        """The region at ``offsets`` of extent ``extent`` (a shape, a tile type, or None: to the end)."""
        shape = self.tensor_shape_exprs(t)
        rank = len(shape) if shape is not None else len(offsets or ()) or 2
        offs = list(offsets or ())
        offs += [Const(0)] * (rank - len(offs))
        if isinstance(extent, ir.TileType):
            ext = list(extent.shape)
            if len(ext) > rank:  # a 2-D tile written into a 1-D view: leading dims of 1
                ext = ext[len(ext) - rank :]
            ext = [Const(1)] * (rank - len(ext)) + ext
        elif extent is not None:
            ext = list(extent)
            ext = [Const(1)] * (rank - len(ext)) + ext
        else:
            ext = [None] * rank
        out = []
        for i in range(rank):
            start = offs[i]
            if ext[i] is not None:
                stop = binop("+", start, ext[i])
            elif shape is not None:
                stop = shape[i]
            else:
                stop = Sym("?", DYNAMIC)
            out.append(ir.Range(start, stop, Const(1)))
        return tuple(out)

    def region_sub(self, t: TensorVal, node: ast.Subscript) -> tuple[ir.Range, ...] | None:
        """The region of ``t[...]`` (numpy rules: missing trailing indices mean ``:``)."""
        shape = self.tensor_shape_exprs(t)
        elts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        rank = len(shape) if shape is not None else len(elts)
        if len(elts) > rank:
            return None
        out = []
        for i in range(rank):
            dim = shape[i] if shape is not None else Sym("?", DYNAMIC)
            if i >= len(elts):
                out.append(ir.Range(Const(0), dim, Const(1)))
                continue
            e = elts[i]
            if isinstance(e, ast.Slice):
                start = self.int_expr(self.eval(e.lower)) if e.lower is not None else Const(0)
                stop = self.int_expr(self.eval(e.upper)) if e.upper is not None else dim
                step = self.int_expr(self.eval(e.step)) if e.step is not None else Const(1)
                if start is None or stop is None or step is None:
                    return None
                out.append(ir.Range(start, stop, step))
            else:
                idx = self.int_expr(self.eval(e))
                if idx is None:
                    return None
                out.append(ir.Range(idx, binop("+", idx, Const(1)), Const(1), point=True))
        return tuple(out)

    def root_region(self, t: TensorVal, region: tuple[ir.Range, ...]) -> tuple[ir.Range, ...]:
        if t.offsets is None:
            return region
        out, it = [], iter(region)
        for dim, off in enumerate(t.offsets):
            if dim in t.dropped:
                out.append(ir.Range(off, binop("+", off, Const(1)), Const(1), point=True))
                continue
            r = next(it, None)
            if r is None:
                out.append(ir.Range(off, binop("+", off, Const(1)), Const(1), point=True))
                continue
            out.append(ir.Range(binop("+", off, r.start), binop("+", off, r.stop), r.step, r.point))
        return tuple(out)

    def region_type(self, t: TensorVal, region: tuple[ir.Range, ...]) -> ir.Type:
        dtype = self.dtype(t)
        if region and all(r.point for r in region):
            return ir.ScalarType(dtype)
        ext = []
        for r in region:
            if r.point:
                ext.append(Const(1))
            else:
                e = difference(r.stop, r.start)
                ext.append(e if r.step == Const(1) else binop("cdiv", e, r.step))
        return ir.TileType(dtype, tuple(ext))

    def record(
        self, t: TensorVal, region: tuple[ir.Range, ...], mode: str, node: ast.AST | None, peer: Expr | None = None
    ) -> int:
        root = self.root_region(t, region)
        self.accesses.append(
            Access(
                t.root, mode, root, self.dtype(t), self.loop_tuple(), self.cond_tuple(), self.span(node),
                self.next_order(), peer,
            )
        )  # fmt: skip
        return len(self.accesses) - 1

    def load_value(self, t: TensorVal, region: tuple[ir.Range, ...]) -> TileVal:
        return TileVal(ir.LoadV(t.root, self.root_region(t, region), self.region_type(t, region)))

    # ---------------------------------------------------------------- expressions
    def subscript(self, base: Val, node: ast.Subscript) -> Val:
        if isinstance(base, TensorVal):
            region = self.region_sub(base, node)
            if region is None:
                self.notes.not_modelled(
                    self.span(node),
                    f"a subscript of '{base.root}' the reader cannot evaluate",
                    "the whole tensor is taken as read",
                )
                region = self.region_at(base, None, None, node)
            self.record(base, region, "read", node)
            return self.load_value(base, region)
        if isinstance(base, TileVal):
            out = _sorting.readout(self, base, node)
            if out is not None:
                return out
            t = tile_type(base.value)
            if t is None or not isinstance(base.value, ir.LocalV):
                return base
            view = TensorVal(base.value.name, None, t.shape)
            region = self.region_sub(view, node)
            if region is None:
                return base
            return TileVal(ir.LoadV(base.value.name, region, _local_type(t, region), local=True))
        return UNKNOWN

    def binary_other(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        names = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv"}
        name = names.get(type(op))
        if name is None or isinstance(a, Unknown | TensorVal) or isinstance(b, Unknown | TensorVal):
            return UNKNOWN
        x, y = self.value(a), self.value(b)
        from lowering.pypto_reader.ops import broadcast

        rtype = broadcast(x, y)
        if isinstance(rtype, ir.TileType):
            self.unit("vector")
        if name == "div" and getattr(rtype, "dtype", "f32") in _INT_DTYPES:
            name = "floordiv"
        return TileVal(ir.BinV(name, x, y, rtype))

    def compare_other(self, op: ast.cmpop, a: Val, b: Val, node: ast.AST) -> Val:
        names = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
        name = names.get(type(op))
        if name is None or isinstance(a, Unknown) or isinstance(b, Unknown):
            return UNKNOWN
        x, y = self.value(a), self.value(b)
        from lowering.pypto_reader.ops import broadcast

        rtype = broadcast(x, y)
        out = ir.TileType("bool", rtype.shape) if isinstance(rtype, ir.TileType) else ir.ScalarType("bool")
        return TileVal(ir.BinV(name, x, y, out))

    def e_UnaryOp(self, node: ast.UnaryOp) -> Val:
        if isinstance(node.op, ast.USub):
            inner = self.eval(node.operand)
            if isinstance(inner, PyVal) and isinstance(inner.value, float):
                return TileVal(ir.CallV("neg", (ir.FloatV(inner.value),), (), ir.ScalarType("f32")))
        return super().e_UnaryOp(node)

    def negate(self, v: Val, node: ast.AST) -> Val:
        if isinstance(v, TileVal):
            if isinstance(v.type, ir.TileType):
                self.unit("vector")
            return TileVal(ir.CallV("neg", (v.value,), (), v.type))
        return UNKNOWN

    def builtin(self, name: str, v: Val) -> Val:
        if name == "float" and isinstance(v, PyVal) and isinstance(v.value, str):
            text = v.value.strip().lower()
            if text in ("inf", "+inf", "infinity"):
                return PyVal(float("inf"))
            if text in ("-inf", "-infinity"):
                return TileVal(ir.CallV("neg", (ir.FloatV(float("inf")),), (), ir.ScalarType("f32")))
        return super().builtin(name, v)

    def call_pl(self, path: str, node: ast.Call) -> Val:
        if path in IGNORED:
            return PyVal(None)
        from lowering.pypto_reader.signals import COLLECTIVES, collective

        if path in COLLECTIVES:
            return collective(self, path, node)
        key = short_name(path)
        if key == "read" or key == "write" or key in ("load", "slice", "assemble", "store"):
            return self.memory_op(key, node)
        entry = OPS.get(key)
        if entry is None:
            return self.opaque_op(key, node)
        handler, params = entry
        out = handler(self, key if "." not in key else path, node, self.arguments(node, list(params)))
        if isinstance(out, TileVal) and isinstance(out.value, ir.CallV):
            self.ops.add(out.value.op)
        elif isinstance(out, TileVal) and isinstance(out.value, ir.BinV) and key in ("maximum", "minimum"):
            self.ops.add(key)
        return out

    def call_other(self, func: Val, node: ast.Call) -> Val:
        if isinstance(func, FuncVal) and self.call_func is not None and self.depth < MAX_INLINE_DEPTH:
            return self.call_func(self, func, node)
        name = ast.unparse(node.func) if hasattr(ast, "unparse") else "a helper"
        return self.opaque_op(name, node, f"a call to '{name}', which the reader cannot resolve inside a kernel")

    def opaque_op(self, name: str, node: ast.Call, why: str | None = None) -> Val:
        """An op or helper the reader does not know: its tensor arguments count as read."""
        args: list[ir.Value] = []
        read_any = False
        for a in [*node.args, *(kw.value for kw in node.keywords)]:
            v = self.eval(a)
            if isinstance(v, TensorVal):
                region = self.region_at(v, None, None, a)
                self.record(v, region, "read", a)
                read_any = True
                continue
            if isinstance(v, TileVal | IntVal) or (isinstance(v, PyVal) and isinstance(v.value, int | float)):
                args.append(self.value(v))
        if why is not None or read_any:
            self.notes.not_modelled(
                self.span(node),
                why or f"the op '{name}' on whole tensors",
                "its tensor arguments are taken as read in full; writes through it are not seen",
            )
        first = next((a for a in args if isinstance(a.type, ir.TileType)), None)
        if first is not None:
            self.unit("vector")
        rtype = first.type if first is not None else ir.ScalarType("f32")
        return TileVal(ir.CallV(name.rsplit(".", 1)[-1], tuple(args), (), rtype))

    def tensor_op(self, name: str, node: ast.Call) -> Val:
        return self.opaque_op(name, node, f"'{name}' of a tensor inside a kernel")

    # ---------------------------------------------------------------- memory ops
    def memory_op(self, key: str, node: ast.Call) -> Val:
        if key == "read":
            b = self.arguments(node, ["src", "offset"])
            src = b.get("src") or b.get("tensor") or b.get("tile")
            off = b.get("offset") or b.get("indices")
            return self.scalar_read(src, off, node)
        if key == "write":
            b = self.arguments(node, ["dst", "offset", "value"])
            t = self.tensor_of(b["dst"]) if "dst" in b else None
            idx = self.int_list(b.get("offset"))
            if t is None or idx is None or "value" not in b:
                return self.opaque_op("write", node, "a pl.write the reader cannot evaluate")
            region = tuple(ir.Range(i, binop("+", i, Const(1)), Const(1), point=True) for i in idx)
            value = self.value(self.eval(b["value"]))
            self.record(t, region, "write", node)
            self.emit(ir.StoreS(t.root, self.root_region(t, region), value, "write", self.span(node)))
            return t
        if key in ("load", "slice"):
            names = ["tensor", "offsets", "shapes", "valid_shape"] if key == "load" else ["input", "shape", "offset", "valid_shape"]
            b = self.arguments(node, names)
            src_node = b.get(names[0])
            if src_node is None:
                return self.opaque_op(key, node)
            src = self.eval(src_node)
            offs = self.int_list(b.get("offsets" if key == "load" else "offset"))
            shape = self.int_list(b.get("shapes" if key == "load" else "shape"))
            if isinstance(src, TileVal) and isinstance(src.value, ir.LocalV):
                t = tile_type(src.value)
                view = TensorVal(src.value.name, None, t.shape if t else None)
                region = self.region_at(view, offs, shape, node)
                loaded = TileVal(ir.LoadV(src.value.name, region, _local_type(t, region), local=True)) if t else src
            elif isinstance(src, TensorVal):
                region = self.region_at(src, offs, shape, node)
                self.record(src, region, "read", node)
                loaded = self.load_value(src, region)
            else:
                return self.opaque_op(key, node)
            if "valid_shape" in b:
                valid = self.int_list(b["valid_shape"])
                if valid:
                    rows = valid[-2] if len(valid) >= 2 else None
                    return TileVal(_sorting.valid_call(loaded.value, rows, valid[-1]))
            return loaded
        # assemble / store
        if key == "assemble":
            b = self.arguments(node, ["target", "source", "offset"])
            target, source, off = b.get("target"), b.get("source"), b.get("offset")
        else:
            b = self.arguments(node, ["tile", "offsets", "output_tensor", "shapes"])
            target, source, off = b.get("output_tensor"), b.get("tile"), b.get("offsets")
        t = self.tensor_of(target) if target is not None else None
        if t is None or source is None:
            return self.opaque_op(key, node, f"a pl.{key} whose target the reader cannot resolve")
        value = self.value(self.eval(source))
        offs = self.int_list(off) if off is not None else None
        if off is not None and offs is None:
            self.notes.not_modelled(
                self.span(off), f"the offsets of this pl.{key}", "the whole target is taken as written"
            )
        extent = self.int_list(b.get("shapes")) if key == "store" and "shapes" in b else tile_type(value)
        region = self.region_at(t, offs, extent, node)
        atomic = False
        if "atomic" in b:
            a = self.eval(b["atomic"])
            atomic = isinstance(a, PlRef) and a.path.endswith(".Add")
        mode = "atomic" if atomic else "write"
        self.record(t, region, mode, node)
        self.emit(ir.StoreS(t.root, self.root_region(t, region), value, mode, self.span(node)))
        return t

    def scalar_read(self, src: ast.expr | None, off: ast.expr | None, node: ast.Call) -> Val:
        if src is None:
            return UNKNOWN
        base = self.eval(src)
        idx = self.int_list(off)
        if isinstance(base, TensorVal) and idx is not None:
            region = tuple(ir.Range(i, binop("+", i, Const(1)), Const(1), point=True) for i in idx)
            mode = "anchor" if self.anchor_next else "read"
            self.anchor_next = False
            self.last_read = self.record(base, region, mode, node)
            load = self.load_value(base, region)
            return TileVal(ir.CallV("read", (load.value,), (), load.type))
        if isinstance(base, TileVal) and isinstance(base.value, ir.LocalV) and idx is not None:
            region = tuple(ir.Range(i, binop("+", i, Const(1)), Const(1), point=True) for i in idx)
            load = ir.LoadV(base.value.name, region, ir.ScalarType(dtype_of(base.value)), local=True)
            return TileVal(ir.CallV("read", (load,), (), load.type))
        self.notes.not_modelled(self.span(node), "a pl.read the reader cannot evaluate", "it orders nothing here")
        return UNKNOWN

    # ---------------------------------------------------------------- statements
    def statements(self, stmts: list[ast.stmt]) -> bool:
        """Read ``stmts``; False when a ``return`` ended the block."""
        for s in stmts:
            if isinstance(s, ast.Return):
                if s.value is not None:
                    self.returned = self.eval(s.value)
                return False
            self.current, self.last_read = s, None
            try:
                self.statement(s)
            except RecursionError:
                raise
            except Exception as err:  # noqa: BLE001 - the reader never crashes on one statement
                self.notes.add(
                    "P004",
                    self.span(s),
                    f"the reader failed on this statement of task {self.task} ({type(err).__name__}: {err})",
                )
        return True

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Expr):
            self.expr_statement(s)
        elif isinstance(s, ast.Assign):
            value = self.assign_value(s.value, s.targets)
            for target in s.targets:
                self.assign(target, value, s)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.assign_value(s.value, [s.target]), s)
        elif isinstance(s, ast.AugAssign):
            self.aug_assign(s)
        elif isinstance(s, ast.For):
            self.for_loop(s)
        elif isinstance(s, ast.If):
            self.if_stmt(s)
        elif isinstance(s, ast.With):
            self.with_stmt(s)
        elif isinstance(s, ast.While):
            self.notes.not_modelled(
                self.span(s),
                f"a while loop inside task {self.task}",
                "its body was read once, as if it ran a single iteration; counts of signals in it are wrong",
            )
            self.statements(s.body)
        elif isinstance(s, ast.Pass | ast.Assert | ast.FunctionDef | ast.Import | ast.ImportFrom):
            return
        else:
            self.notes.not_modelled(
                self.span(s),
                f"a {type(s).__name__} statement inside task {self.task}",
                "it is skipped; accesses or signals in it are not seen",
            )

    def expr_statement(self, s: ast.Expr) -> None:
        node = s.value
        if isinstance(node, ast.Constant):
            return  # a docstring
        if isinstance(node, ast.Call):
            func = self.eval(node.func)
            if isinstance(func, PlRef) and short_name(func.path) == "read":
                self.anchor_next = True
                v = self.eval(node)
                self.anchor_next = False
                if isinstance(v, TileVal):
                    self.emit(ir.EvalS(v.value, self.span(s)))
                return
            if isinstance(func, PlRef) and func.path == "pl.yield_":
                self.yield_values(node, s)
                return
        v = self.eval(node)
        if isinstance(v, TileVal) and isinstance(v.value, ir.CallV) and v.value.op != "opaque":
            self.emit(ir.EvalS(v.value, self.span(s)))

    def assign_value(self, node: ast.expr, targets: list[ast.expr]) -> Val:
        if (
            isinstance(node, ast.Call)
            and len(targets) == 1
            and isinstance(targets[0], ast.Name | ast.Tuple)
            and isinstance(self.eval(node.func), PlRef)
            and self.eval(node.func).path == "pl.yield_"  # type: ignore[union-attr]
        ):
            return self.yield_values(node, node)
        return self.eval(node)

    def assign(self, target: ast.expr, value: Val, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, stmt)
        elif isinstance(target, ast.Tuple | ast.List):
            items = value.items if isinstance(value, SeqVal) and len(value.items) == len(target.elts) else None
            for i, t in enumerate(target.elts):
                self.assign(t, items[i] if items else UNKNOWN, stmt)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            if isinstance(base, TensorVal):
                region = self.region_sub(base, target) or self.region_at(base, None, None, target)
                v = self.value(value)
                self.record(base, region, "write", target)
                self.emit(ir.StoreS(base.root, self.root_region(base, region), v, "write", self.span(stmt)))
            else:
                self.notes.not_modelled(
                    self.span(target),
                    "an element or slice assignment into a local tile",
                    "the tile's content after it is unknown to the sort and capacity rules",
                )

    def assign_name(self, name: str, value: Val, stmt: ast.stmt) -> None:
        if isinstance(value, IntVal) and self.assigned[name] <= 1 and not self.is_local(name):
            self.bind(name, value)  # an integer let: inlined, as in the DSL
            return
        if isinstance(value, TensorVal | PlRef | FuncVal | Unknown) or (
            isinstance(value, PyVal) and not isinstance(value.value, float | bool)
        ):
            self.bind(name, value)
            return
        if isinstance(value, SeqVal):
            self.bind(name, value)
            return
        v = self.value(value)
        existing = next((s[name] for s in reversed(self.scopes) if name in s), None)
        declared = isinstance(existing, TileVal) and isinstance(existing.value, ir.LocalV) and existing.value.name == name
        declared = declared or (isinstance(existing, IntVal) and existing.expr == Sym(name, DYNAMIC))
        self.emit((ir.AssignS if declared else ir.LetS)(name, v, self.span(stmt)))
        if not declared and isinstance(v, ir.CallV) and v.op == "read" and self.last_read is not None:
            self.read_lets[name] = self.last_read
        if isinstance(v, ir.CallV) and v.op in _sorting.SORTED_OPS:
            self.sorted_locals.add(name)
        vt = v.type
        if isinstance(vt, ir.ScalarType) and vt.dtype in _INT_DTYPES:
            self.bind_declared(name, IntVal(Sym(name, DYNAMIC)))
        else:
            self.bind_declared(name, TileVal(ir.LocalV(name, vt)))

    def bind_declared(self, name: str, value: Val) -> None:
        for scope in reversed(self.scopes):
            if name in scope:
                scope[name] = value
                return
        self.scopes[-1][name] = value

    def aug_assign(self, s: ast.AugAssign) -> None:
        if isinstance(s.target, ast.Subscript):
            base = self.eval(s.target.value)
            if isinstance(base, TensorVal):
                region = self.region_sub(base, s.target) or self.region_at(base, None, None, s.target)
                v = self.value(self.eval(s.value))
                self.record(base, region, "read", s.target)
                self.record(base, region, "write", s.target)
                self.emit(ir.StoreS(base.root, self.root_region(base, region), v, "accumulate", self.span(s)))
                return
        if isinstance(s.target, ast.Name):
            old = self.lookup(s.target.id, s.target)
            new = self.binary(s.op, old, self.eval(s.value), s)
            self.assigned[s.target.id] += 1
            self.assign_name(s.target.id, new, s)
            return
        self.notes.not_modelled(self.span(s), "this augmented assignment", "it is skipped")

    def yield_values(self, node: ast.Call, stmt: ast.AST) -> Val:
        values = [self.eval(a) for a in node.args]
        if self.carried:
            for name, v in zip(self.carried[-1], values, strict=False):
                self.assign_name(name, v, stmt)  # type: ignore[arg-type]
        return SeqVal(tuple(values)) if len(values) != 1 else values[0]

    def for_loop(self, s: ast.For) -> None:
        it = s.iter
        func = self.eval(it.func) if isinstance(it, ast.Call) else None
        path = func.path if isinstance(func, PlRef) else (it.func.id if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) else None)
        kind = LOOP_KINDS.get(path or "")
        target = s.target
        carried: list[str] = []
        if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
            rest = target.elts[1:]
            if len(rest) == 1 and isinstance(rest[0], ast.Tuple):
                rest = list(rest[0].elts)
            carried = [t.id for t in rest if isinstance(t, ast.Name)]
            target = target.elts[0]
        if kind is None or not isinstance(target, ast.Name) or not isinstance(it, ast.Call):
            self.notes.not_modelled(
                self.span(s),
                f"a loop over '{ast.unparse(it)}' inside task {self.task}",
                "its body was read once with an unknown index",
            )
            self.scopes.append({})
            if isinstance(target, ast.Name):
                self.bind(target.id, IntVal(Sym(target.id, DYNAMIC)))
            self.statements(s.body)
            self.scopes.pop()
            return
        pos = [a for a in it.args if not isinstance(a, ast.Starred)]
        kws = {kw.arg: kw.value for kw in it.keywords if kw.arg}
        if path == "pl.split_aiv":
            self.dual_lanes = True
            start, stop, step = Const(0), self.int_expr(self.eval(pos[0])) if pos else Const(2), Const(1)
        else:
            bounds = [self.int_expr(self.eval(a)) for a in pos]
            if not 1 <= len(bounds) <= 3 or any(b is None for b in bounds):
                self.notes.not_modelled(
                    self.span(it),
                    f"loop bounds the reader cannot evaluate inside task {self.task}",
                    "accesses in the loop are taken over the whole tensor extent",
                )
                bounds = [Const(0), Sym(f"data@{s.lineno}:{s.col_offset + 1}", DYNAMIC)]
            if len(bounds) == 1:
                start, stop, step = Const(0), bounds[0], Const(1)
            else:
                start, stop = bounds[0], bounds[1]
                step = bounds[2] if len(bounds) == 3 else Const(1)
        if stop is None:
            stop = Const(2)
        stages = 1
        if kind == "pipeline" and "stage" in kws:
            sv = self.static(self.eval(kws["stage"]))
            stages = sv if isinstance(sv, int) and sv > 0 else 1
        if carried and "init_values" in kws:
            inits = self.eval(kws["init_values"])
            items = inits.items if isinstance(inits, SeqVal) else (inits,)
            for name, v in zip(carried, items, strict=False):
                self.assigned[name] += 1
                self.assign_name(name, v, s)
        var = target.id
        loop = Loop(var, start, stop, step, kind, self.span(s))
        self.loops.append(loop)
        self.scopes.append({var: IntVal(Sym(var, LOOP))})
        self.blocks.append([])
        if carried:
            self.carried.append(carried)
        try:
            self.statements(s.body)
        finally:
            body = self.blocks.pop()
            self.scopes.pop()
            self.loops.pop()
            if carried:
                self.carried.pop()
        self.emit(ir.ForS(var, start, stop, step, kind, stages, tuple(body), self.span(s)))

    def if_stmt(self, s: ast.If) -> None:
        cond_val = self.eval(s.test)
        expr = self.int_expr(cond_val) if not isinstance(cond_val, PyVal) else None
        if expr is None:
            truth = self.truth(cond_val)
            if truth is not None:
                self.statements(s.body if truth else s.orelse)
                return
            expr = Sym(f"data@{s.test.lineno}:{s.test.col_offset + 1}", DYNAMIC)
            cond_ir: ir.Value = self.value(cond_val) if isinstance(cond_val, TileVal) else ir.IntV(expr)
        else:
            cond_ir = ir.IntV(expr, ir.ScalarType("bool"))
        span = self.span(s.test)
        self.conds.append(Condition(expr, span))
        self.blocks.append([])
        self.scopes.append({})
        try:
            self.statements(s.body)
        finally:
            then = self.blocks.pop()
            self.scopes.pop()
            self.conds.pop()
        self.conds.append(Condition(binop("==", expr, Const(0)), span))
        self.blocks.append([])
        self.scopes.append({})
        try:
            self.statements(s.orelse)
        finally:
            orelse = self.blocks.pop()
            self.scopes.pop()
            self.conds.pop()
        self.emit(ir.IfS(cond_ir, tuple(then), tuple(orelse), self.span(s)))

    def with_stmt(self, s: ast.With) -> None:
        for item in s.items:
            ctx = item.context_expr
            func = self.eval(ctx.func) if isinstance(ctx, ast.Call) else self.eval(ctx)
            path = func.path if isinstance(func, PlRef) else ""
            if path in ("pl.at", "pl.spmd", "pl.cluster"):
                self.notes.not_modelled(
                    line_span(self.file, s),
                    f"a {path} scope nested inside task {self.task}",
                    "its body is read as part of the enclosing task, not as a task of its own",
                )
            elif path not in ("pl.scope", "pl.manual_scope", "pl.split_aiv"):
                self.notes.not_modelled(
                    line_span(self.file, s), f"the context manager '{ast.unparse(ctx)}' inside a kernel", "its body is read as is"
                )
        self.statements(s.body)


def _local_type(t: ir.TileType | None, region: tuple[ir.Range, ...]) -> ir.Type:
    if t is None:
        return ir.ScalarType("f32")
    if region and all(r.point for r in region):
        return ir.ScalarType(t.dtype)
    ext = []
    for r in region:
        if r.point:
            ext.append(Const(1))
        else:
            e = difference(r.stop, r.start)
            ext.append(e if r.step == Const(1) else binop("cdiv", e, r.step))
    return ir.TileType(t.dtype, tuple(ext))


def _assigned(stmts: list[ast.stmt]) -> Counter[str]:
    """How often each name is assigned in ``stmts`` (loop targets count once per loop)."""
    out: Counter[str] = Counter()
    for node in ast.walk(ast.Module(body=list(stmts), type_ignores=[])):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                out[node.target.id] += 1
        elif isinstance(node, ast.For):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    out[n.id] += 1
    return out


_ = (BLOCK, unit_of)
