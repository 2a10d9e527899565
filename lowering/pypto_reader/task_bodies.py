"""Task bodies: the body of a ``pl.at``/``pl.spmd`` scope or an InCore kernel, read by a
``kernel.KernelReader`` over the orchestration's names into a ``kernel_summary.KernelSummary`` --
once per scope, and reused across the instances an orchestration loop makes of it --; the
tiles a scope hands to later code become buffers the task writes (``export_tiles``), and a
helper a kernel calls is spliced into it (``kernel_call``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.ir import Access
from lowering.pypto_reader.kernel import KernelReader
from lowering.pypto_reader.kernel_captures import ARG, Recorder
from lowering.pypto_reader.kernel_instances import LazyBody
from lowering.pypto_reader.kernel_summary import Export, KernelSummary
from lowering.pypto_reader.liveness import live_after
from lowering.pypto_reader.modules import ModuleInfo
from lowering.pypto_reader.notes import span_of
from lowering.pypto_reader.tensors import TensorInfo
from lowering.pypto_reader.values import FuncVal, TensorVal, TileVal, Unknown, Val
from lowering.source import Span
from lowering.symbolic import Const, Expr

if TYPE_CHECKING:
    from lowering.pypto_reader.orchestration import OrchestrationReader


class TaskBodies:
    """Reads the task bodies of the orchestration ``ev``."""

    def __init__(self, ev: OrchestrationReader) -> None:
        self.ev = ev

    def kernel_reader(self, name: str, grid: Expr, module: ModuleInfo | None = None) -> KernelReader:
        return KernelReader(
            self.ev.file,
            self.ev.notes,
            self.ev.prog.params.env,
            self.ev.lookup if module is None else _globals_of(module),
            self.ev.prog.tensors,
            name,
            grid,
            self.kernel_call,
        )

    def tensor_signature(self, root: str) -> object:
        """What a task body can see of a tensor: two tensors alike here read alike. Which buffer
        a view lies in, and where, is not among it: a body reads a view by its own name, and
        the graph places the instance's view in its base (so one template serves the views of
        every layer's buffer)."""
        info = self.ev.prog.tensors.get(root)
        if info is None:
            return None
        return (
            info.dtype, info.shape, info.kind, info.manual_dep, info.distributed, info.declared_inout,
            root in self.ev.prog.signal_tensors, root in self.ev.prog.window_tensors,
        )  # fmt: skip

    def read_kernel(
        self,
        name: str,
        grid: Expr,
        stmts: list[ast.stmt],
        bindings: dict[str, Val],
        module: ModuleInfo | None,
        node: ast.AST,
    ) -> KernelSummary:
        """The summary of a task body: read once per scope and reused across the instances an
        orchestration loop makes of it (``kernel_cache``)."""
        outer = self.ev.lookup if module is None else _globals_of(module)
        key = (id(stmts[0]) if stmts else id(node), len(stmts), grid, id(module))
        found = self.ev.prog.kernels.find(
            key, outer, bindings, self.ev.prog.params.env(), self.tensor_signature, node
        )
        if found is not None:
            return found
        recorder = Recorder(outer, self.ev.prog.params.env(), self.tensor_signature)
        abstract = {k: recorder.abstract(ARG + k, v) for k, v in bindings.items()}
        reader = KernelReader(
            module.file if module is not None else self.ev.file,
            self.ev.notes,
            lambda: recorder.env,
            recorder.lookup,
            self.ev.prog.tensors,
            name,
            grid,
            self.kernel_call,
        )
        body = reader.read(stmts, abstract)
        tree = module.tree if module is not None else self.ev.frame.module.tree
        exports = _exports(
            reader, live_after(tree, node) if isinstance(node, ast.stmt) else frozenset(), node
        )
        summary = KernelSummary(
            body,
            tuple(reader.access.accesses),
            tuple(reader.access.signals),
            tuple(reader.access.barriers),
            frozenset(reader.body.ops),
            frozenset(reader.body.units),
            frozenset(reader.access.signal_tensors),
            frozenset(reader.access.window_tensors),
            reader.body.dual_lanes,
            exports,
        )
        return self.ev.prog.kernels.store(key, recorder, summary)

    def export_tiles(self, task: str, summary: KernelSummary, stmt: ast.AST) -> KernelSummary:
        """Each tile the scope hands to later code becomes a buffer the task allocates and
        writes whole (what outlining the scope into a kernel does); the name is rebound to it."""
        if not summary.exports:
            return summary
        accesses, stores = list(summary.accesses), []
        order = max((a.order for a in accesses), default=0)
        for e in summary.exports:
            info = self.ev.prog.tensors.add(
                TensorInfo(
                    f"{task}.{e.var}", e.type.dtype, e.type.shape, "scratch", False, e.span, created_by=task
                )
            )
            region = tuple(ir_body.Range(Const(0), d, Const(1)) for d in e.type.shape)
            order += 1
            accesses.append(Access(info.name, "write", region, e.type.dtype, (), (), e.span, order))
            stores.append(ir_body.StoreS(info.name, region, e.value, "write", e.span))
            self.ev.bind_name(e.var, TensorVal(info.name), stmt)
        body = summary.body  # an instance's body is lazy: rules that read bodies are few

        def make() -> tuple:
            return (*body, *stores)

        if isinstance(body, LazyBody) and body.template is not None:
            lazy = LazyBody(make, body.template, body.renames, (*body.extra, *stores), body.mapping)
        else:
            lazy = LazyBody(make)
        return replace(summary, accesses=tuple(accesses), body=lazy)

    def kernel_call(self, k: KernelReader, func: FuncVal, node: ast.Call) -> Val:
        """A helper called inside a kernel body: spliced into it (its statements become the task's)."""
        if func.kind in ("incore", "extern", "jit", "host"):
            return k.opaque_op(
                func.node.name, node, f"a call to the {func.kind} function '{func.node.name}' inside a kernel"
            )
        args = func.node.args
        names = [p.arg for p in [*args.posonlyargs, *args.args]]
        bound: dict[str, Val] = {}
        for name, a in zip(names, node.args, strict=False):
            bound[name] = k.eval(a)
        for kw in node.keywords:
            if kw.arg:
                bound[kw.arg] = k.eval(kw.value)
        return k.splice(func.module.file, _globals_of(func.module), bound, func.node.body)


def _globals_of(module: ModuleInfo) -> Callable[[str, ast.AST], Val]:
    """Name lookup in the globals of ``module``: what a kernel defined there sees outside itself."""

    def lookup(name: str, node: ast.AST) -> Val:
        return module.globals.get(name, Unknown(f"unknown name '{name}'"))

    return lookup


def _exports(reader: KernelReader, live: frozenset[str], node: ast.AST) -> tuple[Export, ...]:
    out = []
    for var in sorted(live):
        v = reader.names.scopes[0].get(var)
        if isinstance(v, TileVal) and isinstance(v.type, ir_body.TileType):
            out.append(Export(var, v.type, v.value, _last_store_span(reader.file, node, var)))
    return tuple(out)


def _last_store_span(file: str, node: ast.AST, var: str) -> Span:
    stores = [
        n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Store)
    ]
    last = max(stores, key=lambda n: (n.lineno, n.col_offset), default=node)
    return span_of(file, last)
