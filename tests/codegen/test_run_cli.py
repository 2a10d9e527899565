"""dslc run / compile from the command line: validation, exit codes, deadlock report, traces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dsl.driver.cli import main

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def test_run_validates_against_the_golden_bit_for_bit(capsys):
    assert main(["run", str(RUN / "splitk_reduce.dsl"), "--policy", "random", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "blocks run 19, simulated makespan" in out
    row = next(line for line in out.splitlines() if line.startswith("y "))
    assert row.split()[-1] == "ok" and "0.000e+00" in row


def test_run_reports_a_mismatch_with_exit_1(tmp_path, capsys):
    for f in ("splitk_reduce.dsl", "splitk_reduce_golden.py"):
        shutil.copy(RUN / f, tmp_path / f)
    golden = tmp_path / "splitk_reduce_golden.py"
    golden.write_text(golden.read_text().replace("tileops.mul(np.vstack(rows), 2.0)", "np.vstack(rows)"))
    assert main(["run", str(tmp_path / "splitk_reduce.dsl")]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "100.00%" in out


def test_run_exits_3_on_deadlock_and_names_the_cycle(capsys):
    code = main(
        [
            "run",
            str(RUN / "handshake_pre.dsl"),
            "--policy",
            "adversarial",
            "--cores",
            "1",
            "--rounds",
            "3",
            "--seed",
            "2",
            "--no-lint",
        ]
    )
    out = capsys.readouterr().out
    assert code == 3
    assert "deadlock in program 'handshake'" in out and "parked in pending slot" in out


def test_run_writes_a_chrome_trace(tmp_path):
    trace = tmp_path / "trace.json"
    assert main(["run", str(RUN / "splitk_ordered.dsl"), "--trace", str(trace), "--no-validate"]) == 0
    events = json.loads(trace.read_text())["traceEvents"]
    blocks = [e for e in events if e.get("ph") == "X" and e.get("cat") == "block"]
    assert len(blocks) == 9  # 8 partial blocks + 1 reduce block
    assert {e["name"] for e in events if e.get("ph") == "M"} >= {"process_name", "thread_name"}


def test_run_rejects_bad_options_without_traceback(capsys):
    assert main(["run", str(RUN / "splitk_ordered.dsl"), "--rounds", "0"]) == 2
    assert main(["run", str(RUN / "splitk_ordered.dsl"), "--cores", "x,y"]) == 2
    assert main(["run", str(RUN / "splitk_ordered.dsl"), "--cores", "0"]) == 2
    assert main(["run", str(RUN / "splitk_ordered.dsl"), "--cores", "2,3"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err


def test_compile_writes_the_numpy_module(tmp_path):
    assert (
        main(["compile", str(RUN / "splitk_ordered.dsl"), "--target", "numpy", "-o", str(tmp_path / "out")])
        == 0
    )
    text = (tmp_path / "out" / "splitk_ordered.py").read_text()
    assert "PROGRAM = Program(" in text
    assert "def task_partial(ctx):" in text and "def task_reduce(ctx):" in text  # named after the tasks
