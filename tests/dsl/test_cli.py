"""The ``dslc`` command line as the front end uses it: exit codes, ``--version``/``--help``,
``graph -o`` (atomic, never a partial file), ``check DIR``, ``--set`` and ``--layer``, and no
Python traceback whatever the arguments."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dsl import __version__
from dsl.driver.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPLIT_K = ROOT / "tests" / "fixtures" / "layers" / "split_k.dsl"
GOOD = "layer good(T = 16 in 16..64 step 16) {\n  input x: f32[T, 8]\n  output y: f32[T, 8]\n  task t { y[:, :] = x[:, :] }\n}\n"
BAD = "layer bad() {\n  output y: f32[4]\n  task t { y[0] = nope }\n}\n"


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def good(tmp_path) -> Path:
    path = tmp_path / "good.dsl"
    path.write_text(GOOD)
    return path


@pytest.fixture
def bad(tmp_path) -> Path:
    path = tmp_path / "bad.dsl"
    path.write_text(BAD)
    return path


# ---------------------------------------------------------------- exit codes and help


def test_clean_file_exits_0(good):
    code, out, err = run("check", str(good))
    assert code == 0
    assert out == ""
    assert err == "1 file(s) checked: 0 error(s), 0 warning(s), 0 note(s)\n"


def test_front_end_error_exits_2_with_the_location(bad):
    code, out, err = run("check", str(bad))
    assert code == 2
    assert out.splitlines()[:3] == [
        f"{bad}:3:19: E201 unknown name 'nope'",
        "    3 |   task t { y[0] = nope }",
        "      |                   ^^^^",
    ]
    assert "1 error(s)" in err


def test_graph_of_a_bad_file_exits_2(bad):
    code, out, err = run("graph", str(bad))
    assert code == 2
    assert out.startswith(f"{bad}:3:19: E201 ")


def test_version():
    assert run("--version") == (0, f"dslc {__version__}\n", "")


def test_help_lists_the_commands():
    code, out, _ = run("--help")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("    ") and line.split()]
    assert [c for c in listed if c in ("check", "graph", "explain", "run", "compile", "fix")] == [
        "check",
        "graph",
        "explain",
        "run",
        "compile",
        "fix",
    ]  # once each: the description no longer repeats the list argparse prints
    assert "exit codes: 0 clean, 1 findings" in out


def test_subcommand_help():
    code, out, _ = run("graph", "--help")
    assert code == 0
    assert "--format {json,dot}" in out and "-o FILE" in out


def test_no_command_prints_help_and_exits_2():
    code, out, _ = run()
    assert code == 2
    assert out.startswith("usage: dslc")


def test_console_script_exit_codes(good, bad):
    # The real entry point, in a subprocess: exit statuses reach the shell.
    exe = [sys.executable, "-m", "dsl.driver.cli"]
    assert subprocess.run([*exe, "--version"], capture_output=True, cwd=ROOT).returncode == 0
    assert subprocess.run([*exe, "check", str(good)], capture_output=True, cwd=ROOT).returncode == 0
    done = subprocess.run([*exe, "check", str(bad)], capture_output=True, cwd=ROOT, text=True)
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr


# ---------------------------------------------------------------- graph -o


def test_graph_output_file_equals_stdout(good, tmp_path):
    target = tmp_path / "g.json"
    assert run("graph", str(good), "-o", str(target)) == (0, "", "")
    _, stdout, _ = run("graph", str(good))
    assert target.read_text() == stdout
    assert json.loads(stdout)["layer"] == "good"


def test_graph_dot_format(good):
    code, out, _ = run("graph", str(good), "--format", "dot")
    assert code == 0
    assert out.startswith('digraph "good" {\n') and out.endswith("}\n")


def test_graph_output_has_ordinary_permissions(good, tmp_path):
    target = tmp_path / "g.json"
    run("graph", str(good), "-o", str(target))
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    target.chmod(0o640)
    run("graph", str(good), "-o", str(target))
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # an existing file keeps its mode


def test_graph_output_is_untouched_when_compilation_fails(bad, tmp_path):
    target = tmp_path / "g.json"
    target.write_text("previous\n")
    code, _, _ = run("graph", str(bad), "-o", str(target))
    assert code == 2
    assert target.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.dsl", "g.json"]


def test_graph_output_is_never_partial(good, tmp_path, monkeypatch):
    target = tmp_path / "g.json"
    target.write_text("previous\n")

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    code, _, err = run("graph", str(good), "-o", str(target))
    assert code == 2
    assert err.startswith(f"{target}: E107 no space left on the device"), err
    assert target.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "good.dsl"]  # no temporary left


def test_graph_output_creates_missing_directories(good, tmp_path):
    target = tmp_path / "no" / "such" / "g.json"
    code, out, err = run("graph", str(good), "-o", str(target))
    assert code == 0, err
    assert json.loads(target.read_text())["layer"]


def test_graph_output_below_a_file_is_e107(good, tmp_path):
    (tmp_path / "f.txt").write_text("x")
    code, out, err = run("graph", str(good), "-o", str(tmp_path / "f.txt" / "g.json"))
    assert code == 2
    assert err.startswith(f"{tmp_path / 'f.txt' / 'g.json'}: E107 {tmp_path / 'f.txt'} is not a directory"), (
        err
    )
    assert "Traceback" not in out + err


# ---------------------------------------------------------------- check DIR


def test_check_walks_a_directory_for_dsl_files(tmp_path):
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "a.dsl").write_text(GOOD)
    (tmp_path / "sub" / "b.dsl").write_text(BAD)
    (tmp_path / "sub" / "deeper" / "c.dsl").write_text(BAD.replace("nope", "zilch"))
    (tmp_path / "sub" / "notes.txt").write_text("layer { broken")
    (tmp_path / "sub" / "d.dsl.bak").write_text("layer { broken")
    (tmp_path / "sub" / "helper.py").write_text("x = 1\n")  # not a PyPTO program
    code, out, err = run("check", str(tmp_path))
    assert code == 2
    located = [line.split(": E")[0] for line in out.splitlines() if ": E" in line]
    assert located == [f"{tmp_path}/sub/b.dsl:3:19", f"{tmp_path}/sub/deeper/c.dsl:3:19"]
    assert err == "3 file(s) checked: 2 error(s), 0 warning(s), 0 note(s)\n"


def test_check_of_a_directory_without_sources_is_a_usage_error(tmp_path):
    code, _, err = run("check", str(tmp_path))
    assert code == 2
    assert err.startswith("<command line>: E104 no *.dsl")


def test_check_of_several_paths(good, bad):
    code, out, err = run("check", str(good), str(bad))
    assert code == 2
    assert "2 file(s) checked: 1 error(s)" in err


# ---------------------------------------------------------------- --set and --layer


def test_set_overrides_a_parameter(good):
    code, out, _ = run("graph", str(good), "--set", "T=48")
    assert code == 0
    assert json.loads(out)["params"]["T"] == {"value": 48, "domain": "16..64 step 16"}
    code, out, _ = run("graph", str(good), "--set", "T = 0x20")
    assert json.loads(out)["params"]["T"]["value"] == 32


def test_set_outside_the_domain_is_e204(good):
    code, out, _ = run("check", str(good), "--set", "T=17")
    assert code == 2
    assert f"{good}:1:12: E204 T = 17 (--set) is outside its range 16..64 step 16" in out


def test_set_of_an_unknown_parameter_is_e203(good):
    code, out, _ = run("check", str(good), "--set", "Q=1")
    assert code == 2
    assert "E203 --set Q: layer 'good' has no parameter 'Q'" in out


@pytest.mark.parametrize("option", ["T", "T=abc", "=1", "T==1", "T=1.5"])
def test_malformed_set_is_e104(good, option):
    code, out, err = run("check", str(good), "--set", option)
    assert code == 2
    assert err.startswith("<command line>: E104 --set")


def test_several_root_layers_need_layer(tmp_path):
    path = tmp_path / "two.dsl"
    path.write_text("layer a() { }\nlayer b() { }\n")
    code, _, err = run("graph", str(path))
    assert code == 2
    assert "several root layers (a, b); pick one with --layer" in err
    code, out, _ = run("graph", str(path), "--layer", "b")
    assert code == 0 and json.loads(out)["layer"] == "b"
    code, out, _ = run("graph", str(path), "--layer", "c")
    assert code == 2 and f"{path}: E208 no layer named 'c'" in out


# ---------------------------------------------------------------- never a traceback


@pytest.mark.parametrize(
    "args",
    [
        ["graph"],
        ["graph", "/no/such/file.dsl"],
        ["graph", "."],
        ["check", "/no/such/dir"],
        ["explain", "E999"],
        ["explain"],
        ["frobnicate"],
        ["graph", str(SPLIT_K), "--format", "yaml"],
        ["graph", str(SPLIT_K), "--set"],
        ["check", str(SPLIT_K), "--set", "SPLITS=0"],
        ["check", str(SPLIT_K), "--set", "HC_DIM=1000"],
        ["--debug", "check", str(SPLIT_K), "--set", "T=-16"],
    ],
)
def test_no_traceback_for_any_arguments(args):
    code, out, err = run(*args)
    assert code == 2
    assert "Traceback" not in out + err
    assert "internal error" not in err
    assert " E1" in out + err or " E2" in out + err or " E4" in out + err
