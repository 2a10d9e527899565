"""Generated AscendC is right or refused: every project passes the toolchain check before a file
is written (issue 14). The lexical check runs everywhere; the g++ check against asc-devkit
runs where ``DSLC_ASC_DEVKIT`` names the headers (the test skips elsewhere)."""

from __future__ import annotations

import io
import tarfile

import pytest
from asctoolchain import find_devkit

from dsl.driver.cli import main
from lowering.codegen.ascendc import emit, toolchain

LAYER = """\
layer u(T = 8, D = 64) {
  input  x: f32[T, D]
  output y: f32[T, D]
  task t on aiv { y[:, :] = x[:, :] * 2.0 }
}
"""


def test_lexical_problems_are_found_outside_comments_and_literals():
    good = "int f() { // a ) in a comment\n  const char* s = \"}{\"; /* ( */ return '('; }\n"
    assert toolchain.lexical_problems("k.h", good) == []
    assert toolchain.lexical_problems("k.h", "void f() {\n  g(1;\n}\n") == [
        "k.h:3: '}' closes nothing",
        "k.h:1: '{' is never closed",
        "k.h:2: '(' is never closed",
    ]
    assert toolchain.lexical_problems("k.h", 'auto s = "open;\n') == ["k.h:1: unterminated string literal"]
    assert toolchain.lexical_problems("k.h", "/* never closed\n") == ["k.h:1: unterminated comment"]
    assert toolchain.lexical_problems("k.h", "int a = 1;\n\u00e9\n") == [
        "k.h:2: character '\u00e9' outside printable ASCII"
    ]


def _compile(tmp_path, capsys) -> tuple[int, str, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    src = tmp_path / "u.dsl"
    src.write_text(LAYER, encoding="utf-8")
    code = main(["compile", str(src), "--target", "ascendc", "-o", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    return code, out, err


def _broken(monkeypatch, old: str, new: str) -> None:
    real = emit.render_project

    def render(graph, source_hash, version):
        files = real(graph, source_hash, version)
        name = next(n for n in files if n.endswith("_kernels.h"))
        assert old in files[name], files[name]
        return {**files, name: files[name].replace(old, new, 1)}

    monkeypatch.setattr(emit, "render_project", render)


def test_a_project_that_is_not_well_formed_is_never_written(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(toolchain.ENV, raising=False)
    code, out, _ = _compile(tmp_path, capsys)
    assert code == 0 and "checked: lexical check only (DSLC_ASC_DEVKIT is not set)" in out
    _broken(monkeypatch, "{", "")
    out_dir = tmp_path / "out" / "u"
    before = {p.name: p.read_text() for p in out_dir.iterdir()}
    code, out, err = _compile(tmp_path, capsys)
    assert code == 2 and out == ""
    assert (
        "dslc: internal error: GeneratedCodeError: the ascendc target generated C++ that is not well" in err
    )
    assert "is never closed" in err or "closes nothing" in err
    assert "This is a bug in dslc" in err
    assert {p.name: p.read_text() for p in out_dir.iterdir()} == before  # the old project is intact


def test_a_devkit_that_cannot_be_used_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(toolchain.ENV, str(tmp_path / "nothing-here"))
    code, out, err = _compile(tmp_path, capsys)
    assert code == 2 and out == "" and not (tmp_path / "out").exists()
    assert err.startswith(
        f"<command line>: E104 DSLC_ASC_DEVKIT: DSLC_ASC_DEVKIT={tmp_path / 'nothing-here'} holds neither"
    ), err


def _tar_of(path, members: dict[str, str]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize(
    "archive, reason",
    [
        ({}, "which cannot be unpacked"),  # an empty file, not a tar
        ({"README.md": "x"}, "which has no asc-devkit/include/kernel_operator.h"),
        ({"asc-devkit/include/kernel_operator.h": ""}, "has no impl/adv_api/cmake/scripts/"),
        (
            {
                "asc-devkit/include/kernel_operator.h": "",
                "asc-devkit/impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py": "raise SystemExit('no')",
            },
            "cannot generate kernel_tiling.h (gen_kernel_tiling_data_def.py: no)",
        ),
    ],
)
def test_a_devkit_archive_that_cannot_be_used_is_a_usage_error(
    archive, reason, tmp_path, capsys, monkeypatch
):
    kit = tmp_path / "kit"
    kit.mkdir()
    if archive:
        _tar_of(kit / "asc-devkit-0.tar.gz", archive)
    else:
        (kit / "asc-devkit-0.tar.gz").write_bytes(b"")
    monkeypatch.setenv(toolchain.ENV, str(kit))
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = _compile(tmp_path, capsys)
    assert code == 2 and out == "" and not (tmp_path / "out").exists()
    assert err.startswith(f"<command line>: E104 DSLC_ASC_DEVKIT: DSLC_ASC_DEVKIT={kit} "), err
    assert reason in err.splitlines()[0] and "internal error" not in err
    assert not list((tmp_path / "cache" / "asc-devkit").glob("unpack-*"))  # no half-unpacked tree left


@pytest.fixture
def devkit():
    found, why = find_devkit()
    if found is None:
        pytest.skip(f"no AscendC headers: {why}")
    return found


def test_with_the_headers_a_project_that_does_not_type_check_is_never_written(
    devkit, tmp_path, capsys, monkeypatch
):
    code, out, _ = _compile(tmp_path, capsys)
    assert code == 0 and "checked: g++ -fsyntax-only against asc-devkit" in out
    _broken(monkeypatch, "AscendC::Muls(", "AscendC::Mulss(")  # lexically fine, not the API
    code, out, err = _compile(tmp_path / "again", capsys)
    assert code == 2 and out == "" and not (tmp_path / "again" / "out").exists()
    assert "generated C++ that does not compile against asc-devkit" in err and "Mulss" in err
