"""The device path: build a generated project with CANN, run a model layer on an NPU and
compare its outputs with the layer's golden. Skips unless a CANN toolkit (ASCEND_HOME_PATH),
cmake and an NPU (/dev/davinci*) are present -- numerics are checked only there."""

from __future__ import annotations

import os
import shutil
import subprocess
import types
from pathlib import Path

import numpy as np
import pytest
from ascutil import ROOT

from dsl.driver.api import compile_layer
from lowering.codegen.ascendc import names
from lowering.codegen.ascendc.emit import render_project

MODELS = ROOT / "models" / "deepseek_v4_flash"
#: layer -> its reduced configuration (models/deepseek_v4_flash/README.md). hc_pre_fused is
#: one MIX kernel with two SyncAll<false>: its 24 blocks need a device with 24 clusters.
LAYERS = {
    "hc_post": {"T": 16, "HC_DIM": 1024},
    "hc_pre_fused": {"T": 16, "HC_DIM": 1024, "LINEAR_K_CHUNK": 64, "RMS_K_CHUNK": 32},
}


def _device_or_skip() -> None:
    if "ASCEND_HOME_PATH" not in os.environ:
        pytest.skip("no CANN toolkit (ASCEND_HOME_PATH is not set)")
    if shutil.which("cmake") is None:
        pytest.skip("no cmake on PATH")
    if not list(Path("/dev").glob("davinci[0-9]*")):
        pytest.skip("no NPU (/dev/davinci* is absent)")


def _to_file(array: np.ndarray, dtype: str) -> bytes:
    """The raw bytes a kernel reads: bf16 tiles are f32 arrays holding bf16 values."""
    if dtype == "bf16":
        bits = np.ascontiguousarray(array, np.float32).view(np.uint32) >> 16
        return bits.astype(np.uint16).tobytes()
    return np.ascontiguousarray(array).tobytes()


def _from_file(data: bytes, dtype: str, shape: tuple[int, ...], np_dtype: str) -> np.ndarray:
    if dtype == "bf16":
        bits = np.frombuffer(data, np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(data, np.dtype(np_dtype)).reshape(shape)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_a_model_layer_built_with_cann_matches_its_golden_on_the_npu(name, tmp_path):
    _device_or_skip()
    layer = compile_layer(MODELS / f"{name}.dsl", LAYERS[name])
    files = render_project(layer.graph, "device", "test")
    project = tmp_path / "project"
    project.mkdir()
    for name, text in files.items():
        (project / name).write_text(text, encoding="utf-8")
    build = project / "build"
    for cmd in (["cmake", "-S", str(project), "-B", str(build)], ["cmake", "--build", str(build), "-j"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (inputs,) = layer.make_inputs(seed=0)
    (project / "input").mkdir()
    (project / "output").mkdir()
    for t in layer.program.tensors:
        if t.name in inputs:
            data = _to_file(inputs[t.name], layer.graph.tensors[t.name].dtype)
            (project / "input" / f"{names.encode(t.name)}.bin").write_bytes(data)
    binary = build / names.encode(layer.graph.name)
    proc = subprocess.run(
        [str(binary), "--device", "0"], cwd=project, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    outputs = {}
    for t in layer.program.tensors:
        if t.kind in ("output", "inout"):
            data = (project / "output" / f"{names.encode(t.name)}.bin").read_bytes()
            outputs[t.name] = _from_file(data, layer.graph.tensors[t.name].dtype, t.shape, t.dtype)
    validation = layer.validate([inputs], types.SimpleNamespace(outputs=[outputs]))
    assert validation is not None and validation.passed, [c for c in validation.checks if not c.passed]
