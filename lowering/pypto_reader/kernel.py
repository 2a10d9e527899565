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
from lowering.pypto_reader.accesses import AccessMixin, _local_type
from lowering.pypto_reader.exprs import Evaluator
from lowering.pypto_reader.notes import Notes, line_span
from lowering.pypto_reader.ops import IGNORED, OPS, short_name, tile_type, unit_of
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
from lowering.symbolic import BLOCK, DYNAMIC, LOOP, Const, Expr, Sym, binop

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


class KernelReader(AccessMixin, Evaluator):
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
        if key == "gather_row":
            return self.gather_row(node)
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
        return self.opaque_op(
            name, node, f"a call to '{name}', which the reader cannot resolve inside a kernel"
        )

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
            items = (
                value.items if isinstance(value, SeqVal) and len(value.items) == len(target.elts) else None
            )
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
        declared = (
            isinstance(existing, TileVal)
            and isinstance(existing.value, ir.LocalV)
            and existing.value.name == name
        )
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
        path = (
            func.path
            if isinstance(func, PlRef)
            else (it.func.id if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) else None)
        )
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
                    line_span(self.file, s),
                    f"the context manager '{ast.unparse(ctx)}' inside a kernel",
                    "its body is read as is",
                )
        self.statements(s.body)


def _assigned(stmts: list[ast.stmt]) -> Counter[str]:
    """How often each name is assigned in ``stmts`` (loop targets count once per loop).

    Only statements are walked (assignment targets sit there), not every expression node.
    """
    out: Counter[str] = Counter()

    def target(t: ast.expr) -> None:
        if isinstance(t, ast.Name):
            out[t.id] += 1
        elif isinstance(t, ast.Tuple | ast.List):
            for e in t.elts:
                target(e)
        elif isinstance(t, ast.Starred):
            target(t.value)

    def walk(body: list[ast.stmt]) -> None:
        for s in body:
            if isinstance(s, ast.Assign):
                for t in s.targets:
                    target(t)
            elif isinstance(s, ast.AnnAssign | ast.AugAssign):
                target(s.target)
                if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                    out[s.target.id] += 1
            elif isinstance(s, ast.For | ast.AsyncFor):
                target(s.target)
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, ast.While | ast.If):
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, ast.With | ast.AsyncWith):
                for item in s.items:
                    if item.optional_vars is not None:
                        target(item.optional_vars)
                walk(s.body)
            elif isinstance(s, ast.Try):
                walk(s.body)
                walk(s.orelse)
                walk(s.finalbody)
                for h in s.handlers:
                    walk(h.body)

    walk(list(stmts))
    return out


_ = (BLOCK, unit_of)
