"""IR -> an AscendC project for CANN (``codegen_templates/ascendc``), checked before writing.

``render_project(graph, ...)`` returns the files of one layer's project, keyed by name:

- ``<layer>_kernels.h``: one ``extern "C" __global__ __aicore__`` kernel per task (AIV
  bodies from ``aiv``, AIC bodies from ``aic``), all in one translation unit;
- ``<layer>.asc``: the host program (ACL buffers, one launch per task in stream order,
  input/output files), which includes the kernels;
- ``CMakeLists.txt``: the ASC-language project form of the asc-devkit examples, built with
  ``cmake -S . -B build && cmake --build build``;
- ``README.md``: how to build and run it, and what each kernel allocates.

Every construct the target cannot express, and every kernel whose buffers do not fit the
core (``lint``), is collected as a located A7xx diagnostic first; if there is any, no file
is produced. Output is byte-identical for the same graph and parameters.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import jinja2

from lowering.codegen.ascendc import names
from lowering.codegen.ascendc.diagnostics import CODES, UnsupportedForAscendC, as_compile_error
from lowering.codegen.ascendc.host import host_context
from lowering.codegen.ascendc.kernel import AIC_CORES, AIV_CORES, Kernel, build_kernel, comment_text
from lowering.codegen.ascendc.lint import check_budgets
from lowering.codegen.common import generator_hash, template_environment
from lowering.ir import Graph

__all__ = ["CODES", "content_hash", "emit_kernels", "project_files", "render_project"]


def emit_kernels(graph: Graph) -> list[Kernel]:
    """Every task's kernel, or a CompileError with every A7xx diagnostic found."""
    env = graph.env()
    kernels: list[Kernel] = []
    errors: list[UnsupportedForAscendC] = []
    for i, task in enumerate(graph.tasks):
        try:
            kernel = build_kernel(graph, task, i, env)
        except UnsupportedForAscendC as err:
            errors.append(err)
            continue
        errors.extend(check_budgets(kernel, task))
        kernels.append(kernel)
    if errors:
        raise as_compile_error(errors)
    return kernels


def project_files(graph: Graph) -> dict[str, str]:
    """The file names of a layer's project (the layer's encoded name keeps them safe)."""
    stem = names.encode(graph.name)
    return {
        "kernels": f"{stem}_kernels.h",
        "host": f"{stem}.asc",
        "cmake": "CMakeLists.txt",
        "readme": "README.md",
    }


def render_project(graph: Graph, source_hash: str, version: str) -> dict[str, str]:
    kernels = emit_kernels(graph)
    files = project_files(graph)
    stem = names.encode(graph.name)
    env = _templates()
    # the mix kernels' hand-off workspaces are allocated by the host like scratch tensors
    workspaces = {name: t for k in kernels for name, t in k.workspaces.items()}
    host = host_context(replace(graph, tensors={**graph.tensors, **workspaces}), kernels, graph.env())
    context = {
        "layer_comment": comment_text(graph.name),
        "version": version,
        "source_hash": source_hash,
        "params": sorted(graph.env().items()),
        "project": stem,
        "guard": f"DSLC_{stem.upper()}_KERNELS_H",
        "kernels_file": files["kernels"],
        "host_file": files["host"],
        "kernels": [_kernel_context(k) for k in _in_launch_order(kernels, host)],
        "host": host,
        "aiv_cores": AIV_CORES,
        "aic_cores": AIC_CORES,
    }
    return {
        files["kernels"]: env.get_template("kernels.h.j2").render(**context),
        files["host"]: env.get_template("host.asc.j2").render(**context),
        files["cmake"]: env.get_template("CMakeLists.txt.j2").render(**context),
        files["readme"]: env.get_template("README.md.j2").render(**context),
    }


@cache
def _templates() -> jinja2.Environment:
    """The target's templates, compiled once per process."""
    return template_environment("ascendc")


def _in_launch_order(kernels: list[Kernel], host: dict) -> list[Kernel]:
    by_name = {k.name: k for k in kernels}
    return [by_name[launch["kernel"]] for launch in host["launches"]]


def _kernel_context(k: Kernel) -> dict:
    b = k.budget
    return {
        "name": k.name,
        "task_comment": comment_text(k.task),
        "core": k.core,
        "grid": k.grid,
        "barrier": k.barrier,
        "signature": k.signature,
        "lines": k.lines,
        "ub": b.ub,
        "l1": b.l1,
        "l0a": b.l0a,
        "l0b": b.l0b,
        "l0c": b.l0c,
        "flags": k.flags,
        "workspaces": sum(t.itemsize * t.dims[0] * t.dims[1] for t in k.workspaces.values()),
    }


def content_hash(*parts: str) -> str:
    """The key of a generated project: its inputs and the code that generates it (``generator_hash``)."""
    return generator_hash("ascendc", *parts)
