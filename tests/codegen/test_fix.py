"""dslc fix: provable rewrites, diff/--write behaviour, re-check clean, fixed layers run."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from dsl.driver.api import compile_layer
from dsl.driver.cli import main
from dsl.driver.cli_fix import fix_text
from dsl.frontend import compile_file
from lowering.checks import run_rules
from lowering.checks.rule import CheckContext

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))


def _codes(path: Path, codes=("D101", "N201")) -> list[str]:
    return [d.code for g in compile_file(path) for d in run_rules(g, CheckContext(g), set(codes))]


def test_fix_adds_the_missing_handshake_edge(tmp_path, capsys):
    path = tmp_path / "handshake.dsl"
    shutil.copy(RUN / "handshake_pre.dsl", path)
    before = path.read_text()
    assert main(["fix", str(path)]) == 1  # a diff was printed, nothing written
    out = capsys.readouterr().out
    assert (
        "-  task wait on aiv early_resolve {" in out
        # D101's edge and D117's edge across rounds, in one `after` list
        and "+  task wait on aiv early_resolve after push, prev(push) {" in out
    )
    assert path.read_text() == before
    assert main(["fix", "--write", str(path)]) == 0
    assert _codes(path) == []
    assert main(["fix", str(path)]) == 0  # idempotent
    layer = compile_layer(path)
    for seed in range(200):
        assert layer.run(policy="adversarial", seed=seed, rounds=2, cores=(1, 2)).deadlock is None


def test_fix_rewrites_float_atomics_as_an_ordered_reduction(tmp_path):
    path = tmp_path / "hc.dsl"
    shutil.copy(RUN / "hc_linear_atomic.dsl", path)
    assert _codes(path) == ["N201"]
    assert main(["fix", "--write", str(path)]) == 0
    assert _codes(path) == []
    text = path.read_text()
    assert "reduce_sum __split in range(SPLITS)" in text and "+= acc atomic" not in text
    layer = compile_layer(path)
    (inputs,) = layer.make_inputs(seed=1)
    outs = {layer.run(inputs, policy="adversarial", seed=s).outputs[0]["mixes"].tobytes() for s in range(20)}
    assert len(outs) == 1
    got = np.frombuffer(outs.pop(), np.float32).reshape(64, 32)
    assert np.abs(got - inputs["x"] @ inputs["w"].T).max() < 1e-3


def test_unprovable_atomic_is_left_with_a_reason():
    src = (
        (RUN / "hc_linear_atomic.dsl")
        .read_text()
        .replace("task seed on aiv after prev(linear) { mixes[:, :] = zeros(f32, [T, MIX]) }", "")
    )
    src = src.replace(" after seed", "")
    text, notes = fix_text(src, "x.dsl")
    assert text == src
    assert notes == ["x.dsl:15:5: N201 not fixed: no ancestor zero-seeds mixes, so `+=` cannot become `=`"]


def test_write_is_atomic_and_keeps_the_file_on_errors(tmp_path):
    path = tmp_path / "bad.dsl"
    path.write_text("layer a( {")
    assert main(["fix", "--write", str(path)]) == 2
    assert path.read_text() == "layer a( {"
    assert [p.name for p in tmp_path.iterdir()] == ["bad.dsl"]


def test_fix_orders_the_next_round_seed_after_this_round_adds(tmp_path):
    rules = RUN.parent / "rules" / "N202"
    path = tmp_path / "hist.dsl"
    shutil.copy(rules / "bad_rounds.dsl", path)
    assert _codes(path, ("N202",)) == ["N202"]
    assert main(["fix", "--write", str(path)]) == 0
    assert _codes(path, ("N202",)) == []
    body = path.read_text().splitlines()[4:]
    assert body == (rules / "good_rounds.dsl").read_text().splitlines()[3:]
