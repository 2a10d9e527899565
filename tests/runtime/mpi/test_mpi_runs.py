"""Ranks as MPI processes (runtime.mpi): every run is a real mpiexec job, oversubscribed on
this machine, under a timeout; skipped without the ``mpi`` extra.

What the MPI backend must keep from the in-process simulator: the same outputs bit for bit
when the result does not depend on cross-rank timing, the same deadlock report (merged,
naming the cycle across processes) reached by every process within a bounded time, and an
error on one rank ending every process with that rank's diagnostic.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mpiutil import PROGRAMS, ROOT, TCP_ENV, needs_mpi, run_driver

from dsl.driver.api import compile_layer
from runtime.loader import load_module
from runtime.simulator import simulate

pytestmark = needs_mpi

RUN = ROOT / "tests" / "fixtures" / "run"
MPI_FIXTURES = ROOT / "tests" / "fixtures" / "mpi"
MOE = ROOT / "models" / "deepseek_v4_flash" / "moe.dsl"
#: The MoE layer at EP4, reduced: 4 experts per rank, 16 tokens, D = 256.
MOE_EP4 = {"EP": 4, "N_LOCAL": 4, "T": 16, "D": 256, "I": 128, "VOCAB": 512}
#: The handshake runs: each rank's own scheduler parks the notifier behind the waiter.
HANDSHAKE = {"policy": "adversarial", "seed": 1, "rounds": 3, "cores": (1, 2)}
#: A deadlock must be found long before the run's watchdog (20 s) would fire.
DETECTION_BOUND = 8.0


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:  # one cache for the module: each layer compiles once
        patch.setenv("DSLC_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


def _layer(path: Path, params: dict):
    layer = compile_layer(path, params)
    inputs = layer.make_inputs(0, layer.ranks)
    per_rank, scalars = layer.split_scalars(inputs)
    return layer, per_rank, scalars


def _assert_same_outputs(in_process, mpi_outputs) -> None:
    assert len(mpi_outputs) == len(in_process.outputs)
    for rank, (want, got) in enumerate(zip(in_process.outputs, mpi_outputs, strict=True)):
        assert sorted(got) == sorted(want), rank
        for name, value in want.items():
            assert got[name].dtype == value.dtype
            assert got[name].tobytes() == value.tobytes(), f"{name} of rank {rank} differs"


@pytest.mark.parametrize("nprocs", [2, 4])
def test_handshake_without_its_edge_deadlocks_on_every_process_with_one_report(tmp_path, nprocs):
    layer, inputs, scalars = _layer(RUN / "handshake_pre.dsl", {"EP": nprocs})
    job = run_driver(
        tmp_path,
        str(layer.module_path),
        nprocs=nprocs,
        inputs=inputs,
        ranks=nprocs,
        scalars=scalars,
        timeout=20.0,
        **HANDSHAKE,
    )
    assert job.outcomes == ["DeadlockError"] * nprocs, job.stderr
    assert all(p["seconds"] < DETECTION_BOUND for p in job.processes)
    report = job.processes[0]["message"]
    assert all(p["message"] == report for p in job.processes)  # the one merged report, everywhere
    assert report.startswith("deadlock in program 'handshake'")
    cycle = next(line for line in report.splitlines() if line.startswith("cycle: "))
    assert "wait[0]@rank0" in cycle and "@rank1" in cycle and "push[" in cycle
    assert "spinning on cell arrived[" in report and "parked in pending slot" in report
    for rank in range(nprocs):  # every rank's blocks are in the report, not process 0's only
        assert f"  rank {rank} AIV" in report


def test_every_process_learns_of_the_deadlock_within_a_second_of_the_last_progress(tmp_path):
    layer, inputs, scalars = _layer(RUN / "handshake_pre.dsl", {"EP": 4})
    job = run_driver(
        tmp_path,
        str(layer.module_path),
        nprocs=4,
        inputs=inputs,
        ranks=4,
        scalars=scalars,
        raise_on_deadlock=False,
        **HANDSHAKE,
    )
    assert job.outcomes == ["done"] * 4  # returned, with the deadlock in the result
    assert job.result["deadlock"].startswith("deadlock in program 'handshake'")
    assert 0 <= job.result["latency"] < 1.0  # the latest verdict after the latest progress, on one clock


@pytest.mark.parametrize("nprocs", [2, 4])
def test_handshake_with_its_edge_completes_as_in_process(tmp_path, nprocs):
    layer, inputs, scalars = _layer(RUN / "handshake_post.dsl", {"EP": 4})
    job = run_driver(
        tmp_path, str(layer.module_path), nprocs=nprocs, inputs=inputs, ranks=4, scalars=scalars, **HANDSHAKE
    )
    assert job.outcomes == ["done"] * nprocs, job.stderr + str(job.processes)
    in_process = layer.run(layer.make_inputs(0, 4), ranks=4, **HANDSHAKE)
    _assert_same_outputs(in_process, job.result["outputs"])
    assert job.result["blocks_run"] == in_process.blocks_run == 4 * 3 * 5
    assert len(job.result["schedule"]) == in_process.blocks_run
    assert {r.rank for r in job.result["schedule"]} == {0, 1, 2, 3}


def test_one_process_hosting_every_rank_makes_the_in_process_schedule_exactly(tmp_path):
    """The same dispatch rules and choice points, asked of the same seeded policy: placements,
    slots, times and makespan equal the in-process run block for block."""
    layer, inputs, scalars = _layer(MOE, MOE_EP4)
    kwargs = {"ranks": 4, "policy": "adversarial", "seed": 2, "rounds": 2, "cores": (2, 4)}
    job = run_driver(tmp_path, str(layer.module_path), nprocs=1, inputs=inputs, scalars=scalars, **kwargs)
    assert job.outcomes == ["done"], job.stderr + str(job.processes)
    in_process = layer.run(layer.make_inputs(0, 4), **kwargs)

    def key(r):
        return (r.round, r.rank, r.task, r.block)

    assert sorted(job.result["schedule"], key=key) == sorted(in_process.schedule, key=key)
    assert job.result["makespan"] == in_process.makespan
    _assert_same_outputs(in_process, job.result["outputs"])


@pytest.mark.parametrize("nprocs", [2, 4])
def test_moe_at_ep4_equals_the_in_process_run_bit_for_bit(tmp_path, nprocs):
    layer, inputs, scalars = _layer(MOE, MOE_EP4)
    kwargs = {"ranks": 4, "policy": "random", "seed": 3, "rounds": 2}
    job = run_driver(
        tmp_path, str(layer.module_path), nprocs=nprocs, inputs=inputs, scalars=scalars, **kwargs
    )
    assert job.outcomes == ["done"] * nprocs, job.stderr + str(job.processes)
    in_process = layer.run(layer.make_inputs(0, 4), **kwargs)
    _assert_same_outputs(in_process, job.result["outputs"])
    assert job.result["blocks_run"] == in_process.blocks_run
    assert job.result["digests"][2]["ffn_out"]  # outputs and inouts are digested for every rank


def test_remote_fp32_fp16_bf16_atomics_lose_no_update_and_equal_the_in_process_run(tmp_path):
    layer, inputs, scalars = _layer(MPI_FIXTURES / "remote_atomic.dsl", {"EP": 4})
    job = run_driver(tmp_path, str(layer.module_path), nprocs=4, inputs=inputs, ranks=4, scalars=scalars)
    assert job.outcomes == ["done"] * 4, job.stderr + str(job.processes)
    outputs = job.result["outputs"]
    hits = 4 * 4 * 32  # every block of every rank adds 1 into rank 0's cells HITS times
    assert outputs[0]["count32"][0, 0] == hits and outputs[0]["count16"][0, 0] == hits
    assert outputs[0]["count16"].dtype == np.float16
    _assert_same_outputs(layer.run(layer.make_inputs(0, 4)), outputs)


def test_set_notifies_negative_adds_and_eq_waits_across_processes_equal_the_in_process_run(tmp_path):
    job = run_driver(tmp_path, f"{PROGRAMS}:set_and_eq", nprocs=2, ranks=4, policy="random", seed=5)
    assert job.outcomes == ["done"] * 2, job.stderr + str(job.processes)
    outputs = job.result["outputs"]
    for rank in range(4):
        peers = [src for src in range(4) if src != rank]
        assert outputs[rank]["cells"].tolist() == [100 + s if s != rank else 0 for s in range(4)] + [6]
        assert [outputs[rank]["seen"][s, 1] for s in peers] == [10 * s + 1 for s in peers]
    in_process = simulate(load_module(PROGRAMS).set_and_eq(), ranks=4, policy="random", seed=5)
    _assert_same_outputs(in_process, outputs)


def test_round_scalars_count_the_rounds_on_every_process(tmp_path):
    job = run_driver(
        tmp_path,
        f"{PROGRAMS}:round_scalars",
        nprocs=2,
        ranks=2,
        rounds=2,
        scalars={"fixed": 9},
        round_scalars=("epoch", "dispatch"),
    )
    assert job.outcomes == ["done"] * 2, job.stderr + str(job.processes)
    assert [out["seen"].tolist() for out in job.result["outputs"]] == [[[1, 1, 9], [2, 2, 9]]] * 2


def test_a_run_over_tcp_equals_the_in_process_run(tmp_path):
    layer, inputs, scalars = _layer(MPI_FIXTURES / "remote_atomic.dsl", {"EP": 2, "HITS": 8})
    job = run_driver(
        tmp_path, str(layer.module_path), nprocs=2, inputs=inputs, ranks=2, scalars=scalars, env=TCP_ENV
    )
    assert job.outcomes == ["done"] * 2, job.stderr + str(job.processes)
    _assert_same_outputs(layer.run(layer.make_inputs(0, 2)), job.result["outputs"])


def test_a_kernel_error_on_one_rank_stops_every_process_with_its_diagnostic(tmp_path):
    job = run_driver(tmp_path, f"{PROGRAMS}:kernel_error", nprocs=2, ranks=2, timeout=20.0)
    assert job.outcomes == ["KernelError"] * 2
    expected = "kernel of work[0] (rank 1, round 1) raised ValueError: boom on rank 1"
    assert [p["message"] for p in job.processes] == [expected] * 2
    assert all(p["seconds"] < DETECTION_BOUND for p in job.processes)


def test_a_livelock_on_one_rank_times_out_every_process_with_that_ranks_diagnostic(tmp_path):
    # a step limit no 1 s run reaches: on a fast, idle machine the default 1,000,000 resumptions of
    # one block came before the timeout and the test failed with StepLimitExceeded
    job = run_driver(tmp_path, f"{PROGRAMS}:livelock", nprocs=2, ranks=2, timeout=1.0, max_block_steps=10**9)
    assert job.outcomes == ["SimulationTimeout"] * 2
    message = job.processes[0]["message"]
    assert "'livelock' stopped at its 1 s wall-clock timeout" in message
    assert "kernels kept being resumed (the last block resumed: block work[0] rank 1 round 1" in message
    assert "a kernel that yields forever (a wait polled in a loop) or a livelock" in message
    assert job.processes[1]["message"] == message


def test_a_kernel_that_never_returns_is_interrupted_and_stops_every_process(tmp_path):
    """Issue 14: the watchdog interrupts a kernel body that never yields over MPI too (it only
    stopped the peers, and the job ended in an abort); the diagnostic is the stuck process's."""
    job = run_driver(tmp_path, f"{PROGRAMS}:never_returns", nprocs=2, ranks=2, timeout=0.5, stop_grace=20.0)
    assert job.outcomes == ["SimulationTimeout"] * 2, job.stderr + str(job.processes)
    message = job.processes[0]["message"]
    assert "'never_returns' stopped at its 0.5 s wall-clock timeout" in message
    assert "block work[0] rank 1 round 1 (0 steps) had been running its kernel for" in message
    assert "a very long (or endless) loop in its body" in message
    assert job.processes[1]["message"] == message
    assert all(p["seconds"] < DETECTION_BOUND for p in job.processes)


def test_a_kernel_the_watchdog_cannot_interrupt_ends_the_job_with_the_diagnostic_before_the_abort(tmp_path):
    job = run_driver(
        tmp_path, f"{PROGRAMS}:never_returns_held", nprocs=2, ranks=2, timeout=0.5, stop_grace=0.5
    )
    assert job.returncode == 4 and job.processes == []  # aborted: no process returned
    diagnostic, _, abort = job.stderr.partition("aborting the MPI job")
    assert "exceeded its 0.5s wall-clock timeout: MPI process 0 (rank 0) waited" in diagnostic
    assert "MPI process(es) 1 did not stop within 0.5 s" in diagnostic
    assert "MPI_Abort" in abort  # the abort trace comes after our diagnostic, not instead of it


def test_the_trace_merges_every_process_with_one_process_track_per_rank(tmp_path):
    layer, inputs, scalars = _layer(RUN / "handshake_post.dsl", {"EP": 4})
    trace = tmp_path / "trace.json"
    job = run_driver(
        tmp_path, str(layer.module_path), nprocs=2, inputs=inputs, ranks=4, scalars=scalars, trace=str(trace)
    )
    assert job.outcomes == ["done"] * 2
    doc = json.loads(trace.read_text())
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {r: f"rank {r}" for r in range(4)}
    blocks = [e for e in events if e.get("cat") == "block"]
    assert len(blocks) == job.result["blocks_run"] == 4 * 5
    assert {e["pid"] for e in blocks} == {0, 1, 2, 3}
    assert doc["otherData"]["launcher"] == "mpi" and doc["otherData"]["procs"] == 2


@pytest.mark.parametrize("name", ["late_notify", "late_notify_seen_late"])
def test_a_wait_resumes_at_the_simulated_time_of_the_remote_notify(tmp_path, name):
    """Each process keeps its own clock; a notify carries the notifier's time to the waiter,
    whether the waiter spins on the cell or (seen_late) finds it holding already."""
    job = run_driver(tmp_path, f"{PROGRAMS}:{name}", nprocs=2, ranks=2)
    assert job.outcomes == ["done"] * 2
    ends = {(r.rank, r.task): r.end for r in job.result["schedule"]}
    assert ends[(1, "work")] == 100 and ends[(1, "notify")] == 101
    assert ends[(0, "wait")] == 101  # woken when rank 1 notified, not at rank 0's own t=1 or 2
    program = getattr(load_module(PROGRAMS), name)()
    assert job.result["makespan"] == simulate(program, ranks=2).makespan == 101
