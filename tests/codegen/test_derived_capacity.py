"""Derived capacities (tracker #5 item 3): ``emitted(T)`` and ``derived(expr)`` on the sparse
CSA example of docs/runtime-semantics.md §19 (mtp constants: PAD = WIN + IDX_TOPK = 640,
INDEXER_SCORE_CAP = 2048, WIN = 128, start_pos in 0..8191, num_tokens in 1..128).

Every request (start_pos, num_tokens) of the admissible range is enumerated -- 1,048,576 of
them -- and the generated host guard (``check_request`` in the NumPy module) is compared with
a brute-force model of the two tasks written here, independently of dslc: per block b <
num_tokens the indexer emits min(min((start_pos + b + 1) / 4, 2048), IDX_TOPK) rows, and the
packing fits when WIN plus the most any block emits is at most the packed capacity.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dsl
from dsl.driver.api import RequestRefused
from dsl.driver.cli import main
from dsl.frontend import compile_text
from lowering.checks import run_rules
from lowering.checks.capacity.emission import emitted_counts
from lowering.checks.request_space_cache import space_at
from lowering.checks.rule import CheckContext
from lowering.source import CompileError
from lowering.symbolic import evaluate
from runtime.loader import load_module

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DERIVED = FIXTURES / "derived_capacity" / "csa_derived.dsl"
PRE = FIXTURES / "seed" / "csa_guard_pre.dsl"
POST = FIXTURES / "seed" / "csa_guard_post.dsl"

T, WIN, SCORE_CAP, MAX_SEQ_LEN = 128, 128, 2048, 8192


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "dslc-cache"))


def requests() -> tuple[np.ndarray, np.ndarray]:
    sp, nt = np.meshgrid(np.arange(0, 8192), np.arange(1, T + 1), indexing="ij")
    return sp.ravel(), nt.ravel()


def emitted_brute(sp: np.ndarray, nt: np.ndarray, idx_topk: int = 512) -> np.ndarray:
    """The most rows any block of the indexer emits, block by block (no closed form used)."""
    most = np.zeros_like(sp)
    for b in range(T):
        visible = np.minimum((sp + b + 1) // 4, SCORE_CAP)
        most = np.where(b < nt, np.maximum(most, np.minimum(visible, min(idx_topk, SCORE_CAP))), most)
    return most


def accepted_by(path: Path, layer: str | None = None, **params: int) -> np.ndarray:
    """The generated check_request, called on every request."""
    compiled = dsl.load(path, layer=layer, **params)
    check = load_module(compiled.module_path).check_request
    sp, nt = requests()
    return np.fromiter(
        (not check({"start_pos": int(a), "num_tokens": int(b)}) for a, b in zip(sp, nt, strict=True)),
        dtype=bool,
        count=sp.size,
    )


@pytest.fixture(scope="module")
def brute() -> dict[str, np.ndarray]:
    sp, nt = requests()
    seq_len = sp + nt
    return {"sp": sp, "nt": nt, "seq_len": seq_len, "emitted": emitted_brute(sp, nt)}


def graph_of(path: Path, layer: str | None = None, **params: int):
    graphs = compile_text(path.read_text(), str(path), params or None, layer)
    return graphs[0]


# ------------------------------------------------------------------ the derived extent in IR


def test_derived_capacity_is_the_tightest_bound_the_producer_implies(brute):
    g = graph_of(DERIVED, "prefill_csa")
    # the tightest bound: the most WIN + emitted over the requests the earlier guards admit
    admitted = (brute["seq_len"] <= MAX_SEQ_LEN) & (brute["seq_len"] // 4 <= SCORE_CAP)
    tightest = int((WIN + brute["emitted"])[admitted].max())
    assert tightest == 640 == WIN + 512
    assert g.consts["PREFILL_SPARSE_PAD"].value == tightest
    assert g.consts["CMP_COLS"].value == 512
    assert g.tensors["sparse_idx"].dims == (T, 640)


def test_emitted_closed_form_equals_c401_emission_and_brute_force(brute):
    g = graph_of(DERIVED, "prefill_csa")
    form = g.derived["emitted(cmp_indices)"]
    assert set(form.refs) == {"start_pos", "num_tokens"}
    ctx = CheckContext(g)
    point = g.env()
    space = space_at(ctx, point)
    assert not space.thinned and space.size == brute["sp"].size
    c401 = emitted_counts(g, ctx, point, "cmp_indices")  # what rule C401 computes per request
    from lowering.checks.extents import veval

    closed = np.broadcast_to(veval(form.value, {**point, **space.values}), (space.size,))
    order = np.lexsort((space.values["num_tokens"], space.values["start_pos"]))
    np.testing.assert_array_equal(closed, c401)
    np.testing.assert_array_equal(closed[order], brute["emitted"])


@pytest.mark.parametrize(
    ("params", "want"),
    [
        ({}, 128 + 512),
        ({"IDX_TOPK": 256}, 128 + 256),  # a smaller producer constant: a smaller capacity
        ({"IDX_TOPK": 1024}, 128 + 1024),
        ({"IDX_TOPK": 64}, 128 + 64),
        ({"MAX_SEQ_LEN": 1024}, 128 + 256),  # the earlier guards narrow what can be emitted
        ({"WIN": 64}, 64 + 512),
    ],
)
def test_changing_a_producer_constant_changes_the_derived_capacity(params, want):
    g = graph_of(DERIVED, "prefill_csa", **params)
    idx_topk = params.get("IDX_TOPK", 512)
    win = params.get("WIN", WIN)
    sp, nt = requests()
    admitted = (sp + nt <= params.get("MAX_SEQ_LEN", MAX_SEQ_LEN)) & ((sp + nt) // 4 <= SCORE_CAP)
    assert int((win + emitted_brute(sp, nt, idx_topk))[admitted].max()) == want
    assert g.consts["PREFILL_SPARSE_PAD"].value == want
    assert g.tensors["sparse_idx"].dims == (T, want)
    assert g.consts["CMP_COLS"].value == want - win


def test_derived_capacity_per_admissible_parameter_point():
    text = DERIVED.read_text().replace(
        "IDX_TOPK = 512, COMPRESS", "IDX_TOPK = 512 in {64, 256, 512}, COMPRESS", 1
    )
    (g, _) = compile_text(text, "x.dsl")
    pad = g.consts["PREFILL_SPARSE_PAD"]
    assert pad.value == 640
    for k in (64, 256, 512):
        env = g.env_at({**{p.name: p.value for p in g.params.values()}, "IDX_TOPK": k})
        assert env["PREFILL_SPARSE_PAD"] == WIN + k == evaluate(pad.expr, env)
        assert env["CMP_COLS"] == k
    ctx = CheckContext(g)
    assert [d for d in run_rules(g, ctx) if d.code.startswith("C")] == []


# ------------------------------------------------------------------ the generated guard


def test_generated_guard_accepts_exactly_the_requests_that_fit_mtp(brute):
    accepted = accepted_by(DERIVED, "prefill_csa")
    fits = WIN + brute["emitted"] <= 640
    assert fits.all()  # at mtp nothing the indexer emits overflows WIN + IDX_TOPK
    expected = fits & (brute["seq_len"] <= MAX_SEQ_LEN) & (brute["seq_len"] // 4 <= SCORE_CAP)
    np.testing.assert_array_equal(accepted, expected)
    # the accepted context reaches 8192 tokens and stops there (both sides of the boundary)
    assert brute["seq_len"][accepted].max() == 8192
    assert not accepted[brute["seq_len"] == 8193].any()
    assert accepted[(brute["seq_len"] >= 2052) & (brute["seq_len"] <= 8192)].all()
    # the post-fix guard of docs/runtime-semantics.md §19 accepts exactly the same requests
    np.testing.assert_array_equal(accepted_by(POST), accepted)


def test_generated_guard_accepts_every_fit_and_refuses_every_overflow(brute):
    """A capacity smaller than what can be emitted (384): the guard on emitted(...) is the
    exact boundary between requests that fit and requests whose rows would be dropped."""
    accepted = accepted_by(DERIVED, "prefill_csa_pad384")
    fits = WIN + brute["emitted"] <= 384
    in_range = brute["seq_len"] <= MAX_SEQ_LEN
    np.testing.assert_array_equal(accepted, fits & in_range)
    assert accepted.any() and (~fits & in_range).any()  # both sides are populated
    # the boundary: 256 compressed rows fit, 257 do not (seq_len 1027 vs 1028 for num_tokens = 128)
    at = {
        int(s): bool(a) for s, a, n in zip(brute["seq_len"], accepted, brute["nt"], strict=True) if n == 128
    }
    assert at[1027] and not at[1028]
    # and C401 agrees: nothing is truncated among the admitted requests, nothing that fits is refused
    g = graph_of(DERIVED, "prefill_csa_pad384")
    assert [d for d in run_rules(g, CheckContext(g)) if d.code.startswith("C")] == []


def test_prefix_guard_refuses_requests_that_fit(brute):
    accepted = accepted_by(PRE)
    fits = WIN + brute["emitted"] <= 640
    in_range = (brute["seq_len"] <= MAX_SEQ_LEN) & (brute["seq_len"] // 4 <= SCORE_CAP)
    refused_fit = fits & in_range & ~accepted
    assert refused_fit.sum() == 786048  # the count C401 reports on csa_guard_pre.dsl
    assert brute["seq_len"][refused_fit].min() == 2052 and brute["seq_len"][refused_fit].max() == 8192
    np.testing.assert_array_equal(accepted, in_range & (WIN + brute["seq_len"] // 4 <= 640))


def test_dslc_check_is_clean_on_the_derived_form(capsys):
    assert main(["check", str(DERIVED), "--no-color"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "0 error(s), 0 warning(s), 0 note(s)" in captured.err


def test_generated_module_is_byte_identical_and_has_no_injected_code():
    from lowering.codegen.numpy.emit import render_numpy

    g = graph_of(DERIVED, "prefill_csa")
    a, b = render_numpy(g, "h", "v"), render_numpy(graph_of(DERIVED, "prefill_csa"), "h", "v")
    assert a == b
    assert "def check_request(scalars):" in a
    assert '("emitted(cmp_indices)", d_2)' in a  # a non-identifier name only as a literal


# ------------------------------------------------------------------ API and dslc run


def test_api_refuses_a_request_naming_the_guard_and_the_values():
    layer = dsl.load(PRE)
    inputs = layer.make_inputs()[0]
    with pytest.raises(RequestRefused) as err:
        layer.run({**inputs, "start_pos": 4000, "num_tokens": 100})
    (reason,) = err.value.reasons
    assert reason == (
        "guard `WIN + max_visible_cmp <= PREFILL_SPARSE_PAD` (line 19) refuses start_pos=4000, "
        "num_tokens=100 (max_visible_cmp=1025, seq_len=4100; 1153 <= 640 is false): packed sparse "
        "rows fit PREFILL_SPARSE_PAD"
    )
    assert isinstance(err.value, ValueError)


def test_api_runs_an_accepted_request_of_the_derived_layer():
    layer = dsl.load(DERIVED, layer="prefill_csa")
    rng = np.random.default_rng(0)
    cand = rng.integers(0, 10_000, (T, 512), dtype=np.int32)
    win = rng.integers(0, 10_000, (T, WIN), dtype=np.int32)
    sp, nt = 4000, 100  # refused before #893, fits: 1025 visible rows, 512 emitted
    result = layer.run({"cand": cand, "win_idx": win, "start_pos": sp, "num_tokens": nt})
    out = result.outputs[0]["sparse_idx"]
    assert out.shape == (T, 640)
    for t in (0, 50, nt - 1):
        emitted = min((sp + t + 1) // 4, 512)
        assert (out[t, :WIN] == win[t]).all()
        assert (out[t, WIN : WIN + emitted] == cand[t, :emitted]).all()
        assert (out[t, WIN + emitted :] == -1).all()
    assert layer.check_request({"start_pos": 8191, "num_tokens": 2}) != []
    assert layer.check_request({"start_pos": 0, "num_tokens": 0}) == [
        "runtime scalar num_tokens=0 is outside its range 1..128"
    ]


def test_dslc_run_scalar_option(capsys):
    base = ["run", str(DERIVED), "--layer", "prefill_csa", "--no-color"]
    assert main([*base, "--scalar", "start_pos=4000", "--scalar", "num_tokens=100"]) == 0
    capsys.readouterr()
    assert main([*base, "--scalar", "start_pos=8100", "--scalar", "num_tokens=100"]) == 2
    out = capsys.readouterr().out
    assert "refused: layer prefill_csa does not accept the request" in out
    assert "guard `seq_len <= MAX_SEQ_LEN` (line 13) refuses start_pos=8100, num_tokens=100" in out
    assert main(["run", str(PRE), "--scalar", "start_pos=4000", "--scalar", "num_tokens=100"]) == 2
    assert "1153 <= 640 is false" in capsys.readouterr().out
    assert main([*base, "--scalar", "seq_len=5"]) == 2
    assert "has no runtime scalar 'seq_len' (start_pos, num_tokens)" in capsys.readouterr().err
    assert main([*base, "--scalar", "start_pos=x"]) == 2
    assert "is not an integer" in capsys.readouterr().err


# ------------------------------------------------------------------ front-end errors


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("const N = emitted(cmp_indices)", "is a value per request"),
        ("const N = derived(WIN + emitted(nothing_here))", "'nothing_here' is not a tensor"),
        ("const N = derived(WIN + emitted(win_idx))", "no task declares what it emits into 'win_idx'"),
        ("assert derived(WIN + emitted(cmp_indices)) > 0", "is a derived capacity, known only once"),
    ],
)
def test_capacity_misuse_is_a_diagnostic(line, message):
    text = DERIVED.read_text().replace("  input   cand:", f"  {line}\n  input   cand:", 1)
    with pytest.raises(CompileError) as err:
        compile_text(text, "x.dsl", None, "prefill_csa")
    assert any(message in d.message for d in err.value.diagnostics), err.value.diagnostics
