"""The wall-clock watchdog (``runtime.watchdog``): it stops a kernel that loops without
yielding, exits ``dslc run`` with its own code (4), says how far the run got, and tells a slow
run from a stuck one."""

from __future__ import annotations

import signal
import time

import pytest

from dsl.driver.cli import main
from runtime.program import Program, TaskSpec, TensorSpec
from runtime.simulator import SimulationTimeout, simulate


def test_a_kernel_that_never_yields_is_interrupted():
    def busy(ctx):
        while True:  # a body that never returns to the engine
            pass
        yield

    prog = Program(
        "busy", (TensorSpec("x", (1,), "float32", "output"),), (), (TaskSpec("t", "aiv", 1, busy),)
    )
    t0 = time.monotonic()
    with pytest.raises(SimulationTimeout) as err:
        simulate(prog, timeout=0.5)
    assert time.monotonic() - t0 < 5
    p = err.value.progress
    assert (p.blocks_done, p.blocks_total, p.tasks_done, p.tasks_total) == (0, 1, 0, 1)
    assert "block t[0] rank 0 round 1 (1 step) had been running its kernel for" in str(err.value)
    assert "a very long (or endless) loop in its body" in str(err.value)


def test_a_slow_run_that_keeps_finishing_blocks_is_not_called_a_livelock():
    def work(ctx):
        t = time.monotonic()
        while time.monotonic() - t < 0.002:
            pass
        return
        yield

    prog = Program("slow", (), (), (TaskSpec("t", "aiv", 100_000, work),))
    with pytest.raises(SimulationTimeout) as err:
        simulate(prog, timeout=1.0)
    message = str(err.value)
    assert "the run was still making progress" in message and "it is slow, not stuck" in message
    assert "livelock" not in message
    p = err.value.progress
    assert 0 < p.blocks_done < p.blocks_total == 100_000


def test_the_alarm_is_disarmed_after_a_run():
    prog = Program("ok", (), (), (TaskSpec("t", "aiv", 1, lambda ctx: None),))
    simulate(prog, timeout=0.2)
    time.sleep(0.3)  # an alarm left armed would fire here and kill the test
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_dslc_run_exits_4_and_reports_how_far_it_got(tmp_path, capsys):
    layer = tmp_path / "bodyloop.dsl"
    layer.write_text(
        "layer bodyloop(K = 1000000000) {\n"
        "  input  x: f32[16, 16]\n"
        "  output y: f32[16, 16]\n"
        "  task t on aiv {\n"
        "    let acc = zeros(f32, [16, 16])\n"
        "    for k in range(K) { acc = acc + x[:, :] }\n"
        "    y[:, :] = acc\n"
        "  }\n"
        "}\n"
    )
    t0 = time.monotonic()
    assert main(["run", str(layer), "--timeout", "1"]) == 4
    assert time.monotonic() - t0 < 60
    out = capsys.readouterr().out
    assert (
        "timeout: simulation of 'bodyloop' stopped at its 1 s wall-clock timeout: 0 of 1 blocks finished"
        in out
    )
    assert "a very long (or endless) loop in its body" in out


def test_an_alarm_with_a_test_interrupts_only_where_it_holds_and_never_in_a_held_block():
    """What lets an MPI process be stopped inside a kernel but not inside an MPI operation."""
    from runtime import watchdog

    in_kernel = [False]
    t0 = time.monotonic()
    with pytest.raises(watchdog.Expired), watchdog.alarm(0.05, lambda: in_kernel[0]):
        while time.monotonic() - t0 < 0.3:
            pass  # past the deadline, but not "in a kernel": retried, not raised
        in_kernel[0] = True
        with watchdog.held():
            while time.monotonic() - t0 < 0.6:
                pass  # in a kernel, but held
        left_held = time.monotonic()
        while time.monotonic() - t0 < 5:
            pass
    assert 0.6 <= time.monotonic() - t0 and time.monotonic() - left_held < 1.0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
