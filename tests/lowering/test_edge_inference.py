"""Edge inference as the task runtime does it (docs/runtime-semantics.md §3), rule by rule:
RAW on overlapping byte ranges, WAW only for InOut writers, never WAR, the Out -> InOut
promotions (R-seq, R-prior, R-enclosing), manual_dep tensors and manual tasks, byte-range
overlap (column bands overlap, row bands do not), coverage, and cross-round edges.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsl.frontend import compile_text
from lowering.edges import INOUT, INPUT, OUTPUT_EXISTING, _Entry, _TensorMap, argument_tags


def graph(body: str, params: str = "N = 16"):
    (g,) = compile_text(f"layer l({params}) {{\n{body}\n}}\n", "edges.dsl")
    return g


def edges(g, which: str = "edges") -> list[str]:
    return [f"{e.src}>{e.dst}:{e.kind}" + (f":{e.tensor}" if e.tensor else "") for e in getattr(g, which)]


DECLS = """
  input   x: f32[N, N]
  scratch s: f32[N, N]
  output  y: f32[N, N]
  inout   z: f32[N, N]
"""


# ---------------------------------------------------------------- RAW, WAW, no WAR


def test_raw_edge_on_a_read_after_a_write():
    g = graph(DECLS + "task w { s[:, :] = x[:, :] }\ntask r { y[:, :] = s[:, :] }")
    assert edges(g) == ["w>r:raw:s"]
    (e,) = g.edges
    assert (e.region, e.reason, e.anchor) == ("[0:16, 0:16]", "RAW s[0:16, 0:16]", False)
    assert (e.span.line, e.span.col) == (8, 20)  # the consumer's access


def test_pure_output_writes_take_no_waw_edge():
    # The first writer of y is OUTPUT_EXISTING; so is a writer of another tensor.
    g = graph(DECLS + "task a { y[:, :] = x[:, :] }\ntask b { s[:, :] = x[:, :] }")
    assert edges(g) == []
    assert argument_tags(g) == {
        "a": {"x": INPUT, "y": OUTPUT_EXISTING},
        "b": {"x": INPUT, "s": OUTPUT_EXISTING},
    }


def test_waw_edge_for_an_inout_writer():
    g = graph(DECLS + "task a { z[:, :] = x[:, :] }\ntask b { z[0:4, :] = x[0:4, :] }")
    assert edges(g) == ["a>b:waw:z"]
    assert argument_tags(g)["b"]["z"] == INOUT


def test_no_war_edge_ever():
    # b overwrites what a reads; the reader left no trace, so b does not wait for it.
    g = graph(
        DECLS + "task a { y[:, :] = s[:, :] }\ntask b { s[:, :] = x[:, :] }\ntask c { z[:, :] = z[:, :] }"
    )
    assert edges(g) == []


def test_no_war_edge_even_for_an_inout_writer():
    g = graph(DECLS + "task a { y[:, :] = z[:, :] }\ntask b { z[:, :] = x[:, :] }")
    assert argument_tags(g)["b"]["z"] == INOUT
    assert edges(g) == []


def test_read_and_write_of_one_tensor_is_inout():
    g = graph(DECLS + "task a { s[:, :] = x[:, :] }\ntask b { s[0:4, :] = s[4:8, :] }")
    assert argument_tags(g)["b"]["s"] == INOUT
    assert edges(g) == ["a>b:raw:s"]


def test_plain_accumulate_reads_and_atomic_accumulate_too():
    g = graph(
        DECLS
        + "task a { s[:, :] = x[:, :] }\ntask b { s[0:4, :] += x[0:4, :] }\ntask c { s[4:8, :] += x[0:4, :] atomic }"
    )
    assert argument_tags(g)["b"]["s"] == INOUT and argument_tags(g)["c"]["s"] == INOUT
    assert edges(g) == ["a>b:raw:s", "a>c:raw:s"]


def test_anchor_read_gives_an_edge_marked_anchor():
    g = graph(DECLS + "task a { s[:, :] = x[:, :] }\ntask b { read(s[0, 0]) }")
    (e,) = g.edges
    assert (e.src, e.dst, e.kind, e.anchor, e.reason) == ("a", "b", "raw", True, "anchor read s[0:16, 0:16]")


# ---------------------------------------------------------------- Out -> InOut promotion


def test_r_prior_an_earlier_statement_wrote_the_tensor():
    g = graph(DECLS + "task a { y[:, :] = x[:, :] }\ntask b { y[:, :] = x[:, :] }")
    assert argument_tags(g)["a"]["y"] == OUTPUT_EXISTING
    assert argument_tags(g)["b"]["y"] == INOUT
    assert edges(g) == ["a>b:waw:y"]


def test_r_seq_tasks_in_a_sequential_layer_loop():
    g = graph(DECLS + "for i in range(3) { task t[i] { y[:, :] = x[:, :] } }")
    assert {tags["y"] for tags in argument_tags(g).values()} == {INOUT}
    assert edges(g) == ["t[0]>t[1]:waw:y", "t[1]>t[2]:waw:y"]


def test_parallel_loop_instances_assume_disjointness():
    # One task statement in a parallel loop is one call site: no R-prior among its instances.
    g = graph(DECLS + "for i in parallel(3) { task t[i] { y[:, :] = x[:, :] } }")
    assert {tags["y"] for tags in argument_tags(g).values()} == {OUTPUT_EXISTING}
    assert edges(g) == []


def test_parallel_loop_after_an_earlier_writer_is_promoted():
    g = graph(
        DECLS + "task first { y[:, :] = x[:, :] }\nfor i in parallel(2) { task t[i] { y[i, :] = x[i, :] } }"
    )
    assert argument_tags(g)["t[1]"]["y"] == INOUT
    assert edges(g) == ["first>t[0]:waw:y", "first>t[1]:waw:y"]


def test_r_enclosing_inout_tensor_of_the_layer():
    g = graph(DECLS + "task a { z[0:8, :] = x[0:8, :] }\ntask b { z[4:12, :] = x[0:8, :] }")
    assert argument_tags(g)["a"]["z"] == INOUT
    assert edges(g) == ["a>b:waw:z"]


# ---------------------------------------------------------------- manual_dep and manual


def test_manual_dep_tensors_get_no_inferred_edges():
    g = graph(
        "  input x: f32[N, N]\n  scratch m: f32[N, N] manual_dep\n  output y: f32[N, N]\n"
        "task a { m[:, :] = x[:, :] }\ntask b { y[0:8, :] = m[0:8, :] }\ntask c after a { y[8:16, :] = m[8:16, :] }"
    )
    assert edges(g) == ["a>c:explicit"]
    assert [e.tensor for e in g.cross_round_edges] == ["y"]  # c's own y, never m


def test_manual_task_has_only_its_explicit_edges():
    g = graph(
        DECLS + "task a { s[:, :] = x[:, :] }\ntask b manual { y[:, :] = s[:, :] s[:, :] = x[:, :] }\n"
        "task c manual after a { y[:, :] = s[:, :] }\ntask d { y[:, :] = s[:, :] }"
    )
    # b neither looks up nor registers: d still reads what a wrote.
    assert edges(g) == ["a>c:explicit", "a>d:raw:s"]


# ---------------------------------------------------------------- byte-range overlap


def test_column_bands_of_a_row_major_tensor_overlap():
    g = graph(DECLS + "task a { s[:, 0:8] = x[:, 0:8] }\ntask b { y[:, 8:16] = s[:, 8:16] }")
    assert edges(g) == ["a>b:raw:s"]


def test_row_bands_are_disjoint():
    g = graph(DECLS + "task a { s[0:8, :] = x[0:8, :] }\ntask b { y[8:16, :] = s[8:16, :] }")
    assert edges(g) == []


def test_overlap_is_byte_ranges_not_index_boxes():
    # a writes bytes [32, 64) of s; b's box (rows 0-1, column 0) is disjoint from a's as an
    # index box, but its byte range [0, 68) is not; c's [64, 80) ends where a's begins.
    g = graph(
        DECLS
        + "task a { s[0, 8:16] = x[0, 8:16] }\ntask b { y[0:2, 0] = s[0:2, 0] }\ntask c { z[1, 0:4] = s[1, 0:4] }"
    )
    assert edges(g) == ["a>b:raw:s"]


def test_dtype_sets_the_byte_width():
    g = graph(
        "  input x: bf16[4, 8]\n  scratch h: bf16[4, 8]\n  output y: bf16[4, 8]\n"
        "task a { h[0, 4:8] = x[0, 4:8] }\ntask b { y[0, 0:4] = h[0, 0:4] }"
    )
    assert edges(g) == []


def test_footprint_spans_all_blocks_and_iterations():
    g = graph(
        DECLS + "task a spmd(4) { s[block * 4 : block * 4 + 4, :] = x[block * 4 : block * 4 + 4, :] }\n"
        "task b { for k in range(2) { y[12 + k, :] = s[12 + k, :] } }\ntask c { y[0:4, :] = s[0:4, :] }"
    )
    assert edges(g) == ["a>b:raw:s", "a>c:raw:s"]
    assert g.edges[0].region == "[0:16, 0:16]"


def test_data_dependent_index_is_conservatively_the_whole_dimension():
    g = graph(
        "  input idx: i32[4]\n"
        + DECLS
        + "task a { s[15, :] = x[0, :] }\ntask b { let r = read(idx[0])\n y[0, :] = s[r, :] }"
    )
    assert edges(g) == ["a>b:raw:s"]


# ---------------------------------------------------------------- coverage and ordering


def test_an_inout_writer_that_covers_an_entry_replaces_it():
    g = graph(
        DECLS
        + "task a { z[0:4, :] = x[0:4, :] }\ntask b { z[:, :] = x[:, :] }\ntask c { y[0:4, :] = z[0:4, :] }"
    )
    assert edges(g) == ["a>b:waw:z", "b>c:raw:z"]


def test_a_partial_writer_does_not_replace_a_wider_entry():
    g = graph(
        DECLS
        + "task a { z[:, :] = x[:, :] }\ntask b { z[0:8, :] = x[0:8, :] }\ntask c { y[0:4, :] = z[0:4, :] }"
    )
    assert edges(g) == ["a>b:waw:z", "a>c:raw:z", "b>c:raw:z"]


def test_edges_of_one_consumer_are_in_producer_order_then_explicit_first():
    g = graph(
        DECLS + "task p0 { s[8:16, :] = x[8:16, :] }\ntask p1 { s[0:8, :] = x[0:8, :] }\n"
        "task q { z[0:4, :] = x[0:4, :] }\ntask c after q { y[:, :] = s[:, :] }"
    )
    assert edges(g) == ["q>c:explicit", "p0>c:raw:s", "p1>c:raw:s"]


# ---------------------------------------------------------------- cross-round edges


def test_cross_round_edge_to_a_writer_of_the_previous_round():
    # In one round the reader comes first (no WAR edge); in the next round it reads what the
    # previous round's writer left registered.
    g = graph(DECLS + "task a { y[:, :] = s[:, :] }\ntask b { s[:, :] = x[:, :] }")
    assert edges(g) == []
    assert edges(g, "cross_round_edges") == ["b>a:raw:s"]


def test_cross_round_lists_only_edges_onto_the_previous_round():
    # a's InOut write covers its previous-round entry (a>a WAW across rounds); b's read of
    # z in round two is on a of round two, an in-round edge already listed.
    g = graph(DECLS + "task a { z[:, :] = x[:, :] }\ntask b { y[:, :] = z[:, :] }")
    assert edges(g) == ["a>b:raw:z"]
    assert edges(g, "cross_round_edges") == ["a>a:waw:z"]


def test_cross_round_edges_of_the_split_k_fixture():
    from pathlib import Path

    from dsl.frontend import compile_file

    (g,) = compile_file(Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "layers" / "split_k.dsl")
    # linear writes partials as OUTPUT_EXISTING: round two's reduce still sees round one's entry.
    assert edges(g) == ["linear>reduce:explicit", "linear>reduce:raw:partials"]
    assert edges(g, "cross_round_edges") == ["linear>reduce:raw:partials"]


# ---------------------------------------------------------------- the tensor map itself


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "add", "remove", "query"]), st.integers(0, 300), st.integers(1, 70)
        ),
        max_size=60,
    )
)
def test_tensor_map_finds_exactly_the_overlapping_live_entries(ops):
    tmap, live, seq = _TensorMap(), [], 0
    for op, lo, size in ops:
        hi = lo + size
        if op == "add":
            seq += 1
            entry = _Entry(f"t{seq}", lo, hi, None, seq, 0)
            tmap.register(entry)
            live.append(entry)
        elif op == "remove" and live:
            victim = live.pop(lo % len(live))
            tmap.remove(victim)
        else:
            want = [e.seq for e in live if e.lo < hi and lo < e.hi]
            assert [e.seq for e in tmap.overlapping(lo, hi)] == sorted(want)
