"""One test per diagnostic code of dsl/codes.py: a small bad input, and the exact code, line
and column of every diagnostic it produces. Then: all errors of a file are reported, not
only the first one.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from dsl.codes import CODES
from dsl.driver.cli import main
from dsl.frontend import compile_file, compile_text
from lowering.source import CompileError

# code -> (source, [(code, line, col), ...]) for the codes a source file can trigger.
SOURCES: dict[str, tuple[str, list[tuple[str, int, int]]]] = {
    "E101": ("layer a() {\n  input x f32[4]\n}\n", [("E101", 2, 11)]),
    "E103": ("# a comment, no layer\n", [("E103", 0, 0)]),
    "E105": (
        "layer a() {\n  task t { let x = " + "(" * 201 + "1" + ")" * 201 + " }\n}\n",
        [("E105", 2, 218)],
    ),
    "E201": ("layer a() {\n  output y: f32[4]\n  task t { y[0] = zz }\n}\n", [("E201", 3, 19)]),
    "E311": ("layer a() {\n  scalar n: u8 in 0..256\n}\n", [("E311", 2, 16)]),
    "E202": ("layer a() {\n  input x: f32[4]\n  output x: f32[4]\n}\n", [("E202", 3, 3)]),
    "E203": ("layer a() {\n  call c = b(Q = 1)\n}\nlayer b(N = 1) { }\n", [("E203", 2, 14)]),
    "E204": ("layer a(EP = 3 in {2, 4, 8}) { }\n", [("E204", 1, 9)]),
    "E205": ('layer a(T = 8) {\n  assert T % 3 == 0, "T divisible by 3"\n}\n', [("E205", 2, 3)]),
    "E206": ("layer a() {\n  scalar n: i32\n  const C = n + 1\n}\n", [("E206", 3, 13)]),
    "E207": ("layer a(T = 8) {\n  const C = T / (T - 8)\n}\n", [("E207", 2, 13)]),
    "E208": ("layer a() {\n  call c = nowhere()\n}\n", [("E208", 2, 12)]),
    "E209": (
        "layer a() {\n  input x: f32[4]\n  call c = b()\n}\nlayer b() {\n  input src: f32[4]\n}\n",
        [("E209", 3, 3)],
    ),
    "E301": ("layer a() {\n  input x: f64[4]\n}\n", [("E301", 2, 12)]),
    "E302": (
        "layer a() {\n  input x: f32[4, 4]\n  output y: bf16[4, 4]\n  task t { y[:, :] = x[:, :] }\n}\n",
        [("E302", 4, 22)],
    ),
    "E303": (
        "layer a() {\n  input x: f32[4, 4]\n  output y: f32[4, 4]\n  task t { y[0:2, :] = x[0, :] }\n}\n",
        [("E303", 4, 24)],
    ),
    "E304": (
        "layer a() {\n  input x: f32[4, 4]\n  output y: f32[4, 4]\n  task t { y[0, :] = x[0] }\n}\n",
        [("E304", 4, 22)],
    ),
    "E305": (
        "layer a() {\n  input x: f32[4, 4]\n  output y: f32[4, 4]\n  task t { y[:, :] = x[1:5, :] }\n}\n",
        [("E305", 4, 22)],
    ),
    "E306": (
        "layer a() {\n  input x: f32[4, 4]\n  output y: f32[4, 4]\n  task t { y[:, :] = frobnicate(x[:, :]) }\n}\n",
        [("E306", 4, 22)],
    ),
    "E307": ("layer a() {\n  input x: f32[4, 4]\n  task t { x[0, 0] = 1.0 }\n}\n", [("E307", 3, 12)]),
    "E308": ("layer a() {\n  input x: f32[4]\n  task t { notify x[0] @ 0 += 1 }\n}\n", [("E308", 3, 19)]),
    "E309": (
        "layer a() {\n  input x: f32[4, 4]\n  output y: f32[4, 4]\n  task t { y[0, :] = x[1.5, :] }\n}\n",
        [("E309", 4, 24)],
    ),
    "E310": (
        "layer a() {\n  input s: f32[1, 64]\n  output o: f32[1, 16]\n  scalar n: i32\n"
        "  task t on aiv { o[:, :] = topk(s[:, :], 8, valid=n) }\n}\n",
        [("E310", 5, 19)],
    ),
    "E401": ("layer a() {\n  task t after later { }\n  task later { }\n}\n", [("E401", 2, 16)]),
    "E402": ("layer a() {\n  task t on gpu { }\n}\n", [("E402", 2, 13)]),
    "E403": ("layer a(N = 0) {\n  task t spmd(N) { }\n}\n", [("E403", 2, 15)]),
    "E404": ("layer a() {\n  task t { for i in range(1, 2, 3, 4) { } }\n}\n", [("E404", 2, 12)]),
    "E405": ("layer a() {\n  input x: f32[4]\n  task t { return x[0] }\n}\n", [("E405", 3, 12)]),
    "E406": ("layer a() {\n  input f: i32[4]\n  task t when 1 > 0 { }\n}\n", [("E406", 3, 15)]),
}

# Codes that need a file system or a target rather than a source text. Tested where they
# arise: E108 (tests/dsl/test_limits.py, tests/cli/test_user_mistakes.py), E110
# (tests/codegen/test_target_limits.py). The driver's own codes (dsl.driver.diagnostics: E104,
# E106, E107, E109) are tested with the command line, the configuration and the golden modules.
OTHER = {"E102", "E108", "E110"}


def where(err: CompileError) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in err.diagnostics]


def test_every_code_has_a_test():
    assert sorted(set(SOURCES) | OTHER) == sorted(CODES)


@pytest.mark.parametrize("code", sorted(SOURCES))
def test_code_line_and_column(code: str):
    source, expected = SOURCES[code]
    with pytest.raises(CompileError) as err:
        compile_text(source, "bad.dsl")
    assert where(err.value) == expected
    assert all(d.span.file == "bad.dsl" for d in err.value.diagnostics)


# ---------------------------------------------------------------- E102: unreadable input


def test_e102_missing_file(tmp_path):
    with pytest.raises(CompileError) as err:
        compile_file(tmp_path / "absent.dsl")
    assert where(err.value) == [("E102", 0, 0)]
    assert "no such file" in err.value.diagnostics[0].message


def test_e102_directory(tmp_path):
    with pytest.raises(CompileError) as err:
        compile_file(tmp_path)
    assert where(err.value) == [("E102", 0, 0)]
    assert "directory" in err.value.diagnostics[0].message


def test_e102_binary_junk(tmp_path):
    path = tmp_path / "junk.dsl"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(CompileError) as err:
        compile_file(path)
    assert where(err.value) == [("E102", 0, 0)]
    assert "binary" in err.value.diagnostics[0].message


def test_e102_bad_utf8_points_at_the_byte(tmp_path):
    path = tmp_path / "latin1.dsl"
    path.write_bytes(b"layer a() {\n  # caf\xe9\n}\n")
    with pytest.raises(CompileError) as err:
        compile_file(path)
    assert where(err.value) == [("E102", 2, 8)]
    assert "UTF-8" in err.value.diagnostics[0].message


def test_e103_empty_file(tmp_path):
    path = tmp_path / "empty.dsl"
    path.write_bytes(b"")
    with pytest.raises(CompileError) as err:
        compile_file(path)
    assert where(err.value) == [("E103", 0, 0)]


# ---------------------------------------------------------------- E104, E106: the command line


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("T", "--set expects NAME=VALUE, got 'T'"),
        ("T=abc", "--set T: 'abc' is not an integer"),
        ("=3", "--set expects NAME=VALUE, got '=3'"),
        ("1T=3", "--set expects NAME=VALUE, got '1T=3'"),
    ],
)
def test_e104_malformed_set(tmp_path, option: str, message: str):
    layer = tmp_path / "l.dsl"
    layer.write_text("layer a(T = 1) { }\n")
    code, out, err = run_cli("check", str(layer), "--set", option)
    assert code == 2
    assert err.startswith(f"<command line>: E104 {message}\n"), err
    assert out == ""


def test_e104_unknown_option():
    code, out, err = run_cli("graph", "--frobnicate")
    assert code == 2
    assert re.match(r"<command line>: E104 ", err), err


def test_e106_bad_configuration(tmp_path):
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.dslc]\nselect = 3\n")
    layer = tmp_path / "l.dsl"
    layer.write_text("layer a() { }\n")
    code, out, err = run_cli("check", "--config", str(config), str(layer))
    assert code == 2
    assert f"{config}:2:1: E106 " in out + err


def test_every_code_is_explained():
    for code, entry in CODES.items():
        status, out, _ = run_cli("explain", code.lower())
        assert status == 0
        assert out.startswith(f"{code}: {entry.summary}\n"), out


# ---------------------------------------------------------------- all errors, not the first


def test_every_syntax_error_is_reported():
    source = (
        "layer a() {\n"
        "  input x f32[4]\n"  # 2: missing ':'
        "  output y: f32[4]\n"
        "  task t { y[0:4] = = x[0:4] }\n"  # 4: doubled '='
        "  task u { y[0:4] = x[0:4] $ }\n"  # 5: stray character
        "  task v { if y[0] == { } else { } }\n"  # 6: missing operand
        "  const C = 3 * * 2\n"  # 7: doubled operator
        "}\n"
    )
    with pytest.raises(CompileError) as err:
        compile_text(source, "s.dsl")
    assert where(err.value) == [
        ("E101", 2, 11),
        ("E101", 4, 21),
        ("E101", 5, 28),
        ("E101", 6, 23),
        ("E101", 7, 17),
    ]


def test_syntax_recovery_does_not_invent_errors():
    # Each broken statement is reported once; the statements around it are fine.
    source = (
        "layer a() {\n  task t {\n    if x == { }\n    else if 1 == 1 { let = 2 }\n  }\n}\n}\nlayer b( {\n}\n"
    )
    with pytest.raises(CompileError) as err:
        compile_text(source, "s.dsl")
    assert where(err.value) == [("E101", 3, 13), ("E101", 4, 26), ("E101", 7, 1), ("E101", 8, 10)]


def test_brackets_in_comments_and_strings_do_not_count_as_nesting():
    source = "layer a() {\n  # " + "(" * 300 + "\n" + '  assert 1, "' + "[" * 300 + '"\n}\n'
    (graph,) = compile_text(source, "c.dsl")
    assert graph.name == "a"


def test_every_elaboration_error_is_reported():
    source = (
        "layer a(N = 4) {\n"
        "  input  x: f32[N, 8]\n"
        "  output y: f32[N, 8]\n"
        "  input  z: f64[N]\n"  # E301
        "  task t1 { y[0, :] = missing }\n"  # E201
        "  task t2 { x[0, 0] = 1.0 }\n"  # E307
        "  task t3 after nobody { y[:, :] = x[:, :] }\n"  # E401
        "  task t4 on gpu { }\n"  # E402
        "  task t1 { }\n"  # E202
        "}\n"
    )
    with pytest.raises(CompileError) as err:
        compile_text(source, "e.dsl")
    assert where(err.value) == [
        ("E301", 4, 13),
        ("E201", 5, 23),
        ("E307", 6, 13),
        ("E401", 7, 17),
        ("E402", 8, 14),
        ("E202", 9, 3),
    ]


def test_errors_of_every_root_layer_are_reported():
    source = "layer a() {\n  const C = zz\n}\nlayer b() {\n  const D = yy\n}\n"
    with pytest.raises(CompileError) as err:
        compile_text(source, "r.dsl")
    assert where(err.value) == [("E201", 2, 13), ("E201", 5, 13)]


def test_a_mistake_in_a_task_array_is_reported_once():
    source = "layer a() {\n  output y: f32[100, 4]\n  for i in range(100) { task t[i] { y[i, :] = zz } }\n}\n"
    with pytest.raises(CompileError) as err:
        compile_text(source, "once.dsl")
    assert where(err.value) == [("E201", 3, 47)]


def test_unbound_tensor_of_a_call_points_at_the_call():
    source = SOURCES["E209"][0]
    with pytest.raises(CompileError) as err:
        compile_text(source, "call.dsl")
    (d,) = err.value.diagnostics
    assert d.message == "call 'c' does not bind input 'src' of layer 'b' (declared at line 6)"
    assert d.hint == "call c = b(..., src = tensor)"


@pytest.mark.parametrize(
    "source",
    [
        "layer a() {\n  task t after t { }\n}\n",
        "layer a() {\n  for i in range(3) { task t[i] after t[i] { } }\n}\n",
    ],
)
def test_a_task_cannot_wait_for_itself(source: str):
    with pytest.raises(CompileError) as err:
        compile_text(source, "self.dsl")
    assert {d.code for d in err.value.diagnostics} == {"E401"}


def test_after_a_task_array_means_its_earlier_elements():
    source = "layer a() {\n  task t[0] { }\n  for i in range(1, 3) { task t[i] after t { } }\n}\n"
    (graph,) = compile_text(source, "arr.dsl")
    assert [(e.src, e.dst) for e in graph.edges] == [("t[0]", "t[1]"), ("t[0]", "t[2]"), ("t[1]", "t[2]")]


def test_integer_literals_with_leading_zeros_are_decimal():
    (graph,) = compile_text("layer a(T = 0128) { }\n", "z.dsl")
    assert graph.params["T"].value == 128
