"""The lint and the simulator agree on the device: the rule fires exactly where the run breaks.

Both read runtime/device.py; these tests hold them to the same numbers by behaviour, so that a
default changed on one side only (the simulator's early queue at 32 while D110 keeps 64, a
preset with other core counts) fails here. The AscendC target and the PyPTO reader take the
a2a3 core counts from there as well, tied at the end.
"""

from __future__ import annotations

import pytest

from dsl.driver.api import compile_layer
from dsl.frontend import compile_text
from lowering.checks import run_rules
from lowering.checks.rule import PRESETS as LINT_PRESETS
from lowering.checks.rule import CheckContext
from runtime.device import EARLY_QUEUE_CAPACITY
from runtime.device import PRESETS as DEVICES
from runtime.simulator import PRESETS as SIM_PRESETS
from runtime.simulator import CohortTooLargeError

EARLY = """layer early(N = 4) {
  input  x: f32[16, 8]
  scratch s: f32[16, 8]
  output y: f32[N * 16, 8]
  task produce on aiv early_resolve { s[:, :] = x[:, :] }
  task consume spmd(N) on aiv { y[block * 16 : block * 16 + 16, :] = s[:, :] }
}
"""

COHORT = """layer cohort(N = 4) {
  input  x: f32[N * 16, 8]
  output y: f32[N * 16, 8]
  task all spmd(N) on aiv sync_start { y[block * 16 : block * 16 + 16, :] = x[block * 16 : block * 16 + 16, :] }
}
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def _layer(tmp_path, text: str, n: int):
    path = tmp_path / f"layer_{n}.dsl"
    path.write_text(text, encoding="utf-8")
    return compile_layer(path, {"N": n})


def _codes(text: str, n: int, preset: str = "a2a3") -> list[str]:
    (graph,) = compile_text(text.replace("(N = 4)", f"(N = {n})"))
    return [d.code for d in run_rules(graph, CheckContext(graph, preset=preset))]


def test_lint_and_simulator_know_the_same_presets():
    assert sorted(LINT_PRESETS) == sorted(SIM_PRESETS)
    for name, (aic, aiv, _threads) in SIM_PRESETS.items():
        assert CheckContext(None, preset=name).cores == {"aic": aic, "aiv": aiv, "mix": aic}  # type: ignore[arg-type]


def test_d110_fires_exactly_where_the_simulators_early_queue_overflows(tmp_path):
    """At the capacity the consumer blocks are staged early (gated on their cores until the
    doorbell) as far as slots allow and D110 is silent; one block more and the simulator queues none early (it
    waits for normal readiness) while D110 reports it. Both use their defaults."""
    cap = EARLY_QUEUE_CAPACITY
    # Staged blocks take the running and pending slots of the 48 AIV cores, except the running
    # slot of the producer's core: at most 95 are gated, the rest run once the producer completes.
    slots = 2 * SIM_PRESETS["a2a3"][1] - 1
    for n, staged in ((cap, min(cap, slots)), (cap + 1, 0)):
        result = _layer(tmp_path, EARLY, n).run(cores="a2a3")
        consumers = [r for r in result.schedule if r.task == "consume"]
        assert len(consumers) == n
        assert sum(r.gated for r in consumers) == staged, n
    assert "D110" not in _codes(EARLY, cap)
    assert _codes(EARLY, cap + 1).count("D110") == 1


@pytest.mark.parametrize("preset", ["sim", "a2a3"])
def test_o602_fires_exactly_where_the_simulator_refuses_a_cohort(tmp_path, preset):
    aiv = SIM_PRESETS[preset][1]
    assert "O602" not in _codes(COHORT, aiv, preset)
    assert _layer(tmp_path, COHORT, aiv).run(cores=preset).blocks_run == aiv
    assert _codes(COHORT, aiv + 1, preset).count("O602") == 1
    with pytest.raises(CohortTooLargeError):
        _layer(tmp_path, COHORT, aiv + 1).run(cores=preset)


BARRIER = """layer b(N = 4) {
  task t spmd(N) on CORE { barrier }
}
"""


@pytest.mark.parametrize(("core", "shape"), [("aiv", "aiv"), ("mix", "aic")])
def test_the_ascendc_target_holds_a_barrier_exactly_where_the_a2a3_preset_has_cores(core, shape):
    """The AscendC target (A721, the host's DSLC_*_CORES defaults) counts the cores of the
    simulator's a2a3 preset: a barrier over as many blocks as there are cores of the task's
    shape (clusters, for mix) is accepted, one more is refused."""
    from lowering.codegen.ascendc.emit import render_project
    from lowering.source import CompileError

    cores = getattr(DEVICES["a2a3"], shape)

    def project(n: int) -> dict[str, str]:
        (graph,) = compile_text(BARRIER.replace("CORE", core).replace("(N = 4)", f"(N = {n})"))
        return render_project(graph, "h", "v")

    host = next(text for name, text in project(cores).items() if name.endswith(".asc"))
    assert f"#define DSLC_AIV_CORES {DEVICES['a2a3'].aiv}\n" in host
    assert f"#define DSLC_AIC_CORES {DEVICES['a2a3'].aic}\n" in host
    with pytest.raises(CompileError) as refused:
        project(cores + 1)
    (d,) = refused.value.diagnostics
    assert d.code == "A721" and f"over {cores + 1} blocks, more than the {cores} " in d.message


@pytest.mark.parametrize(
    ("query", "shape"), [("available_aiv_count", "aiv"), ("available_cluster_count", "aic")]
)
def test_the_pypto_reader_takes_the_device_core_count_from_the_a2a3_preset(tmp_path, query, shape):
    from lowering.pypto_reader import read_pypto

    path = tmp_path / "model.py"
    path.write_text(
        "import pypto.language as pl\n\n\n@pl.jit\ndef entry(x: pl.Tensor[[8, 8], pl.FP32]):\n"
        f'    with pl.spmd(pl.system.{query}(), name_hint="full"):\n'
        '        pl.system.syncall(core_type="aiv_only", mode="hard")\n'
        "    return x\n",
        encoding="utf-8",
    )
    result = read_pypto(path)
    (graph,) = result.graphs
    assert graph.task("full").blocks == getattr(DEVICES["a2a3"], shape)
    assert any(d.code == "P001" and query in d.message for d in result.diagnostics)
