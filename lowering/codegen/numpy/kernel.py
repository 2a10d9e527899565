"""One task body -> the indented Python lines of its generator function in the NumPy module.

:class:`Kernel` writes a task's statements as Python over NumPy arrays and the simulator's
tile ops (``_op``): ``wait`` and ``barrier`` yield to the simulator, a plain read-modify-write
``+=`` yields between its read and its write (another block may interleave there, as on the
device), parameters are folded to literals. With ``at_dispatch`` it writes the integers of a
task's ``when`` predicate instead, which runs on the scheduler before any block. Each name is
the author's where it is written (tensors, locals and loop variables through the kernel's
``ModuleNames``, ``kernel_names``; ``s_`` before a runtime scalar). A kernel needs only its task, the graph's tensors and the parameter
point, so it is kept apart from the assembly of the whole module (``lowering.codegen.numpy.emit``).
"""

from __future__ import annotations

import keyword
import re

from lowering import body as ir_body
from lowering.codegen.names import (
    EMITTED,
    IDENTIFIER,
    PLAIN_NAME,
    ModuleNames,
    NamedInts,
    UnsafeName,
    checked_name,
    data_temp_name,
    mangle,
)
from lowering.codegen.python_text import int_text, py_float_text, py_str, slice_text, unparen
from lowering.ir import Graph, Task
from lowering.symbolic import (
    BLOCK,
    DYNAMIC,
    LOOP,
    NRANKS,
    RANK,
    SCALAR,
    Const,
    EvalError,
    Expr,
    Sym,
    evaluate,
    substitute,
)

QUALIFIED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\[[0-9]+\])?$")

NUMPY_DTYPES = {
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "i8": "int8",
    "u8": "uint8",
    "i16": "int16",
    "i32": "int32",
    "u32": "int64",  # the simulator has no uint32; values of u32 tensors fit in int64
    "i64": "int64",
    "bool": "bool",
}
_TILE_BINOPS = {"add", "sub", "mul", "div", "maximum", "minimum"}
_COL_EXPAND = {"col_expand_add": "add", "col_expand_sub": "sub", "col_expand_div": "div"}
_PY_BINOPS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "floordiv": "//",
    "mod": "%",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "and": "and",
    "or": "or",
}


def checked_source_name(name: str, pattern: re.Pattern = QUALIFIED) -> str:
    """``name`` as the source writes it (a tensor or task may be qualified: ``c.a``, ``mm[3]``),
    once it matches ``pattern``; ``checked_name`` with the pattern such names need."""
    return checked_name(name, pattern)


#: What a kernel's names must not become: Python's keywords, the builtins and module names a
#: kernel uses, and its own locals (docs/naming.md).
KERNEL_RESERVED = frozenset(keyword.kwlist) | {
    "ctx", "block", "rank", "nranks", "np", "_op", "int", "float", "bool", "range", "min", "max", "slice",
    "mem", "LAYER", "PARAMS", "NRANKS", "TENSORS", "TASKS", "PROGRAM", "Program", "TaskSpec", "TensorSpec",
}  # fmt: skip


def kernel_names(graph: Graph, task: Task) -> ModuleNames:
    """The variables of a task's kernel: its tensors and locals under their own names
    (``ModuleNames``: ``stage.tmp`` -> ``stage_tmp`` unless that is taken, injective), apart from
    the runtime scalars' ``s_<name>``; the front end's temporaries named after what they hold."""
    lets = [
        s.name if isinstance(s, ir_body.LetS | ir_body.AssignS) else s.var
        for s in ir_body.nested_stmts(task.body)
        if isinstance(s, ir_body.LetS | ir_body.AssignS | ir_body.ForS)
    ]
    locals_ = [n for n in dict.fromkeys(lets) if not ir_body.is_temp(n)]
    both = set(locals_) & set(graph.tensors)  # a local named like a tensor (not in a valid layer)
    reserved = KERNEL_RESERVED | {f"s_{n}" for n in graph.scalars} | {f"v_{mangle(n)}" for n in both}
    names = ModuleNames([*graph.tensors, *(n for n in locals_ if n not in both)], lambda _: reserved)
    for n in both:
        names.emitted[n] = f"v_{mangle(n)}"  # reserved above, so no other name has it
    for s in ir_body.nested_stmts(task.body):
        if (
            isinstance(s, ir_body.LetS | ir_body.AssignS)
            and ir_body.is_temp(s.name)
            and s.name not in names.emitted
        ):
            names.fresh(s.name, data_temp_name(s.value))
    return names


class Kernel:
    """Renders one task body as indented Python lines."""

    def __init__(self, graph: Graph, task: Task, env: dict[str, int], at_dispatch: bool = False):
        self.at_dispatch = at_dispatch  # predicates run on the scheduler, with a RankMemory `mem`
        self.graph = graph
        self.task = task
        self.env = env
        self.lines: list[str] = []
        self.tensors: set[str] = set()
        self.scalars: set[str] = set()
        self.temp = 0
        self.named = NamedInts()
        self.read = ir_body.read_names(task.body)
        self.names = kernel_names(graph, task)
        self.unused = {f"_{t}" for t in self.names.emitted.values()}  # what `_rmw` temporaries avoid

    # ---------------------------------------------------------------- integers
    def int_code(self, expr: Expr) -> str:
        folded = substitute(self.named.rename(expr), {k: Const(v) for k, v in self.env.items()})
        try:
            return str(evaluate(folded, {}))
        except EvalError:
            pass

        def name_of(sym: Sym) -> str:
            if sym.kind == EMITTED:
                return sym.name
            if self.at_dispatch:
                if sym.kind == RANK:
                    return "mem.rank"
                if sym.kind == NRANKS:
                    return "mem.nranks"
                if sym.kind == SCALAR:
                    return f"int(mem.scalar({py_str(checked_source_name(sym.name, IDENTIFIER))}))"
                raise UnsafeName(
                    f"a predicate cannot use {sym.name!r}: it is evaluated before any block runs"
                )
            if sym.kind == BLOCK:
                return "block"
            if sym.kind == RANK:
                return "rank"
            if sym.kind == NRANKS:
                return "nranks"
            if sym.kind == SCALAR:
                self.scalars.add(checked_source_name(sym.name, IDENTIFIER))
                return f"s_{sym.name}"
            if sym.kind in (LOOP, DYNAMIC):
                return self.names(sym.name)
            raise UnsafeName(f"unbound symbol {sym.name!r} in generated code")

        return int_text(folded, name_of)

    def index_code(self, region: tuple[ir_body.Range, ...], keep_dims: bool) -> str:
        parts = []
        for r in region:
            if r.point and not keep_dims:
                parts.append(self.int_code(r.start))
                continue
            start, stop = self.int_code(r.start), self.int_code(r.stop)
            step = self.int_code(r.step)
            parts.append(slice_text(start, stop, None if step == "1" else step))
        return ", ".join(parts)

    def slice_tuple(self, region: tuple[ir_body.Range, ...]) -> str:
        parts = []
        for r in region:
            start, stop, step = (self.int_code(e) for e in (r.start, r.stop, r.step))
            parts.append(f"slice({start}, {stop}, {step})" if step != "1" else f"slice({start}, {stop})")
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"

    def tensor_var(self, name: str) -> str:
        self.tensors.add(checked_source_name(name))
        return self.names(name)

    # ---------------------------------------------------------------- values
    def value(self, v: ir_body.Value) -> str:
        if isinstance(v, ir_body.IntV):
            return self.int_code(v.expr)
        if isinstance(v, ir_body.FloatV):
            return (
                py_float_text(v.value)
                if v.value == v.value and abs(v.value) != float("inf")
                else _special(v.value)
            )
        if isinstance(v, ir_body.DtypeV):
            return py_str(NUMPY_DTYPES[v.dtype])
        if isinstance(v, ir_body.ListV):
            return (
                "(" + ", ".join(self.int_code(i) for i in v.items) + ("," if len(v.items) == 1 else "") + ")"
            )
        if isinstance(v, ir_body.LocalV):
            return self.names(v.name)
        if isinstance(v, ir_body.LoadV):
            scalar = isinstance(v.type, ir_body.ScalarType)
            base = self.names(v.tensor) if v.local else self.tensor_var(v.tensor)
            return f"{base}[{self.index_code(v.region, keep_dims=not scalar)}]"
        if isinstance(v, ir_body.BinV):
            return self.binary(v)
        if isinstance(v, ir_body.CallV):
            return self.call(v)
        raise TypeError(f"cannot generate code for {v!r}")

    def binary(self, v: ir_body.BinV) -> str:
        a, b = self.value(v.a), self.value(v.b)
        tile = isinstance(v.type, ir_body.TileType)
        if tile and v.op in _TILE_BINOPS:
            return f"_op.{v.op}({a}, {b})"
        op = _PY_BINOPS[v.op]
        if tile and op in ("and", "or"):
            op = "&" if op == "and" else "|"
        if tile and op == "//":
            return f"np.floor_divide({a}, {b})"
        return f"({a} {op} {b})"

    def call(self, v: ir_body.CallV) -> str:
        args = [self.value(a) for a in v.args]
        attrs = dict(v.attrs)
        op = v.op
        if op == "zeros":
            return f"_op.zeros({args[1]}, {args[0]})"
        if op == "full":
            return f"_op.full({args[1]}, {args[2]}, {args[0]})"
        if op == "cast":
            mode = f", mode={self.value(attrs['mode'])}" if "mode" in attrs else ""
            return f"_op.cast({args[0]}, {args[1]}{mode})"
        if op in ("matmul", "matmul_acc"):
            flags = "".join(f", {f}=True" for f in ("a_trans", "b_trans") if f in attrs)
            if "k_group" in attrs:
                flags += f", k_group={self.value(attrs['k_group'])}"
            return f"_op.{op}({', '.join(args)}{flags})"
        if op in _COL_EXPAND:  # a [1, N] row broadcast over the rows: NumPy broadcasting
            return f"_op.{_COL_EXPAND[op]}({args[0]}, {args[1]})"
        if op == "transpose":
            return f"np.ascontiguousarray(np.transpose({args[0]}))"
        if op == "gather_rows":  # a negative row index stages a zero row
            return f"_op.gather_rows({args[0]}, np.ravel({args[1]}), fill=0)"
        if op == "read":
            return args[0]
        if op in ("min", "max"):
            return f"{op}({args[0]}, {args[1]})"
        if op == "cdiv":
            return f"(-((-{args[0]}) // {args[1]}))"
        if op == "topk_pairs":
            return f"{args[0]}[:, : 2 * {args[1]}]"
        if op == "even_lanes":
            return f'_op.gather_lanes({args[0]}, "P0101")'
        if op == "odd_lanes":
            return f'_op.gather_lanes({args[0]}, "P1010", "int32")'
        if op == "iota":
            return f'_op.arange(0, (1, {args[0]}), "int32")'
        if op == "mask_tail":  # columns >= valid become -inf, then pad to the sorted width
            row, valid, width = args
            return (
                f"np.where(np.arange({width})[None, :] < {valid}, "
                f"np.pad({row}, ((0, 0), (0, {width} - {row}.shape[1])), constant_values=-np.inf), "
                f"np.float32(-np.inf)).astype(np.float32)"
            )
        if op == "valid":  # set_validshape: only marks the valid region; the data is unchanged
            return args[0]
        if op == "fillpad":  # keep the first `cols` columns, fill the tail with the pad value
            x, cols, pad = args  # x is evaluated once (it may be a whole top-k chain)
            return f"(lambda _a: np.where(np.arange(_a.shape[-1]) < {cols}, _a, np.asarray({pad}, _a.dtype)))({x})"
        if op == "select":
            return f"np.where({args[0]}, {args[1]}, {args[2]})"
        if op == "log":  # natural log (pl.log); the tile's dtype is kept
            return f"np.log({args[0]})"
        return f"_op.{checked_source_name(op, IDENTIFIER)}({', '.join(args)})"

    # ---------------------------------------------------------------- statements
    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def store_value(self, tensor: str, value: ir_body.Value) -> str:
        code = self.value(value)
        if self.graph.tensors[tensor].dtype == "bf16" and not _holds_bf16(self.graph, value):
            return f"_op.to_bf16({code})"
        return code

    def local(self, name: str) -> str:
        """A local's variable; ``_<name>`` when the task never reads it (what linters accept):
        it starts with ``_`` and does not end with one, which no other name of the kernel does;
        ``_v_<escaped>`` for an escaped name (``_v`` occurs in no escaped name)."""
        text = self.names(name)
        if name in self.read:
            return text
        return f"_{text}" if PLAIN_NAME.match(text) else f"_v_{mangle(name)}"

    def stmts(self, stmts: tuple[ir_body.Stmt, ...], depth: int) -> None:
        begin = len(self.lines)
        self.named.push()
        for s in stmts:
            self.stmt(s, depth)
        for let in self.named.pop():  # a name nothing used: its line goes (latest first)
            del self.lines[let.lines[0] : let.lines[1]]
        if len(self.lines) == begin:
            self.emit(depth, "pass")

    def stmt(self, s: ir_body.Stmt, depth: int) -> None:
        if isinstance(s, ir_body.LetS) and s.inlined:
            assert isinstance(s.value, ir_body.IntV)
            try:  # a let of parameters only is a literal here: nothing to name
                evaluate(substitute(s.value.expr, {k: Const(v) for k, v in self.env.items()}), {})
                return
            except EvalError:
                pass
            start = len(self.lines)
            let, code = self.named.define(
                self.names(s.name), s.value.expr, lambda e: unparen(self.int_code(e))
            )
            self.emit(depth, f"{let.name} = {code}")
            let.lines = (start, len(self.lines))
        elif isinstance(s, ir_body.LetS | ir_body.AssignS):
            code = self.value(s.value)
            if isinstance(s.value, ir_body.LoadV) and isinstance(s.value.type, ir_body.TileType):
                code = f"np.array({code})"  # a tile is a copy: later stores must not change it
            self.emit(depth, f"{self.local(s.name)} = {unparen(code)}")
        elif isinstance(s, ir_body.StoreS):
            region = self.index_code(s.region, keep_dims=True)
            target = self.tensor_var(s.tensor) if s.mode != "atomic" else ""
            if s.mode == "atomic":
                checked_source_name(s.tensor)
                self.emit(
                    depth,
                    f"ctx.atomic_add({py_str(s.tensor)}, {self.slice_tuple(s.region)}, {self.value(s.value)})",
                )
            elif s.mode == "accumulate":
                self.temp += 1
                tmp = f"_rmw{self.temp}"
                while tmp in self.unused:
                    self.temp += 1
                    tmp = f"_rmw{self.temp}"
                self.emit(depth, f"{tmp} = {target}[{region}] + {self.value(s.value)}")
                self.emit(depth, "yield  # a read-modify-write is not atomic: others may run here")
                self.emit(depth, f"{target}[{region}] = {tmp}")
            else:
                if all(r.point for r in s.region) and isinstance(s.value.type, ir_body.ScalarType):
                    region = self.index_code(s.region, keep_dims=False)  # one element: no view
                self.emit(depth, f"{target}[{region}] = {unparen(self.store_value(s.tensor, s.value))}")
        elif isinstance(s, ir_body.RemoteStoreS):
            peer = self.int_code(s.peer)
            checked_source_name(s.tensor)
            if s.atomic:
                self.emit(
                    depth,
                    f"ctx.atomic_add({py_str(s.tensor)}, {self.slice_tuple(s.region)}, {self.value(s.value)}, peer={peer})",
                )
            else:
                region = self.index_code(s.region, keep_dims=True)
                value = self.store_value(s.tensor, s.value)
                self.emit(depth, f"ctx.peer({py_str(s.tensor)}, {peer})[{region}] = {value}")
        elif isinstance(s, ir_body.ForS):
            var = self.local(s.var)
            bounds = ", ".join(self.int_code(e) for e in (s.start, s.stop, s.step))
            self.emit(depth, f"for {var} in range({bounds}):")
            self.stmts(s.body, depth + 1)
        elif isinstance(s, ir_body.IfS):
            self.emit(depth, f"if {self.value(s.cond)}:")
            self.stmts(s.then, depth + 1)
            if s.orelse:
                self.emit(depth, "else:")
                self.stmts(s.orelse, depth + 1)
        elif isinstance(s, ir_body.NotifyS):
            checked_source_name(s.signal)
            cell = _tuple([self.int_code(i) for i in s.index])
            self.emit(
                depth,
                f"ctx.notify({py_str(s.signal)}, {cell}, {self.int_code(s.peer)}, {self.int_code(s.value)}, {py_str(s.op)})",
            )
        elif isinstance(s, ir_body.WaitS):
            checked_source_name(s.signal)
            cell = _tuple([self.int_code(i) for i in s.index])
            self.emit(
                depth,
                f"yield ctx.wait({py_str(s.signal)}, {cell}, {py_str(s.cmp)}, {self.int_code(s.expected)})",
            )
        elif isinstance(s, ir_body.BarrierS):
            self.emit(
                depth, "yield ctx.barrier()" if not s.soft else "yield ctx.barrier()  # soft: GM polling"
            )
        elif isinstance(s, ir_body.EvalS):
            self.emit(depth, f"_ = {self.value(s.value)}  # anchor read: orders the task, no data use")
        else:
            raise TypeError(f"cannot generate code for {s!r}")


def _holds_bf16(graph: Graph, value: ir_body.Value) -> bool:
    """Values a bf16 store must not round again: a ``cast(..., bf16)`` (already rounded) and a
    region of a bf16 tensor (a copy between bf16 tensors is a byte copy on the device)."""
    if isinstance(value, ir_body.CallV):
        return value.op == "cast" and getattr(value.type, "dtype", None) == "bf16"
    return (
        isinstance(value, ir_body.LoadV) and not value.local and graph.tensors[value.tensor].dtype == "bf16"
    )


def _tuple(items: list[str]) -> str:
    """A tuple of code items as ruff writes it: ``(a, b)``, ``(a,)``."""
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _special(x: float) -> str:
    if x != x:
        return 'float("nan")'
    return 'float("inf")' if x > 0 else '-float("inf")'
