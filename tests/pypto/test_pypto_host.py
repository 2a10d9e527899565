"""The host side of emitted PyPTO, executed against stand-ins for ``pypto`` and ``torch`` (neither
is installed here): ``l3_<layer>`` binds every argument of ``<layer>_test`` to the right
parameter, host tensors carry the rank dimension it indexes, and ``golden_<layer>`` gives the
golden one input dict per rank and cannot be shadowed by a layer parameter."""

from __future__ import annotations

import inspect
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from pyptostubs import Tensor as _Tensor
from pyptostubs import Window as _Window
from pyptostubs import install

from dsl.frontend import compile_text
from lowering.codegen.pypto.emit import render_pypto

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stand_ins(monkeypatch):
    install(monkeypatch)


def _module(source: str, tmp_path: Path, golden: str | None = None, layer: str | None = None) -> dict:
    (graph,) = compile_text(source, "l.dsl", layer=layer)
    text = render_pypto(graph, "h", "v", str(tmp_path / "g.py") if golden else None)
    path = tmp_path / f"{graph.name}.py"
    path.write_text(text)
    if golden:
        (tmp_path / "g.py").write_text(golden)
    namespace = {"__file__": str(path), "__name__": "emitted"}
    exec(compile(text, str(path), "exec"), namespace)
    return namespace


ALLGATHER = """
layer allgather(EP = 2 in {2}, R = 16, D = 64) {
  ranks EP
  scalar epoch: i32
  input  x: f32[R, D]
  window gathered: f32[EP * R, D]
  signal arrived: i32[EP]
  output y: f32[EP * R, D]
  task send on aiv {
    for dst in range(nranks) { remote_store gathered[rank * R : rank * R + R, :] @ dst = x[:, :] }
    for dst in range(nranks) { if dst != rank { notify arrived[rank] @ dst += 1 } }
  }
  task recv on aiv after send {
    for src in range(nranks) { if src != rank { wait arrived[src] >= epoch } }
  }
  task out on aiv after recv { y[:, :] = gathered[:, :] }
}
"""


def test_l3_binds_windows_and_tensors_to_their_own_parameters(stand_ins, tmp_path):
    """pypto_l3_arg_order.dsl: `y` was passed where `gathered` is, a window where `arrived` is."""
    ns = _module(ALLGATHER, tmp_path)
    entry = inspect.signature(ns["allgather_test"])
    calls = []
    ns["allgather_test"] = lambda *args, device: calls.append((entry.bind(*args).arguments, device))
    x = [f"x of rank {r}" for r in range(2)]
    y = [f"y of rank {r}" for r in range(2)]
    ns["l3_allgather"](x, y, 7)
    assert [device for _, device in calls] == [0, 1]
    for r, (bound, _) in enumerate(calls):
        assert bound["x"] == x[r] and bound["y"] == y[r]
        assert isinstance(bound["gathered"], _Window) and bound["gathered"].buf == ("buffer", (32, 64))
        assert isinstance(bound["arrived"], _Window) and bound["arrived"].buf == ("buffer", (2,))
        assert (bound["my_rank"], bound["epoch"]) == (r, 7)


def test_every_distributed_fixture_binds_in_declaration_order(stand_ins, tmp_path):
    """handshake_pre.dsl too: declares a window before a tensor."""
    source = (ROOT / "tests" / "fixtures" / "run" / "handshake_pre.dsl").read_text()
    ns = _module(source, tmp_path)
    (entry_name,) = [n for n in ns if n.endswith("_test") and callable(ns[n])]
    (host_name,) = [n for n in ns if n.startswith("l3_")]
    entry = inspect.signature(ns[entry_name])
    calls = []
    ns[entry_name] = lambda *args, device: calls.append(entry.bind(*args).arguments)
    host = inspect.signature(ns[host_name])
    (graph,) = compile_text(source, "h.dsl")
    scalars = set(graph.scalars)
    ns[host_name](*[p if p in scalars else [f"{p}[{r}]" for r in range(16)] for p in host.parameters])
    assert len(calls) == graph.nranks
    for r, bound in enumerate(calls):
        for name, value in bound.items():
            if name in scalars:
                assert value == name
            elif name in host.parameters:
                assert value == f"{name}[{r}]", (name, value)
            elif name == "my_rank":
                assert value == r
            else:
                assert isinstance(value, _Window) and graph.tensors[name].kind in ("window", "signal")


def test_host_tensor_specs_carry_the_rank_dimension(stand_ins, tmp_path, monkeypatch):
    specs = []
    golden = types.ModuleType("golden")
    golden.TensorSpec = lambda name, dims, dtype, is_output=False: specs.append((name, list(dims), is_output))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "golden", golden)
    ns = _module(ALLGATHER, tmp_path)
    ns["build_tensor_specs"]()
    assert specs == [("x", [2, 16, 64], False), ("y", [2, 32, 64], True)]


RECORDING_GOLDEN = """
import pickle
from pathlib import Path


def golden(inputs, params):
    Path(__file__).with_name("seen.pkl").write_bytes(pickle.dumps((inputs, params)))
    return [{"y": per["x"] * 2.0 + r} for r, per in enumerate(inputs)]
"""


def _seen(tmp_path: Path):
    import pickle

    return pickle.loads((tmp_path / "seen.pkl").read_bytes())


def test_the_golden_adapter_gives_one_input_dict_per_rank(stand_ins, tmp_path):
    source = """
layer twice(EP = 2, R = 4, D = 4) {
  ranks EP
  input  x: f32[R, D]
  output y: f32[R, D]
  task t on aiv { y[:, :] = x[:, :] * 2.0 }
}
"""
    ns = _module(source, tmp_path, RECORDING_GOLDEN)
    x = np.arange(2 * 4 * 4, dtype=np.float32).reshape(2, 4, 4)
    tensors = {"x": _Tensor(x), "y": _Tensor(np.zeros_like(x))}
    ns["golden_twice"](tensors)
    inputs, params = _seen(tmp_path)
    assert len(inputs) == 2 and np.array_equal(inputs[1]["x"], x[1])
    assert params == {"EP": 2, "R": 4, "D": 4}
    assert np.array_equal(tensors["y"].array[0], x[0] * 2.0) and np.array_equal(
        tensors["y"].array[1], x[1] * 2.0 + 1
    )


def test_layer_parameters_cannot_shadow_the_adapter(stand_ins, tmp_path):
    """pypto_golden_param_names.dsl: `expected`, `name`, `spec`, `module` were the adapter's locals."""
    source = """
layer lay(expected = 16, name = 2, spec = 3, module = 4, D = 16) {
  golden "g.py"
  input  x: f32[expected, D]
  output y: f32[expected, D]
  task tt on aiv { y[:, :] = x[:, :] * 2.0 }
}
"""
    ns = _module(source, tmp_path, RECORDING_GOLDEN)
    x = np.ones((16, 16), np.float32)
    tensors = {"x": _Tensor(x), "y": _Tensor(np.zeros_like(x))}
    ns["golden_lay"](tensors)
    inputs, params = _seen(tmp_path)
    assert len(inputs) == 1 and np.array_equal(inputs[0]["x"], x)
    assert params == {"expected": 16, "name": 2, "spec": 3, "module": 4, "D": 16}
    assert all(type(v) is int for v in params.values())
    assert np.array_equal(tensors["y"].array, x * 2.0)
