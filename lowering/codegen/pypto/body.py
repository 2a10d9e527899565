"""Task bodies -> PyPTO kernel code (the statements inside a ``pl.at``/``pl.spmd`` scope).

Each IR statement has one PyPTO spelling that the reader (``lowering.pypto_reader``) maps
back to the same accesses and signals: a store is ``t = pl.assemble(t, v, [offsets])``
(``atomic=pl.AtomicType.Add`` only for an atomic store), a remote store
``pld.tile.remote_store``, notify/wait ``pld.system.notify``/``wait`` with their op and
comparison, a barrier ``pl.system.syncall``, an anchor read a bare ``pl.read``. Values (tile
ops and their ``pl`` names) are written by ``lowering.codegen.pypto.values``. Long index expressions
are bound to an ``_o`` temporary first (the reader inlines integers assigned once), so lines
stay short.
"""

from __future__ import annotations

from lowering import body as ir
from lowering.codegen.pypto.text import (
    EMITTED,
    INDENT,
    LINE_LENGTH,
    RESERVED,
    Cat,
    Doc,
    Group,
    UnsupportedForPyPTO,
    call,
    flat,
    int_text,
    layout,
    lst,
    py_name,
    slice_text,
    symbol_namer,
)
from lowering.codegen.pypto.values import ValueWriter, dtype_name
from lowering.symbolic import Bin, Const, Expr, Sym, difference

CUBE_OPS = frozenset({"matmul", "matmul_acc"})
NO_UNIT_OPS = frozenset({"zeros", "full", "read", "valid", "min", "max", "cdiv"})
HOIST_AT = 44  # index expressions longer than this are bound to a temporary first
HOIST_LINE = 80  # a temporary's expression longer than this binds its operands first


def body_units(stmts: tuple[ir.Stmt, ...]) -> set[str]:
    """Core units the ops of a body need, by the rule the DSL and the reader both apply."""
    units: set[str] = set()

    def value(v) -> None:  # call attributes are options (flags, k_group), not work on a unit
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

    for s in ir.nested_stmts(stmts):
        for v in ir.stmt_values(s):
            value(v)
    return units


class BodyWriter(ValueWriter):
    """Renders the statements of one task at a given indentation depth."""

    def __init__(
        self, tensors: dict, ranks_text: str, core: str, used: set[str], reserved: frozenset[str] = RESERVED
    ):
        self.tensors = tensors
        self.reserved = reserved
        self.name_of = symbol_namer(ranks_text, reserved)
        self.core = core
        self.lines: list[str] = []
        self.pre: list[tuple[Doc, int]] = []  # lines to put before the statement (doc, extra depth)
        self.used = used  # names taken in the module (temporaries must not collide)
        self.temp = 0
        self.uses_block = False
        self.hoisted: dict[str, str] = {}  # index text -> temporary, for the current statement
        self.read_names: set[str] = set()

    # ---------------------------------------------------------------- helpers
    def py(self, name: str) -> str:
        return py_name(name, self.reserved)

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
                a = Sym(self.hoist(a), EMITTED)
            if len(int_text(b, self._name)) > HOIST_LINE // 2:
                b = Sym(self.hoist(b), EMITTED)
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
        return self.py(name)

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

    # ---------------------------------------------------------------- statements
    def start(self, body: tuple[ir.Stmt, ...]) -> None:
        """Note the names a body reads, so an unused binding can be marked for the linter."""
        self.read_names = ir.read_names(body)

    def stmts(self, body: tuple[ir.Stmt, ...], depth: int) -> None:
        if not body:
            self.emit("pass", depth)
        for s in body:
            try:
                self.stmt(s, depth)
            except UnsupportedForPyPTO as err:
                if err.span is None:  # located at the innermost statement that PyPTO cannot write
                    err.span = s.span
                raise

    def stmt(self, s: ir.Stmt, depth: int) -> None:
        if isinstance(s, ir.LetS | ir.AssignS):
            unused = "  # noqa: F841" if s.name not in self.read_names else ""
            self.emit(Cat([f"{self.py(s.name)} = ", self.value(s.value), unused]), depth)
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
            self.emit(Cat([f"for {self.py(s.var)} in ", head, ":", unused]), depth)
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
