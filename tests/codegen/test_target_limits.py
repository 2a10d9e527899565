"""What a target cannot express is a located E110 naming the limit, and no target ever hands
over Python that does not compile (``lowering.codegen.python_text.compile_python``)."""

from __future__ import annotations

import pytest

from dsl.driver.cli import main
from dsl.frontend import compile_text
from lowering.codegen import python_text
from lowering.codegen.common import GeneratedCodeError, TargetLimit
from lowering.codegen.numpy.emit import render_numpy
from lowering.codegen.pypto.emit import render_pypto


def nested(depth: int) -> str:
    loops = "".join(f"for i{k} in range(1) {{ " for k in range(depth))
    return (
        "layer nested(D = 16) {\n"
        "  input  x: f32[16, D]\n"
        "  output y: f32[16, D]\n"
        "  task t on aiv {\n"
        f"    {loops}y[0, 0] = 1.0 {'} ' * depth}\n"
        "  }\n"
        "}\n"
    )


def column_of_loop(source: str, k: int) -> int:
    line = source.splitlines()[4]
    return line.index(f"for i{k} ") + 1


@pytest.mark.parametrize(
    ("render", "deepest"), [(render_numpy, 20), (render_pypto, 19)], ids=["numpy", "pypto"]
)
def test_the_deepest_nesting_a_target_takes_compiles_and_one_more_is_refused(render, deepest):
    (ok,) = compile_text(nested(deepest), "n.dsl")
    compile(render(ok, "h", "v"), "m.py", "exec")  # the limit itself still compiles
    source = nested(deepest + 1)
    (deep,) = compile_text(source, "n.dsl")
    with pytest.raises(TargetLimit) as err:
        render(deep, "h", "v")
    assert err.value.span.line == 5 and err.value.span.col == column_of_loop(source, deepest)
    assert "CPython compiles at most 20 in one function" in str(err.value)


@pytest.mark.parametrize(("target", "depth"), [("numpy", 21), ("pypto", 20)])
def test_dslc_compile_reports_e110_at_the_loop_and_writes_nothing(tmp_path, capsys, target, depth):
    """nested_loops_20.dsl (pypto: exit 0 with a module that did not parse) and
    nested_loops_21.dsl (numpy: an internal SyntaxError)."""
    source = nested(depth)
    path = tmp_path / "n.dsl"
    path.write_text(source)
    code = main(["compile", str(path), "--target", target, "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    col = column_of_loop(source, depth - 1)
    assert code == 2
    assert out.startswith(f"{path}:5:{col}: E110 layer nested: the {target} target cannot nest this deep")
    assert "internal error" not in out
    assert not (tmp_path / "out").exists()


def test_dslc_run_refuses_what_the_numpy_target_cannot_nest(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "n.dsl"
    path.write_text(nested(21))
    assert main(["run", str(path)]) == 2
    assert (
        ": E110 layer nested: the numpy target cannot nest this deep: 21 nested loop(s)"
        in capsys.readouterr().out
    )
    assert not list((tmp_path / "cache").glob("*.py"))


def test_generated_python_that_does_not_compile_is_never_returned(monkeypatch):
    """The last guard: were a template to emit broken Python, rendering fails (a dslc bug)."""
    (graph,) = compile_text(nested(1), "n.dsl")
    real = python_text.compile_python

    def broken(text, filename, target):
        return real(text + "\ndef (:\n", filename, target)

    for module in ("lowering.codegen.numpy.emit", "lowering.codegen.pypto.emit"):
        monkeypatch.setattr(f"{module}.compile_python", broken)
    with pytest.raises(GeneratedCodeError, match="the numpy target generated Python that does not compile"):
        render_numpy(graph, "h", "v")
    with pytest.raises(GeneratedCodeError, match="the pypto target generated Python that does not compile"):
        render_pypto(graph, "h", "v")


def test_a_generated_code_error_is_an_internal_error_that_says_how_to_report_it(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "n.dsl"
    path.write_text(nested(1))

    def broken(text, filename, target):
        raise GeneratedCodeError(f"the {target} target generated Python that does not compile")

    monkeypatch.setattr("lowering.codegen.numpy.emit.compile_python", broken)
    assert main(["compile", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "dslc: internal error: GeneratedCodeError: the numpy target generated Python" in err
    assert "Please report it to the dslc maintainers" in err


def test_what_pypto_cannot_express_is_e110_at_the_task(tmp_path, capsys):
    path = tmp_path / "core.dsl"
    path.write_text(
        "layer s(N = 16) {\n  input x: f32[N, 16]\n  output y: f32[N, 16]\n"
        "  task t on aic {\n    y[:, :] = x[:, :]\n  }\n}\n"
    )
    assert main(["compile", str(path), "--target", "pypto", "-o", str(tmp_path / "out")]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"{path}:4:3: E110 layer s: task t runs on aic but its ops make a PyPTO kernel aiv")
    assert not (tmp_path / "out").exists()
