"""The PyPTO reader: what it recovers from a model file (ast only, never executed), and how it
degrades on what it cannot model."""

from __future__ import annotations

import random
import sys
import textwrap
from pathlib import Path

from pyptoutil import PYPTO_FIXTURES

from lowering.edges import argument_tags
from lowering.pypto_reader import read_pypto
from lowering.source import Severity

HEAD = "import pypto.language as pl\nimport pypto.language.distributed as pld\n"


def read(tmp_path: Path, body: str, name: str = "model.py", **files: str):
    for fname, text in files.items():
        (tmp_path / f"{fname}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body), encoding="utf-8")
    return read_pypto(path)


def only(result):
    assert [d for d in result.diagnostics if d.code != "P001"] == []
    (g,) = result.graphs
    return g


def edges(g):
    return sorted((e.src, e.dst, e.kind, e.tensor) for e in g.edges)


def codes(result):
    return sorted(d.code for d in result.diagnostics)


# ---------------------------------------------------------------- never executed


def test_the_file_is_never_imported_or_executed(tmp_path):
    marker = tmp_path / "executed"
    body = f"""
    import os
    open({str(marker)!r}, "w").write("x")
    os.system("touch {marker}")
    raise SystemExit(3)

    @pl.jit
    def entry(x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy"):
            y = pl.assemble(y, x[:, :], [0, 0])
        return y
    """
    result = read(tmp_path, body)
    assert not marker.exists()
    assert "model" not in sys.modules
    assert [t.name for t in only(result).tasks] == ["copy"]


# ---------------------------------------------------------------- constants


def test_constants_from_config_argv_environ_and_asserts(tmp_path):
    body = """
    import os
    from config import D, HC_DIM

    EP = 4
    T = int(os.environ.get("NUM_TOKENS", "256"))
    TILE = 64
    N = T // TILE
    assert EP in (2, 4, 8)
    assert 128 <= T <= 1024
    assert HC_DIM % TILE == 0, "whole tiles"

    @pl.jit
    def entry(x: pl.Tensor[[T, HC_DIM], pl.FP32], y: pl.Out[pl.Tensor[[T, HC_DIM], pl.FP32]]):
        with pl.spmd(N, name_hint="copy"):
            b = pl.tile.get_block_idx()
            y = pl.assemble(y, x[b * TILE : (b + 1) * TILE, :], [b * TILE, 0])
        return y

    if __name__ == "__main__":
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--tile", type=int, default=TILE, choices=[32, 64, 128])
        parser.add_argument("--ep", type=int, default=2, choices=[2, 4])
        args = parser.parse_args()
        EP = args.ep
    """
    g = only(read(tmp_path, body, config="D = 1024\nHC_DIM = 4 * D\n"))
    assert g.params["D"].value == 1024 and g.params["T"].value == 256
    assert g.consts["HC_DIM"].value == 4096 and str(g.consts["N"].expr) == "(T // TILE)"
    assert list(g.params["TILE"].domain) == [32, 64, 128]
    assert list(g.params["EP"].domain) == [2, 4]  # argv choices win over the module assert (read first)
    assert (g.params["T"].domain.lo, g.params["T"].domain.hi) == (128, 1024)
    assert [a.message for a in g.assertions] == ["whole tiles"]
    (task,) = g.tasks
    assert (str(task.grid), task.blocks) == ("N", 4)


def test_set_overrides_a_constant_and_bad_values_are_p005(tmp_path):
    body = """
    T = 128
    assert T in (128, 256)
    assert T % 64 == 0, "whole tiles"

    @pl.jit
    def entry(y: pl.Out[pl.Tensor[[T, 4], pl.FP32]]):
        with pl.spmd(T // 64, name_hint="fill"):
            y = pl.assemble(y, pl.full([64, 4], dtype=pl.FP32, value=0.0), [pl.tile.get_block_idx() * 64, 0])
        return y
    """
    path = tmp_path / "m.py"
    path.write_text(HEAD + textwrap.dedent(body), encoding="utf-8")
    ok = read_pypto(path, overrides={"T": 256})
    assert ok.diagnostics == [] and ok.graphs[0].tasks[0].blocks == 4
    bad = read_pypto(path, overrides={"T": 96, "NOPE": 1})
    messages = [(d.code, d.message) for d in bad.diagnostics]
    assert ("P005", "--set NOPE: the program has no integer module constant 'NOPE'") in messages
    assert any("outside its admissible set" in m for _, m in messages)
    assert any(m.startswith("assertion failed: whole tiles") for _, m in messages)


# ---------------------------------------------------------------- tasks, deps, task ids


def test_inline_helpers_return_task_ids_and_tensors_across_calls(tmp_path):
    body = """
    N = 4

    @pl.jit.inline
    def produce(x, buf):
        with pl.spmd(N, name_hint="produce") as tid:
            b = pl.tile.get_block_idx()
            buf = pl.assemble(buf, x[b : b + 1, :], [b, 0])
        return buf, tid

    @pl.jit.inline
    def consume(buf, y, after):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume", deps=[after]) as tid:
            y = pl.assemble(y, buf[:, :], [0, 0])
        return tid

    @pl.jit
    def entry(x: pl.Tensor[[N, 8], pl.FP32], y: pl.Out[pl.Tensor[[N, 8], pl.FP32]]):
        buf = pl.create_tensor([N, 8], dtype=pl.FP32, manual_dep=True)
        buf, produced = produce(x, buf)
        done = consume(buf, y, after=produced)
        join = pl.system.task_dummy(deps=[done, None])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="last", deps=[join]):
            pl.read(y, [0, 0])
        return y
    """
    g = only(read(tmp_path, body))
    assert [t.name for t in g.tasks] == ["produce", "consume", "task_dummy", "last"]
    assert g.tensors["buf"].manual_dep and g.tensors["buf"].kind == "scratch"
    assert edges(g) == [
        ("consume", "last", "raw", "y"),
        ("consume", "task_dummy", "explicit", None),
        ("produce", "consume", "explicit", None),
        ("task_dummy", "last", "explicit", None),
    ]
    assert g.task("task_dummy").blocks == 0


def test_task_id_arrays_loops_and_comprehensions(tmp_path):
    body = """
    E = 3

    @pl.jit
    def entry(x: pl.Tensor[[E, 8], pl.FP32], y: pl.Out[pl.Tensor[[E, 8], pl.FP32]]):
        tids = pl.array.create(E, pl.TASK_ID)
        for e in pl.parallel(E):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm") as tid:
                y = pl.assemble(y, x[e : e + 1, :], [e, 0])
            tids[e] = tid
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="one", deps=[tids[1]]):
            pl.read(x, [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="all", deps=[tids]):
            pl.read(x, [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="each", deps=[tids[i] for i in range(E)]):
            pl.read(x, [0, 0])
        return y
    """
    g = only(read(tmp_path, body))
    assert [t.name for t in g.tasks] == ["mm[0]", "mm[1]", "mm[2]", "one", "all", "each"]
    assert [t.index for t in g.tasks[:3]] == [0, 1, 2] and {t.base for t in g.tasks[:3]} == {"mm"}
    assert [d.target for d in g.task("one").after] == ["mm[1]"]
    assert [d.target for d in g.task("all").after] == ["mm[0]", "mm[1]", "mm[2]"]
    assert [d.target for d in g.task("each").after] == ["mm[0]", "mm[1]", "mm[2]"]
    assert not any(t.in_sequential_loop for t in g.tasks)


def test_spmd_forms_carriers_flags_and_predicates(tmp_path):
    body = """
    @pl.jit.incore
    def kern(x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        b = pl.tile.get_block_idx()
        y = pl.assemble(y, x[b : b + 1, :], [b, 0])

    @pl.jit
    def entry(x: pl.Tensor[[8, 8], pl.FP32], f: pl.Tensor[[1, 1], pl.INT32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        for b in pl.spmd(8, name_hint="loop_form", sync_start=True):
            y = pl.assemble(y, x[b : b + 1, :], [b, 0])
        with pl.spmd(8, allow_early_resolve=True):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="carried"):
                pl.system.syncall(core_type="aiv_only", mode="hard")
        with pl.spmd(8, name_hint="kernel_grid", predicate=(f[0, 0] == 1)):
            kern(x, y)
        return y
    """
    g = only(read(tmp_path, body))
    assert [(t.name, t.blocks, t.sync_start, t.early_resolve) for t in g.tasks] == [
        ("loop_form", 8, True, False),
        ("carried", 8, False, True),
        ("kernel_grid", 8, False, False),
    ]
    assert [b.soft for b in g.task("carried").barriers] == [False]
    p = g.task("kernel_grid").predicate
    assert (p.tensor, p.cmp, str(p.value)) == ("f", "==", "1")
    assert g.task("kernel_grid").arg_tags == {"x": "in", "y": "out"}


def test_program_classes_self_calls_and_submit(tmp_path):
    body = """
    @pl.program
    class Prog:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]):
            y = pl.assemble(y, pl.exp(x[:, :]), [0, 0])
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]):
            out, tid = pl.submit(self.k, x, y, allow_early_resolve=True)
            out2, tid2 = pl.spmd_submit(self.k, x, y, core_num=4, deps=[tid])
            return out2
    """
    g = only(read(tmp_path, body))
    assert [(t.name, t.blocks, t.early_resolve, [d.target for d in t.after]) for t in g.tasks] == [
        ("k", 1, True, []),
        ("k#2", 4, False, ["k"]),
    ]


# ---------------------------------------------------------------- directions and promotion


DIRECTIONS = """
@pl.jit.incore
def write_rows(x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
    t = pl.read(y, [0, 0])
    y = pl.assemble(y, x[:, :], [0, 0])

@pl.jit
def entry(x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]], z: pl.InOut[pl.Tensor[[8, 8], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="fill"):
        y = pl.assemble(y, x[:, :], [0, 0])
    write_rows(x, y)
    for i in pl.range(2):
        write_rows(x, y)
    for i in pl.parallel(2):
        write_rows(pl.no_dep(x), y)
    write_rows(x, z)
    return y
"""


def test_kernel_directions_come_from_annotations_with_out_to_inout_promotion(tmp_path):
    g = only(read(tmp_path, DIRECTIONS))
    names = [t.name for t in g.tasks]
    assert names == [
        "fill",
        "write_rows",
        "write_rows[0]",
        "write_rows[1]",
        "write_rows[0]#2",
        "write_rows[1]#2",
        "write_rows#2",
    ]
    tags = argument_tags(g)
    # an Out that reads stays OutputExisting; R-prior promotes the same buffer only when an
    # earlier *other* statement wrote it ("fill" did)
    assert tags["write_rows"]["y"] == "INOUT"
    assert tags["write_rows[0]"]["y"] == "INOUT"  # R-seq
    assert tags["write_rows[0]#2"]["x"] == "NO_DEP"
    assert tags["write_rows#2"]["z"] == "INOUT"  # R-enclosing: z is InOut of the entry
    assert g.task("write_rows[0]").in_sequential_loop and not g.task("write_rows[0]#2").in_sequential_loop
    assert not any(e.tensor == "x" for e in g.edges)


def test_scope_directions_are_inferred_from_use(tmp_path):
    body = """
    @pl.jit
    def entry(x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="w1"):
            y = pl.assemble(y, x[:, :], [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="w2", no_dep_args=[x]):
            y = pl.assemble(y, x[:, :], [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="r"):
            _ = pl.read(y, [0, 0])
        return y
    """
    g = only(read(tmp_path, body))
    assert g.task("w1").arg_tags is None
    assert g.task("w2").arg_tags == {"x": "nodep"}
    assert edges(g) == [("w1", "w2", "waw", "y"), ("w2", "r", "raw", "y")]
    (e,) = [e for e in g.edges if e.dst == "r"]
    assert e.anchor  # `_ = pl.read(...)` is an anchor read


# ---------------------------------------------------------------- signals, atomics, sort chains


def test_signals_atomics_and_remote_stores(tmp_path):
    body = """
    EP = 4

    @pl.jit
    def entry(
        x: pl.Tensor[[16, 8], pl.FP32],
        acc: pl.InOut[pl.Tensor[[16, 8], pl.FP32]],
        win: pld.DistributedTensor[[EP * 16, 8], pl.FP32],
        sig: pld.DistributedTensor[[EP, 1], pl.INT32],
        my_rank: pl.Scalar[pl.INT32],
        epoch: pl.Scalar[pl.INT32],
    ):
        with pl.spmd(4, name_hint="push") as push:
            b = pl.tile.get_block_idx()
            acc = pl.assemble(acc, x[b * 4 : b * 4 + 4, :], [b * 4, 0], atomic=pl.AtomicType.Add)
            for dst in pl.range(EP):
                if dst != my_rank:
                    pld.tile.remote_store(pl.load(x, [b * 4, 0], [4, 8]), win, dst, [my_rank * 16 + b * 4, 0])
                    pld.system.notify(target=sig, peer=dst, offsets=[my_rank, 0], value=1, op=pld.NotifyOp.AtomicAdd)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="wait", deps=[push]):
            pld.system.notify(target=sig, peer=0, offsets=[my_rank, 0], value=epoch, op=pld.NotifyOp.Set)
            for src in pl.range(EP):
                pld.system.wait(signal=sig, offsets=[src, 0], expected=epoch * 4, cmp=pld.WaitCmp.Eq)
        return acc
    """
    g = only(read(tmp_path, body))
    assert g.nranks == 4 and g.tensors["sig"].kind == "signal" and g.tensors["win"].kind == "window"
    push = g.task("push")
    (n,) = push.notifies
    assert (n.signal, [str(i) for i in n.index], str(n.peer), n.op, str(n.value)) == (
        "sig",
        ["rank", "0"],
        "dst",
        "add",
        "1",
    )
    assert [str(c.expr) for c in n.conds] == ["(dst != rank)"] and [lp.var for lp in n.loops] == ["dst"]
    assert [(a.tensor, a.mode) for a in push.accesses if a.mode != "read"] == [
        ("acc", "atomic"),
        ("win", "write"),
    ]
    assert str([a for a in push.accesses if a.tensor == "win"][0].peer) == "dst"
    wait = g.task("wait")
    assert [(s.kind, s.op, s.cmp, str(s.expected or s.value)) for s in wait.signals] == [
        ("notify", "set", "ge", "epoch"),
        ("wait", "add", "eq", "(epoch * 4)"),
    ]


def test_sort_chains_block_lens_readouts_and_min_bounds(tmp_path):
    body = """
    T = 512
    CAP = 2 * max(1, T // 4)
    K = min(512, CAP)

    @pl.jit
    def entry(s_in: pl.Tensor[[T, 2048], pl.FP32], out: pl.Out[pl.Tensor[[T, 1024], pl.FP32]]):
        with pl.spmd(T, name_hint="topk"):
            t = pl.tile.get_block_idx()
            visible = pl.min(t + 1, CAP)
            row = pl.fillpad(pl.set_validshape(s_in[t : t + 1, :], 1, visible), pad_value=pl.PadValue.min)
            s = pl.sort32(row, pl.arange(0, [1, 2048], dtype=pl.UINT32))
            s = pl.mrgsort(s, block_len=64)
            s = pl.mrgsort(s, block_len=4 * 64)
            out = pl.assemble(out, s[:, 0 : 2 * K], [t, 0])
        return out
    """
    g = only(read(tmp_path, body))
    (task,) = g.tasks
    assert {"sort32", "mrgsort", "topk_pairs", "fillpad", "iota"} <= task.ops
    lets = [s for s in task.body if type(s).__name__ in ("LetS", "AssignS")]
    chain = [s.value for s in lets if getattr(s.value, "op", None) == "mrgsort"]
    assert [str(c.args[1].expr) for c in chain] == ["64", "256"]
    row = [s.value for s in lets if s.name == "row"][0]
    assert row.op == "fillpad" and str(row.args[1].expr) == "min((block + 1), CAP)"
    store = task.body[-1]
    assert store.value.op == "topk_pairs" and str(store.value.args[1].expr) == "K"


# ---------------------------------------------------------------- graceful degradation


def test_what_cannot_be_modelled_is_a_note_never_a_crash(tmp_path):
    body = """
    @pl.jit.extern(core_type="aic", source="k.cpp")
    def ext(x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        pass

    @pl.jit
    def entry(x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]], n: pl.Scalar[pl.INT32]):
        count = pl.read(x, [0, 0])
        for i in pl.range(count):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="dyn"):
                y = pl.assemble(y, x[:, :], [0, 0])
        helper_from_nowhere(x, y)
        ext(x, y)
        with pl.spmd(pl.system.available_aiv_count(), name_hint="full"):
            pl.system.syncall(core_type="aiv_only", mode="hard")
        return y
    """
    result = read(tmp_path, body)
    g = only(result)
    assert [t.name for t in g.tasks] == ["dyn[*]", "ext", "full"]
    assert g.task("ext").core == "aic" and {a.mode for a in g.task("ext").accesses} == {"read", "write"}
    assert g.task("full").blocks == 48
    notes = [(d.code, d.severity, d.span.line, d.message) for d in result.diagnostics]
    assert all(c == "P001" and s is Severity.NOTE for c, s, _, _ in notes)
    text = " | ".join(m for *_, m in notes)
    # `pl.read(x, ...)` of an input no task writes makes the orchestrator wait for nothing: no note
    assert "host-side pl.read" not in text
    for what in (
        "dynamic task count",
        "helper_from_nowhere",
        "extern kernel",
        "available_aiv_count",
    ):
        assert what in text, what


def test_unreadable_and_non_pypto_files(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(HEAD + "def f(:\n    pass\n", encoding="utf-8")
    (d,) = read_pypto(bad).diagnostics
    assert (d.code, d.span.line, d.span.col) == ("P003", 3, 7)
    plain = tmp_path / "plain.py"
    plain.write_text("import numpy as np\nX = 1\n", encoding="utf-8")
    (d,) = read_pypto(plain).diagnostics
    assert d.code == "P002" and d.severity is Severity.NOTE
    binary = tmp_path / "bin.py"
    binary.write_bytes(b"\xff\xfe\x00import")
    assert [d.code for d in read_pypto(binary).diagnostics] == ["P003"]
    assert [d.code for d in read_pypto(tmp_path / "missing.py").diagnostics] == ["P003"]
    empty = tmp_path / "empty.py"
    empty.write_text(HEAD, encoding="utf-8")
    assert [d.code for d in read_pypto(empty).diagnostics] == ["P002"]


def test_random_damage_to_real_files_never_crashes(tmp_path):
    rng = random.Random(7)
    sources = sorted(PYPTO_FIXTURES.rglob("*.py"))
    for i in range(120):
        lines = rng.choice(sources).read_text(encoding="utf-8").splitlines()
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(lines))
            op = rng.random()
            if op < 0.4:
                del lines[k]
            elif op < 0.7:
                lines[k] = lines[k][: rng.randrange(len(lines[k]) + 1)]
            else:
                lines.insert(k, lines[rng.randrange(len(lines))])
        path = tmp_path / f"m{i}.py"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        result = read_pypto(path)  # must not raise
        assert all(d.span.file == str(path) or d.span.file.endswith("config.py") for d in result.diagnostics)
        assert not [d for d in result.diagnostics if d.code == "P004"], [
            d.message for d in result.diagnostics
        ]


def test_findings_point_at_py_lines_and_columns():
    result = read_pypto(PYPTO_FIXTURES / "seed" / "dispatch_pre.py")
    (g,) = result.graphs
    wait = g.task("dispatch_wait")
    assert (wait.header_span.line, wait.header_span.col) == (86, 5)
    (w,) = wait.waits
    assert (w.span.line, w.span.col) == (90, 17)


def test_a_file_of_inline_helpers_has_its_uncalled_ones_as_entries(tmp_path):
    body = """
    @pl.jit.inline
    def helper(x, y):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="inner"):
            y = pl.assemble(y, x[:, :], [0, 0])
        return y

    @pl.jit.inline
    def top(x: pl.Tensor[[4, 4], pl.FP32], y: pl.Tensor[[4, 4], pl.FP32]):
        y = helper(x, y)
        return y
    """
    result = read(tmp_path, body)
    assert [(g.name, [t.name for t in g.tasks]) for g in result.graphs] == [("top", ["inner"])]


def test_both_aiv_lanes_make_a_mix_task_and_run_the_body_per_lane(tmp_path):
    body = """
    EP = 2

    @pl.jit
    def entry(
        x: pl.Tensor[[8, 8], pl.FP32],
        sig: pld.DistributedTensor[[2], pl.INT32],
        my_rank: pl.Scalar[pl.INT32],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="lanes"):
            for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                pld.system.notify(target=sig, peer=1 - my_rank, offsets=[my_rank], value=1, op=pld.NotifyOp.AtomicAdd)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="split", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            pl.read(x, [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="deferred"):
            pld.system.defer_wait(signal=sig, offsets=[0], expected=2, cmp=pld.WaitCmp.Ge)
        return x
    """
    result = read(tmp_path, body)
    g = only(result)
    assert [t.core for t in g.tasks] == ["mix", "mix", "aiv"]
    (n,) = g.task("lanes").notifies
    assert [(lp.var, str(lp.stop)) for lp in n.loops] == [("lane", "2")]
    assert [d.code for d in result.diagnostics] == ["P001"] and "defer_wait" in result.diagnostics[0].message
