"""``dslc run --launcher mpi``: launch modes, one report printed once, exit codes, usage errors.

The jobs run the real command line (each process imports the whole CLI, so these take a few
seconds; the semantics are tested through the runtime in test_mpi_runs.py).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from mpiutil import JOB_TIMEOUT, ROOT, needs_mpi, run_job

from dsl.driver.cli import build_parser, main
from dsl.driver.run_mpi import FORWARDED, child_argv

RUN = ROOT / "tests" / "fixtures" / "run"
ATOMIC = ROOT / "tests" / "fixtures" / "mpi" / "remote_atomic.dsl"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def _dslc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dsl.driver.cli", *args],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
        cwd=ROOT,
    )


@needs_mpi
def test_the_lint_runs_before_the_simulation_and_is_printed_once():
    proc = _dslc("run", str(RUN / "handshake_pre.dsl"), "--launcher", "mpi", "--procs", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.count(": D101 ") == 1 and proc.stdout.count(": D117 ") == 1  # printed once
    assert "not run: the lint found 2 error(s)" in proc.stderr
    assert "running" not in proc.stdout  # no process was started
    proc = run_job(
        [sys.executable, "-m", "dsl.driver.cli", "run", str(RUN / "handshake_pre.dsl"), "--launcher", "mpi"],
        nprocs=2,
    )  # under mpiexec every process lints; process 0 alone prints
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.count("D101") == 1 and proc.stderr.count("not run: the lint found") == 1


@needs_mpi
def test_a_golden_that_raises_is_e109_once_and_ends_every_process(tmp_path):
    """Process 0 raised out of the golden check while the others waited at a barrier: the job
    hung until the launcher killed it."""
    for name in ("remote_atomic.dsl", "remote_atomic_golden.py"):
        (tmp_path / name).write_text((ATOMIC.parent / name).read_text())
    golden = tmp_path / "remote_atomic_golden.py"
    text = golden.read_text()
    golden.write_text(text.replace("    total = sum(", '    raise ValueError("boom")\n    total = sum(', 1))
    proc = _dslc("run", str(tmp_path / "remote_atomic.dsl"), "--no-lint", "--launcher", "mpi", "--procs", "2")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout.count("E109 golden raised ValueError: boom") == 1
    assert "did not finish" not in proc.stderr and "internal error" not in proc.stderr


@needs_mpi
def test_a_kernel_body_that_never_yields_stops_at_the_timeout_with_exit_4(tmp_path):
    """Issue 14 over MPI: the job was killed 60 s past --timeout and exited 3 (the deadlock code)."""
    layer = tmp_path / "bodyloop.dsl"
    layer.write_text(
        "layer bodyloop(K = 1000000000) {\n  input x: f32[16, 16]\n  output y: f32[16, 16]\n"
        "  task t on aiv {\n    let acc = zeros(f32, [16, 16])\n"
        "    for k in range(K) { acc = acc + x[:, :] }\n    y[:, :] = acc\n  }\n}\n"
    )
    proc = _dslc("run", str(layer), "--launcher", "mpi", "--procs", "1", "--timeout", "2")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert (
        "timeout: simulation of 'bodyloop' stopped at its 2 s wall-clock timeout: 0 of 1 blocks finished"
        in proc.stdout
    )
    assert "a very long (or endless) loop in its body" in proc.stdout


@needs_mpi
def test_procs_starts_mpiexec_and_prints_the_merged_deadlock_report_once():
    proc = _dslc(
        "run", str(RUN / "handshake_pre.dsl"), "--launcher", "mpi", "--procs", "2", "--no-lint",
        "--policy", "adversarial", "--cores", "1", "--rounds", "3", "--seed", "1",
    )  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    out = proc.stdout
    assert (
        "running handshake on 2 rank(s), cores (1, 2), policy adversarial, seed 1, 3 round(s), over 2 MPI"
        in out
    )
    assert out.count("deadlock in program 'handshake'") == 1
    assert "cycle: wait[0]@rank0 -> push[" in out and "parked in pending slot" in out
    assert "Traceback" not in proc.stderr


@needs_mpi
def test_under_mpiexec_the_golden_is_checked_once_on_process_0():
    proc = run_job(
        [sys.executable, "-m", "dsl.driver.cli", "run", str(ATOMIC), "--launcher", "mpi", "--no-lint"],
        nprocs=4,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith(("sum", "count"))]
    assert sorted((r[0], r[1]) for r in rows) == sorted(
        (name, str(rank)) for name in ("sum32", "sum16", "sumbf", "count32", "count16") for rank in range(4)
    )  # each output of each of the 4 ranks once, though 4 processes ran
    assert all(r[-1] == "ok" for r in rows)
    assert proc.stdout.count("blocks run 40,") == 1


@needs_mpi
def test_a_mismatch_exits_1_from_every_process(tmp_path):
    for name in ("remote_atomic.dsl", "remote_atomic_golden.py"):
        (tmp_path / name).write_text((ATOMIC.parent / name).read_text())
    golden = tmp_path / "remote_atomic_golden.py"
    golden.write_text(golden.read_text().replace("hits if rank == 0 else 0", "hits + 1 if rank == 0 else 0"))
    proc = run_job(
        [
            sys.executable,
            "-m",
            "dsl.driver.cli",
            "run",
            str(tmp_path / "remote_atomic.dsl"),
            "--launcher",
            "mpi",
            "--no-lint",  # the layer's f16 atomics are N201 by design
        ],
        nprocs=2,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [line.split()[:2] for line in proc.stdout.splitlines() if "MISMATCH" in line] == [
        ["count32", "0"],
        ["count16", "0"],
    ]


def test_without_the_extra_the_launcher_is_a_usage_error_naming_it(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mpi4py" else real(name, *a)
    )
    for extra in ([], ["--procs", "2"]):
        assert main(["run", str(RUN / "handshake_post.dsl"), "--launcher", "mpi", *extra]) == 2
        err = capsys.readouterr().err
        assert "pip install 'dslc[mpi]'" in err and "Traceback" not in err


def test_procs_needs_the_mpi_launcher_and_at_most_one_process_per_rank(capsys):
    assert main(["run", str(RUN / "handshake_post.dsl"), "--procs", "2"]) == 2
    assert "--procs starts MPI processes: it needs --launcher mpi" in capsys.readouterr().err
    if importlib.util.find_spec("mpi4py") is not None:
        assert main(["run", str(RUN / "handshake_post.dsl"), "--launcher", "mpi", "--procs", "3"]) == 2
        assert "the layer runs on 2 rank(s); use at most 2 processes" in capsys.readouterr().err


def test_replay_over_mpi_is_a_usage_error_before_anything_starts(tmp_path, capsys):
    schedule = tmp_path / "never_read.json"  # refused before the schedule is even read
    for extra in ([], ["--procs", "2"]):
        argv = ["run", str(RUN / "handshake_pre.dsl"), "--launcher", "mpi", "--replay", str(schedule), *extra]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "--replay runs one recorded interleaving" in err and "drop --launcher mpi" in err
        assert "Traceback" not in err


def test_every_run_option_is_passed_on_to_the_processes_of_a_launch():
    parser = build_parser()
    run = parser._subparsers._group_actions[0].choices["run"]
    dests = {a.dest for a in run._actions if a.dest not in ("help", "procs", "replay", "no_lint")}
    assert dests == set(FORWARDED)
    args = parser.parse_args(
        ["run", "f.dsl", "--launcher", "mpi", "--procs", "4", "--policy", "random", "--seed", "7",
         "--rounds", "2", "--ranks", "8", "--cores", "2", "--timeout", "9.5", "--trace", "t.json",
         "--no-validate", "--scalar", "n=3", "--round-scalar", "k", "--set", "EP=8", "--layer", "top", "--debug", "--no-color"]
    )  # fmt: skip
    again = parser.parse_args(child_argv(args))
    for dest in FORWARDED:
        assert getattr(again, dest) == getattr(args, dest), dest
    assert again.procs is None
    assert again.no_lint  # the launch lints once; its processes do not
