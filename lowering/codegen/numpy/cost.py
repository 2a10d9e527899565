"""The abstract cost of one block of a task: the ``cost`` of its entry in the NumPy module.

The simulator's scheduler takes a block's compute to last ``cost`` time units (and the
adversarial policy delays notifiers by up to that much), so the estimate only has to rank
tasks against each other, not time them.
"""

from __future__ import annotations

from collections.abc import Iterable

from lowering import body as ir_body
from lowering.symbolic import EvalError, evaluate

# Abstract cost of a block, in cycles of a simple throughput model: the cube does one
# 16x16x16 fractal per cycle, the vector unit and the memory path move 64 fp32 elements per
# cycle. Only ratios between layers and variants matter; it is not a timing model.
CUBE_MACS_PER_CYCLE = 16 * 16 * 16
VECTOR_ELEMENTS_PER_CYCLE = 64


def _elements(t: ir_body.Type, env: dict[str, int]) -> int:
    if not isinstance(t, ir_body.TileType):
        return 1
    n = 1
    for d in t.shape:
        try:
            n *= max(evaluate(d, env), 1)
        except EvalError:
            return 1
    return n


def _value_cost(v, env: dict[str, int]) -> float:
    if isinstance(v, ir_body.LoadV):
        return 0.0 if v.local else _elements(v.type, env) / VECTOR_ELEMENTS_PER_CYCLE
    if isinstance(v, ir_body.BinV):
        return (
            _value_cost(v.a, env) + _value_cost(v.b, env) + _elements(v.type, env) / VECTOR_ELEMENTS_PER_CYCLE
        )
    if isinstance(v, ir_body.CallV):
        inner = sum(_value_cost(a, env) for a in v.args)
        if v.op in ("matmul", "matmul_acc"):
            a, k = v.args[-2].type, 1
            if isinstance(a, ir_body.TileType):
                try:
                    k = evaluate(a.shape[0] if "a_trans" in dict(v.attrs) else a.shape[1], env)
                except EvalError:
                    k = 1
            return inner + _elements(v.type, env) * k / CUBE_MACS_PER_CYCLE
        return inner + _elements(v.type, env) / VECTOR_ELEMENTS_PER_CYCLE
    return 0.0


def block_cost(stmts: Iterable[ir_body.Stmt], env: dict[str, int], outer: int = 1) -> float:
    """Abstract cycles one block spends in ``stmts``, each run ``outer`` times (the trips of the
    loops around them); a trip count or tile extent not known at ``env`` counts as 1."""
    total = 0.0
    for s in stmts:
        if isinstance(s, ir_body.ForS):
            try:
                trips = max(0, -(-(evaluate(s.stop, env) - evaluate(s.start, env)) // evaluate(s.step, env)))
            except EvalError:
                trips = 1
            total += block_cost(s.body, env, outer * trips)
        elif isinstance(s, ir_body.IfS):
            total += (
                outer * _value_cost(s.cond, env)
                + block_cost(s.then, env, outer)
                + block_cost(s.orelse, env, outer)
            )
        elif isinstance(s, ir_body.StoreS | ir_body.RemoteStoreS):
            total += outer * (
                _value_cost(s.value, env) + _elements(s.value.type, env) / VECTOR_ELEMENTS_PER_CYCLE
            )
        elif isinstance(s, ir_body.NotifyS | ir_body.WaitS | ir_body.BarrierS):
            total += outer
        elif hasattr(s, "value"):
            total += outer * _value_cost(s.value, env)
    return total
