"""A user's mistake is a located or named diagnostic with exit 2, never "internal error"
(issue 14: cli_internal_errors.sh, big_tensor_run.dsl, and the smaller things a newcomer hit)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dsl.driver.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPLITK = ROOT / "tests" / "fixtures" / "run" / "splitk_reduce.dsl"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in out + err, out + err
    return code, out, err


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--seed", "-1"], "--seed -1: must be >= 0"),
        (["--seed", "x"], "--seed expects an integer, got 'x'"),
        (["--cores", "0"], "--cores 0: a cluster is 1 AIC + 2 AIV"),
        (["--cores", "1,3"], "--cores 1,3: a cluster is 1 AIC + 2 AIV"),
        (["--timeout", "nan"], "--timeout nan: must be a finite number of seconds > 0"),
        (["--timeout", "inf"], "--timeout inf: must be a finite number of seconds > 0"),
        (["--timeout", "0"], "--timeout 0: must be a finite number of seconds > 0"),
        (["--rounds", "0"], "--rounds 0: must be 1..1000000"),
        (["--ranks", "0"], "--ranks 0: must be 1..4096"),
        (["--trace", ""], "--trace expects a file name, got an empty one"),
    ],
)
def test_bad_option_values_are_e104(capsys, option, message):
    code, out, err = run(capsys, "run", str(SPLITK), *option)
    assert code == 2 and out == ""
    assert err.startswith(f"<command line>: E104 {message}"), err


def test_a_trace_path_that_cannot_be_written_is_refused_before_simulating(tmp_path, capsys):
    code, out, err = run(capsys, "run", str(SPLITK), "--trace", str(tmp_path))
    assert code == 2 and "running" not in out
    assert err.startswith(f"{tmp_path}: E107 it is a directory (--trace names the JSON file to write)")
    (tmp_path / "f.txt").write_text("x")
    code, out, err = run(capsys, "run", str(SPLITK), "--trace", str(tmp_path / "f.txt" / "t.json"))
    assert code == 2 and err.startswith(
        f"{tmp_path / 'f.txt' / 't.json'}: E107 {tmp_path / 'f.txt'} is not a directory"
    )


def test_compile_into_a_path_below_a_file_or_onto_a_directory_is_e107(tmp_path, capsys):
    (tmp_path / "f.txt").write_text("x")
    code, _, err = run(capsys, "compile", str(SPLITK), "-o", str(tmp_path / "f.txt" / "sub"))
    assert code == 2 and err.startswith(
        f"{tmp_path / 'f.txt' / 'sub'}: E107 {tmp_path / 'f.txt'} is a file, not a directory"
    )
    (tmp_path / "out" / "splitk_reduce.py").mkdir(parents=True)
    code, _, err = run(capsys, "compile", str(SPLITK), "-o", str(tmp_path / "out"))
    assert code == 2 and err.startswith(f"{tmp_path / 'out' / 'splitk_reduce.py'}: E107 it is a directory")


def golden_case(tmp_path: Path, text: str) -> Path:
    shutil.copy(SPLITK, tmp_path / "splitk_reduce.dsl")
    (tmp_path / "splitk_reduce_golden.py").write_text(text)
    return tmp_path / "splitk_reduce.dsl"


GOLDEN_MISTAKES = [
    (
        'def make_inputs(p, s, r):\n    raise ValueError("boom")\n',
        ":2:5: E109 make_inputs raised ValueError: boom",
    ),
    (
        "def make_inputs(p, s, r):\n    return {}\n",
        ": E109 make_inputs gave rank 0 no input 'x' (the layer declares x: f32[32, 1024])",
    ),
    (
        "import numpy as np\ndef make_inputs(p, s, r):\n    return {'x': np.zeros((3, 4)), 'w': np.zeros((16, 1024))}\n",
        ": E109 make_inputs gave rank 0 'x' with shape (3, 4); the layer declares x: f32[32, 1024]",
    ),
    (
        "import numpy as np\ndef make_inputs(p, s, r):\n    return {'q': np.zeros(1)}\n",
        ": E109 make_inputs gave rank 0 'q', which the layer does not declare (inputs: w, x)",
    ),
    (
        "def make_inputs(p, s, r):\n    return 3\n",
        ": E109 make_inputs returned int; it must return a dict, or a list of one dict per rank",
    ),
    ("x = (\n", ":1:1: E109 does not parse: '(' was never closed"),
    (
        "import no_such_module_anywhere\n",
        ":1:1: E109 raised ModuleNotFoundError on import: No module named 'no_such_module_anywhere'",
    ),
    (
        "import numpy as np\ndef golden(inputs, params):\n    return {'y': np.zeros((3, 3))}\n",
        ": E109 golden returned 'y' for rank 0 with shape (3, 3), but the kernel's output is y: f32[32, 16]: the shapes differ",
    ),
    (
        "import numpy as np\ndef golden(inputs, params):\n    return {'x': inputs[0]['x']}\n",
        ": E109 golden returned 'x' for rank 0, which is input, not an output (outputs: y)",
    ),
    (
        "def golden(inputs, params):\n    return {'y': inputs[0]['x'][:, :16]}\nTOLERANCES = {'y': {'comparator': 'nope'}}\n",
        ": E109 TOLERANCES['y'] names comparator 'nope'; one of allclose, ratio_allclose",
    ),
    (
        "def golden(inputs, params):\n    return 1 / 0\n",
        ":2:5: E109 golden raised ZeroDivisionError: division by zero",
    ),
    (  # issue 15: this compared nothing, and `dslc run` printed an empty table and exited 0
        "def golden(inputs, params):\n    return {}\n",
        ": E109 golden returned no outputs for any rank, so nothing would be checked (outputs: y)",
    ),
]


@pytest.mark.parametrize(
    ("golden", "message"), GOLDEN_MISTAKES, ids=[m[1].split(" E109 ")[1][:30] for m in GOLDEN_MISTAKES]
)
def test_a_golden_that_fails_or_does_not_fit_is_e109_at_the_golden_file(tmp_path, capsys, golden, message):
    layer = golden_case(tmp_path, golden)
    code, out, _ = run(capsys, "run", str(layer))
    assert code == 2
    assert f"{tmp_path / 'splitk_reduce_golden.py'}{message}" in out, out


def test_a_validation_that_compared_nothing_has_not_passed():
    """Issue 15: ``Validation.passed`` was ``all(...)``, true for a golden that checked nothing."""
    from dsl.driver.api import OutputCheck, Validation

    ok = OutputCheck("y", 0, True, 0.0, 0.0, 0.0, "")
    assert not Validation().passed
    assert Validation([ok]).passed
    assert not Validation([ok, OutputCheck("y", 1, False, 1.0, 1.0, 1.0, "off")]).passed


def test_a_missing_golden_is_e102_at_its_declaration(tmp_path, capsys):
    (tmp_path / "l.dsl").write_text(
        'layer l(T = 16) {\n  golden "gone_golden.py"\n  input x: f32[T, 4]\n  output y: f32[T, 4]\n'
        "  task t on aiv { y[:, :] = x[:, :] }\n}\n"
    )
    code, out, _ = run(capsys, "run", str(tmp_path / "l.dsl"))
    assert (
        code == 2
        and f"{tmp_path / 'l.dsl'}:2:3: E102 golden module {tmp_path / 'gone_golden.py'} not found" in out
    )


def test_a_tensor_too_large_to_simulate_is_e108_before_anything_is_allocated(tmp_path, capsys):
    """big_tensor_run.dsl: a MemoryError for a 7 TiB float64 array, reported as an internal error."""
    (tmp_path / "big.dsl").write_text(
        "layer bigtensor(R = 1000000, C = 1000000) {\n  input  x: f32[R, C]\n  output y: f32[16, 16]\n"
        "  task t on aiv { y[:, :] = x[0 : 16, 0 : 16] }\n}\n"
    )
    code, out, _ = run(capsys, "run", str(tmp_path / "big.dsl"))
    assert code == 2
    assert out.startswith(
        f"{tmp_path / 'big.dsl'}:2:3: E108 simulating this layer needs 3.6 TiB for its tensors on 1 rank(s), "
        "over the limit of 8.0 GiB; the largest is x (1000000, 1000000) (3.6 TiB per rank)"
    )


@pytest.mark.parametrize("where", ["make_inputs", "run"])
def test_tensors_under_the_limit_the_machine_cannot_allocate_are_e108_not_an_internal_error(
    tmp_path, capsys, monkeypatch, where
):
    """A fuzz case: 4.8 GiB of inputs under the 8 GiB limit in a process that had less free."""
    from dsl.driver.api import CompiledLayer

    def no_memory(*_args, **_kwargs):
        raise MemoryError("Unable to allocate 4.77 GiB for an array")

    monkeypatch.setattr(CompiledLayer, where, no_memory)
    (tmp_path / "l.dsl").write_text(
        "layer l(T = 16) {\n  input x: f32[T, 4]\n  output y: f32[T, 4]\n  task t on aiv { y[:, :] = x[:, :] }\n}\n"
    )
    code, out, err = run(capsys, "run", str(tmp_path / "l.dsl"))
    assert code == 2 and "internal error" not in out + err
    assert (
        f"{tmp_path / 'l.dsl'}:2:3: E108 simulating this layer needs 512 B for its tensors on 1 rank(s), under "
        "the limit of 8.0 GiB, but this machine could not allocate them; the largest is x (16, 4) (256 B per rank)"
    ) in out


def test_the_simulator_memory_limit_is_configurable(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DSLC_MAX_SIM_BYTES", "1000")
    code, out, _ = run(capsys, "run", str(SPLITK))
    assert code == 2 and "E108 simulating this layer needs" in out and "over the limit of 1000 B" in out


def test_run_lints_first_and_no_lint_skips_it(capsys):
    """A layer with lint errors used to run `ok`; the handshake fixture has a D101 and, across
    rounds, a D117."""
    layer = ROOT / "tests" / "fixtures" / "run" / "handshake_pre.dsl"
    code, out, err = run(capsys, "run", str(layer))
    assert code == 1 and ": D101 " in out and ": D117 " in out and "running" not in out
    assert "not run: the lint found 2 error(s); fix them, or run anyway with --no-lint" in err
    code, out, _ = run(capsys, "run", str(layer), "--no-lint", "--no-validate")
    assert code == 0 and out.startswith("running ")


def test_a_utf8_byte_order_mark_is_accepted(tmp_path, capsys):
    path = tmp_path / "bom.dsl"
    path.write_bytes(b"\xef\xbb\xbf" + SPLITK.read_bytes())
    assert run(capsys, "check", str(path))[0] == 0
    path.write_bytes(b"\xef\xbb\xbf" + b"layer l( {\n")
    code, out, _ = run(capsys, "check", str(path))
    assert code == 2 and f"{path}:1:10: E101" in out  # the column an editor shows: the mark is not one


def test_file_level_errors_name_the_file_without_a_made_up_position(tmp_path, capsys):
    code, out, _ = run(capsys, "check", str(tmp_path / "gone.dsl"))
    assert code == 2 and out.startswith(f"{tmp_path / 'gone.dsl'}: E102 no such file")
    (tmp_path / "two.dsl").write_text(
        "layer a() { input x: f32[4]\n output y: f32[4]\n task t on aiv { y[:] = x[:] } }\n"
        "layer b() { input x: f32[4]\n output y: f32[4]\n task t on aiv { y[:] = x[:] } }\n"
    )
    code, out, _ = run(capsys, "run", str(tmp_path / "two.dsl"), "--no-lint")
    assert code == 2
    assert f"{tmp_path / 'two.dsl'}: E208 several root layers (a, b); choose one with --layer NAME" in out


def test_help_lists_each_command_once_and_documents_policy(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for command in ("check", "graph", "explain", "run", "compile", "fix"):
        assert len([line for line in text.splitlines() if line.strip().startswith(command + " ")]) == 1, (
            command
        )
    assert "4 `run` stopped at its --timeout" in text
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--policy {fifo,random,adversarial} how the simulated scheduler breaks ties" in text
    assert "--no-lint do not run the error-level lint before simulating" in text


def test_prev_of_a_task_that_failed_to_elaborate_reports_that_tasks_error_only(tmp_path, capsys):
    """A fuzz case: `after sendsend` (a typo) left task `arrive` out of the graph, and the later
    `prev(arrive)` then looked it up: an internal KeyError instead of the typo's E401."""
    (tmp_path / "l.dsl").write_text(
        "layer l(T = 16) {\n  scalar epoch: i32 in 1..8\n  input x: f32[T, 4]\n  output y: f32[T, 4]\n"
        "  task send on aiv { y[:, :] = x[:, :] }\n"
        "  task arrive on aiv after sendsend { y[:, :] = x[:, :] }\n"
        "  task sync on aiv after arrive, prev(arrive) { y[:, :] = x[:, :] }\n}\n"
    )
    for command in ("check", "run", "compile"):
        extra = ["-o", str(tmp_path / "out")] if command == "compile" else []
        code, out, err = run(capsys, command, str(tmp_path / "l.dsl"), *extra)
        assert code == 2, command
        assert f"{tmp_path / 'l.dsl'}:6:28: E401 unknown task 'sendsend'" in out + err, command


def test_a_rank_count_past_the_analysis_budget_is_not_listed_rank_by_rank(tmp_path):
    """A fuzz case: `EP in {2, 2147483648}` made D115 build a list of 2**31 ranks (MemoryError).
    Run in a child capped at 2 GiB, so a regression fails here instead of filling the machine."""
    import resource
    import subprocess
    import sys

    (tmp_path / "l.dsl").write_text(
        "layer l(EP = 8 in {2, 2147483648, 8}, D = 64) {\n  ranks EP\n  input x: f32[EP, D]\n"
        "  output y: f32[1, D]\n  task mine on aiv { y[0, :] = x[rank, :] }\n}\n"
    )

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    proc = subprocess.run(
        [sys.executable, "-m", "dsl.driver.cli", "check", str(tmp_path / "l.dsl")],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 file(s) checked: 0 error(s), 0 warning(s), 0 note(s)" in proc.stdout + proc.stderr
