"""A ``mix`` task (cube and vector work in one body) -> the AIC and AIV programs of one MIX kernel.

The kernel is ``KERNEL_TYPE_MIX_AIC_1_1``: a block of the grid runs on one cluster, its cube
statements on the AIC and the rest on one AIV, each core running its own copy of the
body's control flow. The split is a pass over the IR:

1. **Normalise.** A ``matmul`` nested in a vector expression (``cast(matmul(a, b), f32)``)
   is bound to a local of its own first; so is a matmul operand the vector core computes
   (``matmul(cast(p, bf16), kw)``). Every statement is then wholly cube or wholly vector.
2. **Classify.** Cube: lets, reassignments and stores of matmul results, ``zeros``
   accumulators of ``matmul_acc``, GM slices only matmuls read. Vector: every other tile
   statement, element stores, cross-rank ops. Scalar lets (indices, ``read`` of GM) run on
   both cores. A loop or ``if`` whose body is all one side is a statement of that side; one
   that holds both is run by both cores, each with its own statements inside.
3. **Hand-offs through GM.** A cube value a vector statement reads (a matmul product) is
   stored by the AIC with ``Fixpipe`` into a workspace tensor, one slot per block
   (``$ws<k>[block * R : (block + 1) * R, :]``, allocated by the host like a scratch
   tensor), and loaded by the AIV before the first vector statement that reads it; a vector
   value a matmul reads goes the other way (``DataCopy`` to the slot, ``Nd2Nz`` from it).
4. **Cross-core flags.** Each core keeps the GM tensors (workspace slots included) it has
   read and written since it last signalled the other. Before a statement that conflicts
   with the other core's pending accesses (RAW, WAR or WAW on one tensor), the other core
   signals (``PipeBarrier<PIPE_ALL>`` then ``CrossCoreSetFlag<0x2, PIPE_FIX>`` on the AIC,
   ``<0x2, PIPE_MTE3>`` on the AIV) and this one waits (``CrossCoreWaitFlag``). Statements
   that share nothing run concurrently (hc_pre_fused's split-K linear on the AIC beside the
   RMS partials on the AIV). At the entry of a loop or ``if`` both cores run, at the end of
   each of its bodies and at the end of the block, each core with pending accesses signals
   the other, so no iteration's accesses can overtake a conflicting one of the previous
   iteration; flag 0 is AIC -> AIV, flag 1 AIV -> AIC, and every wait has its set earlier in
   program order on the other core, so the handshake cannot deadlock. A ``barrier`` is
   ``SyncAll<false>()`` on both cores, which orders everything.

What is refused (A703, located): a tile both cores write, a GM slice both cores read as a
let, and a branch condition or loop bound that needs a vector value (the AIC cannot see
it), or a scalar ``read`` of a tensor this task writes where both cores run it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from lowering import body as ir_body
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.ir import Graph, Task, Tensor
from lowering.source import Span
from lowering.symbolic import BLOCK, Const, EvalError, Sym, evaluate

CUBE, VECTOR, BOTH, MIXED = "aic", "aiv", "both", "mixed"
FLAG_TO_AIV, FLAG_TO_AIC = 0, 1
_MATMUL = ("matmul", "matmul_acc")


@dataclass(frozen=True)
class CrossFlagS:
    """A cross-core hand-off point inside one core's program: ``set`` or ``wait`` on a flag."""

    op: str  # set | wait
    flag: int
    span: Span
    # conflict: a statement needs the other core's accesses; settle: at a loop/if/block edge
    why: str = "conflict"


@dataclass
class MixPlan:
    aic: tuple[ir_body.Stmt, ...]
    aiv: tuple[ir_body.Stmt, ...]
    workspaces: dict[str, Tensor]  # hand-off tensors to allocate (scratch, one slot per block)
    flags: int = 0  # set/wait pairs emitted


@dataclass
class _Pending:
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)

    def clear(self) -> None:
        self.reads.clear()
        self.writes.clear()

    def __bool__(self) -> bool:
        return bool(self.reads or self.writes)


def _is_matmul(v: ir_body.Value) -> bool:
    return isinstance(v, ir_body.CallV) and v.op in _MATMUL


def _operand_ok(v: ir_body.Value) -> bool:
    return isinstance(v, ir_body.LocalV) or isinstance(v, ir_body.LoadV) and not v.local


class _Normaliser:
    """Step 1: bind nested matmuls and vector-computed matmul operands to locals of their own;
    a local the vector core also reassigns (``big_o = matmul(...)``, then
    ``big_o = row_expand_mul(big_o, alpha) + ...``) takes its products through a new local."""

    def __init__(self, body: tuple[ir_body.Stmt, ...] = ()) -> None:
        self.count = 0
        defs: dict[str, set[bool]] = {}
        for s in ir_body.nested_stmts(body):
            if isinstance(s, ir_body.LetS | ir_body.AssignS) and isinstance(s.value.type, ir_body.TileType):
                v = s.value
                cube = _is_matmul(v) or isinstance(v, ir_body.CallV) and v.op == "zeros"
                defs.setdefault(s.name, set()).add(cube)
        self.shared = {n for n, kinds in defs.items() if kinds == {True, False}}

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"${stem}{self.count}"  # `$` is in no source name: no clash with a user local

    def block(self, stmts: tuple[ir_body.Stmt, ...]) -> tuple[ir_body.Stmt, ...]:
        out: list[ir_body.Stmt] = []
        for s in stmts:
            if isinstance(s, ir_body.ForS):
                out.append(replace(s, body=self.block(s.body)))
            elif isinstance(s, ir_body.IfS):
                out.append(replace(s, then=self.block(s.then), orelse=self.block(s.orelse)))
            elif isinstance(s, ir_body.LetS | ir_body.AssignS | ir_body.StoreS) and isinstance(
                s.value.type, ir_body.TileType
            ):
                pre: list[ir_body.Stmt] = []
                shared = isinstance(s, ir_body.LetS | ir_body.AssignS) and s.name in self.shared
                if shared and _is_matmul(s.value) and s.value.op == "matmul":
                    value = self.lift(s.value, pre, s.span)  # -> LocalV of a new product local
                else:
                    value = self.lift(s.value, pre, s.span, root=True)
                out.extend(pre)
                out.append(replace(s, value=value))
            else:
                out.append(s)
        return tuple(out)

    def lift(self, v: ir_body.Value, pre: list, span: Span, root: bool = False) -> ir_body.Value:
        if _is_matmul(v):
            args = []
            for i, a in enumerate(v.args):
                a = self.lift(a, pre, span)
                if not (_operand_ok(a) or v.op == "matmul_acc" and i == 0):
                    name = self.fresh("op")
                    pre.append(ir_body.LetS(name, a, span))
                    a = ir_body.LocalV(name, a.type)
                args.append(a)
            v = replace(v, args=tuple(args))
            if root:
                return v
            name = self.fresh("mm")
            pre.append(ir_body.LetS(name, v, span))
            return ir_body.LocalV(name, v.type)
        if isinstance(v, ir_body.CallV):
            return replace(v, args=tuple(self.lift(a, pre, span) for a in v.args))
        if isinstance(v, ir_body.BinV):
            return replace(v, a=self.lift(v.a, pre, span), b=self.lift(v.b, pre, span))
        return v


def _values(s: ir_body.Stmt) -> list[ir_body.Value]:
    out: list[ir_body.Value] = []
    for v in ir_body.stmt_values(s):
        out.extend(ir_body.nested_values(v))
    return out


def _local_reads(s: ir_body.Stmt) -> set[str]:
    """Locals (tiles or scalars) and loop variables ``s`` and its nested statements read."""
    return ir_body.read_names((s,))


def _children(s: ir_body.Stmt) -> tuple[ir_body.Stmt, ...]:
    if isinstance(s, ir_body.ForS):
        return s.body
    if isinstance(s, ir_body.IfS):
        return s.then + s.orelse
    return ()


def _gm_effects(s: ir_body.Stmt) -> tuple[set[str], set[str]]:
    """(GM tensors read, GM tensors written) by ``s`` and its nested statements."""
    reads: set[str] = set()
    writes: set[str] = set()
    for st in [s, *ir_body.nested_stmts(_children(s))]:
        for v in _values(st):
            if isinstance(v, ir_body.LoadV) and not v.local:
                reads.add(v.tensor)
        if isinstance(st, ir_body.StoreS | ir_body.RemoteStoreS):
            writes.add(st.tensor)
            if isinstance(st, ir_body.StoreS) and st.mode == "accumulate":
                reads.add(st.tensor)
        elif isinstance(st, ir_body.NotifyS):
            writes.add(st.signal)
        elif isinstance(st, ir_body.WaitS):
            reads.add(st.signal)
    return reads, writes


class _Splitter:
    """Steps 2-4: classify, then walk the body once, building both programs side by side."""

    def __init__(self, graph: Graph, task: Task, env: dict[str, int], body: tuple[ir_body.Stmt, ...]):
        self.graph, self.task, self.env = graph, task, env
        self.cube_vars: set[str] = set()  # tiles the cube defines
        self.vector_vars: set[str] = set()  # tiles (and tile-derived scalars) the vector core defines
        self.cube_operands: set[str] = set()  # locals matmuls read
        accumulators: set[str] = set()
        for s in ir_body.nested_stmts(body):
            if not isinstance(s, ir_body.LetS | ir_body.AssignS | ir_body.StoreS):
                continue
            for v in ir_body.nested_values(s.value):
                if _is_matmul(v):
                    self.cube_operands.update(a.name for a in v.args if isinstance(a, ir_body.LocalV))
                    if v.op == "matmul_acc" and isinstance(v.args[0], ir_body.LocalV):
                        accumulators.add(v.args[0].name)
        for s in ir_body.nested_stmts(body):
            if isinstance(s, ir_body.LetS | ir_body.AssignS) and isinstance(s.value.type, ir_body.TileType):
                v = s.value
                gm_slice_for_cube = (
                    isinstance(v, ir_body.LoadV) and not v.local and s.name in self.cube_operands
                )
                zeros_acc = isinstance(v, ir_body.CallV) and v.op == "zeros" and s.name in accumulators
                side = self.cube_vars if _is_matmul(v) or gm_slice_for_cube or zeros_acc else self.vector_vars
                side.add(s.name)
        both = self.cube_vars & self.vector_vars
        if both:
            name = sorted(both)[0]
            raise refuse(
                "A703",
                f"{name} is written by both the cube and the vector core of mix task {task.name}",
                self._span_of(body, name),
                hint="accumulate into a local of its own and compute on a copy of it",
            )
        # scalars the vector core derives from tiles (`read(top[0, 0])`) exist on the AIV only
        for s in ir_body.nested_stmts(body):
            if isinstance(s, ir_body.LetS | ir_body.AssignS) and not isinstance(
                s.value.type, ir_body.TileType
            ):
                if _local_reads(s) & (self.vector_vars | self.cube_vars):
                    self.vector_vars.add(s.name)
        self.types: dict[str, ir_body.Type] = {}  # each local's type, from its first binding
        for s in ir_body.nested_stmts(body):
            if isinstance(s, ir_body.LetS | ir_body.AssignS):
                self.types.setdefault(s.name, s.value.type)
        self.vector_readers = {  # locals some vector statement reads
            n
            for s in ir_body.nested_stmts(body)
            if not isinstance(s, ir_body.ForS | ir_body.IfS) and self.side(s) == VECTOR
            for n in _local_reads(s)
        }
        self.written = {t for s in ir_body.nested_stmts(body) for t in _gm_effects(s)[1]}
        self.workspaces: dict[str, Tensor] = {}
        self.slot_of: dict[str, ir_body.LoadV] = {}
        self.pending = {CUBE: _Pending(), VECTOR: _Pending()}
        self.flags = 0

    def _span_of(self, body: tuple[ir_body.Stmt, ...], name: str) -> Span:
        for s in ir_body.nested_stmts(body):
            if isinstance(s, ir_body.LetS | ir_body.AssignS) and s.name == name:
                return s.span
        return self.task.header_span

    # ---------------------------------------------------------------- classification
    def side(self, s: ir_body.Stmt) -> str:
        if isinstance(s, ir_body.BarrierS):
            return MIXED
        if isinstance(s, ir_body.ForS | ir_body.IfS):
            sides = {self.side(c) for c in _children(s)} - {BOTH}
            if not sides:
                return BOTH
            return sides.pop() if len(sides) == 1 and MIXED not in sides else MIXED
        if isinstance(s, ir_body.LetS | ir_body.AssignS):
            if not isinstance(s.value.type, ir_body.TileType):
                return VECTOR if s.name in self.vector_vars else BOTH
            return CUBE if s.name in self.cube_vars else VECTOR
        if isinstance(s, ir_body.StoreS):
            v = s.value
            cube = isinstance(v, ir_body.LocalV) and v.name in self.cube_vars or _is_matmul(v)
            return CUBE if cube else VECTOR
        return VECTOR

    # ---------------------------------------------------------------- hand-off tensors
    def slot(self, name: str, t: ir_body.Type, span: Span) -> ir_body.LoadV:
        """The workspace region that carries local ``name`` between the cores (this block's slot)."""
        if name in self.slot_of:
            return self.slot_of[name]
        if not isinstance(t, ir_body.TileType) or len(t.shape) != 2:
            raise refuse("A704", f"a mix hand-off of {name} needs a 2-D tile, got {t}", span)
        try:
            rows, cols = (evaluate(e, self.env) for e in t.shape)
        except EvalError:
            raise refuse(
                "A704", f"the shape of {name} must be known at compile time (mix hand-off)", span
            ) from None
        # `$` is in no source name, and task names are unique in a graph
        ws = f"${self.task.name}.ws{len(self.workspaces)}"
        blocks = max(self.task.blocks, 1)
        self.workspaces[ws] = Tensor(
            ws, t.dtype, (Const(blocks * rows), Const(cols)), (blocks * rows, cols), "scratch", False, span
        )
        block = Sym("block", BLOCK)
        region = (
            ir_body.Range(block * rows, block * rows + rows, Const(1)),
            ir_body.Range(Const(0), Const(cols), Const(1)),
        )
        load = ir_body.LoadV(ws, region, t)
        self.slot_of[name] = load
        return load

    # ---------------------------------------------------------------- flags
    def signal(self, src: str, out: dict[str, list], span: Span, why: str = "conflict") -> None:
        dst = VECTOR if src == CUBE else CUBE
        flag = FLAG_TO_AIV if src == CUBE else FLAG_TO_AIC
        out[src].append(CrossFlagS("set", flag, span, why))
        out[dst].append(CrossFlagS("wait", flag, span, why))
        self.pending[src].clear()
        self.flags += 1

    def settle(self, out: dict[str, list], span: Span) -> None:
        """Every access so far happens before everything after this point, on both cores."""
        for src in (CUBE, VECTOR):
            if self.pending[src]:
                self.signal(src, out, span, "settle")

    def place(
        self, side: str, s: ir_body.Stmt, out: dict[str, list], reads: set[str], writes: set[str]
    ) -> None:
        other = self.pending[VECTOR if side == CUBE else CUBE]
        if other.writes & (reads | writes) or other.reads & writes:
            self.signal(VECTOR if side == CUBE else CUBE, out, s.span)
        out[side].append(s)
        self.pending[side].reads |= reads
        self.pending[side].writes |= writes

    # ---------------------------------------------------------------- the walk
    def block(self, stmts: tuple[ir_body.Stmt, ...], loaded: set[str]) -> dict[str, list]:
        out: dict[str, list] = {CUBE: [], VECTOR: []}
        loaded = set(loaded)  # cube values the AIV holds in this scope
        for s in stmts:
            side = self.side(s)
            if side == BOTH:
                self.replicated(s)
                out[CUBE].append(s)
                out[VECTOR].append(s)
            elif side == MIXED and isinstance(s, ir_body.BarrierS):
                out[CUBE].append(s)
                out[VECTOR].append(s)
                for p in self.pending.values():
                    p.clear()
            elif side == MIXED:
                self.settle(out, s.span)
                cube_s, vec_s = self.construct(s, loaded)
                out[CUBE].append(cube_s)
                out[VECTOR].append(vec_s)
                loaded -= self._defines_deep(s)
            elif side == CUBE:
                self.cube_leaf(s, out)
                loaded -= self._defines_deep(s)
            else:
                self.vector_leaf(s, out, loaded)
        return out

    def _defines(self, s: ir_body.Stmt) -> set[str]:
        return {s.name} if isinstance(s, ir_body.LetS | ir_body.AssignS) else set()

    def _defines_deep(self, s: ir_body.Stmt) -> set[str]:
        return {n for c in [s, *ir_body.nested_stmts(_children(s))] for n in self._defines(c)}

    def replicated(self, s: ir_body.Stmt) -> None:
        """A statement both cores run: it may not need the other core's data."""
        reads, _ = _gm_effects(s)
        if reads & self.written:
            raise refuse(
                "A703",
                f"both cores of mix task {self.task.name} would read {sorted(reads & self.written)[0]}, "
                "which the task writes: the AIC and AIV read it at different times",
                s.span,
            )

    def construct(self, s: ir_body.ForS | ir_body.IfS, loaded: set[str]) -> tuple[ir_body.Stmt, ir_body.Stmt]:
        header = _local_reads(
            replace(s, body=()) if isinstance(s, ir_body.ForS) else replace(s, then=(), orelse=())
        )
        if header & (self.vector_vars | self.cube_vars):
            raise refuse(
                "A703",
                f"a {'loop bound' if isinstance(s, ir_body.ForS) else 'branch condition'} of mix task "
                f"{self.task.name} needs a value only one core computes",
                s.span,
                hint="compute the condition from indices, parameters or GM reads",
            )
        self.replicated(
            replace(s, body=()) if isinstance(s, ir_body.ForS) else replace(s, then=(), orelse=())
        )
        bodies = [s.body] if isinstance(s, ir_body.ForS) else [s.then, s.orelse]
        if isinstance(s, ir_body.ForS):  # the back edge brings the body's products: reload them
            loaded = loaded - self._defines_deep(s)
        parts = []
        for b in bodies:
            out = self.block(b, loaded)
            self.settle(out, s.span)
            parts.append(out)
        if isinstance(s, ir_body.ForS):
            return replace(s, body=tuple(parts[0][CUBE])), replace(s, body=tuple(parts[0][VECTOR]))
        then, orelse = parts
        return (
            replace(s, then=tuple(then[CUBE]), orelse=tuple(orelse[CUBE])),
            replace(s, then=tuple(then[VECTOR]), orelse=tuple(orelse[VECTOR])),
        )

    def cube_leaf(self, s: ir_body.Stmt, out: dict[str, list]) -> None:
        reads, writes = _gm_effects(s)
        handed = _local_reads(s) & self.vector_vars
        if handed:  # vector values a matmul reads: from their workspace slots
            s = _substitute(s, {n: self.slot_of[n] for n in handed if n in self.slot_of})
            missing = sorted(n for n in handed if n not in self.slot_of)
            if missing:
                raise refuse(
                    "A703", f"the cube reads {missing[0]} before the vector core computed it", s.span
                )
            reads |= {self.slot_of[n].tensor for n in handed}
        self.place(CUBE, s, out, reads, writes)
        for name in sorted(self._defines_deep(s) & self.cube_vars & self.vector_readers):
            if isinstance(s, ir_body.LetS) and isinstance(s.value, ir_body.CallV) and s.value.op == "zeros":
                continue
            slot = self.slot(name, self.types[name], s.span)
            store = ir_body.StoreS(slot.tensor, slot.region, ir_body.LocalV(name, slot.type), "write", s.span)
            self.place(CUBE, store, out, set(), {slot.tensor})

    def vector_leaf(self, s: ir_body.Stmt, out: dict[str, list], loaded: set[str]) -> None:
        for name in sorted(_local_reads(s) & self.cube_vars - loaded):
            if name not in self.slot_of:
                raise refuse("A703", f"the vector core reads {name} before a matmul computed it", s.span)
            slot = self.slot_of[name]
            self.place(VECTOR, ir_body.LetS(name, slot, s.span), out, {slot.tensor}, set())
            loaded.add(name)
        reads, writes = _gm_effects(s)
        self.place(VECTOR, s, out, reads, writes)
        for name in sorted(self._defines_deep(s) & self.cube_operands & self.vector_vars):
            t = self.types[name]
            slot = self.slot(name, t, s.span)
            store = ir_body.StoreS(slot.tensor, slot.region, ir_body.LocalV(name, t), "write", s.span)
            self.place(VECTOR, store, out, set(), {slot.tensor})


def _substitute(s: ir_body.Stmt, slots: dict[str, ir_body.LoadV]) -> ir_body.Stmt:
    """``s`` with matmul operands ``LocalV(name)`` replaced by their workspace slots."""

    def value(v: ir_body.Value) -> ir_body.Value:
        if isinstance(v, ir_body.LocalV) and v.name in slots:
            return slots[v.name]
        if isinstance(v, ir_body.CallV):
            return replace(v, args=tuple(value(a) for a in v.args))
        if isinstance(v, ir_body.BinV):
            return replace(v, a=value(v.a), b=value(v.b))
        return v

    if isinstance(s, ir_body.ForS):
        return replace(s, body=tuple(_substitute(c, slots) for c in s.body))
    if isinstance(s, ir_body.IfS):
        return replace(
            s,
            then=tuple(_substitute(c, slots) for c in s.then),
            orelse=tuple(_substitute(c, slots) for c in s.orelse),
        )
    if isinstance(s, ir_body.LetS | ir_body.AssignS | ir_body.StoreS):
        return replace(s, value=value(s.value))
    return s


def split_mix(graph: Graph, task: Task, env: dict[str, int]) -> MixPlan:
    """The AIC and AIV programs of mix task ``task`` (module docstring), or a located A703."""
    body = _Normaliser(task.body).block(task.body)
    sp = _Splitter(graph, task, env, body)
    out = sp.block(body, set())
    barrier = any(isinstance(s, ir_body.BarrierS) for s in ir_body.nested_stmts(task.body))
    if not barrier:  # the block loop's back edge
        sp.settle(out, task.span)
    return MixPlan(tuple(out[CUBE]), tuple(out[VECTOR]), sp.workspaces, sp.flags)


__all__ = ["FLAG_TO_AIC", "FLAG_TO_AIV", "CrossFlagS", "MixPlan", "split_mix"]
