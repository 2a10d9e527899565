"""What model files compute at import time, evaluated statically (issue 10, item 1 and 3).

Each fixture under ``tests/fixtures/pypto/reader/`` reproduces one construct of real model
trees, written for dslc: config dataclasses, import-time mutation of another module, argv
parsed by hand, an implementation chosen by an environment string, a kernel bound through a
factory, a dynamic axis ranged by the harness's requests, views of one buffer. The reader
never imports or runs any of it (``test_pypto_reader.py`` checks that with a marker file).
"""

from __future__ import annotations

import textwrap

from pyptoutil import PYPTO_FIXTURES

from lowering.pypto_reader import read_pypto

READER = PYPTO_FIXTURES / "reader"
HEAD = "import pypto.language as pl\n"


def read(name: str, **overrides: int):
    return read_pypto(READER / name / "model.py", overrides=overrides or None)


def clean(result):
    assert [(d.code, d.message) for d in result.diagnostics] == []
    (g,) = result.graphs
    return g


def tasks(g):
    return [(t.name, str(t.grid), t.blocks) for t in g.tasks]


def test_dataclass_fields_properties_defaults_and_comprehensions():
    g = clean(read("dataclass_config"))
    assert {k: p.value for k, p in g.params.items()} == {"D": 4096, "HEAD_DIM": 128, "SPLIT": 4, "N_TILES": 4}
    assert tasks(g) == [("per_head", "(D // HEAD_DIM)", 32), ("tiles", "(N_TILES * SPLIT)", 16)]


def test_import_time_mutation_of_another_module_is_seen_by_later_imports():
    g = clean(read("module_mutation"))
    assert g.params["kernels.E"].value == 16  # config.ACTIVE replaced with experts * 2
    assert g.consts["ROWS"].value == 64  # config.ROUTED_TOKENS = config.TOKENS
    assert g.tensors["x"].dims == (1024, 32)
    assert tasks(g) == [("expert", "kernels.E", 16)]


def test_argv_parser_env_default_and_factory_bound_kernel():
    g = clean(read("argv_factory"))
    assert (str(g.consts["EP"].expr), g.consts["EP"].value) == ("_EP_DEFAULT", 4)
    assert tasks(g) == [("split_proj", "(EP * 2)", 8)]  # the branch the environment default selects


def test_set_on_a_constant_that_renames_a_parameter_sets_the_parameter():
    g = clean(read("argv_factory", EP=2))
    assert g.params["_EP_DEFAULT"].value == 2
    assert tasks(g) == [("split_proj", "(EP * 2)", 4)]


def test_dynamic_axis_ranges_over_the_harness_requests():
    g = clean(read("dynamic_axis"))
    t = g.params["T_DYN"]
    assert list(t.domain) == [16, 512] and t.value == 512  # B * S of both modes of __main__
    assert tasks(g) == [("norm_rows", "(T_DYN // T_TILE)", 32)]
    assert g.tensors["x"].dims == (512, 256)
    small = clean(read("dynamic_axis", T_DYN=16))
    assert tasks(small) == [("norm_rows", "(T_DYN // T_TILE)", 1)]


def test_views_of_one_buffer_share_its_bytes():
    g = clean(read("views"))
    assert g.tensors["flat"].view_of == "buf" and g.tensors["lower"].view_offset == 32 * 128 * 4
    assert [(e.src, e.dst, e.reason) for e in g.edges] == [
        ("fill_flat", "read_rows", "RAW buf (written as flat[0:8192])"),
        ("fill_flat", "read_lower", "RAW lower (written as flat[0:8192])"),
    ]


def _model(tmp_path, body: str, **files: str):
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    path = tmp_path / "model.py"
    path.write_text(HEAD + textwrap.dedent(body), encoding="utf-8")
    return read_pypto(path)


def test_one_d_tensor_loaded_as_a_row_tile_is_fitted_not_discarded(tmp_path):
    body = """
    D = 64

    @pl.jit
    def entry(g: pl.Tensor[[D], pl.FP32], y: pl.Out[pl.Tensor[[4, D], pl.FP32]]):
        with pl.spmd(4, name_hint="scale"):
            b = pl.tile.get_block_idx()
            row = pl.load(g, [0, 0], [1, D])
            y = pl.assemble(y, pl.add(row, g[0:D]), [b, 0])
        return y
    """
    g = clean(_model(tmp_path, body))
    (task,) = g.tasks
    assert sorted({(a.tensor, len(a.region)) for a in task.accesses}) == [("g", 1), ("y", 2)]


def test_a_reader_failure_on_one_statement_keeps_the_rest(tmp_path, monkeypatch):
    from lowering.pypto_reader import scopes

    real = scopes.TaskBuilder.scope_task

    def failing(self, stmt, *args, **kwargs):
        if stmt.lineno == 7:
            raise RuntimeError("boom")
        return real(self, stmt, *args, **kwargs)

    monkeypatch.setattr(scopes.TaskBuilder, "scope_task", failing)
    body = """
    @pl.jit
    def entry(x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
            y = pl.assemble(y, x[:, :], [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
            y = pl.assemble(y, x[:, :], [0, 0])
        return y
    """
    result = _model(tmp_path, body)
    (d,) = [d for d in result.diagnostics if d.code == "P004"]
    assert (d.span.line, d.span.col) == (7, 5) and "RuntimeError: boom" in d.message
    assert "Traceback" in dict(d.data)["traceback"]
    assert [t.name for t in result.graphs[0].tasks] == ["first"]


def test_module_level_raise_is_a_note_and_reading_goes_on(tmp_path):
    body = """
    import os
    MODE = os.environ.get("MODE", "bad")
    if MODE not in ("a", "b"):
        raise ValueError(f"MODE must be a or b, got {MODE!r}")
    N = 2

    @pl.jit
    def entry(y: pl.Out[pl.Tensor[[N, 4], pl.FP32]]):
        with pl.spmd(N, name_hint="fill"):
            y = pl.assemble(y, pl.full([1, 4], dtype=pl.FP32, value=0.0), [pl.tile.get_block_idx(), 0])
        return y
    """
    result = _model(tmp_path, body)
    (note,) = result.diagnostics
    assert (note.code, note.span.line) == ("P001", 5) and "raises ValueError" in note.message
    assert [(t.name, t.blocks) for t in result.graphs[0].tasks] == [("fill", 2)]


def test_host_helpers_loops_try_and_closures(tmp_path):
    body = """
    import math

    def tiles(n, tile=16):
        out = []
        i = 0
        while i < n:
            out.append(min(tile, n - i))
            i += tile
        return out

    def pick(options, default):
        try:
            return options["missing"]
        except KeyError:
            return default

    def scaled(k):
        def inner(x):
            return x * k
        return inner

    SIZES = tiles(40)
    BLOCKS = len(SIZES)
    LAST = SIZES[-1]
    WIDTH = pick({"a": 1}, 32)
    DOUBLE = scaled(2)(WIDTH)
    CEIL = math.ceil(40 / 16)

    @pl.jit
    def entry(y: pl.Out[pl.Tensor[[BLOCKS, DOUBLE], pl.FP32]]):
        with pl.spmd(BLOCKS * LAST // 8, name_hint="fill"):
            y = pl.assemble(y, pl.full([1, DOUBLE], dtype=pl.FP32, value=0.0), [pl.tile.get_block_idx(), 0])
        return y
    """
    g = clean(_model(tmp_path, body))
    assert {k: p.value for k, p in g.params.items()} == {"BLOCKS": 3, "LAST": 8, "WIDTH": 32, "CEIL": 3}
    assert (str(g.consts["DOUBLE"].expr), g.consts["DOUBLE"].value) == ("(WIDTH * 2)", 64)  # a closure's k
    assert [(t.name, t.blocks) for t in g.tasks] == [("fill", 3)]
