"""C401 and C402 first try to prove a point clean on the box of accepted requests (one interval
per runtime scalar) and enumerate the requests only when the box cannot settle it.

The box encloses every accepted request, so a box verdict of "clean" must never hide a finding
the enumeration makes: every fixture with ranged runtime scalars gets the same diagnostics with
the box proofs on and off. And a layer whose capacities are derived from the producer (the
model's prefill_csa, about 2M requests per point over 64 points of T) is settled on the box
alone, without one enumeration over more than one scalar.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lintutil import FIXTURES, lint

import lowering.checks.capacity.capacity_not_derived_from_producer as c401
import lowering.checks.capacity.slice_out_of_bounds_unguarded as c402
import lowering.checks.request_space as request_space

ROOT = Path(__file__).resolve().parents[2]
_RANGED = re.compile(r"^\s*scalar \w+\s*:.* in ", re.M)
LAYERS = sorted(p for p in FIXTURES.rglob("*.dsl") if _RANGED.search(p.read_text(encoding="utf-8")))


def _described(diags) -> list[tuple]:
    return sorted((d.code, d.span.line, d.span.col, d.severity, d.message) for d in diags)


@pytest.mark.parametrize("path", LAYERS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_the_box_never_hides_what_the_requests_show(path, monkeypatch):
    with_box = lint(path, codes={"C401", "C402"})
    monkeypatch.setattr(c401, "_clean_on_box", lambda *a: False)
    monkeypatch.setattr(c402, "_inside_on_box", lambda *a: False)
    assert _described(lint(path, codes={"C401", "C402"})) == _described(with_box)


def test_the_fixtures_reach_both_verdicts_of_the_box(monkeypatch):
    """The comparison above means something only if the box settles some accesses and leaves
    others to the requests (a guard coupling two scalars, a real overflow)."""
    verdicts: list[bool] = []
    inside = c402._inside_on_box

    def recording(*args):
        verdicts.append(inside(*args))
        return verdicts[-1]

    monkeypatch.setattr(c402, "_inside_on_box", recording)
    for name in ("good.dsl", "bad.dsl", "good_scalar_index.dsl"):
        lint(FIXTURES / "rules" / "C402" / name, codes={"C402"})
    assert True in verdicts and False in verdicts


def test_a_derived_capacity_is_settled_without_enumerating_requests(monkeypatch):
    joint: list[tuple] = []
    build = request_space.scalar_space

    def counting(graph, env, limit=request_space.MAX_POINTS, only=None, alone=False):
        space = build(graph, env, limit, only, alone)
        if len(space.names) > 1:
            joint.append((tuple(space.names), space.size))
        return space

    monkeypatch.setattr(request_space, "scalar_space", counting)
    monkeypatch.setattr("lowering.checks.request_space_cache.scalar_space", counting)
    layer = ROOT / "models" / "deepseek_v4_flash" / "prefill_csa.dsl"
    assert lint(layer, codes={"C401", "C402"}) == []
    assert joint == []
