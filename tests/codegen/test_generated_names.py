"""The generated code keeps the author's names (issue 15, item 11; docs/naming.md).

For every layer under models/ and tests/fixtures/layers, in both Python targets:

1. every source name of a parameter, constant, tensor, runtime scalar, local or loop variable is
   written as the author wrote it (a called layer's ``gate.DC`` as ``gate_DC``), unless it
   collides -- the collisions a layer is allowed are listed in ``COLLISIONS``;
2. no identifier of the output has the escaped forms (``__``, a trailing ``_``), the invented
   temporaries of before (``_logit1``, ``_s1``, ``_g1``, ``_r2``, ``_t5``, ``_uv1_``) or the
   NumPy target's ``t_``/``v_`` prefixes, except where ``ESCAPES`` says a collision needs it;
3. the NumPy modules are ``ruff format --check`` clean under the project's configuration (the
   PyPTO modules are checked in tests/pypto/test_pypto_emit.py).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dsl
from dsl.frontend import compile_file, compile_text
from lowering import body as ir_body
from lowering.codegen.names import readable
from lowering.codegen.numpy.emit import render_numpy
from lowering.codegen.numpy.kernel import kernel_names
from lowering.codegen.pypto.emit import emitted_names, render_pypto

ROOT = Path(__file__).resolve().parents[2]
LAYERS = sorted((ROOT / "models").rglob("*.dsl")) + sorted(
    (ROOT / "tests" / "fixtures" / "layers").glob("*.dsl")
)
RUFF = Path(sys.executable).with_name("ruff")

COLLISION = ROOT / "tests" / "fixtures" / "layers" / "name_collision.dsl"
#: (layer, source name) -> the emitted name a collision gives it: the callee's scratch
#: `stage.tmp` reads as `stage_tmp`, which the caller's own tensor is called.
COLLISIONS: dict[tuple[str, str], str] = {("name_collision", "stage.tmp"): "stage__tmp_"}
#: (layer, identifier): escaped identifiers a documented collision needs.
ESCAPES: set[tuple[str, str]] = {("name_collision", "stage__tmp_")}

OLD_TEMPORARY = re.compile(r"^_(logit|s|g|r|t|uv)\d+_?$")


@pytest.fixture(scope="module")
def graphs():
    return {p: compile_file(p) for p in LAYERS}


def identifiers(text: str) -> set[str]:
    """Every name the module binds or reads (variables, parameters, functions)."""
    out: set[str] = set()
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.FunctionDef):
            out.add(n.name)
    return out


def body_names(task) -> tuple[list[str], set[str]]:
    """A task's locals and loop variables (the front end's temporaries aside), and its inlined
    integer lets (whose line is dropped when nothing uses the name)."""
    names, inlined = [], set()
    for s in ir_body.nested_stmts(task.body):
        if isinstance(s, ir_body.LetS | ir_body.AssignS | ir_body.ForS):
            name = s.var if isinstance(s, ir_body.ForS) else s.name
            if not ir_body.is_temp(name):
                names.append(name)
                if isinstance(s, ir_body.LetS) and s.inlined:
                    inlined.add(name)
    return names, inlined


def wanted(graph, name: str) -> str:
    want = COLLISIONS.get((graph.name, name), readable(name))
    assert want is not None, f"{graph.name}: {name!r} has no readable form and is not a listed collision"
    return want


@pytest.mark.parametrize("path", LAYERS, ids=lambda p: p.stem)
def test_pypto_keeps_every_author_name(graphs, path):
    for graph in graphs[path]:
        ids = identifiers(render_pypto(graph, "h", "v"))
        names, _, _ = emitted_names(graph)
        for name in [*graph.params, *graph.consts, *graph.tensors, *graph.scalars]:
            want = wanted(graph, name)
            if name in graph.consts and names(name) != want:  # written as an equal enclosing constant
                outer = graph.consts[names(name)]  # the enclosing layer's, under its own name
                assert outer.expr == graph.consts[name].expr and "." not in outer.name, name
                assert want not in ids, name
                continue
            assert names(name) == want and want in ids, (graph.name, name, names(name))
        for task in graph.tasks:
            local, inlined = body_names(task)
            for name in local:
                want = wanted(graph, name)
                assert names(name) == want, (graph.name, task.name, name, names(name))
                assert want in ids or f"_{want}" in ids or name in inlined, (graph.name, task.name, name)


@pytest.mark.parametrize("path", LAYERS, ids=lambda p: p.stem)
def test_numpy_keeps_every_author_name(graphs, path):
    for graph in graphs[path]:
        ids = identifiers(render_numpy(graph, "h", "v"))
        for task in graph.tasks:
            names = kernel_names(graph, task)
            local, inlined = body_names(task)
            for name in local:
                want = wanted(graph, name)
                assert names(name) == want, (graph.name, task.name, name, names(name))
                # a let of parameters only is a literal in NumPy, and a dropped let is not written
                assert want in ids or f"_{want}" in ids or name in inlined, (graph.name, task.name, name)
            for name in {a.tensor for a in task.accesses}:
                assert names(name) == wanted(graph, name), (graph.name, task.name, name)


def escaped(identifier: str, target: str) -> bool:
    if identifier == "_" or (identifier.startswith("__") and identifier.endswith("__")):
        return False  # `_ = (block, ...)`, `__name__`
    return (
        "__" in identifier
        or identifier.endswith("_")
        or bool(OLD_TEMPORARY.match(identifier))
        or (target == "numpy" and bool(re.match(r"[tv]_", identifier)))
    )


@pytest.mark.parametrize("path", LAYERS, ids=lambda p: p.stem)
def test_no_escaped_or_invented_names(graphs, path):
    for graph in graphs[path]:
        for target, text in (
            ("pypto", render_pypto(graph, "h", "v")),
            ("numpy", render_numpy(graph, "h", "v")),
        ):
            bad = sorted(
                i for i in identifiers(text) if escaped(i, target) and (graph.name, i) not in ESCAPES
            )
            assert bad == [], (target, graph.name, bad)


SCOPES = """
layer scope(N = 16, I = 4) {
  input  pl: f32[N, 8]
  output y: f32[N, 8]
  task t on aiv {
    let l = pl[:, :] * 2.0
    for it in range(I) { y[:, :] = l }
    let r = l * 3.0
    y[:, :] = r + 1.0
  }
}
"""


def test_kernel_locals_keep_names_a_module_level_name_would_lose():
    """`r`, `I`, `l` and `it` are the author's: nothing in their scope is called so, so they
    stay (`it`, never read, is `_it`). A module constant `r` would be the host driver's rank loop
    variable, and is escaped; a tensor `pl` would shadow the import."""
    (graph,) = compile_text(SCOPES, "scope.dsl")
    text = render_pypto(graph, "h", "v")
    assert "\nI = 4\n" in text and "def scope(pl_: pl.Tensor[[N, 8], pl.FP32], y:" in text
    for line in (
        "        l = pl.mul(pl_[:, :], 2.0)",
        "        for _it in pl.range(I):",
        "        r = pl.mul(l, 3.0)",
    ):
        assert line in text, line
    numpy_text = render_numpy(graph, "h", "v")
    assert '    pl = ctx.t("pl")' in numpy_text and "    r = _op.mul(l, 3.0)" in numpy_text  # no `pl` here
    (graph,) = compile_text(
        SCOPES.replace("I = 4", "r = 4")
        .replace("range(I)", "range(r)")
        .replace("let r", "let m")
        .replace("r + 1", "m + 1"),
        "s.dsl",
    )
    assert "\nr_ = 4\n" in render_pypto(graph, "h", "v")


def test_a_callee_constant_equal_to_an_enclosing_one_is_not_written_again(graphs):
    (moe,) = graphs[ROOT / "models" / "deepseek_v4_flash" / "moe.dsl"]
    text = render_pypto(moe, "h", "v")
    assert "\nE = N_LOCAL * EP\n" in text and "dispatch_E" not in text and "dispatch__E_" not in text
    assert "[1, E]" in text  # dispatch's send counts, sized by its E, use the caller's


@pytest.mark.skipif(not RUFF.exists(), reason="the ruff binary is not installed next to this Python")
def test_numpy_modules_are_ruff_format_clean(graphs, tmp_path):
    written = []
    for path, gs in graphs.items():
        for graph in gs:
            out = tmp_path / f"m{len(written)}_{path.stem}.py"
            out.write_text(render_numpy(graph, "h", "v"), encoding="utf-8")
            written.append(out)
    proc = subprocess.run(
        [str(RUFF), "format", "--check", "--diff", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
         *map(str, written)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr


def test_a_tensor_name_with_no_readable_form_still_names_the_temporaries_it_feeds(tmp_path):
    """``x__y`` and ``idx_`` have no readable form (docs/naming.md): the value read from them is
    a plain ``val``, in both targets, and the layer compiles and runs (it used to stop the NumPy
    target with an AttributeError)."""
    source = """layer odd_names(N = 16) {
  input  x__y: f32[N, 8]
  input  idx_: i32[4]
  output y: f32[N, 8]
  task t on aiv {
    y[idx_[0] + 1, :] = x__y[idx_[1] * 2, :]
  }
}
"""
    (graph,) = compile_text(source, "odd_names.dsl")
    for text in (render_numpy(graph, "h", "v"), render_pypto(graph, "h", "v")):
        found = identifiers(text)
        assert "val" in found and "val2" in found, sorted(found)


def test_a_collision_is_written_as_the_naming_rules_say(graphs, tmp_path, monkeypatch):
    """tests/fixtures/layers/name_collision.dsl, in the three targets, as exact text: the
    caller's `stage_tmp` keeps its name, the callee's `stage.tmp` is escaped, and the two stay
    two buffers (run: `post` reads the caller's values, not the callee's doubled ones)."""
    (graph,) = graphs[COLLISION]
    pypto = [line.strip() for line in render_pypto(graph, "h", "v").splitlines() if "tmp" in line]
    assert pypto == [
        "stage_tmp = pl.create_tensor([N, D], dtype=pl.FP32)",
        "stage__tmp_ = pl.create_tensor([N, D], dtype=pl.FP32)",
        "stage_tmp = pl.assemble(stage_tmp, pl.add(x[:, :], 100.0), [0, 0])",
        "stage__tmp_ = pl.assemble(stage__tmp_, pl.mul(stage_tmp[:, :], 2.0), [0, 0])",
        "y = pl.assemble(y, stage__tmp_[:, :], [0, 0])",
        "z = pl.assemble(z, stage_tmp[:, :], [0, 0])",
    ]
    numpy_text = render_numpy(graph, "h", "v")
    bound = [line.strip() for line in numpy_text.splitlines() if "= ctx.t(" in line and "tmp" in line]
    assert bound == [
        'stage_tmp = ctx.t("stage_tmp")',
        'stage__tmp_ = ctx.t("stage.tmp")',
        'stage_tmp = ctx.t("stage_tmp")',
        'stage__tmp_ = ctx.t("stage.tmp")',
        'stage_tmp = ctx.t("stage_tmp")',
    ]
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    layer = dsl.load(COLLISION)
    inputs = layer.make_inputs(0)
    outputs = layer.run(inputs).outputs[0]
    x = inputs[0]["x"]
    assert np.array_equal(outputs["z"], x + np.float32(100.0))
    assert np.array_equal(outputs["y"], (x + np.float32(100.0)) * np.float32(2.0))
