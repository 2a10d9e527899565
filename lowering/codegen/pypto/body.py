"""Task bodies -> PyPTO kernel code (the statements inside a ``pl.at``/``pl.spmd`` scope).

Each IR statement has one PyPTO spelling that the reader (``lowering.pypto_reader``) maps
back to the same accesses and signals: a store is ``t = pl.assemble(t, v, [offsets])``
(``atomic=pl.AtomicType.Add`` only for an atomic store), a remote store
``pld.tile.remote_store``, notify/wait ``pld.system.notify``/``wait`` with their op and
comparison, a barrier ``pl.system.syncall``, an anchor read a bare ``pl.read``. Values (tile
ops and their ``pl`` names) are written by ``lowering.codegen.pypto.values``.

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
from lowering.codegen.names import PLAIN_NAME, NamedInts, data_temp_name, helper_name, own_name
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
    slice_text,
    symbol_namer,
)
from lowering.codegen.pypto.values import ValueWriter, dtype_name
from lowering.symbolic import Const, Expr, difference

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


class BodyWriter(ValueWriter):
    """Renders the statements of one task at a given indentation depth."""

    def __init__(
        self, tensors: dict, ranks_text: str, core: str, used: set[str], names: Callable[[str], str]
    ):
        self.tensors = tensors
        self.names = names  # the module's source names (``ModuleNames``)
        self.name_of = symbol_namer(ranks_text, self.py)
        self.core = core
        self.lines: list[str] = []
        self.pre: list[tuple[Doc, int]] = []  # lines to put before the statement (doc, extra depth)
        self.used = used  # names taken in the module (temporaries must not collide)
        self.local_used: set[str] = set()  # this task's temporaries (another task may reuse them)
        self.temps: dict[str, str] = {}  # a front-end temporary (``_v1``) -> its name in this task
        self.uses_block = False
        self.named = NamedInts()
        self.read_names: set[str] = set()

    # ---------------------------------------------------------------- helpers
    def py(self, name: str) -> str:
        return self.temps.get(name) or self.names(name)

    def fresh(self, hint: str) -> str:
        """A temporary named ``hint`` (``hint2``, ... when that is taken in the module or task)."""
        k = 1
        while True:
            name = hint if k == 1 else f"{hint}{k}"
            if name not in self.used and name not in self.local_used:
                self.local_used.add(name)
                return name
            k += 1

    def hint(self, tensor: str, what: str) -> str:
        """A temporary's name for something of ``tensor``: its last name part and ``what``."""
        last = own_name(tensor)
        return f"{last}_{what}" if last else what

    def int(self, e: Expr) -> str:
        return int_text(self.named.rename(e), self._name)

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
        self.lines.extend(layout(doc, depth))

    def region(self, region: tuple[ir_body.Range, ...], shape: tuple[Expr, ...] | None = None) -> str:
        return ", ".join(self.region_items(region, shape))

    def region_items(
        self, region: tuple[ir_body.Range, ...], shape: tuple[Expr, ...] | None = None
    ) -> list[str]:
        parts = []
        for i, r in enumerate(region):
            if r.point:
                parts.append(self.int(r.start))
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
            start = None if r.start == Const(0) else self.int(r.start)
            stop = self.int(r.stop)
            step = None if r.step == Const(1) else self.int(r.step)
            parts.append(slice_text(start, stop, step))
        return parts

    def offsets(self, region: tuple[ir_body.Range, ...]) -> Group:
        for r in region:
            if r.step != Const(1):
                raise UnsupportedForPyPTO(
                    "a strided store has no PyPTO form (pl.assemble takes offsets only)"
                )
        return lst([self.int(r.start) for r in region])

    def extents(self, region: tuple[ir_body.Range, ...]) -> list[Expr]:
        return [Const(1) if r.point else difference(r.stop, r.start) for r in region]

    # ---------------------------------------------------------------- statements
    def start(self, body: tuple[ir_body.Stmt, ...]) -> None:
        """Note the names a body reads, so an unused binding can be marked for the linter."""
        self.read_names = ir_body.read_names(body)

    def stmts(self, body: tuple[ir_body.Stmt, ...], depth: int) -> None:
        begin = len(self.lines)
        self.named.push()
        for s in body:
            try:
                self.stmt(s, depth)
            except UnsupportedForPyPTO as err:
                if err.span is None:  # located at the innermost statement that PyPTO cannot write
                    err.span = s.span
                raise
        for let in self.named.pop():  # latest first: the line numbers before it stay valid
            del self.lines[let.lines[0] : let.lines[1]]
        if len(self.lines) == begin:
            self.emit("pass", depth)

    def local(self, name: str) -> str:
        """A local's name; ``_<name>`` when the body never reads it (what linters accept)."""
        text = self.py(name)
        if name in self.read_names:
            return text
        if PLAIN_NAME.match(text) and f"_{text}" not in self.used:
            return f"_{text}"  # starts with `_`, does not end with one: outside every name's image
        return helper_name(name, "unused")

    def stmt(self, s: ir_body.Stmt, depth: int) -> None:
        if (
            isinstance(s, ir_body.LetS | ir_body.AssignS)
            and ir_body.is_temp(s.name)
            and s.name not in self.temps
        ):
            # `table_val`: read from `block_table`
            self.temps[s.name] = self.fresh(data_temp_name(s.value))
        if isinstance(s, ir_body.LetS) and s.inlined:
            assert isinstance(s.value, ir_body.IntV)
            start = len(self.lines)
            let, text = self.named.define(self.py(s.name), s.value.expr, lambda e: int_text(e, self._name))
            self.emit(f"{let.name} = {text}", depth)
            let.lines = (start, len(self.lines))
        elif isinstance(s, ir_body.LetS | ir_body.AssignS):
            self.emit(Cat([f"{self.local(s.name)} = ", self.value(s.value)]), depth)
        elif isinstance(s, ir_body.StoreS):
            self.store(s, depth)
        elif isinstance(s, ir_body.RemoteStoreS):
            value = self.tile_value(s.value, s.region, s.tensor)
            kw: dict[str, Doc] = {"atomic": "pld.AtomicType.Add"} if s.atomic else {}
            doc = call(
                "pld.tile.remote_store",
                value,
                self.tensor(s.tensor),
                self.int(s.peer),
                self.offsets(s.region),
                **kw,
            )
            self.emit(doc, depth)
        elif isinstance(s, ir_body.ForS):
            bounds = [s.stop] if s.start == Const(0) and s.step == Const(1) else [s.start, s.stop]
            if s.step != Const(1):
                bounds = [s.start, s.stop, s.step]
            args: list[Doc] = [self.int(b) for b in bounds]
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
                target=self.tensor(s.signal),
                peer=self.int(s.peer),
                offsets=lst([self.int(i) for i in s.index]),
                value=self.int(s.value),
                op=op,
            )
            self.emit(doc, depth)
        elif isinstance(s, ir_body.WaitS):
            cmp = "pld.WaitCmp.Ge" if s.cmp == "ge" else "pld.WaitCmp.Eq"
            doc = call(
                "pld.system.wait",
                signal=self.tensor(s.signal),
                offsets=lst([self.int(i) for i in s.index]),
                expected=self.int(s.expected),
                cmp=cmp,
            )
            self.emit(doc, depth)
        elif isinstance(s, ir_body.BarrierS):
            core_type = {"aiv": '"aiv_only"', "aic": '"aic_only"'}.get(self.core, '"mix"')
            mode = '"soft"' if s.soft else '"hard"'
            self.emit(call("pl.system.syncall", core_type=core_type, mode=mode), depth)
        elif isinstance(s, ir_body.EvalS):
            self.emit(self.value(s.value), depth)
        else:
            raise UnsupportedForPyPTO(f"cannot write {type(s).__name__} in PyPTO")

    def condition(self, cond: ir_body.Value) -> str:
        if isinstance(cond, ir_body.IntV):
            return self.int(cond.expr)
        return flat(self.value(cond))

    def tile_value(self, v: ir_body.Value, region: tuple[ir_body.Range, ...], tensor: str) -> Doc:
        """A tile for ``region`` of ``tensor``: a tensor slice is loaded, a scalar broadcast."""
        if isinstance(v, ir_body.LoadV) and not v.local:
            ext = self.extents(v.region)
            return call(
                "pl.load", self.tensor(v.tensor), self.offsets(v.region), lst([self.int(e) for e in ext])
            )
        if not isinstance(v.type, ir_body.TileType):
            dtype = self.tensors[tensor].dtype
            return call(
                "pl.full",
                lst([self.int(e) for e in self.extents(region)]),
                dtype=dtype_name(dtype),
                value=self.value(v),
            )
        return self.value(v)

    def store(self, s: ir_body.StoreS, depth: int) -> None:
        name = self.tensor(s.tensor)
        if s.region and all(r.point for r in s.region) and s.mode == "write":
            idx = lst([self.int(r.start) for r in s.region])
            self.emit(call("pl.write", name, idx, self.value(s.value)), depth)
            return
        value: Doc
        if s.mode == "accumulate":
            value = call(
                "pl.add", f"{name}[{self.region(s.region, self.shape(s.tensor))}]", self.value(s.value)
            )
        elif isinstance(s.value.type, ir_body.TileType):
            value = self.value(s.value)
        else:
            value = self.tile_value(s.value, s.region, s.tensor)
        if any(r.step != Const(1) for r in s.region) and s.mode == "write":
            # pl.assemble takes offsets only: a strided store keeps the subscript form
            if not isinstance(s.value, ir_body.LocalV):
                value = self.bind_value(s.value, self.hint(s.tensor, "tile"))
            with self.named.suspended():  # the reader takes names in a subscript target for stores
                dims = self.region_items(s.region, self.shape(s.tensor))
            target: Doc = Group(name, list(dims), "[", "]") if len(dims) > 1 else f"{name}[{dims[0]}]"
            self.emit(Cat([target, " = ", value]), depth)
            return
        kw: dict[str, Doc] = {"atomic": "pl.AtomicType.Add"} if s.mode == "atomic" else {}
        self.emit(Cat([f"{name} = ", call("pl.assemble", name, value, self.offsets(s.region), **kw)]), depth)
