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

``KernelReader`` holds the state and evaluates expressions; its statement half is
``kernel_statements.StatementMixin``, its access half ``accesses.AccessMixin``.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from lowering import body as ir_body
from lowering.ir import Access, BarrierOp, Condition, Loop, SignalOp
from lowering.pypto_reader import sorting as _sorting
from lowering.pypto_reader.accesses import AccessMixin, local_load
from lowering.pypto_reader.exprs import Evaluator
from lowering.pypto_reader.kernel_statements import StatementMixin, assignment_counts, loop_carried
from lowering.pypto_reader.notes import Notes
from lowering.pypto_reader.ops import (
    IGNORED,
    INTEGER_DTYPES,
    TILE_OPS,
    broadcast,
    merged,
    negative_float,
    short_name,
    tile_type,
)
from lowering.pypto_reader.signals import COLLECTIVES, SIGNAL_OPS, collective
from lowering.pypto_reader.tensors import TensorTable
from lowering.pypto_reader.values import (
    UNKNOWN,
    DtypeVal,
    FuncVal,
    IntVal,
    PyVal,
    SeqVal,
    TensorVal,
    TileVal,
    Unknown,
    Val,
)
from lowering.symbolic import DYNAMIC, Const, Expr, Sym

MAX_INLINE_DEPTH = 32
#: Every op a kernel body may call, by its short name.
OPS = merged(TILE_OPS, SIGNAL_OPS, _sorting.SORT_OPS)


class KernelReader(StatementMixin, AccessMixin, Evaluator):
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
        self.blocks: list[list[ir_body.Stmt]] = [[]]
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
        self.valid_locals: dict[str, ir_body.CallV] = {}  # local -> the valid-shape call it holds
        self.assigned: Counter[str] = Counter()
        self.unstable: set[str] = set()  # loop-carried names: integer lets of them are not inlined
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
    def read(self, stmts: list[ast.stmt], bindings: dict[str, Val] | None = None) -> tuple[ir_body.Stmt, ...]:
        if bindings:
            self.scopes[0].update(bindings)
        self.assigned.update(assignment_counts(stmts))
        self.unstable |= loop_carried(stmts)
        self.statements(stmts)
        self._finish_anchors()
        return tuple(self.blocks[0])

    def _finish_anchors(self) -> None:
        """``_ = pl.read(t, [0, 0])`` (a ``_``-name never used) orders the task and carries no data."""
        for name, index in self.read_lets.items():
            if name.startswith("_") and name not in self.used and index < len(self.accesses):
                self.accesses[index] = replace(self.accesses[index], mode="anchor")

    # ---------------------------------------------------------------- bookkeeping
    def next_order(self) -> int:
        self.order += 1
        return self.order

    def loop_tuple(self) -> tuple[Loop, ...]:
        return tuple(self.loops)

    def cond_tuple(self) -> tuple[Condition, ...]:
        return tuple(self.conds)

    def emit(self, stmt: ir_body.Stmt) -> None:
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
        if (
            isinstance(v, TileVal)
            and isinstance(v.type, ir_body.ScalarType)
            and v.type.dtype in INTEGER_DTYPES
        ):
            if isinstance(v.value, ir_body.LocalV):
                return Sym(v.value.name, DYNAMIC)
            if isinstance(v.value, ir_body.IntV):
                return v.value.expr
            name = self.fresh()
            self.emit(ir_body.LetS(name, v.value, self.span(self.current)))
            return Sym(name, DYNAMIC)
        return None

    def int_list(self, node: ast.expr | None) -> tuple[Expr, ...] | None:
        if node is None:
            return None
        v = self.eval(node)
        if isinstance(v, SeqVal):
            return self.int_items(v)
        e = self.int_expr(v)
        return (e,) if e is not None else None

    def value(self, v: Val) -> ir_body.Value:
        """An IR value for ``v`` (a tensor used whole is a read of all of it)."""
        if isinstance(v, TileVal):
            return v.value
        if isinstance(v, IntVal):
            return ir_body.IntV(v.expr)
        if isinstance(v, PyVal):
            if isinstance(v.value, bool):
                return ir_body.IntV(Const(int(v.value)), ir_body.ScalarType("bool"))
            if isinstance(v.value, float):
                if v.value < 0:
                    return negative_float(-v.value)
                return ir_body.FloatV(v.value)
            if isinstance(v.value, int):
                return ir_body.IntV(Const(v.value))
        if isinstance(v, SeqVal):
            items = self.int_items(v)
            if items is not None:
                return ir_body.ListV(items, ir_body.ListType(len(items)))
        if isinstance(v, TensorVal):
            region = self.region_at(v, None, None)
            self.record(v, region, "read", self.current)  # located at the statement using it
            return self.load_value(v, region).value
        if isinstance(v, DtypeVal):
            return ir_body.DtypeV(v.dtype or "f32")
        return ir_body.CallV("opaque", (), (), ir_body.ScalarType("f32"))

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
                region = self.region_at(base, None, None)
            self.record(base, region, "read", node)
            return self.load_value(base, region)
        if isinstance(base, TileVal):
            out = _sorting.readout(self, base, node)
            if out is not None:
                return out
            t = tile_type(base.value)
            if t is None or not isinstance(base.value, ir_body.LocalV):
                return base
            view = TensorVal(base.value.name, None, t.shape)
            region = self.region_sub(view, node)
            if region is None:
                return base
            return local_load(base.value.name, t, region)
        return UNKNOWN

    def binary_other(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        names = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv"}
        name = names.get(type(op))
        if name is None or isinstance(a, Unknown | TensorVal) or isinstance(b, Unknown | TensorVal):
            return UNKNOWN
        x, y = self.value(a), self.value(b)
        rtype = broadcast(x, y)
        if isinstance(rtype, ir_body.TileType):
            self.unit("vector")
        if name == "div" and getattr(rtype, "dtype", "f32") in INTEGER_DTYPES:
            name = "floordiv"
        return TileVal(ir_body.BinV(name, x, y, rtype))

    def compare_other(self, op: ast.cmpop, a: Val, b: Val, node: ast.AST) -> Val:
        names = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
        name = names.get(type(op))
        if name is None or isinstance(a, Unknown) or isinstance(b, Unknown):
            return UNKNOWN
        x, y = self.value(a), self.value(b)
        rtype = broadcast(x, y)
        out = (
            ir_body.TileType("bool", rtype.shape)
            if isinstance(rtype, ir_body.TileType)
            else ir_body.ScalarType("bool")
        )
        return TileVal(ir_body.BinV(name, x, y, out))

    def e_UnaryOp(self, node: ast.UnaryOp) -> Val:
        if isinstance(node.op, ast.USub):
            inner = self.eval(node.operand)
            if isinstance(inner, PyVal) and isinstance(inner.value, float):
                return TileVal(negative_float(inner.value))
        return super().e_UnaryOp(node)

    def negate(self, v: Val, node: ast.AST) -> Val:
        if isinstance(v, TileVal):
            if isinstance(v.type, ir_body.TileType):
                self.unit("vector")
            return TileVal(ir_body.CallV("neg", (v.value,), (), v.type))
        return UNKNOWN

    def call_pl(self, path: str, node: ast.Call) -> Val:
        if path in IGNORED:
            return PyVal(None)
        if path in COLLECTIVES:
            return collective(self, path, node)
        key = short_name(path)
        if key == "gather_row":
            return self.gather_row(node)
        if key == "read" or key == "write" or key in ("load", "slice", "assemble", "store"):
            return self.memory_op(key, node)
        entry = OPS.get(key)
        if entry is None:
            return self.opaque_op(key, node)
        handler, params = entry
        out = handler(self, key if "." not in key else path, node, self.arguments(node, list(params)))
        if isinstance(out, TileVal) and isinstance(out.value, ir_body.CallV):
            self.ops.add(out.value.op)
        elif (
            isinstance(out, TileVal) and isinstance(out.value, ir_body.BinV) and key in ("maximum", "minimum")
        ):
            self.ops.add(key)
        return out

    def call_other(self, func: Val, node: ast.Call) -> Val:
        if isinstance(func, FuncVal) and self.call_func is not None and self.depth < MAX_INLINE_DEPTH:
            return self.call_func(self, func, node)
        name = ast.unparse(node.func)
        return self.opaque_op(
            name, node, f"a call to '{name}', which the reader cannot resolve inside a kernel"
        )

    def opaque_op(self, name: str, node: ast.Call, why: str | None = None) -> Val:
        """An op or helper the reader does not know: its tensor arguments count as read."""
        args: list[ir_body.Value] = []
        read_any = False
        for a in [*node.args, *(kw.value for kw in node.keywords)]:
            v = self.eval(a)
            if isinstance(v, TensorVal):
                region = self.region_at(v, None, None)
                self.record(v, region, "read", a, opaque=True)
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
        first = next((a for a in args if isinstance(a.type, ir_body.TileType)), None)
        if first is not None:
            self.unit("vector")
        rtype = first.type if first is not None else ir_body.ScalarType("f32")
        return TileVal(ir_body.CallV(name.rsplit(".", 1)[-1], tuple(args), (), rtype))

    def tensor_op(self, name: str, node: ast.Call) -> Val:
        return self.opaque_op(name, node, f"'{name}' of a tensor inside a kernel")
