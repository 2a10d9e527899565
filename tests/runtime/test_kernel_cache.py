"""The kernel cache (``runtime.loader``): entries are sealed, and a damaged one is detected and
rendered again instead of being imported (or trusted) forever."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

import dsl
from runtime import loader

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "tests" / "fixtures" / "run" / "splitk_reduce.dsl"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_an_entry_ends_with_its_seal_and_has_an_ordinary_mode(cache):
    layer = dsl.load(LAYER)
    text = layer.module_path.read_text()
    assert layer.module_path.parent == cache
    assert text.splitlines()[-1].startswith(loader.CACHE_SEAL)
    assert stat.S_IMODE(layer.module_path.stat().st_mode) & 0o044  # not the 0600 of a temporary


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t[: len(t) // 2],  # truncated
        lambda t: t.replace("PROGRAM = Program(", "PROGRAM = None  # (", 1),  # edited
        lambda t: "garbage\x00\x01",  # overwritten
        lambda t: t.replace(loader.CACHE_SEAL, "# no seal "),  # seal lost
    ],
    ids=["truncated", "edited", "garbage", "unsealed"],
)
def test_a_damaged_entry_is_rendered_again(cache, damage):
    first = dsl.load(LAYER)
    good = first.module_path.read_text()
    first.module_path.write_text(damage(good))
    again = dsl.load(LAYER)
    assert again.module_path == first.module_path
    assert again.module_path.read_text() == good
    out = again.run(again.make_inputs(0))
    assert again.validate(again.make_inputs(0), out).passed


def test_a_cache_directory_that_cannot_be_written_is_e107(tmp_path, monkeypatch, capsys):
    from dsl.driver.cli import main

    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "file" / "cache"))
    assert main(["run", str(LAYER)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'file' / 'cache'}: E107 {tmp_path / 'file'} is a file, not a directory" in err
    assert "internal error" not in err


def test_an_edited_code_generator_is_never_served_from_the_cache(cache, monkeypatch):
    """Issue 15: the key covered source, parameters, version and templates, not the compiler's
    code, so an edit to the NumPy code generator kept serving the module the old one wrote."""
    from dsl.driver import api
    from lowering.codegen import common

    first = dsl.load(LAYER)
    rendered = []
    real_render, real = api.render_numpy, common.compiler_fingerprint()
    monkeypatch.setattr(api, "render_numpy", lambda *a: rendered.append(a) or real_render(*a))
    assert dsl.load(LAYER).module_path == first.module_path and rendered == []  # same compiler: cached
    monkeypatch.setattr(common, "compiler_fingerprint", lambda: "an edited compiler " + real)
    second = dsl.load(LAYER)
    assert second.module_path != first.module_path and len(rendered) == 1
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [first.module_path.name, second.module_path.name]
    )


def test_the_fingerprint_covers_every_file_that_generates_code(tmp_path, monkeypatch):
    from lowering.codegen import common

    for rel in ("dsl/frontend.py", "dsl/grammar.lark", "lowering/codegen/numpy/emit.py", "templates/x.j2"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("one\n")
    sources = (
        (tmp_path / "dsl", ("**/*.py", "**/*.lark")),
        (tmp_path / "lowering", ("**/*.py",)),
        (tmp_path / "templates", ("**/*",)),
    )
    monkeypatch.setattr(common, "GENERATOR_SOURCES", sources)

    def fingerprint() -> str:
        common.compiler_fingerprint.cache_clear()
        return common.compiler_fingerprint()

    seen = {fingerprint()}
    for rel in ("dsl/frontend.py", "dsl/grammar.lark", "lowering/codegen/numpy/emit.py", "templates/x.j2"):
        (tmp_path / rel).write_text("two\n")
        seen.add(fingerprint())
    (tmp_path / "lowering" / "codegen" / "new.py").write_text("")
    seen.add(fingerprint())
    assert len(seen) == 6
    common.compiler_fingerprint.cache_clear()


#: One file of each kind the real ``GENERATOR_SOURCES`` must cover, below the repository.
GENERATING = (
    "lowering/codegen/numpy/kernel.py",  # a target's code generator
    "lowering/passes/__init__.py",  # the lowering
    "lowering/codegen/ascendc/headers/acl/acl/acl.h",  # a header the AscendC target ships
    "dsl/grammar.lark",  # the language
    "dsl/frontend.py",
    "runtime/device.py",  # the device facts the lint and the AscendC target read
    "codegen_templates/numpy/layer.py.j2",  # templates
    "codegen_templates/ascendc/host.asc.j2",
)


def test_the_real_fingerprint_follows_an_edit_to_each_kind_of_generating_file(tmp_path, monkeypatch):
    """Issue 15: the test above swaps in its own list, so dropping ``lowering/`` from the real
    one passed. Here the real list is kept and only moved onto a copy of the files it names."""
    from lowering.codegen import common

    for rel in GENERATING:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((ROOT / rel).read_bytes())
    moved = tuple(
        (tmp_path / root.relative_to(ROOT), patterns) for root, patterns in common.GENERATOR_SOURCES
    )
    monkeypatch.setattr(common, "GENERATOR_SOURCES", moved)

    def fingerprint() -> str:
        common.compiler_fingerprint.cache_clear()
        return common.compiler_fingerprint()

    try:
        before = fingerprint()
        unchanged = []
        for rel in GENERATING:
            with (tmp_path / rel).open("a") as f:
                f.write("\n")
            after = fingerprint()
            if after == before:
                unchanged.append(rel)
            before = after
        assert unchanged == [], "edits the cache key does not see"
    finally:
        common.compiler_fingerprint.cache_clear()


def test_the_fingerprint_covers_every_module_the_front_end_and_the_targets_import():
    """What ``dsl.frontend`` and the targets' ``emit`` modules import (``tests/test_architecture``'s
    import graph, transitively) decides what a generated module says, so each is in the key."""
    from test_architecture import import_graph

    from lowering.codegen import common

    graph = import_graph(ROOT)
    todo = ["dsl.frontend", *(f"lowering.codegen.{t}.emit" for t in ("numpy", "pypto", "ascendc"))]
    reached: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(graph[name])
    assert {"runtime.device", "lowering.codegen.numpy.kernel", "lowering.codegen.ascendc.kernel"} <= reached
    covered = {path.relative_to(ROOT) for _, path in common.generator_files()}
    missing = []
    for name in sorted(reached):
        path = Path(*name.split("."))
        if (path / "__init__.py") not in covered and path.with_suffix(".py") not in covered:
            missing.append(name)
    assert missing == [], "imported by the code generators but not in GENERATOR_SOURCES"


def test_the_suite_runs_on_a_cache_of_its_own():
    """Issue 15: module-scoped ``dsl.load`` fixtures ran before the fixture that isolated the
    cache (and one test module had none), so a warm shared cache hid a mutation. ``conftest``
    points DSLC_CACHE_DIR at a directory made for this session before anything is collected."""
    import conftest

    assert loader.cache_dir() == conftest.SESSION_CACHE
    assert conftest.SESSION_CACHE.name.startswith("dslc-test-cache-")
    assert loader.cache_dir() not in (conftest.OUTSIDE_CACHE, Path.home() / ".cache" / "dslc")
