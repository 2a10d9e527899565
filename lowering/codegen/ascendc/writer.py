"""What the AIV and AIC body writers share: lines, scopes, scalars, control flow, GM tensors.

A task body becomes the statements inside the kernel's block loop. Integer lets are already
inlined by the front end; a scalar that comes from data (``let c = read(count[e, 0])``)
becomes a C++ local, a ``for`` a C++ ``for`` over ``int64_t``, an ``if`` an ``if``. GM
tensors are ``AscendC::GlobalTensor<T>`` objects set up in the kernel prologue; a scalar
element is read with ``GetValue`` and written with ``SetValue`` followed by a cache-line
write-back (``DataCacheCleanAndInvalid``), so a later DMA or another core sees it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lowering import body as ir_body
from lowering.codegen.ascendc import names
from lowering.codegen.ascendc.cxx import IntWriter, capacity_dims, cxx_type, float_literal
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.masks import tile_valued
from lowering.codegen.ascendc.mix import CrossFlagS
from lowering.ir import FLOAT_DTYPES, Graph, Task
from lowering.source import Span
from lowering.symbolic import EvalError, Expr, bounds, poly

INDENT = "    "
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


@dataclass(frozen=True)
class Scalar:
    """A scalar operand: C++ code and its dtype (``i32`` for index arithmetic)."""

    code: str
    dtype: str
    const: float | int | None = None  # the value, when known at compile time


@dataclass
class GmUse:
    """How a task uses one tensor: whether the scalar unit has written an element of it yet."""

    scalar_written: bool = False


@dataclass
class Scope:
    bindings: dict[str, object] = field(default_factory=dict)
    cleanup: list[tuple[str, Callable[[], None] | None]] = field(default_factory=list)  # at block end
    arena_mark: int = 0


class CodeText:
    """The C++ lines of one body as they are written, their indentation, and the counter that
    keeps the names of C++ locals fresh (shared by the writer and every piece it delegates to)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.counter = 0

    def emit(self, line: str) -> None:
        self.lines.append(INDENT * self.depth + line)

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"


class BodyWriter:
    """Statement-level emission shared by the vector and cube writers (subclassed)."""

    unit = "vector"
    mix = False  # a side of a MIX kernel (barriers sync AIC and AIV)

    def __init__(self, graph: Graph, task: Task, env: dict[str, int]):
        self.graph = graph
        self.task = task
        self.env = env
        ranges: dict[str, object] = {"block": (0, max(task.blocks - 1, 0))}
        ranges["rank"] = (0, max(graph.nranks - 1, 0))
        ranges.update(graph.scalar_ranges())
        self.ints = IntWriter(env, ranges, graph.nranks)
        self.text = CodeText()
        self.tensors: dict[str, GmUse] = {}
        self.scalars: set[str] = set()
        self.uses_rank = False
        self.scopes: list[Scope] = []
        self.certain: list[bool] = []  # per enclosing loop/if: does its body surely run?
        self.span: Span = task.span
        self.reassigned = {s.name for s in ir_body.nested_stmts(task.body) if isinstance(s, ir_body.AssignS)}
        self.dma_written = {  # tensors this task stores to by DMA (not element by element)
            s.tensor
            for s in ir_body.nested_stmts(task.body)
            if isinstance(s, ir_body.RemoteStoreS)
            or isinstance(s, ir_body.StoreS)
            and not self.is_scalar_store(s)
        }

    # ---------------------------------------------------------------- text
    def emit(self, line: str) -> None:
        self.text.emit(line)

    def fresh(self, stem: str) -> str:
        return self.text.fresh(stem)

    def int(self, e: Expr) -> str:
        self._note_symbols(e)
        try:
            return self.ints.code(e)
        except EvalError as err:
            raise refuse("A704", f"cannot compute {e} in the kernel: {err}", self.span) from None

    def const_int(self, e: Expr) -> int:
        value = self.ints.constant(e)
        if value is None:  # the same over every value its loop and block indices take
            try:
                lo, hi = bounds(e, {**self.env, **self.ints.ranges})
                value = lo if lo == hi else None
            except EvalError:
                value = None
        if value is None:
            raise refuse(
                "A704", f"extent {e} must be known at compile time for the AscendC target", self.span
            )
        return value

    def _note_symbols(self, e: Expr) -> None:
        from lowering.symbolic import RANK, SCALAR, free_symbols

        for s in free_symbols(e):
            if s.kind == SCALAR:
                self.scalars.add(s.name)
            elif s.kind == RANK:
                self.uses_rank = True

    # ---------------------------------------------------------------- GM tensors
    def gm(self, tensor: str) -> str:
        self.tensors.setdefault(tensor, GmUse())
        if self.graph.tensors[tensor].kind in ("window", "signal"):
            self.uses_rank = True
        return names.tensor(tensor)

    def dims(self, tensor: str, span: Span) -> tuple[int, ...]:
        """Static dims; a leading dim that depends on ranged runtime scalars at its capacity."""
        dims = capacity_dims(self.graph, tensor, self.env)
        if dims is None or len(dims) > 2:
            raise refuse(
                "A704",
                f"tensor {tensor} must be at most 2-D with static dims (a runtime leading dim needs "
                "scalars with a range)",
                span,
            )
        return dims

    def row_major(self, tensor: str, region: tuple[ir_body.Range, ...], span: Span) -> tuple[Expr, list[int]]:
        """(element offset of the region's first element, row-major strides)."""
        dims = self.dims(tensor, span)
        strides = [1] * len(dims)
        for i in range(len(dims) - 2, -1, -1):
            strides[i] = strides[i + 1] * dims[i + 1]
        offset: Expr | None = None
        for r, stride in zip(region, strides, strict=True):
            term = r.start * stride if stride != 1 else r.start
            offset = term if offset is None else offset + term
        return offset, strides  # type: ignore[return-value]

    def gm_origin(self, tensor: str, region: tuple[ir_body.Range, ...]) -> tuple[Expr, int]:
        """(element offset of the region's first element, elements per row of the tensor)."""
        dims = self.dims(tensor, self.span)
        offset, _ = self.row_major(tensor, region, self.span)
        return offset, dims[-1] if dims else 1

    def aligned(self, e: Expr, multiple: int) -> bool:
        """Is ``e`` a multiple of ``multiple`` for every value of its symbols?"""
        form = poly(self.ints.fold(e))
        return form is not None and all(c % multiple == 0 for c in form.values())

    # ---------------------------------------------------------------- scopes and bindings
    def lookup(self, name: str) -> object:
        for scope in reversed(self.scopes):
            if name in scope.bindings:
                return scope.bindings[name]
        raise refuse("A701", f"local {name!r} is not bound here", self.span)

    def bind(self, name: str, value: object) -> None:
        self.scopes[-1].bindings[name] = value

    def open_scope(self) -> None:
        self.scopes.append(Scope(arena_mark=self.arena_mark()))

    def close_scope(self) -> None:
        scope = self.scopes.pop()
        for line, done in reversed(scope.cleanup):
            self.emit(line)
            if done is not None:
                done()
        self.arena_release(scope.arena_mark)

    def arena_mark(self) -> int:
        return 0

    def arena_release(self, mark: int) -> None:
        pass

    def block(self, stmts: tuple[ir_body.Stmt, ...]) -> None:
        self.open_scope()
        for s in stmts:
            self.statement(s)
        self.close_scope()

    # ---------------------------------------------------------------- statements
    def statement(self, s: ir_body.Stmt) -> None:
        self.span = s.span
        if isinstance(s, ir_body.LetS) and s.inlined:
            return  # an integer let the IR already inlined at its uses (its name is kept for Python)
        if isinstance(s, ir_body.ForS):
            self.for_loop(s)
        elif isinstance(s, ir_body.IfS):
            self.if_stmt(s)
        elif isinstance(s, ir_body.LetS | ir_body.AssignS) and not tile_valued(s.value):
            self.scalar_let(s)
        elif isinstance(s, ir_body.StoreS) and self.is_scalar_store(s):
            self.scalar_store(s)
        elif isinstance(s, CrossFlagS):
            self.cross_flag(s)
        elif isinstance(s, ir_body.EvalS) and not isinstance(s.value.type, ir_body.TileType):
            self.emit(f"(void){self.scalar(s.value).code};  // anchor read: orders the task, no data use")
        else:
            self.tile_statement(s)

    def tile_statement(self, s: ir_body.Stmt) -> None:
        raise refuse("A701", f"{type(s).__name__} is not supported on the {self.unit} core", s.span)

    def cross_flag(self, s: CrossFlagS) -> None:
        """One side of a MIX kernel's cube <-> vector hand-off (``mix``): mode 2, within the cluster."""
        if s.op == "wait":
            self.emit(f"AscendC::CrossCoreWaitFlag<0x2, PIPE_S>({s.flag});")
            return
        pipe = "PIPE_FIX" if self.unit == "cube" else "PIPE_MTE3"
        self.emit("AscendC::PipeBarrier<PIPE_ALL>();  // every access before the hand-off has completed")
        self.emit(f"AscendC::CrossCoreSetFlag<0x2, {pipe}>({s.flag});")

    def barrier(self, s: ir_body.BarrierS) -> None:
        """All blocks at once: the AIV cores (an aiv task), or every AIC and AIV (a mix kernel)."""
        self.emit(
            f"AscendC::SyncAll<{'false' if self.mix else 'true'}>();"
            + ("  // soft barrier, emitted as the hard one" if s.soft else "")
        )

    def for_loop(self, s: ir_body.ForS) -> None:
        var = names.local(s.var)
        start, stop, step = self.int(s.start), self.int(s.stop), self.int(s.step)
        step_value = self.ints.constant(s.step)
        if step_value is None or step_value <= 0:
            raise refuse("A704", "loop steps must be positive compile-time constants", s.span)
        bump = f"++{var}" if step_value == 1 else f"{var} += {step}"
        self.emit(f"for (int64_t {var} = {start}; {var} < {stop}; {bump}) {{")
        self.text.depth += 1
        lo, hi = self._loop_interval(s)
        self.ints.ranges[s.var] = (lo, hi)
        first, last = self.ints.constant(s.start), self.ints.constant(s.stop)
        self.certain.append(first is not None and last is not None and last > first)
        self.block(s.body)
        self.certain.pop()
        self.text.depth -= 1
        self.emit("}")

    def _loop_interval(self, s: ir_body.ForS) -> tuple[int, int]:
        env = {**self.env, **self.ints.ranges}
        try:
            lo = bounds(s.start, env)[0]
            hi = bounds(s.stop, env)[1] - 1
            return lo, max(hi, lo)
        except EvalError:
            return -(2**62), 2**62

    def if_stmt(self, s: ir_body.IfS) -> None:
        known = self.ints.constant(s.cond.expr) if isinstance(s.cond, ir_body.IntV) else None
        if known is not None:  # decided by the parameters: only the branch taken is emitted
            self.block(s.then if known else s.orelse)
            return
        self.emit(f"if ({self.condition(s.cond)}) {{")
        self.text.depth += 1
        self.certain.append(False)
        self.block(s.then)
        self.text.depth -= 1
        if s.orelse:
            self.emit("} else {")
            self.text.depth += 1
            self.block(s.orelse)
            self.text.depth -= 1
        self.certain.pop()
        self.emit("}")

    def condition(self, v: ir_body.Value) -> str:
        if isinstance(v.type, ir_body.TileType):
            raise refuse("A701", "a branch condition must be a scalar", self.span)
        return self.scalar(v).code

    # ---------------------------------------------------------------- scalars
    def scalar_let(self, s: ir_body.LetS | ir_body.AssignS) -> None:
        value = self.scalar(s.value)
        var = names.local(s.name)
        if isinstance(s, ir_body.LetS):
            dtype = s.value.type.dtype if isinstance(s.value.type, ir_body.ScalarType) else "i32"
            ctype = "int64_t" if dtype not in FLOAT_DTYPES else "float"
            qual = "" if s.name in self.reassigned else "const "
            self.emit(f"{qual}{ctype} {var} = {value.code};")
            self.bind(s.name, Scalar(var, "i32" if ctype == "int64_t" else "f32"))
        else:
            self.emit(f"{var} = {value.code};")

    def scalar(self, v: ir_body.Value) -> Scalar:
        """A scalar value as C++ code (float constants folded in double, then rounded once)."""
        folded = _fold_float(v, self.ints.constant)
        if folded is not None:
            return Scalar(float_literal(folded), "f32", folded)
        if isinstance(v, ir_body.IntV):
            const = self.ints.constant(v.expr)
            return Scalar(self.int(v.expr), "i32", const)
        if isinstance(v, ir_body.FloatV):
            return Scalar(float_literal(v.value), "f32", v.value)
        if isinstance(v, ir_body.LocalV):
            bound = self.lookup(v.name)
            if not isinstance(bound, Scalar):
                raise refuse("A701", f"{v.name} is a tile where a scalar is needed", self.span)
            return bound
        if isinstance(v, ir_body.BinV):
            a, b = self.scalar(v.a), self.scalar(v.b)
            dtype = "f32" if "f32" in (a.dtype, b.dtype) else "i32"
            if v.op in _CMP:
                return Scalar(f"({a.code} {_CMP[v.op]} {b.code})", "bool")
            if v.op in ("and", "or"):
                return Scalar(f"({a.code} {'&&' if v.op == 'and' else '||'} {b.code})", "bool")
            if v.op in ("floordiv", "mod") and dtype == "i32":
                fn = "FloorDiv" if v.op == "floordiv" else "FloorMod"
                return Scalar(f"dslc::{fn}({a.code}, {b.code})", "i32")
            if v.op in _ARITH:
                if dtype == "f32":
                    return Scalar(f"({_as_float(a)} {_ARITH[v.op]} {_as_float(b)})", "f32")
                if v.op == "div":
                    return Scalar(f"dslc::FloorDiv({a.code}, {b.code})", "i32")
                return Scalar(f"({a.code} {_ARITH[v.op]} {b.code})", "i32")
            raise refuse("A701", f"scalar operator {v.op!r}", self.span)
        if isinstance(v, ir_body.CallV):
            return self.scalar_call(v)
        if isinstance(v, ir_body.LoadV) and isinstance(v.type, ir_body.TileType):
            raise refuse("A701", f"a region of {v.tensor} where a scalar is needed", self.span)
        if isinstance(v, ir_body.LoadV) and not v.local:
            return self.gm_read(v)
        raise refuse("A701", f"cannot use {type(v).__name__} as a scalar", self.span)

    def scalar_call(self, v: ir_body.CallV) -> Scalar:
        args = v.args
        if v.op == "read":
            load = args[0]
            assert isinstance(load, ir_body.LoadV)
            return self.local_read(load) if load.local else self.gm_read(load)
        if v.op in ("min", "max"):
            a, b = self.scalar(args[0]), self.scalar(args[1])
            return Scalar(f"dslc::{v.op.capitalize()}({a.code}, {b.code})", "i32")
        if v.op == "cdiv":
            a, b = self.scalar(args[0]), self.scalar(args[1])
            return Scalar(f"(-dslc::FloorDiv(-({a.code}), {b.code}))", "i32")
        if v.op == "neg":
            a = self.scalar(args[0])
            return Scalar(f"(-{a.code})", a.dtype)
        if v.op == "cast" and isinstance(args[1], ir_body.DtypeV):
            a, target = self.scalar(args[0]), args[1].dtype
            if a.dtype == "f32" and target not in FLOAT_DTYPES:
                raise refuse("A701", "a float -> int cast of a scalar (its rounding mode)", self.span)
            to_float = target in FLOAT_DTYPES
            code = f"static_cast<{'float' if to_float else 'int64_t'}>({a.code})"
            return Scalar(code, "f32" if to_float else "i32")
        raise refuse("A701", f"{v.op}() on scalars is not supported by the AscendC target", self.span)

    def local_read(self, load: ir_body.LoadV) -> Scalar:
        raise refuse("A701", "reading an element of a local tile", self.span)

    def gm_read(self, load: ir_body.LoadV) -> Scalar:
        """One element of a GM tensor, through the scalar unit's data cache."""
        offset, _ = self.row_major(load.tensor, load.region, self.span)
        gm = self.gm(load.tensor)
        code = self.int(offset)
        if load.tensor in self.dma_written:
            self.emit("AscendC::PipeBarrier<PIPE_ALL>();  // this task's DMA stores to it have landed")
        if load.tensor in self.dma_written or self.tensors[load.tensor].scalar_written:
            # written by this task (DMA or scalar): drop a stale cache line before reading
            self.emit(
                "AscendC::DataCacheCleanAndInvalid<"
                f"{cxx_type(self.graph.tensors[load.tensor].dtype)}, AscendC::CacheLine::SINGLE_CACHE_LINE, "
                f"AscendC::DcciDst::CACHELINE_OUT>({gm}[{code}]);"
            )
        dtype = self.graph.tensors[load.tensor].dtype
        value = f"{gm}.GetValue({code})"
        if dtype in FLOAT_DTYPES:
            return Scalar(f"static_cast<float>({value})" if dtype != "f32" else value, "f32")
        return Scalar(f"static_cast<int64_t>({value})", "i32")

    def is_scalar_store(self, s: ir_body.StoreS) -> bool:
        return all(r.point for r in s.region) and not isinstance(s.value.type, ir_body.TileType)

    def scalar_store(self, s: ir_body.StoreS) -> None:
        if s.mode != "write":
            raise refuse("A701", "an atomic or accumulating store of one scalar element", s.span)
        offset, _ = self.row_major(s.tensor, s.region, s.span)
        gm = self.gm(s.tensor)
        self.tensors[s.tensor].scalar_written = True
        dtype = self.graph.tensors[s.tensor].dtype
        ctype = cxx_type(dtype)
        code = self.int(offset)
        value = self.scalar(s.value)
        self.emit(f"{gm}.SetValue({code}, static_cast<{ctype}>({value.code}));")
        self.emit(
            f"AscendC::DataCacheCleanAndInvalid<{ctype}, AscendC::CacheLine::SINGLE_CACHE_LINE, "
            f"AscendC::DcciDst::CACHELINE_OUT>({gm}[{code}]);"
        )


def _as_float(s: Scalar) -> str:
    return s.code if s.dtype == "f32" else f"static_cast<float>({s.code})"


def _fold_float(v: ir_body.Value, constant) -> float | None:
    """A float scalar expression of literals and parameters, evaluated in double as the
    simulator does (then rounded once to f32 where it is used)."""
    if isinstance(v, ir_body.FloatV):
        return None  # a plain literal is written as is
    if not (isinstance(v, ir_body.BinV) and isinstance(v.type, ir_body.ScalarType)):
        return None

    def value(x: ir_body.Value) -> float | None:
        if isinstance(x, ir_body.FloatV):
            return x.value
        if isinstance(x, ir_body.IntV):
            known = constant(x.expr)
            return float(known) if known is not None else None
        if isinstance(x, ir_body.BinV):
            a, b = value(x.a), value(x.b)
            if a is None or b is None or x.op not in _ARITH:
                return None
            if x.op == "div":
                return a / b if b != 0 else None
            return a + b if x.op == "add" else a - b if x.op == "sub" else a * b
        return None

    if v.type.dtype not in FLOAT_DTYPES:
        return None
    return value(v)


__all__ = ["BodyWriter", "CodeText", "GmUse", "Scalar", "Scope"]
