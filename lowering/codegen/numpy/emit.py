"""IR -> one Python module of NumPy kernels for the simulator (``codegen_templates/numpy``).

Every task becomes a generator function run once per block; ``wait`` and ``barrier`` yield
to the simulator, a plain read-modify-write ``+=`` yields between its read and its write
(another block may interleave there, as on the device). Parameters are folded to literals,
so the module is specific to one parameter point; it is byte-identical for the same input.

Nothing from the source reaches the output as code except names, written injectively
(``lowering.codegen.names.ModuleNames``, docs/naming.md): a kernel's tensors and locals under
their own (readable) names (an integer ``let`` included: it is written once and named at its
uses, ``NamedInts``), ``s_`` before a runtime scalar, ``task_`` before the kernel of a task --
so two source names never share a variable; tensor and task names otherwise appear only as
string literals. Lines longer than 110 columns are split at their brackets
(``lowering.codegen.python_text.wrap_lines``). The module is ``compile()``d before it is returned, and loops nested deeper than
CPython compiles are refused first, as a located error (``TargetLimit``).

The module also holds the layer's host guards (``guard cond, "message"``) as
``check_request(scalars) -> list[str]``, written by ``lowering.codegen.numpy.host``.

This module assembles the template's context: each task's kernel lines come from
``lowering.codegen.numpy.kernel``, its block cost from ``lowering.codegen.numpy.cost``; here
they join the dependency, tensor and parameter tables, are rendered and compiled.
"""

from __future__ import annotations

import re

from lowering.codegen.common import generator_hash, template_environment
from lowering.codegen.names import IDENTIFIER, ModuleNames, UnsafeName
from lowering.codegen.numpy.cost import block_cost
from lowering.codegen.numpy.host import guard_context
from lowering.codegen.numpy.kernel import NUMPY_DTYPES, Kernel, checked_source_name
from lowering.codegen.python_text import check_block_nesting, compile_python, py_literal, py_str, wrap_lines
from lowering.ir import Graph


def module_context(graph: Graph, source_hash: str, version: str) -> dict:
    env = graph.env()
    index = {t.name: i for i, t in enumerate(graph.tasks)}
    deps: dict[str, list[int]] = {t.name: [] for t in graph.tasks}
    for e in graph.edges:
        if index[e.src] not in deps[e.dst]:
            deps[e.dst].append(index[e.src])
    prev: dict[str, list[int]] = {t.name: [] for t in graph.tasks}
    for e in graph.cross_round_edges:
        if index[e.src] not in prev[e.dst]:
            prev[e.dst].append(index[e.src])
    kernels, tasks, scalars = [], [], set(graph.scalars)
    functions = kernel_functions(graph)
    for i, task in enumerate(graph.tasks):
        check_block_nesting(task.body, 0, "numpy", " (each a Python `for` in the task's kernel)")
        k = Kernel(graph, task, env)
        k.stmts(task.body, 1)
        code = "\n".join(k.lines)  # scalars read only by a let whose line was dropped are not read
        k.scalars = {n for n in k.scalars if re.search(rf"\bs_{n}\b", code)}
        kernels.append(
            {
                "index": i,
                "function": functions[task.name],
                "name": checked_source_name(task.name),
                "tensors": sorted(k.tensors),
                "vars": {n: k.tensor_var(n) for n in sorted(k.tensors)},
                "scalars": sorted(k.scalars),
                "lines": k.lines,
            }
        )
        scalars |= k.scalars
        pred = None
        if task.predicate is not None:
            p = task.predicate
            at = Kernel(graph, task, env, at_dispatch=True)
            cell = ", ".join(at.int_code(i) for i in p.index)
            pred = f"lambda mem: bool(mem.t({py_str(checked_source_name(p.tensor))})[{cell}] {p.cmp} {at.int_code(p.value)})"
        tasks.append(
            {
                "name": task.name,
                "shape": task.core,
                "blocks": task.blocks,
                "deps": tuple(sorted(deps[task.name])),
                "prev": tuple(sorted(prev[task.name])),
                "early": task.early_resolve,
                "sync": task.sync_start,
                "predicate": pred,
                "cost": max(1, round(block_cost(task.body, env))),
                "notifier": bool(task.notifies),
                "waiter": bool(task.waits),
            }
        )
    tensors = [
        {
            "name": checked_source_name(t.name),
            "shape": tuple(d if d is not None else 0 for d in t.dims),
            "dtype": NUMPY_DTYPES[t.dtype],
            "kind": t.kind,
        }
        for t in graph.tensors.values()
    ]
    code = "\n".join(line for k in kernels for line in k["lines"]) + "".join(
        t["predicate"] or "" for t in tasks
    )
    return {
        "uses_numpy": "np." in code,
        "uses_tileops": "_op." in code,
        "layer": checked_source_name(graph.name, IDENTIFIER),
        "version": version,
        "source_hash": source_hash,
        "params": {k: v for k, v in sorted(env.items())},
        "nranks": graph.nranks,
        "scalars": tuple(sorted(checked_source_name(s, IDENTIFIER) for s in scalars)),
        "tensors": tensors,
        "kernels": kernels,
        "tasks": tasks,
        "host": guard_context(graph, env),
    }


def kernel_functions(graph: Graph) -> dict[str, str]:
    """Each task's kernel function: ``task_`` and the task's readable name (``dispatch.send`` ->
    ``task_dispatch_send``, ``mm[3]`` -> ``task_mm_3``), injective over the module's tasks."""
    try:
        names = ModuleNames([t.name for t in graph.tasks], lambda _: frozenset())
    except UnsafeName:
        for t in graph.tasks:
            checked_source_name(t.name)  # the located refusal of the name that is not one
        raise
    return {t.name: "task_" + names(t.name) for t in graph.tasks}


def render_numpy(graph: Graph, source_hash: str, version: str) -> str:
    """The NumPy module of ``graph``; a TargetLimit (located) for what it cannot express."""
    env = template_environment("numpy")
    env.filters["pyrepr"] = py_literal
    text = wrap_lines(env.get_template("layer.py.j2").render(**module_context(graph, source_hash, version)))
    compile_python(text, f"<numpy module of {graph.name}>", "numpy")
    return text


def content_hash(*parts: str) -> str:
    """The cache key of a generated NumPy module: its inputs and the code that generates it (``generator_hash``)."""
    return generator_hash("numpy", *parts)
