"""Request spaces projected onto the runtime scalars one question depends on are exact: the same
accepted values as the full product, without thinning where the full product would be thinned."""

from __future__ import annotations

import numpy as np

from dsl.frontend import compile_text
from lowering.checks.request_space import MAX_POINTS, scalar_space
from lowering.checks.request_space_cache import scalar_intervals, space_at
from lowering.checks.rule import CheckContext

# num_tokens and start_pos are coupled by a guard monotone in start_pos (the most permissive end
# is start_pos = 0); window is independent of both; the full product is 4096 * 4096 * 16 requests.
LAYER = """
layer projected(T = 4096, CAP = 1500) {
  scalar num_tokens: i32 in 1..T
  scalar start_pos: i32 in 0..4095
  scalar window: i32 in 1..16
  guard (start_pos + num_tokens) / 4 <= CAP, "the score row holds every position"
  guard window <= 8, "at most 8"
  input  x: f32[num_tokens, 16]
  output y: f32[T, 16]

  task copy spmd(T / 16) on aiv {
    if block * 16 + 16 <= num_tokens {
      y[block * 16 : block * 16 + 16, :] = x[block * 16 : block * 16 + 16, :]
    }
  }
}
"""


def _graph():
    (graph,) = compile_text(LAYER, "projected.dsl")
    return graph


def test_the_full_product_is_thinned_but_a_projection_is_exact():
    graph = _graph()
    point = graph.env()
    full = scalar_space(graph, point)
    assert full.thinned and full.size <= MAX_POINTS
    tokens = scalar_space(graph, point, only={"num_tokens"})
    assert not tokens.thinned and tokens.names == ("num_tokens",) and tokens.size == 4096
    # start_pos = 0 admits every num_tokens any start_pos does: (0 + n) / 4 <= 1500, n <= 6003
    assert np.array_equal(tokens.values["num_tokens"][tokens.accepted], np.arange(1, 4097))


def test_a_projection_keeps_the_scalars_a_non_monotone_guard_couples():
    graph = _graph()
    point = graph.env()
    start = scalar_space(graph, point, only={"start_pos"})
    # the guard is monotone in num_tokens too (lowest end permissive): start_pos alone is kept
    assert start.names == ("start_pos",) and not start.thinned
    accepted = start.values["start_pos"][start.accepted]
    # (s + 1) / 4 <= 1500 for every start_pos in 0..4095
    assert accepted.min() == 0 and accepted.max() == 4095


def test_scalar_intervals_match_the_brute_force_projection():
    graph = _graph()
    ctx = CheckContext(graph)
    point = graph.env()
    n = np.arange(1, 4097)[:, None]
    s = np.arange(0, 4096)[None, :]
    ok = (s + n) // 4 <= 1500
    assert scalar_intervals(ctx, point) == {
        "num_tokens": (
            int(np.nonzero(ok.any(axis=1))[0].min() + 1),
            int(np.nonzero(ok.any(axis=1))[0].max() + 1),
        ),
        "start_pos": (int(np.nonzero(ok.any(axis=0))[0].min()), int(np.nonzero(ok.any(axis=0))[0].max())),
        "window": (1, 8),
    }
    # cached spaces are bounded: many projections do not accumulate
    for names in ({"num_tokens"}, {"start_pos"}, {"window"}, {"num_tokens", "window"}) * 4:
        space_at(ctx, point, names)
    assert len(ctx.cache["scalar_space"]) <= 8
