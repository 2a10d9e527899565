"""The evaluator of a task body (a ``pl.at``/``pl.spmd`` scope or an InCore kernel): its
expressions -> IR values, its ``pl.*`` ops -> tile ops, accesses and signals.

``KernelReader`` composes one piece per concern and evaluates expressions over them:
``kernel_names.KernelNames`` (what a name means), ``kernel_body.BodyBuilder`` (the IR
statements, loops and conditions), ``accesses.AccessRecorder`` (accesses, signals,
barriers), ``kernel_statements.StatementWalker`` (the statements) and, for the ops, the
handler tables of ``ops``, ``signals`` and ``sorting`` (merged into ``OPS`` here) and the
memory ops of ``memory``. The summaries are recorded exactly as the DSL front end does for a
``task { ... }``:

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
from collections.abc import Callable

from lowering import body as ir_body
from lowering.pypto_reader import exprs_arithmetic
from lowering.pypto_reader import sorting as _sorting
from lowering.pypto_reader.accesses import AccessRecorder, local_load
from lowering.pypto_reader.exprs import Evaluator
from lowering.pypto_reader.kernel_body import BodyBuilder
from lowering.pypto_reader.kernel_names import KernelNames, assignment_counts, loop_carried
from lowering.pypto_reader.kernel_statements import StatementWalker
from lowering.pypto_reader.memory import gather_row, memory_op, region_sub
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
        self.task = task
        self.grid = grid
        self.call_func = call_func
        self.names = KernelNames(outer)
        self.body = BodyBuilder()
        self.access = AccessRecorder(tensors, self.body, self.span)
        self.depth = 0  # how many helpers are spliced in now (at most MAX_INLINE_DEPTH)
        self.current: ast.AST | None = None  # the statement being read (for temporaries' spans)
        self.walker = StatementWalker(self)

    # ---------------------------------------------------------------- entry points
    def read(self, stmts: list[ast.stmt], bindings: dict[str, Val] | None = None) -> tuple[ir_body.Stmt, ...]:
        if bindings:
            self.names.scopes[0].update(bindings)
        self.names.assigned.update(assignment_counts(stmts))
        self.names.unstable |= loop_carried(stmts)
        self.walker.statements(stmts)
        self.access.finish_anchors(self.names.used)
        return self.body.statements()

    def splice(
        self, file: str, outer: Callable[[str, ast.AST], Val], bound: dict[str, Val], stmts: list[ast.stmt]
    ) -> Val:
        """Read the body of a helper called in the kernel as part of it: ``bound`` are its
        parameters, ``outer`` and ``file`` its module's; returns what it returns."""
        names = self.names
        saved_outer, saved_file, saved_assigned, saved_unstable = (
            names.outer,
            self.file,
            names.assigned,
            names.unstable,
        )
        names.outer, self.file = outer, file
        names.push(bound)
        self.depth += 1
        names.assigned = saved_assigned + assignment_counts(stmts)
        names.unstable = saved_unstable | loop_carried(stmts)
        walker = self.walker
        walker.returned = None
        try:
            walker.statements(stmts)
            return walker.returned if walker.returned is not None else PyVal(None)
        finally:
            self.depth -= 1
            names.pop()
            names.outer, self.file, names.assigned, names.unstable = (
                saved_outer,
                saved_file,
                saved_assigned,
                saved_unstable,
            )

    # ---------------------------------------------------------------- names
    def lookup(self, name: str, node: ast.AST) -> Val:
        return self.names.lookup(name, node)

    # ---------------------------------------------------------------- tensors
    def tensor_of(self, node: ast.expr) -> TensorVal | None:
        v = self.eval(node)
        return v if isinstance(v, TensorVal) else None

    def tensor_shape(self, t: TensorVal) -> Val:
        shape = self.access.tensor_shape_exprs(t)
        return SeqVal(tuple(IntVal(d) for d in shape)) if shape is not None else UNKNOWN

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
            name = self.names.fresh()
            self.body.emit(ir_body.LetS(name, v.value, self.span(self.current)))
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
            region = self.access.region_at(v, None, None)
            self.access.record(v, region, "read", self.current)  # located at the statement using it
            return self.access.load_value(v, region).value
        if isinstance(v, DtypeVal):
            return ir_body.DtypeV(v.dtype or "f32")
        return ir_body.CallV("opaque", (), (), ir_body.ScalarType("f32"))

    # ---------------------------------------------------------------- expressions
    def subscript(self, base: Val, node: ast.Subscript) -> Val:
        if isinstance(base, TensorVal):
            region = region_sub(self, base, node)
            if region is None:
                self.notes.not_modelled(
                    self.span(node),
                    f"a subscript of '{base.root}' the reader cannot evaluate",
                    "the whole tensor is taken as read",
                )
                region = self.access.region_at(base, None, None)
            self.access.record(base, region, "read", node)
            return self.access.load_value(base, region)
        if isinstance(base, TileVal):
            out = _sorting.readout(self, base, node)
            if out is not None:
                return out
            t = tile_type(base.value)
            if t is None:
                return base
            computed = not isinstance(base.value, ir_body.LocalV)  # `pl.concat(a, b)[0:K, :]`
            name = self.names.fresh() if computed else base.value.name
            region = region_sub(self, TensorVal(name, None, t.shape), node)
            if region is None:
                return base
            if computed:  # the computed tile is bound to a temporary the load reads from
                self.body.emit(ir_body.LetS(name, base.value, self.span(self.current)))
            return local_load(name, t, region)
        return UNKNOWN

    def binary_other(self, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
        names = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv"}
        name = names.get(type(op))
        if name is None or isinstance(a, Unknown | TensorVal) or isinstance(b, Unknown | TensorVal):
            return UNKNOWN
        x, y = self.value(a), self.value(b)
        rtype = broadcast(x, y)
        if isinstance(rtype, ir_body.TileType):
            self.body.unit("vector")
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

    def unary_operation(self, node: ast.UnaryOp) -> Val:
        if isinstance(node.op, ast.USub):
            inner = self.eval(node.operand)
            if isinstance(inner, PyVal) and isinstance(inner.value, float):
                return TileVal(negative_float(inner.value))
        return exprs_arithmetic.unary_operation(self, node)

    def negate(self, v: Val, node: ast.AST) -> Val:
        if isinstance(v, TileVal):
            if isinstance(v.type, ir_body.TileType):
                self.body.unit("vector")
            return TileVal(ir_body.CallV("neg", (v.value,), (), v.type))
        return UNKNOWN

    def call_pl(self, path: str, node: ast.Call) -> Val:
        if path in IGNORED:
            return PyVal(None)
        if path in COLLECTIVES:
            return collective(self, path, node)
        key = short_name(path)
        if key == "gather_row":
            return gather_row(self, node)
        if key == "read" or key == "write" or key in ("load", "slice", "assemble", "store"):
            return memory_op(self, key, node)
        entry = OPS.get(key)
        if entry is None:
            return self.opaque_op(key, node)
        handler, params = entry
        out = handler(self, key if "." not in key else path, node, self.arguments(node, list(params)))
        if isinstance(out, TileVal) and isinstance(out.value, ir_body.CallV):
            self.body.ops.add(out.value.op)
        elif (
            isinstance(out, TileVal) and isinstance(out.value, ir_body.BinV) and key in ("maximum", "minimum")
        ):
            self.body.ops.add(key)
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
                region = self.access.region_at(v, None, None)
                self.access.record(v, region, "read", a, opaque=True)
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
            self.body.unit("vector")
        rtype = first.type if first is not None else ir_body.ScalarType("f32")
        return TileVal(ir_body.CallV(name.rsplit(".", 1)[-1], tuple(args), (), rtype))

    def tensor_op(self, name: str, node: ast.Call) -> Val:
        return self.opaque_op(name, node, f"'{name}' of a tensor inside a kernel")

    expressions = {**Evaluator.expressions, ast.UnaryOp: unary_operation}
