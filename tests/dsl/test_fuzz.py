"""Robustness of the front end on generated and mutated sources (property tests).

Every input either compiles or raises ``CompileError`` whose diagnostics all carry a code of
``dsl/codes.py`` and a position inside the text; no other exception ever escapes. A subset
also goes through ``dsl.driver.cli.main`` (exit code 0 or 2, never a traceback on stdout/stderr).

Inputs: layers generated from the grammar (valid and slightly wrong ones), and the fixture
layers and doc examples mutated at the token level (deletions, duplications, swaps, random
insertions, truncations) and at the character level. ``derandomize=True`` makes every run
draw the same examples, so CI is reproducible; the budget is 2,150 inputs.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsl.codes import CODES
from dsl.driver.cli import main
from dsl.frontend import compile_text
from lowering.source import CompileError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "layers").glob("*.dsl"))
DOC_BLOCKS = re.findall(r"^```dsl[^\n]*\n(.*?)^```", (ROOT / "docs" / "language.md").read_text(), re.S | re.M)
SEEDS = [p.read_text() for p in FIXTURES] + DOC_BLOCKS

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def check_outcome(text: str, file: str = "fuzz.dsl") -> None:
    """Compiles, or fails with well-formed diagnostics; anything else fails the test."""
    try:
        compile_text(text, file)
    except CompileError as err:
        assert err.diagnostics, "a CompileError carries at least one diagnostic"
        lines = text.split("\n")
        for d in err.diagnostics:
            assert d.code in CODES, d
            assert d.span.file == file, d
            if d.span.line == 0:  # the file as a whole: no position at all
                assert (d.span.col, d.span.end_line, d.span.end_col) == (0, 0, 0), d
                continue
            assert 1 <= d.span.line <= len(lines) + 1, d
            assert d.span.col >= 1, d
            if d.span.line <= len(lines):
                assert d.span.col <= len(lines[d.span.line - 1]) + 1, d


# ---------------------------------------------------------------- grammar-aware generation
# Plain functions of a ``random.Random`` that hypothesis provides (``st.randoms``): drawing a
# few hundred choices through nested composite strategies costs ~200 ms per example, this
# costs well under 1 ms, and the examples stay reproducible (``derandomize``).

DTYPES = ["f32", "bf16", "f16", "i32", "i8", "bool", "f64"]
OPS = ["exp", "row_sum", "row_max", "cast", "matmul", "zeros", "maximum", "read", "sigmoid", "nope"]
INT_ATOMS = ["0", "1", "2", "16", "T", "D", "N", "block", "i", "k", "rank", "-1", "T / 2", "epoch"]
LAYER_ATOMS = ["1", "2", "4", "16", "T", "D", "N", "T / 2", "2 * N"]  # valid at layer level


def int_expr(r: random.Random, depth: int = 0, atoms: list[str] = INT_ATOMS) -> str:
    if depth > 1 or r.random() < 0.6:
        return r.choice(atoms)
    a, b = int_expr(r, depth + 1, atoms), int_expr(r, depth + 1, atoms)
    op = r.choice(["+", "-", "*", "/", "//", "%"])
    return r.choice([f"({a} {op} {b})", f"{a} {op} {b}", f"min({a}, {b})", f"cdiv({a}, {b})"])


def region(r: random.Random, tensors: list[str]) -> str:
    subs = []
    for _ in range(r.randint(1, 3)):
        a, b = int_expr(r), int_expr(r)
        subs.append(r.choice([a, f"{a} : {b}", ":", f"{a} : {b} : 2", f"{a} :", f": {b}"]))
    return f"{r.choice(tensors + ['zz'])}[{', '.join(subs)}]"


def value_expr(r: random.Random, tensors: list[str], depth: int = 0) -> str:
    choice = r.randint(0, 6 if depth < 2 else 2)
    if choice == 0:
        return r.choice(["1.0", "0.5", "2", "inf", "-1.5", "true", "epoch"])
    if choice in (1, 2):
        return region(r, tensors)
    if choice == 3:
        op = r.choice(["+", "-", "*", "/", "==", "<", "and"])
        return f"{value_expr(r, tensors, depth + 1)} {op} {value_expr(r, tensors, depth + 1)}"
    if choice == 4:
        return f"{r.choice(OPS)}({value_expr(r, tensors, depth + 1)})"
    if choice == 5:
        return f"zeros({r.choice(DTYPES)}, [{int_expr(r)}, {int_expr(r)}])"
    return f"cast({value_expr(r, tensors, depth + 1)}, {r.choice(DTYPES)})"


def statement(r: random.Random, tensors: list[str], depth: int = 0) -> str:
    kind = r.randint(0, 11 if depth < 2 else 7)
    target, value = region(r, tensors), value_expr(r, tensors)
    if kind == 0:
        return f"let {r.choice(['v', 'w', 'acc', 'i'])} = {value}"
    if kind == 1:
        return f"{r.choice(['v', 'w', 'undefined'])} = {value}"
    if kind == 2:
        return f"{target} = {value}"
    if kind == 3:
        return f"{target} += {value}{r.choice(['', ' atomic'])}"
    if kind == 4:
        return f"notify {target} @ {int_expr(r)} {r.choice(['+=', '='])} {int_expr(r)}"
    if kind == 5:
        return f"wait {target} {r.choice(['>=', '=='])} {int_expr(r)}"
    if kind == 6:
        return r.choice(["barrier", "barrier soft", f"read({target})"])
    if kind == 7:
        return f"remote_store {target} @ {int_expr(r)} = {value}"
    body = " ".join(statement(r, tensors, depth + 1) for _ in range(r.randint(0, 2)))
    if kind in (8, 9):
        loop = r.choice(["range", "parallel", "pipeline"])
        args = r.choice(["4", "1, 4", "0, N, 2", "0, 4, stages=2", "", "1, 2, 3, 4", "T / 0"])
        return f"for k in {loop}({args}) {{ {body} }}"
    cond = r.choice(["block == 0", "k < 2", "rank != 0", "1", "x[0, 0] > 0.0", "not (i < 2 or false)"])
    orelse = r.choice(["", " else { }", " else if block > 1 { barrier }"])
    return f"if {cond} {{ {body} }}{orelse}"


def task(r: random.Random, tensors: list[str], name: str) -> str:
    attrs = []
    if r.random() < 0.5:
        attrs.append(f"spmd({r.choice(['4', 'T / 16', 'N', '0', 'EP * 2', 'epoch'])})")
    if r.random() < 0.5:
        attrs.append(f"on {r.choice(['aic', 'aiv', 'mix', 'gpu'])}")
    if r.random() < 0.5:
        attrs.append(f"after {r.choice(['t0', 't1', 'arr', 'arr[1]', 'arr[i - 1]', 'c.copy', 'nope'])}")
    for flag in ("early_resolve", "sync_start", "manual"):
        if r.random() < 0.2:
            attrs.append(flag)
    if r.random() < 0.15:
        attrs.append(f"when {r.choice(['x[0, 0] > 0', 'flags[1] == 2', '1 > 0', 'x[0] == 1'])}")
    body = "\n    ".join(statement(r, tensors) for _ in range(r.randint(0, 3)))
    return f"  task {name} {' '.join(attrs)} {{\n    {body}\n  }}"


def layer_text(r: random.Random) -> str:
    params = []
    for name in ["T", "D", "N", "EP"]:
        default = r.choice(["4", "8", "16", "16", "32"] + ["0"] * (r.random() < 0.05))
        domain = r.choice(
            ["", "", " in 4..32 step 4", " in {2, 4, 8, 16}", " in 1..8"] + [" in 9..1"] * (r.random() < 0.1)
        )
        params.append(f"{name} = {default}{domain if r.random() < 0.4 else ''}")
    lines = [f"layer fz({', '.join(params)}) {{"]
    if r.random() < 0.3:
        lines.append(f'  assert {int_expr(r, atoms=LAYER_ATOMS)} >= 0, "fuzz"')
    if r.random() < 0.3:
        lines.append(f"  const C = {int_expr(r, atoms=LAYER_ATOMS if r.random() < 0.9 else INT_ATOMS)}")
    if r.random() < 0.5:
        lines.append("  ranks EP")
    if r.random() < 0.5:
        lines.append("  scalar epoch: i32")
    tensors = []
    for name, direction in (("x", "input"), ("y", "output"), ("acc", "inout"), ("s", "scratch")):
        if r.random() < 0.75:
            atoms = LAYER_ATOMS if r.random() < 0.9 else INT_ATOMS
            dims = ", ".join(int_expr(r, atoms=atoms) for _ in range(r.randint(1, 3)))
            lines.append(f"  {direction} {name}: {r.choice(DTYPES[:4])}[{dims}]")
            tensors.append(name)
    if r.random() < 0.5:
        lines += ["  signal sig: i32[4]", "  window win: f32[64, 16]"]
        tensors += ["sig", "win"]
    tensors = tensors or ["x"]
    lines.append(task(r, tensors, "t0"))
    if r.random() < 0.5:
        lines.append(task(r, tensors, "t1"))
    if r.random() < 0.5:
        lines += [f"  for i in {r.choice(['range', 'parallel'])}(3) {{", task(r, tensors, "arr[i]"), "  }"]
    if r.random() < 0.3:
        lines.append(f"  if {int_expr(r)} > 2 {{\n{task(r, tensors, 'cond')}\n  }} else {{ }}")
    if r.random() < 0.2:
        lines.append("  call c = fz()")
    lines.append("}")
    return "\n".join(lines) + "\n"


layer_source = st.randoms(use_true_random=False).map(layer_text)


@settings(max_examples=400, **SETTINGS)
@given(layer_source)
def test_generated_layers_compile_or_report(source: str):
    check_outcome(source)


# ---------------------------------------------------------------- mutations of real layers

TOKEN = re.compile(r"\s+|#[^\n]*|\"[^\"\n]*\"|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|\.\.|[+\-*/=<>!]=|//|\S")
VOCAB = [
    "{", "}", "(", ")", "[", "]", ",", ":", "=", "+=", "@", ".", "..", "==", ">=", "-", "*", "/", "%",
    "layer", "task", "let", "for", "if", "else", "in", "range", "parallel", "pipeline", "after", "spmd",
    "on", "call", "const", "assert", "scalar", "input", "output", "inout", "scratch", "window", "signal",
    "notify", "wait", "barrier", "remote_store", "atomic", "manual", "manual_dep", "when", "step",
    "block", "rank", "nranks", "T", "x", "0", "1", "16", "99999999999999999999", "1.5", "inf", '"msg"',
    "\n", " ", "é", "\t", "\x00", "\\",
]  # fmt: skip


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


@st.composite
def mutated_source(draw):
    toks = tokens(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        if not toks:
            break
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "truncate", "replace"]))
        i = draw(st.integers(0, len(toks) - 1))
        if op == "delete":
            del toks[i : i + draw(st.integers(1, 3))]
        elif op == "duplicate":
            toks[i:i] = toks[i : i + draw(st.integers(1, 8))]
        elif op == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        elif op == "insert":
            toks.insert(i, draw(st.sampled_from(VOCAB)))
        elif op == "replace":
            toks[i] = draw(st.sampled_from(VOCAB))
        else:
            toks = toks[:i]
    return "".join(toks)


@settings(max_examples=450, **SETTINGS)
@given(mutated_source())
def test_token_mutations_of_real_layers(source: str):
    check_outcome(source)


@st.composite
def byte_mutated_source(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, max(len(text) - 1, 0)))
        op = draw(st.sampled_from(["delete", "insert", "flip"]))
        if op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 20)) :]
        elif op == "insert":
            text = text[:i] + draw(st.text(min_size=1, max_size=5)) + text[i:]
        else:
            text = text[:i] + chr(draw(st.integers(0, 0x2FF))) + text[i + 1 :]
    return text


@settings(max_examples=300, **SETTINGS)
@given(byte_mutated_source())
def test_character_mutations_of_real_layers(source: str):
    check_outcome(source)


# ---------------------------------------------------------------- through the CLI


def run_cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz_cli")


@settings(max_examples=150, **SETTINGS)
@given(source=st.one_of(mutated_source(), byte_mutated_source(), layer_source))
def test_cli_never_shows_a_traceback(workdir, source: str):
    path = workdir / "layer.dsl"
    path.write_bytes(source.encode("utf-8", errors="surrogatepass"))
    code, out, err = run_cli(["graph", str(path), "--format", "json"])
    assert code in (0, 2), (code, out[-500:], err[-500:])
    assert "Traceback" not in out + err
    assert "internal error" not in err, err
    if code == 2:
        assert re.search(r"(:\d+:\d+|\.dsl|<command line>): E\d{3} ", out + err), (out + err)[-500:]
