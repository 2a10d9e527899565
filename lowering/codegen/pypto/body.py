"""Task bodies -> PyPTO kernel code (the statements inside a ``pl.at``/``pl.spmd`` scope).

Each IR statement has one PyPTO spelling that the reader (``lowering.pypto_reader``) maps
back to the same accesses and signals: a store is ``t = pl.assemble(t, v, [offsets])``
(``atomic=pl.AtomicType.Add`` only for an atomic store), a remote store
``pld.tile.remote_store``, notify/wait ``pld.system.notify``/``wait`` with their op and
comparison, a barrier ``pl.system.syncall``, an anchor read a bare ``pl.read``. Values (tile
ops and their ``pl`` names) are written by ``lowering.codegen.pypto.values``, names,
temporaries and index text by ``lowering.codegen.pypto.scope``, both shared through the task's
``TaskScope``.

Index expressions keep the author's names: an integer ``let`` (``t0 = block * T_TILE``) is
written once and its name wherever its expression occurs (``NamedInts``; the reader inlines
integers assigned once, which gives the IR's expressions back); a let whose name ends up
unused is not written. A local or loop variable the body never reads is written with the
linters' "unused" spelling, ``_<name>`` (``for _it in ...``), instead of carrying a ``# noqa``.
Temporaries the writer introduces are named after what they hold (``logit``, ``sorted``,
``<tensor>_rows``, ``<tensor>_val``), made unique against every name of the module.
"""

from __future__ import annotations

from collections.abc import Callable

from lowering import body as ir_body
from lowering.codegen.names import PLAIN_NAME, data_temp_name, helper_name
from lowering.codegen.pypto.scope import TaskScope
from lowering.codegen.pypto.text import (
    Cat,
    Doc,
    Group,
    UnsupportedForPyPTO,
    call,
    flat,
    int_text,
    layout,
    lst,
)
from lowering.codegen.pypto.values import ValueWriter, dtype_name
from lowering.symbolic import Const

CUBE_OPS = frozenset({"matmul", "matmul_acc"})
NO_UNIT_OPS = frozenset({"zeros", "full", "read", "valid", "min", "max", "cdiv"})


def body_units(stmts: tuple[ir_body.Stmt, ...]) -> set[str]:
    """Core units the ops of a body need, by the rule the DSL and the reader both apply."""
    units: set[str] = set()

    def value(v) -> None:  # call attributes are options (flags, k_group), not work on a unit
        if isinstance(v, ir_body.CallV):
            if v.op in CUBE_OPS:
                units.add("cube")
            elif v.op not in NO_UNIT_OPS:
                units.add("vector")
            for a in v.args:
                value(a)
        elif isinstance(v, ir_body.BinV):
            if isinstance(v.type, ir_body.TileType):
                units.add("vector")
            value(v.a)
            value(v.b)

    for s in ir_body.nested_stmts(stmts):
        for v in ir_body.stmt_values(s):
            value(v)
    return units


class BodyWriter:
    """Renders the statements of one task at a given indentation depth."""

    def __init__(
        self, tensors: dict, ranks_text: str, core: str, used: set[str], names: Callable[[str], str]
    ):
        self.scope = TaskScope(tensors, ranks_text, used, names)
        self.values = ValueWriter(self.scope)
        self.core = core
        self.lines: list[str] = []
        self.read_names: set[str] = set()

    def emit(self, doc: Doc, depth: int) -> None:
        for p, extra in self.scope.take_pending():
            self.lines.extend(layout(p, depth + extra))
        self.lines.extend(layout(doc, depth))

    # ---------------------------------------------------------------- statements
    def start(self, body: tuple[ir_body.Stmt, ...]) -> None:
        """Note the names a body reads, so an unused binding can be marked for the linter."""
        self.read_names = ir_body.read_names(body)

    def stmts(self, body: tuple[ir_body.Stmt, ...], depth: int) -> None:
        begin = len(self.lines)
        self.scope.named.push()
        for s in body:
            try:
                self.stmt(s, depth)
            except UnsupportedForPyPTO as err:
                if err.span is None:  # located at the innermost statement that PyPTO cannot write
                    err.span = s.span
                raise
        for let in self.scope.named.pop():  # latest first: the line numbers before it stay valid
            del self.lines[let.lines[0] : let.lines[1]]
        if len(self.lines) == begin:
            self.emit("pass", depth)

    def local(self, name: str) -> str:
        """A local's name; ``_<name>`` when the body never reads it (what linters accept)."""
        text = self.scope.py(name)
        if name in self.read_names:
            return text
        if PLAIN_NAME.match(text) and f"_{text}" not in self.scope.used:
            return f"_{text}"  # starts with `_`, does not end with one: outside every name's image
        return helper_name(name, "unused")

    def stmt(self, s: ir_body.Stmt, depth: int) -> None:
        if (
            isinstance(s, ir_body.LetS | ir_body.AssignS)
            and ir_body.is_temp(s.name)
            and s.name not in self.scope.temps
        ):
            # `table_val`: read from `block_table`
            self.scope.temps[s.name] = self.scope.fresh(data_temp_name(s.value))
        if isinstance(s, ir_body.LetS) and s.inlined:
            assert isinstance(s.value, ir_body.IntV)
            start = len(self.lines)
            let, text = self.scope.named.define(
                self.scope.py(s.name), s.value.expr, lambda e: int_text(e, self.scope.symbol)
            )
            self.emit(f"{let.name} = {text}", depth)
            let.lines = (start, len(self.lines))
        elif isinstance(s, ir_body.LetS | ir_body.AssignS):
            self.emit(Cat([f"{self.local(s.name)} = ", self.values.value(s.value)]), depth)
        elif isinstance(s, ir_body.StoreS):
            self.store(s, depth)
        elif isinstance(s, ir_body.RemoteStoreS):
            value = self.tile_value(s.value, s.region, s.tensor)
            kw: dict[str, Doc] = {"atomic": "pld.AtomicType.Add"} if s.atomic else {}
            doc = call(
                "pld.tile.remote_store",
                value,
                self.scope.tensor(s.tensor),
                self.scope.int(s.peer),
                self.scope.offsets(s.region),
                **kw,
            )
            self.emit(doc, depth)
        elif isinstance(s, ir_body.ForS):
            bounds = [s.stop] if s.start == Const(0) and s.step == Const(1) else [s.start, s.stop]
            if s.step != Const(1):
                bounds = [s.start, s.stop, s.step]
            args: list[Doc] = [self.scope.int(b) for b in bounds]
            if s.kind == "pipeline":
                head = call("pl.pipeline", *args, stage=str(s.stages))
            else:
                head = call("pl.range", *args)
            self.emit(Cat([f"for {self.local(s.var)} in ", head, ":"]), depth)
            self.stmts(s.body, depth + 1)
        elif isinstance(s, ir_body.IfS):
            cond = self.condition(s.cond)
            self.emit(f"if {cond}:", depth)
            self.stmts(s.then, depth + 1)
            if s.orelse:
                self.emit("else:", depth)
                self.stmts(s.orelse, depth + 1)
        elif isinstance(s, ir_body.NotifyS):
            op = "pld.NotifyOp.AtomicAdd" if s.op == "add" else "pld.NotifyOp.Set"
            doc = call(
                "pld.system.notify",
                target=self.scope.tensor(s.signal),
                peer=self.scope.int(s.peer),
                offsets=lst([self.scope.int(i) for i in s.index]),
                value=self.scope.int(s.value),
                op=op,
            )
            self.emit(doc, depth)
        elif isinstance(s, ir_body.WaitS):
            cmp = "pld.WaitCmp.Ge" if s.cmp == "ge" else "pld.WaitCmp.Eq"
            doc = call(
                "pld.system.wait",
                signal=self.scope.tensor(s.signal),
                offsets=lst([self.scope.int(i) for i in s.index]),
                expected=self.scope.int(s.expected),
                cmp=cmp,
            )
            self.emit(doc, depth)
        elif isinstance(s, ir_body.BarrierS):
            core_type = {"aiv": '"aiv_only"', "aic": '"aic_only"'}.get(self.core, '"mix"')
            mode = '"soft"' if s.soft else '"hard"'
            self.emit(call("pl.system.syncall", core_type=core_type, mode=mode), depth)
        elif isinstance(s, ir_body.EvalS):
            self.emit(self.values.value(s.value), depth)
        else:
            raise UnsupportedForPyPTO(f"cannot write {type(s).__name__} in PyPTO")

    def condition(self, cond: ir_body.Value) -> str:
        if isinstance(cond, ir_body.IntV):
            return self.scope.int(cond.expr)
        return flat(self.values.value(cond))

    def tile_value(self, v: ir_body.Value, region: tuple[ir_body.Range, ...], tensor: str) -> Doc:
        """A tile for ``region`` of ``tensor``: a tensor slice is loaded, a scalar broadcast."""
        if isinstance(v, ir_body.LoadV) and not v.local:
            ext = self.scope.extents(v.region)
            return call(
                "pl.load",
                self.scope.tensor(v.tensor),
                self.scope.offsets(v.region),
                lst([self.scope.int(e) for e in ext]),
            )
        if not isinstance(v.type, ir_body.TileType):
            dtype = self.scope.tensors[tensor].dtype
            return call(
                "pl.full",
                lst([self.scope.int(e) for e in self.scope.extents(region)]),
                dtype=dtype_name(dtype),
                value=self.values.value(v),
            )
        return self.values.value(v)

    def store(self, s: ir_body.StoreS, depth: int) -> None:
        name = self.scope.tensor(s.tensor)
        if s.region and all(r.point for r in s.region) and s.mode == "write":
            idx = lst([self.scope.int(r.start) for r in s.region])
            self.emit(call("pl.write", name, idx, self.values.value(s.value)), depth)
            return
        value: Doc
        if s.mode == "accumulate":
            value = call(
                "pl.add",
                f"{name}[{self.scope.region(s.region, self.scope.shape(s.tensor))}]",
                self.values.value(s.value),
            )
        elif isinstance(s.value.type, ir_body.TileType):
            value = self.values.value(s.value)
        else:
            value = self.tile_value(s.value, s.region, s.tensor)
        if any(r.step != Const(1) for r in s.region) and s.mode == "write":
            # pl.assemble takes offsets only: a strided store keeps the subscript form
            if not isinstance(s.value, ir_body.LocalV):
                value = self.values.bind_value(s.value, self.scope.hint(s.tensor, "tile"))
            with self.scope.named.suspended():  # the reader takes names in a subscript target for stores
                dims = self.scope.region_items(s.region, self.scope.shape(s.tensor))
            target: Doc = Group(name, list(dims), "[", "]") if len(dims) > 1 else f"{name}[{dims[0]}]"
            self.emit(Cat([target, " = ", value]), depth)
            return
        kw: dict[str, Doc] = {"atomic": "pl.AtomicType.Add"} if s.mode == "atomic" else {}
        self.emit(
            Cat([f"{name} = ", call("pl.assemble", name, value, self.scope.offsets(s.region), **kw)]), depth
        )
