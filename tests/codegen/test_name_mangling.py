"""Name mangling (``lowering.codegen.names.mangle``, docs/naming.md): injective in every target,
so two source names never share a generated name -- the reproducers of issue 14 included."""

from __future__ import annotations

import ast
import keyword
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dsl
from dsl.frontend import compile_text
from lowering.codegen.names import PLAIN_NAME, ModuleNames, UnsafeName, helper_name, mangle, readable
from lowering.codegen.numpy.emit import render_numpy
from lowering.codegen.pypto.emit import render_pypto
from lowering.codegen.pypto.text import RESERVED, py_name

SEGMENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
NAME = st.builds(
    lambda parts, index: ".".join(parts) + (f"[{index}]" if index is not None else ""),
    st.lists(SEGMENT, min_size=1, max_size=3),
    st.none() | st.integers(0, 99),
)


def unmangle(text: str) -> str:
    """The inverse of ``mangle`` on escaped names (the proof of injectivity, as code)."""
    if not text.endswith("_"):
        return text
    body, out, i = text[:-1], [], 0
    escapes = {"u": "_", "_": ".", "b": "[", "e": "]"}
    while i < len(body):
        if body[i] == "_":
            out.append(escapes[body[i + 1]])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(name=NAME)
def test_mangle_reads_back_to_the_source_name(name):
    out = mangle(name)
    assert out.isidentifier() and not keyword.iskeyword(out)
    assert unmangle(out) == name


@settings(max_examples=200, deadline=None, derandomize=True)
@given(a=NAME, b=NAME)
def test_two_names_never_meet(a, b):
    if a != b:
        assert mangle(a) != mangle(b)
        assert py_name(a) != py_name(b)


#: Names built to collide under the readable scheme: `a.b_c`, `a_b.c`, `a_b_c`, `a[1]`, `a_1`, ...
CLASHING = st.lists(
    st.builds(
        lambda parts, seps, index: (
            "".join(p + s for p, s in zip(parts, seps, strict=False))
            + parts[-1]
            + (f"[{index}]" if index is not None else "")
        ),
        st.lists(st.sampled_from(["a", "b", "c", "in", "r", "x1", "_a", "b_"]), min_size=2, max_size=3),
        st.lists(st.sampled_from([".", "_", "__"]), min_size=2, max_size=2),
        st.none() | st.integers(0, 3),
    )
    | NAME,
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(names=CLASHING, reserved=st.sets(st.sampled_from(["in", "r", "a_b", "c", "pl"])))
def test_module_names_are_injective_within_a_module(names, reserved):
    """The property the scheme keeps: within one module, distinct source names never share an
    emitted name, none becomes a reserved name, and a plain name keeps itself unless reserved."""
    m = ModuleNames(names, lambda _: reserved)
    out = {n: m(n) for n in names}
    assert len(set(out.values())) == len(set(names)), out
    for n, text in out.items():
        assert text.isidentifier() and not keyword.iskeyword(text) and text not in reserved
        if PLAIN_NAME.match(n) and n not in reserved:
            assert text == n
        if text.endswith("_"):
            assert unmangle(text) == n  # an escaped name reads back
    late = m("zz.late")  # a name not declared up front is granted only a free name
    assert late not in out.values()


def test_readable_names_and_their_collisions():
    m = ModuleNames(["dispatch.send_cnt", "mm[3]", "gate.DC", "stage_tmp", "stage.tmp", "x"], lambda _: {"r"})
    assert [m(n) for n in ("dispatch.send_cnt", "mm[3]", "gate.DC", "x")] == [
        "dispatch_send_cnt",
        "mm_3",
        "gate_DC",
        "x",
    ]
    assert m("stage_tmp") == "stage_tmp" and m("stage.tmp") == "stage__tmp_"  # the author's plain name wins
    both = ModuleNames(["a.b_c", "a_b.c"], lambda _: frozenset())
    assert {both("a.b_c"), both("a_b.c")} == {"a__b_uc_", "a_ub__c_"}  # neither is plain: both escaped
    assert ModuleNames(["r"], lambda _: {"r"})("r") == "r_"
    assert readable("stage__tmp") is None and readable("_v1") is None and readable("x_") is None


@settings(max_examples=200, deadline=None, derandomize=True)
@given(name=NAME, what=st.sampled_from(["buf", "tid", "inputs"]))
def test_helper_names_are_outside_the_image_of_mangle(name, what):
    helper = helper_name(name, what)
    assert helper.startswith("_") and not helper.endswith("_")
    assert unmangle(helper) == helper  # not an escaped name, and no plain name starts with "_"
    assert not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*", helper)


@pytest.mark.parametrize(
    ("name", "expected"),
    [  # mangle, the escape of a name the readable form cannot take (ModuleNames)
        ("hc_pre", "hc_pre"),
        ("stage.tmp", "stage__tmp_"),
        ("stage__tmp", "stage_u_utmp_"),
        ("stage_tmp", "stage_tmp"),
        ("mm[3]", "mm_b3_e_"),
        ("_v1", "_uv1_"),
        ("x_", "x_u_"),
    ],
)
def test_the_documented_examples(name, expected):
    assert mangle(name) == expected


def test_reserved_names_are_escaped_and_unsafe_ones_refused():
    assert py_name("in") == "in_" and py_name("block") == "block_" and py_name("pl") == "pl_"
    assert {"pl", "golden", "r", "my_rank"} <= RESERVED
    for bad in ("a-b", "1x", "x'); import os; ('", ""):
        with pytest.raises(UnsafeName):
            mangle(bad)


CALLEE = """
layer inner(N = 4, D = 8) {
  input  src: f32[N, D]
  output dst: f32[N, D]
  scratch tmp: f32[N, D]
  task a on aiv { tmp[:, :] = src[:, :] * 2.0 }
  task b on aiv after a { dst[:, :] = tmp[:, :] }
}
"""

NUMPY_COLLISION = (
    CALLEE
    + """
layer outer(N = 4, D = 8) {
  golden "outer_golden.py"
  input   x: f32[N, D]
  scratch stage_tmp: f32[N, D]
  output  y: f32[N, D]
  output  z: f32[N, D]
  task pre on aiv { stage_tmp[:, :] = x[:, :] + 100.0 }
  call stage = inner(N = N, D = D, src = stage_tmp, dst = y)
  task post on aiv after stage.b { z[:, :] = stage_tmp[:, :] }
}
"""
)

GOLDEN = """
import numpy as np

TOLERANCES = {n: {"comparator": "allclose", "atol": 0.0, "rtol": 0.0} for n in ("y", "z")}


def make_inputs(params, seed, ranks):
    return {"x": np.arange(params["N"] * params["D"], dtype=np.float32).reshape(params["N"], params["D"])}


def golden(inputs, params):
    x = inputs[0]["x"]
    return {"y": (x + 100.0) * 2.0, "z": x + 100.0}
"""


def test_numpy_keeps_a_callee_scratch_apart_from_a_caller_tensor(tmp_path, monkeypatch):
    """name_collision_numpy.dsl: `stage.tmp` and `stage_tmp` were one local; the layer MISMATCHed."""
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "outer.dsl").write_text(NUMPY_COLLISION)
    (tmp_path / "outer_golden.py").write_text(GOLDEN)
    layer = dsl.load(tmp_path / "outer.dsl", layer="outer")
    inputs = layer.make_inputs(0)
    validation = layer.validate(inputs, layer.run(inputs))
    assert validation.passed, [(c.name, c.message) for c in validation.checks]
    text = layer.module_path.read_text()
    assert 'stage__tmp_ = ctx.t("stage.tmp")' in text and 'stage_tmp = ctx.t("stage_tmp")' in text


def test_pypto_keeps_a_callee_scratch_apart_from_a_caller_tensor():
    """name_collision_pypto.dsl: `stage.tmp` and `stage__tmp` were one `pl.create_tensor` buffer."""
    source = CALLEE + NUMPY_COLLISION.split(CALLEE)[1].replace("stage_tmp", "stage__tmp").replace(
        '  golden "outer_golden.py"\n', ""
    )
    (graph,) = compile_text(source, "c.dsl", layer="outer")
    text = render_pypto(graph, "h", "v")
    created = re.findall(r"^\s+(\w+) = pl\.create_tensor", text, re.M)
    assert sorted(created) == ["stage_tmp", "stage_u_utmp_"]  # `stage__tmp` has no readable form
    tree = ast.parse(text)
    stored = {
        n.targets[0].id
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
    }
    assert {"stage_tmp", "stage_u_utmp_"} <= stored


def test_pypto_keeps_the_callers_plain_name_and_escapes_the_callee_s():
    """`stage.tmp` reads as `stage_tmp`, unless the caller has a `stage_tmp` of its own: then the
    author's name stays and the callee's is escaped."""
    source = CALLEE + NUMPY_COLLISION.split(CALLEE)[1].replace('  golden "outer_golden.py"\n', "")
    (graph,) = compile_text(source, "c.dsl", layer="outer")
    text = render_pypto(graph, "h", "v")
    created = re.findall(r"^\s+(\w+) = pl\.create_tensor", text, re.M)
    assert sorted(created) == ["stage__tmp_", "stage_tmp"]
    assert 'name_hint="stage_a"' in text and 'name_hint="stage_b"' in text


def test_a_tensor_named_like_the_layer_does_not_shadow_its_functions():
    source = """
layer lay(N = 4) {
  input  lay: f32[N, 4]
  input  lay_test: f32[N, 4]
  output y: f32[N, 4]
  task t on aiv { y[:, :] = lay[:, :] + lay_test[:, :] }
}
"""
    (graph,) = compile_text(source, "s.dsl")
    text = render_pypto(graph, "h", "v")
    assert "def lay(\n    lay_: " in text or "def lay(lay_: " in text
    assert "lay_utest_: " in text and "y = lay(lay_, lay_utest_, y)" in text
    compile(render_numpy(graph, "h", "v"), "n.py", "exec")


ROOT = Path(__file__).resolve().parents[2]
