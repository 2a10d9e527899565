"""The kernel cache (a body read once per scope, its instances substituted from the template)
gives the graph and the findings a read of every instance would: the same task bodies,
accesses, edges and diagnostics with and without it."""

from __future__ import annotations

import textwrap

from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import kernel_cache, read_pypto
from lowering.symbolic import Sym, free_symbols

# Layers of one loop submit the same scopes with a captured offset (`lo`), into per-layer
# tensors picked from a list (a rename between instances), with a view of one buffer and a
# loop in the body whose bound is captured.
MODEL = """
import pypto.language as pl

L = 3
R = 16
C = 64


@pl.jit
def entry(
    x: pl.Tensor[[L * R, C], pl.FP32],
    w0: pl.Tensor[[R, C], pl.FP32],
    w1: pl.Tensor[[R, C], pl.FP32],
    w2: pl.Tensor[[R, C], pl.FP32],
    y: pl.Out[pl.Tensor[[L * R, C], pl.FP32]],
):
    weights = [w0, w1, w2]
    flat = pl.reshape(y, [L * R * C])
    for layer in pl.range(L):
        lo = layer * R
        w = weights[layer]
        for b in pl.spmd(4, name_hint="scale"):
            for k in pl.range(0, C, 16):
                t = pl.load(x, [lo + b * 4, k], [4, 16])
                u = pl.load(w, [b * 4, k], [4, 16])
                y = pl.assemble(y, pl.add(t, u), [lo + b * 4, k])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="peek"):
            v = pl.load(flat, [lo * C], [C])
            flat = pl.assemble(flat, v, [lo * C + C])
    return y
"""


def _read(tmp_path, cached: bool, monkeypatch, model: str = MODEL):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(model), encoding="utf-8")
    with monkeypatch.context() as m:
        if not cached:
            m.setattr(kernel_cache, "MAX_TEMPLATES_PER_SCOPE", 0)  # every instance read afresh
        result = read_pypto(path)
        findings = []
        for g in result.graphs:
            ctx = CheckContext(g)
            for rule in all_rules().values():
                findings.extend(rule.check(g, ctx))
    return result, findings


def _facts(result, findings):
    (g,) = result.graphs
    tasks = [(t.name, t.blocks, tuple(t.body), t.accesses) for t in g.tasks]
    diags = [(d.code, d.span, d.message) for d in [*result.diagnostics, *findings]]
    return tasks, g.edges, g.cross_round_edges, diags


def _symbols(obj, out: set[str]) -> set[str]:
    if isinstance(obj, Sym):
        out.add(obj.name)
    elif hasattr(obj, "__dataclass_fields__"):
        for name in obj.__dataclass_fields__:
            _symbols(getattr(obj, name), out)
    elif isinstance(obj, tuple | list):
        for x in obj:
            _symbols(x, out)
    elif hasattr(obj, "a") and hasattr(obj, "b"):
        out.update(s.name for s in free_symbols(obj))
    return out


def _count_hits(monkeypatch) -> list[bool]:
    hits: list[bool] = []
    real_find = kernel_cache.KernelCache.find

    def counting_find(self, *args, **kwargs):
        found = real_find(self, *args, **kwargs)
        hits.append(found is not None)
        return found

    monkeypatch.setattr(kernel_cache.KernelCache, "find", counting_find)
    return hits


def test_instances_from_the_template_equal_instances_read_afresh(tmp_path, monkeypatch):
    hits = _count_hits(monkeypatch)
    cached = _facts(*_read(tmp_path, True, monkeypatch))
    assert sum(hits) == 4, hits  # layers 1 and 2 of both scopes came from the templates
    hits.clear()
    fresh = _facts(*_read(tmp_path, False, monkeypatch))
    assert not any(hits)
    tasks = cached[0]
    assert [name for name, *_ in tasks] == [
        "scale[0]", "peek[0]", "scale[1]", "peek[1]", "scale[2]", "peek[2]",
    ]  # fmt: skip
    assert cached == fresh
    # nothing of the template is left in an instance: no capture symbol, the layer's own weight
    for _name, _blocks, body, accesses in tasks:
        assert not {s for s in _symbols((body, accesses), set()) if s.startswith("@")}
    scale2 = tasks[4]
    assert {a.tensor for a in scale2[3]} >= {"w2", "x", "y"} and "w0" not in {a.tensor for a in scale2[3]}


# Each layer makes its own scratch buffer and hands the scope a flat view of it: the views
# differ in the buffer they lie in, which a body cannot see, so one template serves them all.
VIEWS_OF_LAYER_BUFFERS = """
import pypto.language as pl

L = 3
R = 16
C = 64


@pl.jit
def entry(x: pl.Tensor[[L * R, C], pl.FP32], y: pl.Out[pl.Tensor[[L * R, C], pl.FP32]]):
    for layer in pl.range(L):
        lo = layer * R
        buf = pl.create_tensor([R, C], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="fill"):
            buf = pl.assemble(buf, pl.load(x, [lo, 0], [R, C]), [0, 0])
        flat = pl.reshape(buf, [R * C])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="drain"):
            row = pl.load(flat, [0], [R * C])
            y = pl.assemble(y, pl.reshape(row, [R, C]), [lo, 0])
    return y
"""


def test_views_of_each_layers_buffer_share_one_template(tmp_path, monkeypatch):
    hits = _count_hits(monkeypatch)
    cached = _facts(*_read(tmp_path, True, monkeypatch, VIEWS_OF_LAYER_BUFFERS))
    assert hits == [False, False, True, True, True, True], hits  # layers 1 and 2 of both scopes
    hits.clear()
    fresh = _facts(*_read(tmp_path, False, monkeypatch, VIEWS_OF_LAYER_BUFFERS))
    assert cached == fresh
    tasks, edges = cached[0], cached[1]
    drain2 = next(t for t in tasks if t[0] == "drain[2]")
    assert {a.tensor for a in drain2[3]} == {"flat#3", "y"}, drain2[3]  # the layer's own view
    assert any(e.src == "fill[2]" and e.dst == "drain[2]" for e in edges), edges  # through the base's bytes
