"""IR -> one PyPTO model file per layer (``codegen_templates/pypto``).

The module follows pypto-lib's layout (docs/runtime-semantics.md §13.1): module constants (the
layer's parameters and constants, with ``assert NAME in (...)`` for admissible values and the
layer's asserts), a ``@pl.jit.inline`` function holding the tasks, a ``@pl.jit`` entry
``<layer>_test`` whose parameters carry ``pl.Out``/``pl.InOut``, a ``@pl.jit.host`` driver
for layers over several ranks (windows allocated, one chip program per rank), the tensor
specs, the golden and a ``__main__`` that runs it as pypto-lib model files are run.

Every task is a ``with pl.at(level=pl.Level.CORE_GROUP, ...)`` (one block) or ``with
pl.spmd(N, ...)`` scope, with the layer's name, deps (task ids bound with ``as``), flags,
grid, predicate and ``pl.manual_scope``; task arrays are orchestration loops whose index is
the instance's. Reading the output back (``lowering.pypto_reader``) gives the same graph:
the round-trip test checks tasks, grids, flags, edges with their reasons, signals and
atomics. Output is deterministic (byte-identical for the same graph) and ``ruff format``
clean at line length 110.
"""

from __future__ import annotations

from lowering import body as ir_body
from lowering.codegen.common import generator_hash, template_environment
from lowering.codegen.names import ModuleNames, UnsafeName
from lowering.codegen.pypto.body import BodyWriter, body_units
from lowering.codegen.pypto.host import HostWriter
from lowering.codegen.pypto.loops import ArrayDep, groups, templates
from lowering.codegen.pypto.text import (
    LINE_LENGTH,
    LOCAL_RESERVED,
    Cat,
    Doc,
    UnsupportedForPyPTO,
    call,
    int_text,
    layout,
    lst,
    module_reserved,
    paren,
    py_name,
    py_str,
    symbol_namer,
)
from lowering.codegen.pypto.values import dtype_name
from lowering.codegen.python_text import check_block_nesting, compile_python
from lowering.ir import Graph, Task, Tensor
from lowering.symbolic import NRANKS, RANK, SCALAR, Bin, Const, Expr, free_symbols

_CMP = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

__all__ = [
    "UnsupportedForPyPTO",
    "content_hash",
    "emitted_names",
    "module_context",
    "py_name",
    "render_pypto",
]


class _Emitter:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.host_writer = HostWriter(self)
        self.layer = py_name(graph.name)
        self.reserved = module_reserved(self.layer)  # what a module-level source name must avoid
        try:
            self.names, self.hints, self.aliased = source_names(graph, self.reserved)
        except UnsafeName as err:
            raise UnsupportedForPyPTO(str(err)) from None
        self.ranks_text = int_text(graph.ranks, symbol_namer("1", self.names), "")
        self.module_names = symbol_namer(self.ranks_text, self.names)
        # names a generated local must avoid: every source name's, and what the module defines
        self.used: set[str] = set(self.reserved) | set(self.names.taken)
        self.used |= {
            self.host_writer.window_buffer(t.name)
            for t in graph.tensors.values()
            if t.kind in ("window", "signal")
        }
        self.distributed = self._distributed()
        self.tids: dict[str, str] = {}  # task name -> the expression of its task id
        self.arrays: dict[str, str] = {}  # task-array base -> its task-id array ("" if unreferenced)
        self.temps: set[str] = set()  # the tasks' temporaries (a task-level name avoids them)
        self.task_temps: dict[str, dict[str, str]] = {}  # task -> its front-end temporaries' names
        self.referenced = {d.target for t in graph.tasks for d in t.after}

    # ---------------------------------------------------------------- what the layer needs
    def _distributed(self) -> bool:
        g = self.graph
        if g.ranks != Const(1) or any(t.kind in ("window", "signal") for t in g.tensors.values()):
            return True
        return any(s.kind in (RANK, NRANKS) for s in _task_symbols(g))

    def py(self, name: str) -> str:
        try:
            return self.names(name)
        except UnsafeName as err:
            raise UnsupportedForPyPTO(str(err)) from None

    def mod(self, e: Expr) -> str:
        return int_text(e, self.module_names, "")

    # ---------------------------------------------------------------- module constants
    def constants(self) -> list[str]:
        g = self.graph
        lines = [f"{self.py(p.name)} = {p.value}" for p in g.params.values()]
        lines += [
            f"{self.py(c.name)} = {self.mod(c.expr)}" for c in g.consts.values() if c.name not in self.aliased
        ]
        dynamic = {
            s.name for t in g.tensors.values() for d in t.shape for s in free_symbols(d) if s.kind == SCALAR
        }
        lines += [f"{self.py(n)} = pl.dynamic({py_str(n)})" for n in g.scalars if n in dynamic]
        return lines

    def admissible(self) -> list[str]:
        lines = []
        for p in self.graph.params.values():
            d = p.domain
            if d is None:
                continue
            if d.values is not None:
                values = ", ".join(str(v) for v in d.values)
                lines.append(f"assert {self.py(p.name)} in ({values}{',' if len(d.values) == 1 else ''})")
            else:
                step = f", {d.step}" if d.step != 1 else ""
                lines.append(f"assert {self.py(p.name)} in range({d.lo}, {d.hi + 1}{step})")
        for a in self.graph.assertions:
            msg = f", {py_str(a.message)}" if a.message else ""
            text = f"assert {self.mod(a.cond)}{msg}"
            if len(text) <= LINE_LENGTH:
                lines.append(text)
                continue
            chain = _chain(a.cond)  # a long `and`/`or` chain: one operand per line, as ruff does
            op = a.cond.op if isinstance(a.cond, Bin) else "and"
            lines.append("assert (")
            for i, part in enumerate(chain):
                text = self.mod(part)
                if isinstance(part, Bin) and part.op in ("and", "or"):
                    text = f"({text})"
                lines.append(f"    {'' if i == 0 else op + ' '}{text}")
            lines.append(f"){msg}")
        return lines

    # ---------------------------------------------------------------- signatures
    def annotation(self, t: Tensor, direction: bool) -> str:
        shape = ", ".join(self.mod(d) for d in t.shape)
        base = "pld.DistributedTensor" if t.kind in ("window", "signal") else "pl.Tensor"
        text = f"{base}[[{shape}], {dtype_name(t.dtype)}]"
        if direction and t.kind == "output":
            return f"pl.Out[{text}]"
        if direction and t.kind == "inout":
            return f"pl.InOut[{text}]"
        return text

    def params(self) -> list[Tensor]:
        return [
            t
            for t in self.graph.tensors.values()
            if t.kind != "scratch" and getattr(t, "view_of", None) is None
        ]

    def scalars(self) -> list[tuple[str, str]]:
        out = [("my_rank", "i32")] if self.distributed else []
        out += [(self.py(s.name), s.dtype) for s in self.graph.scalars.values()]
        return out

    def signature(self, name: str, decorator: str, direction: bool) -> list[str]:
        items: list[Doc] = [f"{self.py(t.name)}: {self.annotation(t, direction)}" for t in self.params()]
        items += [f"{n}: pl.Scalar[{dtype_name(d)}]" for n, d in self.scalars()]
        return [decorator, *layout(Cat([f"def {name}", paren(items), ":"]), 0)]

    def outputs(self) -> list[str]:
        outs = [self.py(t.name) for t in self.params() if t.kind in ("output", "inout")]
        return outs or [self.py(t.name) for t in self.params()][:1]

    # ---------------------------------------------------------------- the tasks
    def inline_body(self) -> list[str]:
        lines: list[str] = []
        for t in self.graph.tensors.values():
            if t.kind != "scratch":
                continue
            shape = lst([self.mod(d) for d in t.shape])
            kw: dict[str, Doc] = {"dtype": dtype_name(t.dtype)}
            if t.manual_dep:
                kw["manual_dep"] = "True"
            lines.extend(layout(Cat([f"{self.py(t.name)} = ", call("pl.create_tensor", shape, **kw)]), 1))
        for periods in groups(self.graph.tasks):
            var = self.loop_var() if len(periods) > 1 else None
            found = templates(periods, var) if var else None
            if found is None:
                for task in (t for p in periods for t in p):
                    lines.extend(self.task(task))
            else:
                lines.extend(self.loop(periods, found, var))  # type: ignore[arg-type]
        outs = self.outputs()
        lines.append(f"    return {', '.join(outs)}" if outs else "    return None")
        return lines

    def loop_var(self) -> str:
        for name in ("i", "j", "k", "e", "idx"):
            if name not in self.used and name not in self.temps:
                return name
        k = 2
        while f"i{k}" in self.used or f"i{k}" in self.temps:
            k += 1
        return f"i{k}"

    def loop(self, periods: list[list[Task]], found: list[tuple[Task, list[object]]], var: str) -> list[str]:
        """One orchestration loop for the iterations of a layer loop (index = loop variable)."""
        idxs = [p[0].index for p in periods]
        start, step, stop = idxs[0], idxs[1] - idxs[0], idxs[-1] + 1
        kind = "pl.range" if periods[0][0].in_sequential_loop else "pl.parallel"
        bounds = (
            f"{stop}" if start == 0 and step == 1 else f"{start}, {stop}" + (f", {step}" if step != 1 else "")
        )
        self.used.add(var)
        lines: list[str] = []
        arrays: dict[str, str] = {}
        for position, (task, _) in enumerate(found):
            instances = [p[position] for p in periods]
            if any(t.name in self.referenced for t in instances):
                array = self.tid(f"{task.base}[]").removesuffix("_tid") + "_tids"
                self.used.add(array)
                arrays[task.base] = array
                lines.append(f"    {array} = pl.array.create({stop}, pl.TASK_ID)")
                for t in instances:
                    self.tids[t.name] = f"{array}[{t.index}]"
        self.arrays.update(arrays)
        lines.append(f"    for {var} in {kind}({bounds}):")
        for position, (task, deps) in enumerate(found):
            dep_text = []
            for d in deps:
                if isinstance(d, ArrayDep):
                    array = self.arrays.get(d.base)
                    if not array:
                        raise UnsupportedForPyPTO(
                            f"task {task.name} depends on {d.base}[...] before it exists"
                        )
                    offset = f" + {d.offset}" if d.offset > 0 else f" - {-d.offset}" if d.offset < 0 else ""
                    dep_text.append(f"{array}[{var}{offset}]")
                else:
                    dep_text.append(self.tid(d))  # type: ignore[arg-type]
            tid = self.tid(task.base) if task.base in arrays else None
            lines.extend(self.task(task, depth=2, deps=dep_text, bind=tid))
            for p in periods:  # every instance is written by the template's body
                self.task_temps[p[position].name] = self.task_temps[task.name]
            if tid:
                lines.append(f"        {arrays[task.base]}[{var}] = {tid}")
        return lines

    def tid(self, name: str) -> str:
        tid = self.tids.get(name)
        if tid is None:
            base, _, index = name.partition("[")
            index = index.rstrip("]")
            stem = self.hints(base).rstrip("_") + (f"_{index}" if index else "")
            tid = f"{stem}_tid"
            k = 2
            while tid in self.used or tid in self.temps:
                tid = f"{stem}_{k}_tid"
                k += 1
            self.used.add(tid)
            self.tids[name] = tid
        return tid

    def task(
        self, task: Task, depth: int = 1, deps: list[str] | None = None, bind: str | None = None
    ) -> list[str]:
        lines: list[str] = []
        if depth == 1 and (task.index is not None or task.in_sequential_loop):
            kind = "pl.range" if task.in_sequential_loop else "pl.parallel"
            idx = task.index if task.index is not None else 0
            var = "_i"
            lines.append(f"    for {var} in {kind}({idx}, {idx + 1}):")
            depth += 1
        if task.manual:
            lines.append("    " * depth + "with pl.manual_scope():")
            depth += 1
        # the body sits in depth - 1 enclosing blocks (loops, manual scope) plus the task's `with`
        check_block_nesting(
            task.body,
            depth,
            "pypto",
            f" plus the {depth} block(s) around task {task.name} (its `with` scope, and any task loop or manual scope)",
            _hidden_loops,
        )
        writer = BodyWriter(self.graph.tensors, self.ranks_text, task.core, self.used, self.names)
        try:
            writer.start(task.body)
            writer.stmts(task.body, depth + 1)
            head = self.scope(task, writer, deps, bind)
            self.temps |= writer.scope.local_used
            self.task_temps[task.name] = dict(writer.scope.temps)
        except UnsupportedForPyPTO as err:
            err.span = err.span or task.header_span  # the statement, else the task
            raise
        body = writer.lines
        if writer.scope.uses_block:
            body = ["    " * (depth + 1) + "block = pl.tile.get_block_idx()", *body]
        lines.extend(layout(head, depth))
        lines.extend(body)
        return lines

    def scope(
        self, task: Task, writer: BodyWriter, deps: list[str] | None = None, bind: str | None = None
    ) -> Doc:
        kw: dict[str, Doc] = {}
        spmd = task.grid != Const(1) or task.sync_start or task.predicate is not None
        if spmd and task.sync_start:
            kw["sync_start"] = "True"
        kw["name_hint"] = py_str(self.hints(task.base))
        if task.after:
            kw["deps"] = lst([self.tid(d.target) for d in task.after])
        elif deps:
            kw["deps"] = lst(list(deps))
        if task.early_resolve:
            kw["allow_early_resolve"] = "True"
        if spmd and task.predicate is not None:
            p = task.predicate
            cell = ", ".join(writer.scope.int(i) for i in p.index)
            kw["predicate"] = f"({self.py(p.tensor)}[{cell}] {_CMP[p.cmp]} {writer.scope.int(p.value)})"
        units = body_units(task.body)
        inferred = "mix" if units == {"cube", "vector"} else "aic" if units == {"cube"} else "aiv"
        if task.core == "mix" and inferred != "mix":
            kw["optimizations"] = lst([call("pl.split", "pl.SplitMode.UP_DOWN")])
        elif task.core != inferred:
            raise UnsupportedForPyPTO(
                f"task {task.name} runs on {task.core} but its ops make a PyPTO kernel {inferred}"
            )
        head = (
            call("pl.spmd", writer.scope.int(task.grid), **kw)
            if spmd
            else call("pl.at", level="pl.Level.CORE_GROUP", **kw)
        )
        if bind is None and task.name in self.referenced:
            bind = self.tid(task.name)
        return Cat(["with ", head, f" as {bind}:" if bind else ":"])

    # ---------------------------------------------------------------- entry and host
    def entry_body(self, inline: str) -> list[str]:
        args = [self.py(t.name) for t in self.params()] + [n for n, _ in self.scalars()]
        outs = self.outputs()
        target = ", ".join(outs)
        return [*layout(Cat([f"{target} = ", call(inline, *args)]), 1), f"    return {target}"]


def _hidden_loops(s: ir_body.Stmt) -> int:
    """Loops the emitter writes for one statement: ``gather_rows`` is a ``pl.gather_row`` loop."""
    values = (w for top in ir_body.stmt_values(s) for w in ir_body.nested_values(top))
    return int(any(isinstance(v, ir_body.CallV) and v.op == "gather_rows" for v in values))


def _chain(e: Expr) -> list[Expr]:
    """The operands of a left-nested chain of one boolean operator."""
    if isinstance(e, Bin) and e.op in ("and", "or"):
        left = _chain(e.a) if isinstance(e.a, Bin) and e.a.op == e.op else [e.a]
        return [*left, e.b]
    return [e]


def _task_symbols(g: Graph):
    for t in g.tasks:
        for a in t.accesses:
            for r in a.region:
                yield from free_symbols(r.start)
                yield from free_symbols(r.stop)
            if a.peer is not None:
                yield from free_symbols(a.peer)
        for s in t.signals:
            for e in (*s.index, s.peer, s.value, s.expected):
                if e is not None:
                    yield from free_symbols(e)


def source_names(g: Graph, reserved: frozenset[str]) -> tuple[ModuleNames, ModuleNames, set[str]]:
    """The emitted names of a module's source names, its task hints, and the constants written
    as an equal outer constant (docs/naming.md).

    Module constants, tensor and scalar parameters are visible in several functions and avoid
    ``reserved``; scratch tensors and the locals of task bodies only ``LOCAL_RESERVED``. The
    front end's temporaries (``_v1``, ``lowering.body.TEMP_PREFIX``) are named per task
    after what they hold and are not source names. A callee's constant whose expression is
    that of a constant of an enclosing layer (``dispatch.E = N_LOCAL * EP`` next to ``E``) is
    written as that one's name."""
    kinds: dict[str, set[str]] = {}
    for name in [*g.params, *g.consts, *g.scalars]:
        kinds.setdefault(name, set()).add("global")
    for t in g.tensors.values():
        kinds.setdefault(t.name, set()).add("local" if t.kind == "scratch" else "global")
    for t in g.tasks:
        for s in ir_body.nested_stmts(t.body):
            name = s.name if isinstance(s, ir_body.LetS | ir_body.AssignS) else getattr(s, "var", None)
            if isinstance(s, ir_body.LetS | ir_body.AssignS | ir_body.ForS) and not ir_body.is_temp(name):
                kinds.setdefault(name, set()).add("local")

    def avoid(name: str) -> frozenset[str]:
        return reserved if "global" in kinds.get(name, {"global"}) else LOCAL_RESERVED

    names = ModuleNames(kinds, avoid)
    aliased: set[str] = set()
    for c in g.consts.values():
        outer = next(
            (
                d
                for d in g.consts.values()
                if d.name not in aliased and d is not c and d.expr == c.expr and _encloses(d.name, c.name)
            ),
            None,
        )
        if outer is not None:
            names.alias(c.name, outer.name)
            aliased.add(c.name)
    hints = ModuleNames([t.base for t in g.tasks], lambda _: frozenset())
    return names, hints, aliased


def emitted_names(graph: Graph) -> tuple[ModuleNames, ModuleNames, dict[str, dict[str, str]]]:
    """How the module of ``graph`` writes its source names, its tasks' ``name_hint``s, and per
    task the names of the front-end temporaries (``_v1`` -> ``indices_val``)."""
    em = _Emitter(graph)
    em.inline_body()
    return em.names, em.hints, em.task_temps


def _encloses(outer: str, inner: str) -> bool:
    """Is ``outer`` a constant of a layer that encloses the one of ``inner`` (``E`` of ``dispatch.E``)?"""
    a, b = outer.rpartition(".")[0], inner.rpartition(".")[0]
    return a != b and (a == "" or b.startswith(a + "."))


def module_context(graph: Graph, source_hash: str, version: str, golden: str | None = None) -> dict:
    em = _Emitter(graph)
    layer = em.layer
    inline = em.signature(layer, "@pl.jit.inline", direction=False)
    body = em.inline_body()
    entry = em.signature(f"{layer}_test", "@pl.jit", direction=True)
    host = em.host_writer.host(layer) if em.distributed else None
    uses_pld = any("pld." in line for line in [*inline, *body, *entry, *(host or [])])
    return {
        "layer": layer,
        "layer_text": graph.name,
        "version": version,
        "source_hash": source_hash,
        "distributed": em.distributed,
        "uses_pld": uses_pld,
        "constants": em.constants(),
        "admissible": em.admissible(),
        "inline_def": inline,
        "inline_body": body,
        "entry_def": entry,
        "entry_body": em.entry_body(layer),
        "host": host,
        "ranks": em.ranks_text,
        "specs": em.host_writer.specs(),
        "spec_def": em.host_writer.spec_def(),
        "spec_lines": em.host_writer.spec_lines(),
        "spec_checks": em.host_writer.spec_checks(),
        "golden": py_str(golden) if golden else None,
        "outputs_loop": layout(
            Cat(
                [
                    "for _name in ",
                    lst([py_str(t.name) for t in em.params() if t.kind in ("output", "inout")]),
                    ":",
                ]
            ),
            1,
        ),
        "params": [(em.py(p.name), py_str(p.name)) for p in graph.params.values()],
    }


def render_pypto(graph: Graph, source_hash: str, version: str, golden: str | None = None) -> str:
    """The PyPTO module of ``graph`` (raises UnsupportedForPyPTO for what PyPTO cannot express)."""
    env = template_environment("pypto")
    text = env.get_template("module.py.j2").render(**module_context(graph, source_hash, version, golden))
    compile_python(text, f"<pypto module of {graph.name}>", "pypto")
    return text


def content_hash(*parts: str) -> str:
    """The cache key of a generated PyPTO module: its inputs and the code that generates it (``generator_hash``)."""
    return generator_hash("pypto", *parts)
