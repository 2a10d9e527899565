"""Entries of a PyPTO file -> one IR graph each, with edges inferred as the runtime does.

The graphs are the chip programs: every ``@pl.jit`` function (and every Orchestration or
Opaque method of a ``@pl.program`` class); a file with none has its top-level
``@pl.jit.inline`` functions that no other function calls. The number of ranks and the
parameter that carries the rank come from the ``@pl.jit.host`` driver that dispatches the
entry (``for r in pl.range(EP): entry(..., r, device=r)``); without one, from the usual
names (``EP``, ``WORLD_SIZE`` for the world, ``my_rank`` for the rank).
"""

from __future__ import annotations

import ast
import traceback
from dataclasses import replace

from lowering import ir, parameters
from lowering.body import Range
from lowering.edges import infer_edges
from lowering.pypto_reader import read_context
from lowering.pypto_reader.bindings import (
    axis_bindings,
    harness_requests,
    launched_for,
    resolve_dynamic_axes,
    spec_dtypes,
    spec_shapes,
)
from lowering.pypto_reader.constants import Params
from lowering.pypto_reader.exprs import dotted
from lowering.pypto_reader.guards import read_guards
from lowering.pypto_reader.interp import PyInterpreter
from lowering.pypto_reader.interp_control import BudgetExceeded
from lowering.pypto_reader.modules import Loader, ModuleInfo, ModuleInterpreter
from lowering.pypto_reader.notes import Notes, span_of
from lowering.pypto_reader.orchestration import OrchestrationReader
from lowering.pypto_reader.program import Program
from lowering.pypto_reader.py_exceptions import PyRaise, exception_name
from lowering.pypto_reader.signal_clears import zero_writes_as_clears
from lowering.pypto_reader.values import ClassVal, FuncVal, IntVal
from lowering.symbolic import Const, EvalError, Expr, Sym, evaluate

RANK_NAMES = ("my_rank", "rank", "local_rank", "ep_rank", "rank_id", "cur_rank", "self_rank")
WORLD_NAMES = ("EP", "EP_WORLD_SIZE", "EP_SIZE", "WORLD_SIZE", "N_RANKS", "NRANKS", "NUM_RANKS")


def entries(module: ModuleInfo) -> list[FuncVal]:
    """The chip-level entries of ``module``, in source order."""
    unique: dict[int, FuncVal] = {}
    classes: dict[int, ClassVal] = {}
    for v in [*module.globals.values(), *read_context.host().programs]:
        if isinstance(v, FuncVal) and v.module is module:
            unique.setdefault(id(v.node), v)
        elif isinstance(v, ClassVal) and v.module is module:
            classes.setdefault(id(v.node), v)
    funcs = list(unique.values())
    out = [f for f in funcs if f.kind == "jit"]
    for cls in classes.values():
        out.extend(m for _, m in cls.methods if m.kind == "jit" and id(m.node) not in unique)
    if out:
        return sorted(out, key=lambda f: f.node.lineno)
    called = set()
    for f in funcs:
        for node in ast.walk(f.node):
            if isinstance(node, ast.Call):
                name = dotted(node.func)
                if name:
                    called.add(name.rsplit(".", 1)[-1])
    inline = [f for f in funcs if f.kind == "inline" and f.node.name not in called]
    return sorted(inline, key=lambda f: f.node.lineno)


def host_binding(module: ModuleInfo, entry: FuncVal, ev: PyInterpreter) -> tuple[Expr | None, frozenset[str]]:
    """(ranks, rank parameters) from a host driver that dispatches ``entry`` with ``device=``."""
    for v in module.globals.values():
        if not (isinstance(v, FuncVal) and v.kind == "host" and v.module is module):
            continue
        for loop in ast.walk(v.node):
            if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)):
                continue
            var = loop.target.id
            for node in ast.walk(loop):
                if not (isinstance(node, ast.Call) and any(k.arg == "device" for k in node.keywords)):
                    continue
                if dotted(node.func) not in (entry.node.name, f"self.{entry.node.name}"):
                    continue
                params = [p.arg for p in entry.node.args.args]
                ranks = set()
                for name, arg in zip(params, node.args, strict=False):
                    if isinstance(arg, ast.Name) and arg.id == var:
                        ranks.add(name)
                for kw in node.keywords:
                    if (
                        kw.arg
                        and kw.arg != "device"
                        and isinstance(kw.value, ast.Name)
                        and kw.value.id == var
                    ):
                        ranks.add(kw.arg)
                world = None
                it = loop.iter
                if isinstance(it, ast.Call) and it.args:
                    bound = ev.eval(it.args[-1] if len(it.args) == 1 else it.args[1])
                    if isinstance(bound, IntVal):
                        world = bound.expr
                return world, frozenset(ranks)
    return None, frozenset()


def _cross_rank(prog: Program) -> bool:
    """Does the program talk to other ranks (windows, signals, the rank)?"""
    if prog.signal_tensors or prog.window_tensors or prog.rank_params:
        return True
    return any(info.distributed for info in prog.tensors.infos.values())


def build_graphs(
    module: ModuleInfo, params: Params, notes: Notes, loader: Loader, layer: str | None = None
) -> list[ir.Graph]:
    ev = ModuleInterpreter(module, loader)
    ev.defining = False
    found = entries(module)
    if layer is not None:
        found = [f for f in found if f.node.name in (layer, f"{layer}_test")]
    bindings: dict[str, list[tuple[str, int]]] = {}
    for entry in found:
        for dyn, uses in axis_bindings(entry, ev, params).items():
            bindings.setdefault(dyn, []).extend(uses)
    records = harness_requests(module, ev)
    resolve_dynamic_axes(params, bindings, records, ev, notes, module)
    graphs = []
    for entry in found:
        own = [r for r in records if launched_for(r, ev) in (None, entry.node.name)]
        # A parameter no record of this entry types takes the dtype of the same-named parameter
        # another entry of the file was launched with (shapes differ: a model stacks its layers).
        shapes, dtypes = spec_shapes(own, ev), {**spec_dtypes(records, ev), **spec_dtypes(own, ev)}
        world, rank_params = host_binding(module, entry, ev)
        if not rank_params:
            rank_params = frozenset(p.arg for p in entry.node.args.args if p.arg in RANK_NAMES)
        prog = Program(
            notes,
            params,
            ranks=world or Const(1),
            rank_params=rank_params,
            spec_shapes=shapes,
            spec_dtypes=dtypes,
        )
        reader = OrchestrationReader(prog, module, loader, loader.budget)
        try:
            reader.run_entry(entry, rank_params)
        except BudgetExceeded:
            notes.not_modelled(
                span_of(module.file, loader.budget.hit_at or entry.node),
                f"orchestration past {loader.budget.limit} interpreted statements",
                "the tasks after this point are missing from the graph, so no signal count of the graph is checked",
            )
            prog.incomplete = f"the reader stopped at {loader.budget.limit} interpreted statements"
        except PyRaise as exc:
            notes.not_modelled(
                exc.span or span_of(module.file, entry.node),
                f"the orchestration raises {exception_name(exc.value) or 'an exception'} with the values the "
                "reader assumes (no argv, empty environment, the harness's request)",
                "the tasks after it are missing from the graph, so no signal count of the graph is checked",
            )
            prog.incomplete = "the orchestration raised"
        except RecursionError:
            notes.add("P004", span_of(module.file, entry.node), "the program nests too deeply to read")
        except Exception as err:  # noqa: BLE001 - the reader never crashes
            notes.add(
                "P004",
                span_of(module.file, entry.node),
                f"the reader failed ({type(err).__name__}: {err})",
                trace="".join(traceback.format_exception(err)),
            )
        for info in prog.tensors.infos.values():
            if info.shape is None and info.view_of is None:
                notes.not_modelled(
                    info.span,
                    f"the shape of tensor '{info.name}' (a bare pl.Tensor that no harness TensorSpec or "
                    "callee annotation gives a shape, or a shape the reader cannot evaluate)",
                    "its accesses are compared conservatively: any two may overlap",
                )
        if world is None and _cross_rank(prog):
            world = _world_constant(module) or _world_from_signal_rows(prog)
            if world is None:
                notes.not_modelled(
                    span_of(module.file, entry.node),
                    "the number of ranks (no @pl.jit.host driver with a static rank loop, no EP constant)",
                    "two ranks are assumed for the cross-rank rules",
                )
                world = Const(2)
            prog.ranks = world
        graphs.append(_graph(entry, prog, params, module))
    return graphs


def _fit_ranks(prog: Program, tensors: dict[str, ir.Tensor]) -> None:
    """Accesses written with more or fewer indices than their tensor has dimensions.

    A 1-D tensor loaded as a ``[1, n]`` tile (``pl.load(gamma, [0, k], [1, n])``) carries a
    leading unit index: dropped. Missing trailing indices mean ``:`` (numpy). Anything else is
    taken as the whole tensor, with a note: that access alone is conservative.
    """
    for task in prog.tasks:
        fitted = []
        changed = False
        for a in task.accesses:
            t = tensors.get(a.tensor)
            if t is None or len(a.region) == len(t.shape):
                fitted.append(a)
                continue
            changed = True
            region = list(a.region)
            while len(region) > len(t.shape) and _unit(region[0]):
                region.pop(0)
            if len(region) < len(t.shape):
                region += [Range(Const(0), d, Const(1)) for d in t.shape[len(region) :]]
            if len(region) != len(t.shape):
                prog.notes.not_modelled(
                    a.span,
                    f"an access to '{a.tensor}' with {len(a.region)} indices for its {len(t.shape)} dimensions",
                    "it is taken as an access to the whole tensor",
                )
                region = [Range(Const(0), d, Const(1)) for d in t.shape]
            fitted.append(replace(a, region=tuple(region)))
        if changed:
            task.accesses = tuple(fitted)


def _unit(r: Range) -> bool:
    return r.point or (isinstance(r.start, Const) and r.stop == Const(r.start.value + 1))


def _world_constant(module: ModuleInfo) -> Expr | None:
    for name in WORLD_NAMES:
        v = module.globals.get(name)
        if isinstance(v, IntVal):
            return v.expr
    return None


def _world_from_signal_rows(prog: Program) -> Expr | None:
    """The world size a signal tensor is laid out for: a cell index that a notify fills with
    the notifier's own rank (``offsets=[my_rank, 0]``) runs over one row per rank, so that
    dimension of the tensor is the number of ranks. Used only when nothing names the world;
    several different extents give no answer."""
    rank = Sym("rank", "rank")
    found: set[Expr] = set()
    for task in prog.tasks:
        for op in task.notifies:
            info = prog.tensors.infos.get(op.signal)
            if info is None or info.shape is None:
                continue
            for i, index in enumerate(op.index):
                if index == rank and i < len(info.shape):
                    found.add(info.shape[i])
    return found.pop() if len(found) == 1 else None


def _graph(entry: FuncVal, prog: Program, params: Params, module: ModuleInfo) -> ir.Graph:
    env = params.env()
    ranks: dict[str, int] = {}
    for t in prog.tasks:
        for a in t.accesses:
            ranks[a.tensor] = max(ranks.get(a.tensor, 0), len(a.region))
    tensors = prog.tensors.build(env, prog.signal_tensors, prog.window_tensors, ranks)
    for t in prog.tasks:  # accesses to tensors the reader knows nothing about: keep the graph consistent
        for a in t.accesses:
            if a.tensor not in tensors:
                tensors[a.tensor] = ir.Tensor(
                    a.tensor,
                    a.dtype,
                    tuple(r.stop for r in a.region),
                    tuple(None for _ in a.region),
                    "scratch",
                    False,
                    a.span,
                )
    _fit_ranks(prog, tensors)
    zero_writes_as_clears(prog.tasks, tensors)
    name = entry.node.name
    if name.endswith("_test") and len(name) > 5:
        name = name[: -len("_test")]
    try:
        nranks = max(1, evaluate(prog.ranks, env))
    except EvalError:
        nranks = 1
    guards, derived, domains = read_guards(module, prog.notes, params.env)
    graph = ir.Graph(
        name=name,
        file=module.file,
        span=span_of(module.file, entry.node),
        params={
            p.name: parameters.Param(p.name, p.value, p.default, p.domain, p.span)  # type: ignore[arg-type]
            for p in params.params.values()
            if p.value is not None  # an unbound dynamic axis is a runtime extent, not a parameter
        },
        consts={c.name: parameters.Const(c.name, c.expr, c.value, c.span) for c in params.consts.values()},
        assertions=list(params.assertions),
        scalars={
            n: parameters.Scalar(n, d if d in ir.INT_DTYPES else "i32", domains.get(n), s)
            for n, (d, s) in prog.scalars.items()
        },
        tensors=tensors,
        tasks=prog.tasks,
        ranks=prog.ranks,
        nranks=nranks,
        epoch_counts="calls",
        incomplete=prog.incomplete,
    )
    if guards or derived:
        graph.guards, graph.derived = guards, derived
    _check_names(graph)
    graph.edges, graph.cross_round_edges = infer_edges(graph)
    return graph


def _check_names(graph: ir.Graph) -> None:
    """Drop explicit deps on tasks that are not in the graph (an id from outside the entry)."""
    names = {t.name for t in graph.tasks}
    for t in graph.tasks:
        kept = tuple(d for d in t.after if d.target in names)
        if len(kept) != len(t.after):
            t.after = kept
