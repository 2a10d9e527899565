"""Sort, seed and view facts the reader recovers from real-looking code (issue 10, items 4-5).

Fixtures under ``tests/fixtures/pypto/reader/``, written for dslc; each finding is asserted by
code, line and column, and each clean case would fail if the fact were lost.
"""

from __future__ import annotations

import ast

import pytest
from pyptoutil import PYPTO_FIXTURES

from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

READER = PYPTO_FIXTURES / "reader"


def findings(name: str, path=None, **overrides: int):
    """Sorted (code, line, column) and the diagnostics of fixture ``name`` (or of the file ``path``)."""
    result = read_pypto(path or READER / name / "model.py", overrides=overrides or None)
    assert [d for d in result.diagnostics if d.code != "P001"] == []
    out = [*result.diagnostics]
    for g in result.graphs:
        out += run_rules_safely(g, CheckContext(g), set(all_rules()))
    return sorted((d.code, d.span.line, d.span.col) for d in out), out


def test_seeds_init_value_and_on_core_seed_with_offsets_recomputed_per_loop():
    triples, out = findings("seeds")
    assert triples == [("N202", 29, 16)]  # only `lost`: counts is init_value=0, hist seeded on-core
    (d,) = out
    assert d.message.startswith("count adds atomically into lost[0:64, 0:1]")


def test_format_two_merge_and_valid_extent_assigned_in_if_else():
    triples, out = findings("sorting")
    assert triples == [("S302", 32, 9)]  # route_unsorted only: route_heads' named heads are merge operands
    assert "mrgsort of 2 operands (format 2) merges lists that are not sorted" in out[0].message


def test_the_bound_of_finite_candidates_is_the_cap_not_the_row_width():
    triples, out = findings("sorting", CAP=200)
    assert triples == [("S301", 46, 15), ("S302", 32, 9)]
    s301 = next(d for d in out if d.code == "S301")
    assert "up to 200 finite candidates" in s301.message  # the cap, not PAD=256


def test_tile_used_after_its_scope_is_a_buffer_its_task_allocates():
    triples, out = findings("scope_tiles")
    # only the manual hand-off: the runtime adds no creator edge inside a manual scope
    assert triples == [("R501", 35, 13)]
    assert out[0].message.startswith("RAW race on `mm_manual.part`: wr_manual reads")
    (g,) = read_pypto(READER / "scope_tiles" / "model.py").graphs
    acc = g.tensors["mm[64].acc"]
    assert (acc.created_by, acc.dims, acc.dtype) == ("mm[64]", (16, 64), "f32")
    creators = {(e.src, e.dst) for e in g.edges if e.kind == "creator"}
    assert creators == {(f"mm[{q}]", f"wr[{q}]") for q in range(0, 512, 64)}
    (write,) = [a for a in g.task("wr[64]").accesses if a.tensor == "y"]
    assert [str(r) for r in write.region] == ["0:B", "64:(64 + T)"]  # its own column tile only


def test_a_long_host_loop_is_abandoned_and_the_rest_of_the_read_goes_on():
    result = read_pypto(READER / "host_loop" / "model.py")
    notes = [(d.code, d.span.line, d.span.col) for d in result.diagnostics]
    assert notes == [("P001", 16, 5)]
    assert "a host-code loop past 20000 interpreted statements" in result.diagnostics[0].message
    (g,) = result.graphs
    assert g.env()["T_DYN"] == 64  # from the specs the harness builds after the loop
    assert [(t.name, t.blocks) for t in g.tasks] == [("scale", 4)]


def test_chunks_stored_whole_at_loop_offsets_are_not_packed_rows():
    triples, _ = findings("tiled_valid")
    assert triples == []


def test_extern_kernel_arguments_on_a_grid_are_opaque_per_block():
    triples, _ = findings("extern_grid")
    assert triples == [("P001", 24, 21)]  # the unseen body; no R505 from whole arguments
    (g,) = read_pypto(READER / "extern_grid" / "model.py").graphs
    update = g.task("update")
    assert update.blocks == 8 and all(a.opaque for a in update.accesses)
    assert [(e.src, e.dst, e.reason) for e in g.edges] == [("update", "copy", "RAW workspace[0:1024]")]


def test_bare_tensor_parameters_take_shape_and_dtype_from_the_specs():
    triples, _ = findings("bare_tensor")
    assert triples == []
    (g,) = read_pypto(READER / "bare_tensor" / "model.py").graphs
    assert {n: (t.dtype, t.dims) for n, t in g.tensors.items()} == {
        "w": ("bf16", (32, 256)),
        "out": ("f32", (32, 256)),
    }
    assert g.task("copy").blocks == 2


def test_harness_tensors_built_with_torch_give_their_dtype_and_shape():
    triples, _ = findings("torch_harness")
    assert triples == []  # every bare parameter's shape comes from the torch expression
    (g,) = read_pypto(READER / "torch_harness" / "model.py").graphs
    assert {n: (t.dtype, t.dims) for n, t in g.tensors.items()} == {
        "a": ("bf16", (64, 128)),  # torch.empty(shape).normal_(...) * s + b, then .to(torch.bfloat16)
        "b": ("f16", (64, 128)),  # torch.randn(r, c).half()
        "c": ("f32", (64, 128)),  # torch's default float dtype
        "d": ("f16", (64, 128)),  # ones_like a float16 tensor
        "e": ("i8", (64, 128)),  # .to(dtype=torch.int8)
        "f": ("f32", (64, 128)),  # torch.full(..., dtype=torch.bfloat16).float()
        "g": ("i32", (64, 128)),  # arange(n, dtype=torch.int32).reshape(r, c)
        "out": ("f32", (64, 128)),
    }


def test_dead_temporaries_give_their_on_chip_bytes_to_the_next_tile():
    triples, out = findings("tile_reuse")
    assert triples == [("C403", 22, 5)]  # `held` only: its four tiles meet in one statement
    assert out[0].message.startswith("held: on-chip Vec (UB) footprint is 262144 B")


def test_grid_stride_blocks_write_disjoint_columns_at_a_cast_row_offset():
    triples, out = findings("grid_stride")
    # the store at offsets nobody can evaluate is noted, taken whole, and not judged per block
    assert triples == [("P001", 42, 59)]
    assert "the offsets of this pl.assemble" in out[0].message
    (g,) = read_pypto(READER / "grid_stride" / "model.py").graphs
    writes = {t.name: [(str(r) for r in a.region) for a in t.accesses if a.writes] for t in g.tasks}
    assert {n: [list(r) for r in w] for n, w in writes.items()} == {
        "stride[0]": [["0:ROWS", "(ob * CHUNK):((ob * CHUNK) + CHUNK)"]],  # pl.cast(0 * ROWS, INDEX)
        "stride[1]": [["ROWS:(ROWS + ROWS)", "(ob * CHUNK):((ob * CHUNK) + CHUNK)"]],
        "skewed": [["0:(ROWS * WINDOWS)", "0:COLS"]],
    }
    assert [a.opaque for a in g.task("skewed").accesses if a.writes] == [True]
    assert [(e.src, e.dst, e.reason) for e in g.edges] == [
        ("stride[0]", "skewed", "WAW out[0:16, 0:1024]"),
        ("stride[1]", "skewed", "WAW out[16:32, 0:1024]"),
    ]


def test_a_matmul_with_a_group_axis_keeps_its_extent():
    triples, _ = findings("batched_matmul")
    assert triples == []  # each group writes and reads back its own columns
    (g,) = read_pypto(READER / "batched_matmul" / "model.py").graphs
    (acc,) = [s for s in g.task("proj[1]").body if getattr(s, "name", None) == "acc"]
    assert [str(d) for d in acc.value.type.shape] == ["1", "T", "N_TILE"]  # [1, M, N] of a [1, N, K] weight
    (write,) = [a for a in g.task("proj[1]").accesses if a.writes]
    assert [str(r) for r in write.region] == [
        "0:T",
        "(N + (block * N_TILE)):((N + (block * N_TILE)) + N_TILE)",
    ]
    assert [(e.src, e.dst, e.reason) for e in g.edges] == [
        ("proj[0]", "scale[0]", "after"),
        ("proj[1]", "scale[1]", "after"),
    ]


def test_a_store_of_a_tile_with_a_valid_shape_writes_its_valid_rows_only():
    triples, out = findings("valid_store")
    assert triples == [("R505", 25, 9)]  # `padded` only: fillpad stores the whole 8-row tile
    assert "blocks 0 and 1 both write z[1:8, 0:8]" in out[0].message
    (g,) = read_pypto(READER / "valid_store" / "model.py").graphs
    regions = {t.name: [(a.mode, [str(r) for r in a.region]) for a in t.accesses] for t in g.tasks}
    assert regions == {
        "one_row": [("read", ["block:(block + 8)", "0:COLS"]), ("write", ["block:(block + 1)", "0:COLS"])],
        "padded": [("read", ["block:(block + 8)", "0:COLS"]), ("write", ["block:(block + 8)", "0:COLS"])],
        "tail": [("read", ["ROWS:(ROWS + 1)", "0:COLS"]), ("write", ["ROWS:(ROWS + 1)", "0:COLS"])],
    }


def test_notifies_chosen_by_a_scalar_argument_are_not_data():
    triples, out = findings("scalar_peers")
    # by_argument's peers follow `sub_rank`, which the caller passes: no D103; by_data's follow GM data
    assert [t for t in triples if t[0] == "D103"] == [("D103", 38, 9)]
    assert "the condition on line 36 depends on data" in next(d for d in out if d.code == "D103").message
    # and no D113 at the clear of `done` (line 41): its cells' credits follow `sub_rank` too
    assert triples == [("D103", 38, 9), ("D107", 25, 5), ("D107", 34, 5), ("D109", 34, 5)]


def test_a_window_of_a_produced_row_holds_at_most_its_width_of_finite_candidates():
    triples, out = findings("chunked_topk")
    assert triples == [("S301", 29, 9)]  # `whole` only; each 512-column window fits its runs
    assert out[0].message.startswith("whole: the row may hold up to 1024 finite candidates")


def test_an_epoch_passed_as_pl_const_is_an_integer_threshold():
    triples, _ = findings("const_epoch")
    # the wait is modelled: its constant threshold on a counter that persists is D113's case
    assert triples == [("D107", 12, 5), ("D113", 20, 17)]
    (g,) = read_pypto(READER / "const_epoch" / "model.py").graphs
    assert [(s.kind, str(s.expected)) for s in g.task("arrive").signals] == [
        ("notify", "None"),
        ("wait", "1"),
    ]


@pytest.mark.parametrize(
    "made, length",
    [
        ("torch.arange(0, 10, 0, dtype=torch.int32)", None),  # torch refuses a zero step
        ("torch.arange(2**70, dtype=torch.int32)", 2**70),  # past len(range())
        ("torch.arange(10, 0, -3, dtype=torch.int32)", 4),
    ],
)
def test_a_harness_arange_gives_its_length_or_none_never_a_reader_failure(tmp_path, made, length):
    text = (READER / "torch_harness" / "model.py").read_text(encoding="utf-8")
    g_line = '"g": torch.arange(rows * COLS, dtype=torch.int32).reshape(rows, COLS),'
    assert g_line in text
    model = tmp_path / "model.py"
    model.write_text(text.replace(g_line, f'"g": {made},'), encoding="utf-8")
    result = read_pypto(model)
    assert [d.code for d in result.diagnostics if d.code != "P001"] == []
    (g,) = result.graphs
    assert g.tensors["g"].dtype == "i32"
    if length is not None:
        assert g.tensors["g"].dims == (length,)


def test_a_count_clamped_on_a_runtime_scalar_is_unknown_after_the_clamp():
    triples, out = findings("branch_clamp")
    # every clamp and guard is undecided: the last branch's `active = 0` must not decide `active > 0`
    assert triples == [("P001", 18, 8), ("P001", 20, 8), ("P001", 22, 8), ("P001", 26, 8)]
    assert all("an orchestration branch on a value known only at run time" in d.message for d in out)
    (g,) = read_pypto(READER / "branch_clamp" / "model.py").graphs
    assert [t.name for t in g.tasks] == ["scale", "pad"]


def test_a_program_class_built_in_a_builder_sees_the_builders_arguments():
    triples, _ = findings("builder_closure")
    assert triples == []  # the annotations' `width` and `half` are known: no P001 on the shapes
    (g,) = read_pypto(READER / "builder_closure" / "model.py").graphs
    assert len(g.tasks) == 4096 // 16
    task = g.tasks[3]
    regions = [(a.tensor, a.mode, [(str(r.start), str(r.stop)) for r in a.region]) for a in task.accesses]
    assert regions == [
        ("src", "read", [("(3 * ROWS)", "((3 * ROWS) + ROWS)"), ("0", "WIDTH")]),
        ("dst", "write", [("(3 * ROWS)", "((3 * ROWS) + ROWS)"), ("0", "(WIDTH // 2)")]),
    ]


def test_a_zero_pl_write_into_a_signal_cell_is_the_cells_clear():
    # the program-end clear, ordered after the waits: neither threshold goes stale (D113 took
    # the constant threshold on a never-cleared counter) and the epoch-scaled one is judged at
    # the first call of a dispatch only (D103 took epoch 2 against a cell cleared every round)
    triples, _ = findings("signal_clear")
    assert triples == []
    (g,) = read_pypto(READER / "signal_clear" / "model.py").graphs
    clear = g.task("clear_signals")
    assert [(s.signal, s.op, str(s.value), str(s.peer)) for s in clear.notifies] == [
        ("arrived", "set", "0", "rank"),
        ("done", "set", "0", "rank"),
    ]
    assert [a.tensor for a in clear.accesses] == ["y"]  # the anchor read only


def test_a_signal_clear_not_ordered_after_the_waits_is_unsafe(tmp_path):
    # `signal_clear` without its anchor read: the clear task is ordered after nothing, so it can
    # zero `arrived` and `done` before this rank's waits have seen every peer's notify
    text = (READER / "signal_clear" / "model.py").read_text(encoding="utf-8")
    anchor = "        _anchor = pl.read(y, [0, 0])\n"
    assert anchor in text
    model = tmp_path / "model.py"
    model.write_text(text.replace(anchor, ""), encoding="utf-8")
    triples, out = findings("", path=model)
    assert triples == [("D113", 45, 13), ("D113", 46, 13)]
    assert (
        "clear_signals zero-writes arrived (`= 0`): arrived[1] on rank 0 receives 1 credits" in out[0].message
    )


def test_a_fresh_buffer_assembled_in_orchestration_is_a_slice_of_its_target():
    # the notes: the loop read once, where `piece` starts; no R502 between the
    # two unplaced pieces (at their placeholder offset 0 they would meet)
    triples, _ = findings("assemble_slice")
    assert triples == [("P001", 36, 9), ("P001", 40, 20)]  # `counts` has no writer to wait for
    (g,) = read_pypto(READER / "assemble_slice" / "model.py").graphs
    assert {(e.src, e.dst) for e in g.edges} == {
        ("fill[0]", "use"),
        ("fill[1]", "use"),
        ("fill_late[0][*]", "use_late"),
        ("fill_late[1][*]", "use_late"),
    }
    tile1 = g.tensors["tile[1]"]
    assert (tile1.view_of, tile1.view_offset, tile1.view_placed) == ("out", 16 * 64 * 4, True)
    assert not g.tensors["piece[1][*]"].view_placed  # `j` counts to a value read at run time


def test_subscript_sugar_in_orchestration_places_a_fresh_buffer_like_assemble():
    triples, out = findings("subscript_assemble")
    assert triples == [("P001", 42, 5)]  # the store whose source is a view of `x`
    assert "not a fresh pl.create_tensor buffer" in out[0].message
    (g,) = read_pypto(READER / "subscript_assemble" / "model.py").graphs
    assert [(e.src, e.dst, e.reason) for e in g.edges] == [
        ("rows[0]", "check", "RAW x_attn_flat (written as y_flat[0:1024])")
    ]
    tile1 = g.tensors["y_tile[1]"]
    assert (tile1.view_of, tile1.view_offset, tile1.view_placed) == ("x_out_flat", 16 * 64 * 4, True)


def test_a_harness_launch_on_torch_tensors_types_the_bare_parameters_of_that_entry():
    triples, _ = findings("launch_harness")
    # only the unlaunched entry's shapes are unknown (its w, x, out)
    assert triples == [("P001", 25, 11), ("P001", 25, 25), ("P001", 25, 39)]
    layer, model = read_pypto(READER / "launch_harness" / "model.py").graphs
    assert [(n, layer.tensors[n].dtype, layer.tensors[n].dims) for n in ("w", "x", "out")] == [
        ("w", "i8", (16, 64)),  # the helper's `dtype == torch.int8` branch: randint
        ("x", "bf16", (16, 64)),
        ("out", "f32", (16, 64)),
    ]
    assert [(n, model.tensors[n].dtype, model.tensors[n].dims) for n in ("w", "x")] == [
        ("w", "i8", (None, None)),
        ("x", "bf16", (None, None)),
    ]


def test_a_subscript_of_a_computed_tile_narrows_the_stored_region():
    triples, _ = findings("tile_subscript")
    assert triples == []  # each block's K rows are its own
    (g,) = read_pypto(READER / "tile_subscript" / "model.py").graphs
    (write,) = [a for a in g.task("rows").accesses if a.writes]
    assert str(write.region[0].stop) == "((block * K) + K)"


def test_a_kernel_submitted_as_self_kernel_from_a_jit_function_is_the_modules_kernel():
    triples, _ = findings("program_method")
    assert triples == []  # no P001 "a kernel the reader cannot resolve"
    (g,) = read_pypto(READER / "program_method" / "model.py").graphs
    assert [(t.name, t.blocks) for t in g.tasks] == [("scale", 4), ("publish", 1)]
    assert [(e.src, e.dst, e.kind) for e in g.edges] == [("scale", "publish", "explicit")]


def test_a_host_read_in_orchestration_orders_every_later_task_after_the_tensors_writers():
    triples, out = findings("host_read")
    assert triples == [("R501", 30, 9), ("R501", 33, 9)]  # early vs count; consume vs early only
    assert "consume overwrites scratch[0:1, 0:64] that early writes" in out[1].message
    (g,) = read_pypto(READER / "host_read" / "model.py").graphs
    assert [(e.src, e.dst, e.kind) for e in g.edges] == [
        ("count", "consume", "host"),
        ("count", "fanout", "host"),
    ]
    assert g.task("consume").after[0].span.line == 31  # the edge names the host read


def test_tasks_submitted_after_a_host_wait_are_not_pre_staged_while_it_runs():
    from lowering.checks.speculation.cone import cone

    (g,) = read_pypto(READER / "host_read" / "model.py").graphs
    assert [t.name for t in cone(g, CheckContext(g), g.task("count"))] == []


def test_a_host_write_in_orchestration_waits_for_every_task_that_touches_the_tensor(tmp_path):
    # `host_read` with the read of `n_buf` turned into a host write of `scratch`, after a task
    # `peek` that reads it: the orchestrator waits for its writers and its reader, so `consume`
    # no longer races `early`
    text = (READER / "host_read" / "model.py").read_text(encoding="utf-8")
    read = "    n = pl.read(n_buf, [0, 0])\n"
    assert read in text
    peek = (
        '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="peek"):\n'
        "        z[0:1, :] = scratch[0:1, :]\n"
        "    pl.write(scratch, [0, 0], pl.cast(0.0, pl.FP32))\n"
    )
    model = tmp_path / "model.py"
    model.write_text(text.replace(read, peek), encoding="utf-8")
    triples, _ = findings("", path=model)
    assert triples == [
        ("R501", 30, 9),
        ("R503", 32, 21),
        ("R503", 32, 21),
    ]  # early vs count; peek reads count's and early's row
    (g,) = read_pypto(model).graphs
    assert sorted((e.src, e.dst) for e in g.edges if e.kind == "host") == [
        ("count", "consume"), ("count", "fanout"), ("early", "consume"), ("early", "fanout"),
        ("peek", "consume"), ("peek", "fanout"),
    ]  # fmt: skip


def test_tasks_on_different_arms_of_a_run_time_branch_are_never_paired():
    triples, out = findings("runtime_branch")
    # hca_tail vs hca (one arm), late vs every arm's writer and csa's view; no pair across arms
    assert triples == [
        ("P001", 24, 8),
        ("P001", 27, 10),
        ("R501", 31, 13),
        *[("R501", 37, 9)] * 3,
        ("R502", 37, 9),
    ]
    pairs = sorted(
        d.message.split(" that ")[1].split(" ")[0] for d in out if d.code == "R501" and d.span.line == 37
    )
    assert pairs == ["hca", "hca_tail", "swa"]
    assert "late writes `cache` and csa reads `flat`" in next(d.message for d in out if d.code == "R502")
    (g,) = read_pypto(READER / "runtime_branch" / "model.py").graphs
    arms = {t.name: t.branch for t in g.tasks}
    assert arms == {
        "swa": ((1, 0),),
        "hca": ((1, 1), (2, 0)),
        "hca_tail": ((1, 1), (2, 0)),
        "csa": ((1, 1), (2, 1)),
        "late": (),
    }
    task = g.task
    assert (
        task("swa").excludes(task("hca"))
        and task("hca").excludes(task("csa"))
        and task("csa").excludes(task("swa"))
    )
    assert not task("hca").excludes(task("hca_tail")) and not task("late").excludes(task("swa"))


def test_rows_both_chosen_by_tables_are_assumed_apart_and_said_so():
    triples, out = findings("data_rows")
    assert triples == [("R501", 38, 9), ("R502", 36, 13)]
    r501, r502 = sorted(out, key=lambda d: d.code)
    assert (r502.severity.value, r501.severity.value) == ("note", "error")
    assert "both regions are chosen by `slot_mapping` and `slot_table`" in r502.message
    assert "stamp writes cache[0:1, 0:32] that gather reads" in r501.message
    assert "(possible, not shown:" in r501.message


def test_the_world_size_is_the_rank_rows_of_a_signal_when_nothing_names_it():
    triples, out = findings("signal_world")
    # no D106 for the cells of ranks 2 and 3, no "two ranks are assumed" note
    assert triples == [("D107", 21, 5), ("D113", 27, 17)]
    (g,) = read_pypto(READER / "signal_world" / "model.py").graphs
    assert g.nranks == 4


def test_a_block_offset_assigned_before_a_kernel_loop_stays_the_blocks_offset():
    triples, out = findings("loop_offsets")
    assert triples == [("R505", 31, 13)]  # shift's overlapping blocks; no R506 "rows from data"
    assert "blocks 0 and 1 both write z[8:16, 0:32]" in out[0].message
    (g,) = read_pypto(READER / "loop_offsets" / "model.py").graphs
    (write,) = [a for a in g.task("scale").accesses if a.tensor == "y"]
    assert str(write.region[0]) == "(block * 16):((block * 16) + 16)"


def test_loop_carried_names_are_those_a_loop_reads_before_it_assigns_them():
    from lowering.pypto_reader.kernel_names import loop_carried

    body = ast.parse(
        "tg = b * 16\n"
        "k = 0\n"
        "for i in pl.range(4):\n"
        "    y[tg : tg + 16, k : k + 8] = x[tg : tg + 16, :]\n"  # tg only read; k read, then bumped
        "    k = k + 8\n"
        "    w[j] = 1\n"  # j assigned below, read here: carried into the next iteration
        "    j = i\n"
    ).body
    assert loop_carried(body) == {"k", "j"}


def test_a_grid_sized_by_data_writes_the_rows_of_any_block():
    triples, out = findings("unknown_grid")
    assert triples == [("P001", 26, 22), ("R501", 27, 9)]
    r501 = out[1]
    assert "fill writes y[32:48, 0:64] that peek reads" in r501.message
    assert "(possible, not shown:" in r501.message
    (g,) = read_pypto(READER / "unknown_grid" / "model.py").graphs
    assert g.task("fill").blocks == 1
    assert [str(r) for r in g.task("fill").accesses[1].region] == [
        "(block? * 16):((block? * 16) + 16)",
        "0:D",
    ]


def test_a_program_that_counts_its_calls_from_zero_is_judged_from_zero(tmp_path):
    triples, out = findings("epoch_base")
    # `ack` makes the program inconsistent: judged from 1, the reuse wait asks for this call's
    # consumption credit, which comes after it (a count: D103, not D101's starved notifier), and
    # the data wait for one notify too many
    assert triples == [("D103", 35, 17), ("D103", 40, 17)]
    assert any("the threshold is never reached" in d.message for d in out if d.span.line == 35)
    assert any("ready[1, 0] on rank 0 >= epoch + 1 (= 2 at epoch 1)" in d.message for d in out)
    text = (READER / "epoch_base" / "model.py").read_text(encoding="utf-8")
    start = text.index('    with pl.at(level=pl.Level.CORE_GROUP, name_hint="ack"')
    end = text.index("    return got")
    model = tmp_path / "model.py"
    model.write_text(text[:start] + text[end:], encoding="utf-8")
    assert findings("", path=model)[0] == []  # counted from 0: the reuse wait lags, the data wait is right


def test_a_valid_shape_is_metadata_of_the_tile_not_another_tile_in_ub():
    triples, out = findings("valid_operand")
    assert triples == [("C403", 35, 5)]  # `wide` only: proj's weight tiles are L1 operands
    assert out[0].message.startswith("wide: on-chip Vec (UB) footprint is 1572864 B")
