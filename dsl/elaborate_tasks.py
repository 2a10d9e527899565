"""Tasks in layer elaboration: task definitions and the references to them.

A ``task`` becomes one IR task per instance (``mm[3]`` in a layer loop): its grid, its body
(``dsl.elaborate_body``), its core kind (inferred from the units its ops use, or checked
against the declared one) and its predicate. ``after`` names and the taskid bindings of a
layer call resolve to task instances defined before them, through the aliases of called
layers (``dispatch.push``). Integers come from ``dsl.elaborate_ints.HostInts``; the layer
statements around tasks are ``dsl.elaborate.Elaborator``, which composes this piece.
"""

from __future__ import annotations

import dataclasses

from dsl import ast
from dsl.elaborate_body import BodyElaborator
from dsl.elaborate_exprs import LayerNames
from dsl.elaborate_ints import HostInts
from dsl.elaborate_scope import Diagnostics, LayerGraph, Scope
from dsl.limits import MAX_TASKS, LimitReached
from dsl.ops import const_definitions
from lowering import ir
from lowering.checks.capacity.derived import EMITTED
from lowering.source import Span
from lowering.symbolic import Const, Expr, free_symbols


class TaskElaborator:
    """Adds the tasks of a layer to ``graph`` and resolves the names that refer to them."""

    def __init__(self, graph: LayerGraph, ints: HostInts, diags: Diagnostics, file: str) -> None:
        self.graph = graph
        self.ints = ints
        self.diags = diags
        self.file = file

    def check_taskid(self, s: ast.TaskIdDecl, scope: Scope) -> None:
        """A ``taskid`` parameter of a called layer must be bound by the call."""
        if s.name not in scope.tasks:
            if scope.call is None:
                raise self.diags.error(
                    "E209",
                    s.span,
                    f"taskid '{s.name}' is only meaningful in a layer that another layer calls",
                    hint=f"call it with ...({s.name} = task), or name the task in `after` directly",
                )
            raise self.diags.error(
                "E209",
                scope.call.span,
                f"call '{scope.call.alias}' does not bind taskid '{s.name}' of layer "
                f"'{scope.layer.name}' (declared at line {s.span.line})",
                hint=f"call {scope.call.alias} = {scope.layer.name}(..., {s.name} = task)",
            )

    def resolve_ref(self, ref: ast.TaskRef, scope: Scope) -> list[str]:
        """The task instances ``ref`` names, seen from ``scope``."""
        target = scope
        for alias in ref.path[:-1]:
            if alias not in target.calls:
                raise self.diags.error("E401", ref.span, f"no layer call named '{alias}'")
            target = target.calls[alias]
        name = ref.path[-1]
        instances = target.tasks.get(name)
        if not instances:
            raise self.diags.error(
                "E401",
                ref.span,
                f"unknown task '{'.'.join(ref.path)}'",
                hint="after names a task defined above",
            )
        if ref.index is None:
            return list(instances)
        idx = self.ints.value(self.ints.const(ref.index, scope), ref.index.span, "task index")
        wanted = f"{target.prefix}{name}[{idx}]"
        if wanted not in instances:
            raise self.diags.error("E401", ref.span, f"task array '{name}' has no element [{idx}]")
        return [wanted]

    def as_ref(self, value) -> ast.TaskRef:
        """A layer call's taskid binding as a task reference."""
        if isinstance(value, ast.TaskRef):
            return value
        if isinstance(value, ast.Name):
            return ast.TaskRef(value.span, (value.id,), None)
        if isinstance(value, ast.Access) and len(value.subscripts) == 1:
            return ast.TaskRef(value.span, (value.name,), value.subscripts[0])
        raise self.diags.error("E209", value.span, "a taskid is bound to a task, e.g. push or dispatch.push")

    def define(self, s: ast.TaskDef, scope: Scope) -> str:
        """Add the task instance ``s`` defines in ``scope`` to the graph; its name."""
        g = self.graph
        base = scope.prefix + s.name
        index = None
        if s.index is not None:
            index = self.ints.value(self.ints.const(s.index, scope), s.index.span, "task index")
        name = f"{base}[{index}]" if index is not None else base
        if name in g.task_names:
            hint = (
                f"index it inside a layer loop: task {s.name}[i]"
                if scope.loop_kinds and index is None
                else None
            )
            raise self.diags.error("E202", s.span, f"task '{name}' is already defined", hint)
        g.task_names.add(name)
        after = []
        try:
            # `after` sees the tasks defined before this one (for `task t[i] after t`, the
            # earlier elements), never the task itself: a self edge would never resolve.
            for ref in s.after:
                if ref.previous:  # prev(t): t may come later; resolved when the layer is done
                    if ref.index is not None:  # the index is evaluated here, where its names are bound
                        idx = self.ints.value(self.ints.const(ref.index, scope), ref.index.span, "task index")
                        ref = dataclasses.replace(ref, index=ast.IntLit(ref.index.span, idx))
                    g.previous_refs.append((name, ref, scope))
                    continue
                after.extend(ir.DepRef(t, ref.span) for t in self.resolve_ref(ref, scope))
        finally:
            scope.tasks.setdefault(s.name, {})[name] = None
        grid = self.ints.const(s.spmd, scope) if s.spmd is not None else Const(1)
        blocks = self.ints.value(grid, s.spmd.span if s.spmd else s.span, "grid")
        if blocks < 1:
            raise self.diags.error("E403", s.spmd.span, f"spmd grid must be positive, got {blocks}")
        names = LayerNames(
            ints={**scope.ints, **{k: v.value for k, v in g.derived.items() if not emitted_in(v.value)}}
            if g.derived
            else scope.ints,
            tensors=scope.tensors,
            scalars={k: v.dtype for k, v in g.scalars.items()},
            nranks=g.ranks or Const(1),
            prefix=scope.prefix,
        )
        defs = {k: c.expr for k, c in g.consts.items()}
        defs.update({k: p.expr for k, p in g.pending.items() if not p.derived})
        with const_definitions(defs):
            result = BodyElaborator(names, self.diags.report).run(s.body)
        core = self._core(s, result.units)
        predicate = self._predicate(s.predicate, scope) if s.predicate is not None else None
        header = Span(self.file, s.span.line, s.span.col, s.span.line, s.span.col + 5 + len(s.name))
        if len(g.tasks) >= MAX_TASKS:
            self.diags.error(
                "E108",
                header,
                f"the graph has more than {MAX_TASKS:,} task instances (dslc's limit; this one is {name})",
                hint="a task array is one task per iteration; use spmd(N) for N blocks of one task",
            )
            raise LimitReached
        g.tasks.append(
            ir.Task(
                name=name, base=base, index=index, grid=grid, blocks=blocks, core=core,
                core_explicit=s.core is not None, early_resolve=s.early_resolve, sync_start=s.sync_start,
                manual=s.manual, in_sequential_loop="range" in scope.loop_kinds, predicate=predicate,
                after=tuple(after), accesses=tuple(result.accesses), signals=tuple(result.signals),
                barriers=tuple(result.barriers), ops=frozenset(result.ops), body=result.body, span=s.span,
                header_span=header, order=len(g.tasks),
            )
        )  # fmt: skip
        return name

    def _core(self, s: ast.TaskDef, units: set[str]) -> str:
        inferred = "mix" if units == {"cube", "vector"} else "aic" if units == {"cube"} else "aiv"
        if s.core is None:
            return inferred
        if s.core not in ir.CORE_KINDS:
            raise self.diags.error(
                "E402", s.core_span, f"unknown core kind '{s.core}'", hint="aic, aiv or mix"
            )
        needs = {"aic": {"cube"}, "aiv": {"vector"}, "mix": {"cube", "vector"}}[s.core]
        missing = units - needs
        if missing:
            what = "cube (matmul)" if "cube" in missing else "vector"
            hint = "use mix" if units == {"cube", "vector"} else f"use {inferred}"
            raise self.diags.error(
                "E402", s.core_span, f"task '{s.name}' uses {what} ops but runs on {s.core}", hint
            )
        return s.core

    def _predicate(self, e, scope: Scope) -> ir.Predicate:
        if (
            not isinstance(e, ast.Binary)
            or e.op not in ("==", "!=", "<", "<=", ">", ">=")
            or not isinstance(e.left, ast.Access)
            or any(isinstance(x, ast.Slice) for x in e.left.subscripts)
        ):
            raise self.diags.error("E406", e.span, "a predicate is `tensor[i, j] OP integer`")
        tensor = scope.tensors.get(e.left.name)
        if tensor is None:
            raise self.diags.error("E201", e.left.name_span, f"unknown tensor '{e.left.name}'")
        if len(e.left.subscripts) != len(tensor.shape):
            raise self.diags.error("E304", e.left.span, f"'{tensor.name}' has {len(tensor.shape)} dims")
        index = tuple(self.ints.const(x, scope) for x in e.left.subscripts)
        return ir.Predicate(tensor.name, index, e.op, self.ints.const(e.right, scope), e.span)


def emitted_in(expr: Expr | None) -> tuple[str, ...]:
    """The ``emitted(T)`` placeholders an elaborated host expression uses."""
    if expr is None:
        return ()
    return tuple(sorted(s.name for s in free_symbols(expr) if s.kind == EMITTED))
