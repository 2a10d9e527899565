"""Orchestration code -> tasks: ``pl.at``/``pl.spmd`` scopes, kernel calls, deps and task ids.

The orchestration function of the entry (``@pl.jit``, or an Orchestration/Opaque method of a
``@pl.program``) is interpreted statement by statement:

- ``with pl.at(level=pl.Level.CORE_GROUP, ...) [as tid]`` is one task of one block; ``with
  pl.spmd(N, ...) [as tid]`` and ``for b in pl.spmd(N, ...)`` one task of N blocks (a single
  ``pl.at`` inside an spmd is its carrier, not a second task); a call to a ``@pl.jit.incore``
  or ``@pl.jit.extern`` kernel is a task whose directions come from the kernel's parameter
  annotations; ``pl.submit``/``pl.spmd_submit`` likewise; ``pl.system.task_dummy`` is a
  zero-block join task;
- ``deps=[...]`` entries are task ids, task-id arrays (``pl.array.create(n, pl.TASK_ID)``,
  ``tids[i] = tid``), elements of them, or ``None``;
- ``@pl.jit.inline`` helpers are spliced in, with their task ids and tensors returned across
  the call;
- orchestration loops with static bounds are unrolled (their tasks are ``name[i]``; a
  sequential loop sets R-seq), ``if``s on static values take one branch, ``pl.manual_scope``
  makes its tasks manual, ``pl.create_tensor`` allocates a scratch tensor (``manual_dep``).

What cannot be modelled (a dynamic task count, an unknown helper, a branch on runtime data)
becomes a P001 note; no task is dropped silently. ``TaskBuilder`` makes the tasks of the scopes
and kernel calls the orchestration reader (``orchestration``) meets; their bodies are read by
``task_bodies``.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

from lowering.ir import Access, DepRef, Predicate, Task
from lowering.pypto_reader.directions import call_tags
from lowering.pypto_reader.exprs import dotted
from lowering.pypto_reader.interp_frames import Frame
from lowering.pypto_reader.kernel_summary import KernelSummary
from lowering.pypto_reader.notes import line_span, span_of
from lowering.pypto_reader.program import ReadOnce
from lowering.pypto_reader.values import (
    FuncVal,
    IntVal,
    PlRef,
    PyVal,
    SeqVal,
    TaskArrayVal,
    TaskIdVal,
    TensorVal,
    Val,
)
from lowering.source import Span
from lowering.symbolic import DYNAMIC, Const, EvalError, Expr, Sym, evaluate, substitute
from runtime.device import PRESETS as DEVICES

if TYPE_CHECKING:
    from lowering.pypto_reader.orchestration import OrchestrationReader

#: What ``pl.system.available_*_count()`` is taken to be: the a2a3 preset of ``runtime.device``.
PRESET_CORES = {"available_aiv_count": DEVICES["a2a3"].aiv, "available_cluster_count": DEVICES["a2a3"].aic}


class TaskBuilder:
    """The tasks of one program: what a scope, a kernel call or a submit of the orchestration
    ``ev`` interprets becomes; its body is read by ``ev.bodies`` (``task_bodies``)."""

    def __init__(self, ev: OrchestrationReader) -> None:
        self.ev = ev

    def spmd_for(self, s: ast.For) -> None:
        it = s.iter
        assert isinstance(it, ast.Call)
        var = s.target.id if isinstance(s.target, ast.Name) else None
        self.scope_task(s, it, it, None, s.body, block_var=var)

    def grid_of(self, call: ast.Call) -> Expr:
        node = self.ev.kw(call, "core_num", 0)
        if node is None:
            return Const(1)
        if isinstance(node, ast.Call):
            name = (dotted(node.func) or "").rsplit(".", 1)[-1]
            if name in PRESET_CORES:
                self.ev.notes.not_modelled(
                    span_of(self.ev.file, node),
                    f"{name}() (the core count of the device, known at run time)",
                    f"the grid is taken as the a2a3 count, {PRESET_CORES[name]} blocks",
                )
                return Const(PRESET_CORES[name])
        v = self.ev.eval(node)
        e = self.ev.int_expr(v)
        if e is None or self.ev.value_of(e) is None:
            self.ev.notes.not_modelled(
                span_of(self.ev.file, node),
                "a grid size the reader cannot evaluate (a data-dependent block count)",
                "the task is modelled with 1 block: occupancy and speculation counts are not checked for it",
            )
            return UNKNOWN_GRID
        return e

    def task_name(self, hint: str) -> tuple[str, str, int | None]:
        """(name, base, index): the base is the name hint (one statement of the program, for
        R-prior), the name adds the indices of the enclosing orchestration loops."""
        base = hint
        index: int | None = None
        suffix = ""
        for v in self.ev.loop_indices():
            suffix += f"[{v}]" if isinstance(v, int) else "[*]"
            if isinstance(v, int):
                index = v
        name, k = base + suffix, 2
        while name in self.ev.prog.task_names:
            name = f"{base}{suffix}#{k}"
            k += 1
        self.ev.prog.task_names.add(name)
        return name, base, index

    def hint_of(self, calls: list[ast.Call | None], as_name: ast.expr | None, default: str) -> str:
        for call in calls:
            if call is None:
                continue
            node = self.ev.kw(call, "name_hint")
            if node is not None:
                v = self.ev.static(self.ev.eval(node))
                if isinstance(v, str) and v:
                    return v
        if isinstance(as_name, ast.Name):
            name = as_name.id.lstrip("_")
            return name[:-4] if name.endswith("_tid") and len(name) > 4 else name
        return default

    def deps_of(self, calls: list[ast.Call | None]) -> list[DepRef]:
        out: list[DepRef] = []
        for call in calls:
            node = self.ev.kw(call, "deps") if call is not None else None
            if node is None:
                continue
            for task, span in self.dep_entries(node):
                if task not in [d.target for d in out]:
                    out.append(DepRef(task, span))
        return out

    def dep_entries(self, node: ast.expr) -> list[tuple[str, Span]]:
        span = span_of(self.ev.file, node)
        if isinstance(node, ast.List | ast.Tuple):
            out = []
            for e in node.elts:
                out.extend(self.dep_entries(e.value if isinstance(e, ast.Starred) else e))
            return out
        if isinstance(node, ast.Subscript):
            base = self.ev.eval(node.value)
            if isinstance(base, TaskArrayVal):
                i = self.ev.static(self.ev.eval(node.slice))
                if isinstance(i, int):
                    return [(t, span) for t in base.cells.get(i, ())]
                self.ev.notes.not_modelled(
                    span,
                    "an element of a task-id array at an index the reader cannot evaluate",
                    "the dependency is taken on every task stored in the array",
                )
                return [(t, span) for t in base.all_tasks()]
        v = self.ev.eval(node)
        if isinstance(v, TaskIdVal):
            return [(t, span) for t in v.tasks]
        if isinstance(v, TaskArrayVal):
            return [(t, span) for t in v.all_tasks()]
        if isinstance(v, SeqVal):
            out = []
            for item in v.items:
                if isinstance(item, TaskIdVal):
                    out.extend((t, span) for t in item.tasks)
                elif isinstance(item, TaskArrayVal):
                    out.extend((t, span) for t in item.all_tasks())
            return out
        if isinstance(v, PyVal) and v.value is None:
            return []
        self.ev.notes.not_modelled(
            span,
            f"a deps= entry the reader cannot resolve ('{ast.unparse(node)}')",
            "the explicit edge it adds is missing: ordering findings on this task may be false positives",
        )
        return []

    def predicate_of(self, call: ast.Call | None) -> Predicate | None:
        node = self.ev.kw(call, "predicate") if call is not None else None
        if node is None:
            return None
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Subscript):
            base = self.ev.eval(node.left.value)
            idx_node = node.left.slice
            idx_items = idx_node.elts if isinstance(idx_node, ast.Tuple) else [idx_node]
            idx = [self.ev.int_expr(self.ev.eval(i)) for i in idx_items]
            value = self.ev.int_expr(self.ev.eval(node.comparators[0]))
            cmp = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}.get(
                type(node.ops[0])
            )
            if isinstance(base, TensorVal) and value is not None and cmp and all(i is not None for i in idx):
                return Predicate(base.root, tuple(idx), cmp, value, span_of(self.ev.file, node))  # type: ignore[arg-type]
        self.ev.notes.not_modelled(
            span_of(self.ev.file, node),
            "a predicate= the reader cannot evaluate",
            "the task is modelled as always running",
        )
        return None

    def scope_task(
        self,
        stmt: ast.stmt,
        at_call: ast.Call,
        spmd_call: ast.Call | None,
        as_name: ast.expr | None,
        body: list[ast.stmt],
        block_var: str | None = None,
    ) -> None:
        """One task from a pl.at / pl.spmd scope (``at_call`` is the pl.at, or the pl.spmd)."""
        calls: list[ast.Call | None] = [at_call] if spmd_call is None else [spmd_call]
        grid: Expr = Const(1) if spmd_call is None else self.grid_of(spmd_call)
        inner = body
        if (
            spmd_call is not None
            and len(body) == 1
            and isinstance(body[0], ast.With)
            and len(body[0].items) == 1
        ):
            ctx = body[0].items[0].context_expr
            if isinstance(ctx, ast.Call) and isinstance(self.ev.eval(ctx.func), PlRef):
                if self.ev.eval(ctx.func).path == "pl.at":  # type: ignore[union-attr]
                    calls.append(ctx)  # the carrier of the spmd body
                    inner = body[0].body
        kernel_call = _single_call(inner)
        if spmd_call is not None and kernel_call is not None:
            callee = self.ev.eval(kernel_call.func)
            if isinstance(callee, FuncVal) and callee.kind in ("incore", "extern"):
                self.kernel_task(kernel_call, callee, grid, calls, as_name, stmt)
                return
        default = f"task_{stmt.lineno}"
        hint = self.hint_of(calls, as_name, default)
        name, base, index = self.task_name(hint)
        after = self.deps_of(calls)
        early = any(self.ev.flag(c, "allow_early_resolve") for c in calls)
        sync = any(self.ev.flag(c, "sync_start") for c in calls)
        predicate = self.predicate_of(spmd_call)
        dual = any(self.split_opt(c) for c in calls)
        nodeps = set()
        for c in calls:
            node = self.ev.kw(c, "no_dep_args") if c is not None else None
            if node is not None:
                v = self.ev.eval(node)
                for item in v.items if isinstance(v, SeqVal) else (v,):
                    if isinstance(item, TensorVal):
                        nodeps.add(item.root)
        bindings: dict[str, Val] = {block_var: IntVal(Sym("block", "block"))} if block_var else {}
        summary = self.ev.bodies.export_tiles(
            name, self.ev.bodies.read_kernel(name, grid, inner, bindings, None, stmt), stmt
        )
        self.add_task(
            name, base, index, grid, summary, stmt, after, early, sync, predicate,
            dual or summary.dual_lanes, {t: "nodep" for t in nodeps} or None,
        )  # fmt: skip
        if isinstance(as_name, ast.Name):
            self.ev.bind_name(as_name.id, TaskIdVal((name,)), stmt)

    def split_opt(self, call: ast.Call | None) -> bool:
        node = self.ev.kw(call, "optimizations") if call is not None else None
        if not isinstance(node, ast.List | ast.Tuple):
            return False
        for e in node.elts:
            if isinstance(e, ast.Call) and isinstance(self.ev.eval(e.func), PlRef):
                if self.ev.eval(e.func).path == "pl.split" and e.args:  # type: ignore[union-attr]
                    mode = self.ev.eval(e.args[0])
                    if isinstance(mode, PlRef) and not mode.path.endswith("NONE"):
                        return True
        return False

    def add_task(
        self,
        name: str,
        base: str,
        index: int | None,
        grid: Expr,
        summary: KernelSummary | None,
        stmt: ast.AST,
        after: list[DepRef],
        early: bool,
        sync: bool,
        predicate: Predicate | None,
        dual: bool,
        arg_tags: dict[str, str] | None,
        core: str | None = None,
        accesses: tuple = (),
    ) -> None:
        try:
            blocks = evaluate(grid, self.ev.prog.params.env())
        except EvalError:
            blocks = 1
        if grid is UNKNOWN_GRID:
            accesses = tuple(_any_block(a) for a in (summary.accesses if summary is not None else accesses))
            if summary is not None:
                summary = replace(summary, accesses=accesses)
        units: frozenset[str] = frozenset()
        if summary is not None:
            units = summary.units
            self.ev.prog.signal_tensors |= summary.signal_tensors
            self.ev.prog.window_tensors |= summary.window_tensors
        if core is None:
            if dual or units == {"cube", "vector"}:
                core = "mix"
            elif units == {"cube"}:
                core = "aic"
            else:
                core = "aiv"
        span = span_of(self.ev.file, stmt)
        header = line_span(self.ev.file, stmt, 4 if isinstance(stmt, ast.With) else 0)
        if isinstance(stmt, ast.For):
            header = line_span(self.ev.file, stmt, 3)
        task = Task(
            name=name, base=base, index=index, grid=grid, blocks=blocks, core=core, core_explicit=False,
            early_resolve=early, sync_start=sync, manual=self.ev.manual > 0, in_sequential_loop=self.ev.sequential > 0,
            predicate=predicate, after=tuple(self.ev.prog.host_sync.after(after)),
            accesses=summary.accesses if summary is not None else tuple(accesses),
            signals=summary.signals if summary is not None else (),
            barriers=summary.barriers if summary is not None else (),
            ops=summary.ops if summary is not None else frozenset(),
            body=summary.body if summary is not None else (), span=span,
            header_span=header, order=len(self.ev.prog.tasks), branch=tuple(self.ev.branch),
            repeated=tuple(v.loop for v in self.ev.loop_indices() if isinstance(v, ReadOnce)),
        )  # fmt: skip
        if arg_tags:
            task.arg_tags = arg_tags
        self.ev.prog.tasks.append(task)

    def kernel_task(
        self,
        call: ast.Call,
        callee: FuncVal,
        grid: Expr,
        scope_calls: list[ast.Call | None],
        as_name: ast.expr | None,
        stmt: ast.AST,
        flags_call: ast.Call | None = None,
    ) -> str:
        """A call to an InCore/extern kernel from orchestration: one task, directions from annotations."""
        hint = self.hint_of([*scope_calls, flags_call], as_name, callee.node.name)
        name, base, index = self.task_name(hint)
        all_calls = [*scope_calls, flags_call]
        after = self.deps_of(all_calls)
        early = any(self.ev.flag(c, "allow_early_resolve") for c in all_calls)
        sync = any(self.ev.flag(c, "sync_start") for c in all_calls)
        predicate = self.predicate_of(flags_call or next((c for c in scope_calls if c is not None), None))
        frame = Frame(callee.module)
        bound_nodes = self.ev.bind_args(frame, callee, call, skip_self=callee.owner is not None)
        tags = call_tags(self.ev, callee, frame, bound_nodes)
        for root, tag in list(tags.items()):
            info = self.ev.prog.tensors.get(root)
            if tag == "out" and info is not None and info.declared_inout and info.kind == "window":
                tags[root] = "inout"  # R-enclosing on a window the entry declares InOut
        if callee.kind == "extern":
            core = _extern_core(self.ev, callee)
            accesses = []
            reader = self.ev.bodies.kernel_reader(name, grid, callee.module)
            for v in frame.locals.values():
                if isinstance(v, TensorVal):
                    region = reader.access.region_at(v, None, None)
                    d = tags.get(v.root, "in")
                    if d in ("in", "inout"):
                        reader.access.record(v, region, "read", call)
                    if d in ("out", "inout"):
                        reader.access.record(v, region, "write", call)
            accesses = [replace(a, opaque=True) for a in reader.access.accesses]
            self.ev.notes.not_modelled(
                span_of(self.ev.file, call),
                f"the body of extern kernel '{callee.node.name}' (hand-written C++)",
                "its accesses are taken as whole arguments in their declared directions, and any signals "
                "or atomics inside it are not seen",
            )
            self.add_task(
                name, base, index, grid, None, stmt, after, early, sync, predicate, False, tags or None,
                core=core, accesses=tuple(accesses),
            )  # fmt: skip
        else:
            summary = self.ev.bodies.read_kernel(
                name, grid, callee.node.body, dict(frame.locals), callee.module, call
            )
            self.add_task(
                name, base, index, grid, summary, stmt, after, early, sync, predicate, summary.dual_lanes,
                tags or None, core=_incore_core(self.ev, callee),
            )  # fmt: skip
        if isinstance(as_name, ast.Name):
            self.ev.bind_name(as_name.id, TaskIdVal((name,)), stmt)
        return name


# ---------------------------------------------------------------- helpers

#: The grid of a task whose block count the reader cannot evaluate: modelled as one block, and
#: recognised by identity (``grid is UNKNOWN_GRID``) so that its accesses are made those of
#: *some* block (``_any_block``) rather than of block 0 alone.
UNKNOWN_GRID = Const(1)
_SOME_BLOCK = {"block": Sym("block?", DYNAMIC)}


def _any_block(access: Access) -> Access:
    """``access`` as run by a block the model does not know: ``block`` becomes an unknown
    value, so the region spans what any block of the unknown grid can touch."""

    def sub(e: Expr) -> Expr:
        return substitute(e, _SOME_BLOCK)

    region = tuple(replace(r, start=sub(r.start), stop=sub(r.stop), step=sub(r.step)) for r in access.region)
    loops = tuple(
        replace(lp, start=sub(lp.start), stop=sub(lp.stop), step=sub(lp.step)) for lp in access.loops
    )
    conds = tuple(replace(c, expr=sub(c.expr)) for c in access.conds)
    return replace(access, region=region, loops=loops, conds=conds)


def _single_call(stmts: list[ast.stmt]) -> ast.Call | None:
    body = [s for s in stmts if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1:
        return None
    s = body[0]
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        return s.value
    if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call):
        return s.value
    return None


def _extern_core(ev: OrchestrationReader, func: FuncVal) -> str:
    d = func.decorator
    if isinstance(d, ast.Call):
        for kw in d.keywords:
            if kw.arg == "core_type":
                v = ev.static(ev.eval(kw.value))
                return {"aic": "aic", "aiv": "aiv", "mixed": "mix", "mix": "mix"}.get(str(v), "aiv")
            if kw.arg == "dual_aiv_dispatch" and ev.truth(ev.eval(kw.value)):
                return "mix"
    return "aiv"


def _incore_core(ev: OrchestrationReader, func: FuncVal) -> str | None:
    d = func.decorator
    if isinstance(d, ast.Call):
        for kw in d.keywords:
            if kw.arg in ("level", "type"):
                v = ev.eval(kw.value)
                if isinstance(v, PlRef):
                    last = v.path.rsplit(".", 1)[-1]
                    if last in ("AIC", "AIV"):
                        return last.lower()
                    if last in ("Group",):
                        return "mix"
    return None
