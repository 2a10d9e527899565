"""AscendC target: what a mix task costs as one MIX kernel, and whether the alternative exists.

    python bench/bench_ascendc_mix.py

For every ``mix`` task of the models, the fixtures and the MIX golden tests
(tests/ascendc/test_ascendc_mix.py), the plan ``lowering.codegen.ascendc.mix`` makes: the
cross-core flag pairs in the program (static) and per block (loops unrolled at their trip
counts), split by direction and by cause (a conflicting statement, or the settle at a
loop/if/block edge), and the GM workspace of the hand-off slots. Against it, the
alternative -- an AIC kernel, then an AIV kernel in stream order -- exists only when no
vector statement feeds a later cube statement (no conflict-caused AIV -> AIC flag); its
workspace is every cube -> vector slot times the iterations of the loops around its store
(one slot per iteration: the AIV kernel runs after the whole AIC kernel). Prints Markdown.
A task the split refuses is listed with its A703.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ascendc"))

from ascutil import SOURCES  # noqa: E402

from dsl.frontend import compile_file, compile_text  # noqa: E402
from lowering import body as ir_body  # noqa: E402
from lowering.codegen.ascendc.diagnostics import UnsupportedForAscendC  # noqa: E402
from lowering.codegen.ascendc.mix import CrossFlagS, split_mix  # noqa: E402
from lowering.symbolic import EvalError, evaluate  # noqa: E402


def _walk(stmts, env, times, visit) -> None:
    for s in stmts:
        if isinstance(s, ir_body.ForS):
            try:
                n = max(0, -(-(evaluate(s.stop, env) - evaluate(s.start, env)) // evaluate(s.step, env)))
            except EvalError:
                n = 1  # a bound only known at run time: counted once
            _walk(s.body, env, times * n, visit)
        elif isinstance(s, ir_body.IfS):
            _walk(s.then, env, times, visit)
            _walk(s.orelse, env, times, visit)
        else:
            visit(s, times)


def measure(graph, task) -> dict:
    env = graph.env()
    plan = split_mix(graph, task, env)
    flags = {"c2v": 0, "v2c": 0, "conflict v2c": 0, "per block": 0}
    split_ws = 0

    def on_aic(s, times):
        nonlocal split_ws
        if isinstance(s, CrossFlagS) and s.op == "set":
            flags["c2v"] += 1
            flags["per block"] += times
        if isinstance(s, ir_body.StoreS) and s.tensor in plan.workspaces:
            t = plan.workspaces[s.tensor]
            split_ws += t.dims[0] * t.dims[1] * t.itemsize * times

    def on_aiv(s, times):
        if isinstance(s, CrossFlagS) and s.op == "set":
            flags["v2c"] += 1
            flags["per block"] += times
            flags["conflict v2c"] += s.why == "conflict"

    _walk(plan.aic, env, 1, on_aic)
    _walk(plan.aiv, env, 1, on_aiv)
    ws = sum(t.dims[0] * t.dims[1] * t.itemsize for t in plan.workspaces.values())
    return {"plan": plan, "ws": ws, "split_ws": split_ws, **flags}


def main() -> None:
    from test_ascendc_mix import HANDOFFS, PHASES, RESCALE

    graphs = [(p.relative_to(ROOT).as_posix(), g) for p in SOURCES for g in compile_file(p)]
    graphs += [("test_ascendc_mix.py:HANDOFFS", g) for g in compile_text(HANDOFFS, "handoffs.dsl")]
    graphs += [("test_ascendc_mix.py:PHASES", g) for g in compile_text(PHASES, "phases.dsl")]
    graphs += [("test_ascendc_mix.py:RESCALE", g) for g in compile_text(RESCALE, "rescale.dsl")]
    print(
        "| layer | mix task | grid | flag pairs: program (AIC->AIV, AIV->AIC) | per block | MIX workspace | split form | split workspace |"
    )
    print("|---|---|---:|---|---:|---:|---|---:|")
    for where, graph in graphs:
        for task in graph.tasks:
            if task.core != "mix":
                continue
            try:
                m = measure(graph, task)
            except UnsupportedForAscendC as err:
                d = err.diagnostic
                print(
                    f"| {where} | {task.name} | {task.blocks} | refused: {d.code} at {d.span.line}:{d.span.col} | | | | |"
                )
                continue
            split = "no: a vector statement feeds a later matmul" if m["conflict v2c"] else "2 launches"
            print(
                f"| {where} | {task.name} | {task.blocks} | {m['c2v'] + m['v2c']} ({m['c2v']}, {m['v2c']}) "
                f"| {m['per block']} | {m['ws']} B | {split} | {'' if m['conflict v2c'] else str(m['split_ws']) + ' B'} |"
            )


if __name__ == "__main__":
    main()
