"""A graph moved to another parameter point of its structure class, without elaborating again.

Everything an elaborated :class:`~lowering.ir.Graph` needs to know about its point is either
symbolic (grids, regions, loops, conditions, signal values, shapes) or a value computed from
a symbolic form (``Task.blocks``, ``Tensor.dims``, ``Param.value``, ``Const.value``,
``nranks``, the ranges of runtime scalars) plus the edges the runtime infers there. ``graph_at`` recomputes exactly those;
the tasks' bodies and accesses are shared. It is valid only at points of the same structure
class (``Graph.same_structure``: the same layer ``if`` branches and layer loop bounds), where
elaboration would produce the same tasks.
"""

from __future__ import annotations

import dataclasses

from lowering.edges import infer_edges
from lowering.ir import Graph
from lowering.symbolic import EvalError, evaluate


def graph_at(graph: Graph, env: dict[str, int]) -> Graph:
    """``graph`` at the parameter point ``env`` (parameters and constants; see ``Graph.env_at``)."""
    if not graph.same_structure(env):
        raise ValueError("graph_at: the point elaborates to other tasks (another structure class)")
    params = {n: dataclasses.replace(p, value=env[n]) for n, p in graph.params.items()}
    consts = {n: dataclasses.replace(c, value=env[n]) for n, c in graph.consts.items()}
    tensors = {n: dataclasses.replace(t, dims=_dims(t.shape, t.dims, env)) for n, t in graph.tensors.items()}
    tasks = [dataclasses.replace(t, blocks=evaluate(t.grid, env)) for t in graph.tasks]
    scalars = {n: dataclasses.replace(s, domain=s.domain_at(env)) for n, s in graph.scalars.items()}
    moved = dataclasses.replace(
        graph,
        params=params,
        consts=consts,
        tensors=tensors,
        tasks=tasks,
        scalars=scalars,
        nranks=evaluate(graph.ranks, env),
        edges=[],
        cross_round_edges=[],
    )
    moved.edges, moved.cross_round_edges = infer_edges(moved)
    return moved


def _dims(shape, dims, env) -> tuple[int | None, ...]:
    out = []
    for expr, was in zip(shape, dims, strict=True):
        if was is None:  # a runtime extent stays one
            out.append(None)
            continue
        try:
            out.append(evaluate(expr, env))
        except EvalError:
            out.append(was)
    return tuple(out)
