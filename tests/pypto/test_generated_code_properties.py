"""Property (issue 14): a layer built from colliding names, deep nesting and large extents either
compiles to modules -- NumPy and PyPTO -- that ``compile()`` and import, with one buffer per
source tensor, and to an AscendC project that is well-formed C++ with one GlobalTensor per
source tensor in each kernel, or yields diagnostics that are all located in the source. Never
an exception of another kind, never a module that does not compile.

The layers are generated from a few hypothesis choices (``derandomize``: every run draws the
same ones): a callee whose private scratch ``tmp`` and tasks meet the caller's names under
mangling (``stage.tmp`` against ``stage_tmp``, ``stage__tmp``, ``stage_utmp_``...), loops and
expressions nested up to past the limits, and extents, grids and scalar ranges up to 2^40.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyptostubs import install

from dsl.codes import CODES
from dsl.frontend import compile_text
from lowering.codegen.ascendc.diagnostics import CODES as ASCENDC_CODES
from lowering.codegen.ascendc.emit import render_project
from lowering.codegen.ascendc.toolchain import lexical_problems
from lowering.codegen.common import TargetLimit
from lowering.codegen.numpy.emit import render_numpy
from lowering.codegen.pypto.emit import render_pypto
from lowering.source import CompileError

COLLIDING = [
    "stage_tmp",
    "stage__tmp",
    "stage_utmp_",
    "stage_tmp_",
    "_stage_tmp",
    "stage_b0_e_",
    "tmp",
    "block_",
]
EXTENTS = [1, 2, 16, 1000, 2**20, 2**31, 2**40]


@st.composite
def layers(draw) -> tuple[str, set[str]]:
    caller_scratch = draw(st.lists(st.sampled_from(COLLIDING), min_size=1, max_size=3, unique=True))
    n = draw(st.sampled_from(EXTENTS))
    grid = draw(st.sampled_from(EXTENTS))
    loops = draw(st.integers(0, 3) | st.integers(17, 22))  # around the targets' nesting limits
    trips = draw(st.sampled_from([1, 2, 2**40]))
    terms = draw(st.integers(1, 5) | st.integers(95, 105))  # around the expression depth limit
    ranges = [("i32", 1000), ("i32", 2**31 - 1), ("i64", 2**40), ("i64", 2**62), ("i32", 2**32)]
    dtype, hi = draw(st.sampled_from(ranges))
    body = " ".join(f"for l{k} in range({trips}) {{" for k in range(loops))
    expr = " + ".join([f"{caller_scratch[0]}[0 : 1, :]"] * terms)
    source = f"""
layer inner(N = 4, D = 8) {{
  input  src: f32[N, D]
  output dst: f32[N, D]
  scratch tmp: f32[N, D]
  task a on aiv {{ tmp[:, :] = src[:, :] * 2.0 }}
  task b on aiv after a {{ dst[:, :] = tmp[:, :] }}
}}

layer outer(N = {n}, D = 8) {{
  scalar count: {dtype} in 1..{hi}
  input   x: f32[4, D]
  output  y: f32[4, D]
  output  z: f32[1, D]
  output  big: f32[N, 1]
{"".join(f"  scratch {s}: f32[4, D]{chr(10)}" for s in caller_scratch)}
  task pre on aiv {{ {" ".join(f"{s}[:, :] = x[:, :] + 1.0" for s in caller_scratch)} }}
  call stage = inner(N = 4, D = D, src = {caller_scratch[0]}, dst = y)
  task post on aiv after stage.b, pre {{ {body} z[:, :] = {expr} {"}" * loops} }}
  task grid spmd({grid}) on aiv {{ big[block % N : block % N + 1, :] = x[0 : 1, 0 : 1] }}
}}
"""
    return source, {*caller_scratch, "stage.tmp"}


def located(err: CompileError, text: str, codes=CODES) -> None:
    lines = text.split("\n")
    for d in err.diagnostics:
        assert d.code in codes, d
        assert 1 <= d.span.line <= len(lines) and 1 <= d.span.col <= len(lines[d.span.line - 1]) + 1, d


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(case=layers())
def test_generated_layers_compile_and_import_or_are_located_errors(case):
    with pytest.MonkeyPatch.context() as mp:
        install(mp)  # PyPTO modules import `pypto.language`: stand-ins, as in test_pypto_host
        check(*case)


def check(source: str, scratch: set[str]) -> None:
    try:
        (graph,) = compile_text(source, "p.dsl", layer="outer")
    except CompileError as err:
        located(err, source)
        return
    for render, target in ((render_numpy, "numpy"), (render_pypto, "pypto")):
        try:
            text = render(graph, "h", "v")
        except TargetLimit as err:
            assert err.span is not None and err.span.line >= 1, err
            assert "CPython compiles at most 20" in str(err) or target == "pypto", err
            continue
        namespace: dict = {"__name__": f"generated_{target}"}
        exec(compile(text, f"<{target}>", "exec"), namespace)  # it compiles, and it imports
        if target == "numpy":
            tensors = {t.name for t in namespace["PROGRAM"].tensors}
            assert scratch <= tensors
            names_of: dict[str, set[str]] = {}
            for var, name in re.findall(r"^    (t_\w+) = ctx\.t\('([^']+)'\)$", text, re.M):
                names_of.setdefault(var, set()).add(name)
            assert all(len(names) == 1 for names in names_of.values()), names_of  # one buffer per local
        else:
            created = re.findall(r"^\s+(\w+) = pl\.create_tensor", text, re.M)
            assert len(created) == len(set(created)) == len(scratch)
    check_ascendc(graph, source)


def check_ascendc(graph, source: str) -> None:
    try:
        files = render_project(graph, "h", "v")
    except CompileError as err:  # what the target cannot express: A7xx, located
        located(err, source, ASCENDC_CODES)
        return
    for name, text in files.items():
        if name.endswith((".h", ".asc")):
            assert lexical_problems(name, text) == [], name
    kernels = next(text for name, text in files.items() if name.endswith("_kernels.h"))
    for kernel in kernels.split('extern "C"')[1:]:
        declared = re.findall(r"AscendC::GlobalTensor<\w+> (t_\w+);", kernel)
        assert len(declared) == len(set(declared)), declared  # no two source tensors share one
