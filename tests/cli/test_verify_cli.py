"""``dslc verify`` and ``dslc run --replay`` from the command line: verdicts, exit codes,
counterexamples that replay, and bad input answered with exit 2."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from dsl.driver.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN = FIXTURES / "run"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def _verify(capsys, *args: str) -> tuple[int, str]:
    code = main(["verify", *args, "--probes", "0"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err
    return code, captured.out


def test_the_handshake_without_its_edge_deadlocks_and_the_schedule_replays(tmp_path, capsys):
    schedule, trace = tmp_path / "cx.json", tmp_path / "cx.trace.json"
    code, out = _verify(
        capsys,
        str(RUN / "handshake_pre.dsl"),
        "--rounds",
        "1",
        "--save",
        str(schedule),
        "--trace",
        str(trace),
    )
    assert code == 1
    assert "deadlock freedom  VIOLATED" in out
    assert "VIOLATED: deadlock (certainty: proven by the schedule below, the shortest found: 6 steps)" in out
    assert "spins on arrived[" in out and "parked in pending slot" in out
    cycle = next(line for line in out.splitlines() if line.strip().startswith("cycle: "))
    doc = json.loads(schedule.read_text())
    assert doc["format"] == "dslc-schedule" and doc["layer"] == "handshake" and doc["cores"] == [1, 2]
    assert all(d["option"] for d in doc["decisions"])
    assert any(e.get("cat") == "spin" for e in json.loads(trace.read_text())["traceEvents"])
    # the same deadlock, the same cycle, through dslc run
    assert main(["run", str(RUN / "handshake_pre.dsl"), "--replay", str(schedule)]) == 3
    replayed = capsys.readouterr().out
    assert cycle.strip() in replayed and "policy replay" in replayed


def test_the_handshake_with_its_edge_verifies_complete(capsys):
    code, out = _verify(capsys, str(RUN / "handshake_post.dsl"), "--rounds", "1")
    assert code == 0
    assert "VERIFIED (certainty: complete" in out
    assert "deadlock freedom  holds" in out and "determinism       holds" in out


def test_a_search_stopped_by_its_budget_is_inconclusive(capsys):
    code, out = _verify(capsys, str(RUN / "handshake_post.dsl"), "--rounds", "2", "--max-states", "20")
    assert code == 4
    assert "INCONCLUSIVE (certainty: bounded - stopped at --max-states" in out
    assert "deadlock freedom  unknown" in out


def test_fp32_atomics_are_reported_with_both_schedules_and_the_first_differing_element(tmp_path, capsys):
    schedule = tmp_path / "nd.json"
    code, out = _verify(
        capsys,
        str(RUN / "splitk_atomic.dsl"),
        *("--set", "SPLITS=3", "--cores", "2,4", "--rounds", "1", "--save", str(schedule)),
    )
    assert code == 1
    assert "determinism       VIOLATED" in out and "first differing element: y[" in out
    assert "the reference schedule (the other bits):" in out
    reference = tmp_path / "nd.reference.json"
    assert reference.is_file()
    bits = []
    for s in (schedule, reference):
        assert main(["run", str(RUN / "splitk_atomic.dsl"), "--replay", str(s), "--no-validate"]) == 0
        bits.append(capsys.readouterr().out)
    assert all("policy replay" in b for b in bits)


def test_a_single_aic_core_is_said_to_serialise_atomics(capsys):
    code, out = _verify(capsys, str(RUN / "splitk_atomic.dsl"), "--set", "SPLITS=3", "--rounds", "1")
    assert code == 0  # one AIC core: the three atomic blocks run in block order
    assert "note: task partial's 3 blocks run one at a time on the only AIC core" in out
    assert "--cores 2,4" in out


def test_json_output_carries_the_verdict_and_a_replayable_schedule(tmp_path, capsys):
    code, out = _verify(capsys, str(RUN / "handshake_pre.dsl"), "--rounds", "1", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["result"] == "violated" and doc["certainty"] == "proven"
    assert doc["properties"]["deadlock"]["status"] == "VIOLATED"
    cx = doc["counterexample"]
    assert cx["kind"] == "deadlock" and cx["steps"] and "cycle:" in cx["deadlock"]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(cx["schedule"]))
    assert main(["run", str(RUN / "handshake_pre.dsl"), "--replay", str(path)]) == 3


def test_bad_input_is_a_located_error_with_exit_2(tmp_path, capsys):
    layer = str(RUN / "handshake_post.dsl")
    assert main(["verify", str(tmp_path / "missing.dsl")]) == 2
    assert main(["verify", layer, "--rounds", "0"]) == 2
    assert main(["verify", layer, "--cores", "3,5"]) == 2
    assert main(["verify", layer, "--max-states", "0"]) == 2
    assert main(["verify", layer, "--scalar", "nope=1"]) == 2
    assert main(["verify", layer, "--timeout", "nan"]) == 2
    assert main(["verify", layer, "--seed", "-1"]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out and "internal error" not in captured.err
    for message in (
        "--rounds 0: must be 1..1000000",
        "--max-states 0: must be >= 1",
        "--timeout nan: must be a finite number of seconds > 0",
        "--seed -1: must be >= 0",
        "--scalar nope: layer 'handshake' has no runtime scalar 'nope' (none)",
    ):
        assert f"<command line>: E104 {message}\n" in captured.err, message


def test_a_schedule_that_does_not_fit_is_refused_with_exit_2(tmp_path, capsys):
    schedule = tmp_path / "cx.json"
    assert (
        main(
            [
                "verify",
                str(RUN / "handshake_pre.dsl"),
                "--rounds",
                "1",
                "--probes",
                "0",
                "--save",
                str(schedule),
            ]
        )
        == 1
    )
    capsys.readouterr()
    # another layer
    assert main(["run", str(RUN / "splitk_ordered.dsl"), "--replay", str(schedule)]) == 2
    assert "the schedule is of layer 'handshake'" in capsys.readouterr().err
    # the same layer, another graph: the decisions stop fitting
    assert main(["run", str(RUN / "handshake_post.dsl"), "--replay", str(schedule)]) == 2
    assert "refused: the schedule does not fit this layer: decision" in capsys.readouterr().out
    # options the schedule fixes
    assert main(["run", str(RUN / "handshake_pre.dsl"), "--replay", str(schedule), "--rounds", "2"]) == 2
    assert "drop --rounds" in capsys.readouterr().err
    assert main(["run", str(RUN / "handshake_pre.dsl"), "--replay", str(schedule), "--set", "EP=4"]) == 2
    assert "the schedule was recorded with EP=2" in capsys.readouterr().err
    # not a schedule at all
    junk = tmp_path / "junk.json"
    junk.write_text("{ not json")
    assert main(["run", str(RUN / "handshake_pre.dsl"), "--replay", str(junk)]) == 2
    junk.write_text(json.dumps({"format": "dslc-schedule", "version": 1}))
    assert main(["run", str(RUN / "handshake_pre.dsl"), "--replay", str(junk)]) == 2
    assert main(["run", str(RUN / "handshake_pre.dsl"), "--replay", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert "not JSON" in err and "field 'cores' is missing" in err and "cannot read" in err


def test_an_unwritable_save_path_is_exit_2_and_nothing_is_half_written(tmp_path, capsys):
    (tmp_path / "file").write_text("a file, not a directory")
    target = tmp_path / "file" / "cx.json"
    code = main(
        ["verify", str(RUN / "handshake_pre.dsl"), "--rounds", "1", "--probes", "0", "--save", str(target)]
    )
    assert code == 2 and not target.exists()
    assert capsys.readouterr().err == f"{target}: E107 {tmp_path / 'file'} is not a directory\n"


def test_a_kernel_that_never_returns_is_stopped_at_the_timeout(tmp_path, capsys):
    """The search checks its deadline between steps: a body looping 10^9 times inside one step
    (issue 14's body_loop_1e9) must be interrupted too, exit 4, never a hang."""
    layer = tmp_path / "bodyloop.dsl"
    layer.write_text(
        "layer bodyloop(K = 1000000000) {\n  input  x: f32[16, 16]\n  output y: f32[16, 16]\n"
        "  task t on aiv {\n    let acc = zeros(f32, [16, 16])\n    for k in range(K) { acc = acc + x[:, :] }\n"
        "    y[:, :] = acc\n  }\n}\n"
    )
    from dsl.driver import cli_verify

    t0 = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli_verify, "STOP_GRACE", 0.5)
        assert main(["verify", str(layer), "--timeout", "0.5", "--probes", "0"]) == 4
    assert time.monotonic() - t0 < 30
    assert capsys.readouterr().out == (
        "inconclusive: stopped at the 0.5 s timeout while a kernel of 'bodyloop' was running without "
        "returning to the scheduler: a very long (or endless) loop in a task body\n"
    )
