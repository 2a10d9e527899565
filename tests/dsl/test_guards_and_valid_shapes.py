"""Language additions for the sort and capacity rules: derived host scalars, host guards,
valid(...) / fillpad(...), and the boundary between E305 (compile time) and C402 (runtime)."""

import pytest

from dsl.frontend import compile_text
from lowering.source import CompileError
from lowering.symbolic import SCALAR, free_symbols

HEADER = """
layer csa(T = 16, WIN = 128, K = 512) {
  const PAD = WIN + K
  scalar start_pos: i32 in 0..8191
  scalar num_tokens: i32 in 1..T
  scalar seq_len = start_pos + num_tokens
  scalar max_visible = seq_len / 4
"""


def compile_one(body: str):
    (graph,) = compile_text(HEADER + body + "\n}\n", "t.dsl")
    return graph


def codes(text: str) -> list[tuple[str, int, int]]:
    with pytest.raises(CompileError) as err:
        compile_text(text, "t.dsl")
    return [(d.code, d.span.line, d.span.col) for d in err.value.diagnostics]


def test_derived_scalars_and_guards_are_recorded_not_kernel_arguments():
    g = compile_one('  guard WIN + max_visible <= PAD, "packed rows fit"\n  guard seq_len <= 8192')
    assert set(g.scalars) == {"start_pos", "num_tokens"}  # what the kernel receives
    assert set(g.derived) == {"seq_len", "max_visible"}
    assert g.derived["max_visible"].refs == ("seq_len",)
    first, second = g.guards
    assert first.text == "WIN + max_visible <= PAD"
    assert first.message == "packed rows fit"
    assert first.scalars == ("max_visible",)
    # derived scalars are inlined down to the runtime scalars
    assert {s.name for s in free_symbols(first.cond) if s.kind == SCALAR} == {"start_pos", "num_tokens"}
    assert second.message is None


def test_derived_scalar_is_inlined_in_task_bodies():
    g = compile_one(
        "  input x: f32[T, 2048]\n  output y: f32[T, 2048]\n"
        "  task t spmd(T) on aiv { y[block : block + 1, :] = fillpad(x[block : block + 1, :], max_visible, -inf) }"
    )
    (store,) = g.tasks[0].body
    n = store.value.args[1].expr
    assert {s.name for s in free_symbols(n)} == {"start_pos", "num_tokens"}


def test_guard_must_test_a_runtime_scalar():
    text = HEADER + "  guard PAD <= 1024\n}\n"
    assert codes(text) == [("E206", 8, 9)]


def test_derived_scalar_is_not_a_compile_time_constant():
    text = HEADER + "  const BAD = max_visible + 1\n}\n"
    assert codes(text) == [("E206", 8, 15)]


def test_derived_scalar_name_clash():
    text = HEADER + "  scalar PAD = start_pos + 1\n}\n"
    assert codes(text) == [("E202", 8, 3)]


@pytest.mark.parametrize(
    ("expr", "code"),
    [
        ("valid(x[0 : 1, :], 1.5)", "E309"),
        ("valid(3, 4)", "E303"),
        ("fillpad(x[0 : 1, :], 4, x[0 : 1, :])", "E303"),
        ("fillpad(x[0 : 1, :], 4)", "E306"),
    ],
)
def test_valid_and_fillpad_type_errors(expr, code):
    text = (
        "layer v(T = 4) {\n  input x: f32[T, 64]\n  output y: f32[T, 64]\n"
        f"  task t on aiv {{ y[0 : 1, :] = {expr} }}\n}}\n"
    )
    assert codes(text)[0][0] == code


def test_static_read_past_extent_through_valid_is_not_e305():
    text = (
        "layer v(T = 8) {\n  input x: f32[T, 64]\n  output y: f32[16, 64]\n"
        "  task t on aiv { y[0 : 16, :] = exp(valid(x[0 : 16, :], T, 64)) }\n}\n"
    )
    compile_text(text, "t.dsl")  # only the 8 valid rows are read
    bare = text.replace("valid(x[0 : 16, :], T, 64)", "x[0 : 16, :]")
    assert codes(bare) == [("E305", 4, 38)]


def test_runtime_dependent_region_is_left_to_c402():
    text = (
        "layer v(T = 8) {\n  scalar start: i32 in 0..64\n  input x: f32[64, 8]\n  output y: f32[T, 8]\n"
        "  task t on aiv { y[0 : 1, :] = x[start : start + 1, :] }\n}\n"
    )
    (g,) = compile_text(text, "t.dsl")  # E305 does not judge runtime scalars
    from lowering.checks import run_rules
    from lowering.checks.rule import CheckContext

    assert [(d.code, d.span.line) for d in run_rules(g, CheckContext(g), {"C402"})] == [("C402", 5)]
