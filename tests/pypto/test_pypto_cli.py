"""``dslc check`` on PyPTO files and on directories mixing .dsl and .py; --strict; explain."""

from __future__ import annotations

import json
import shutil

from pyptoutil import FIXTURES, PYPTO_FIXTURES

from dsl.driver.cli import main

DYNAMIC = """\
import pypto.language as pl


@pl.jit
def entry(x: pl.Tensor[[8, 8], pl.FP32], y: pl.Out[pl.Tensor[[8, 8], pl.FP32]], n: pl.Scalar[pl.INT32]):
    for i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="step"):
            y = pl.assemble(y, x[:, :], [0, 0])
    return y
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_check_a_pypto_file_reports_rule_findings_at_py_lines(capsys):
    rc, out, err = run(capsys, "check", str(PYPTO_FIXTURES / "seed" / "dispatch_pre.py"), "--no-color")
    assert rc == 1
    assert "dispatch_pre.py:86:5: D101 dispatch_wait blocks on data_arrived" in out
    assert "   86 |     with pl.at(" in out
    assert err.startswith("1 file(s) checked: 1 error(s)")


def test_directories_mix_dsl_and_pypto_files_and_skip_other_python(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURES / "rules" / "D101" / "bad.dsl", tmp_path / "bad.dsl")
    shutil.copy(PYPTO_FIXTURES / "seed" / "hc_pre_pre.py", tmp_path / "hc_pre_pre.py")
    shutil.copy(PYPTO_FIXTURES / "seed" / "config.py", tmp_path / "config.py")
    (tmp_path / "golden_helpers.py").write_text("import numpy as np\n", encoding="utf-8")
    rc, out, err = run(capsys, "check", ".", "--format", "json")
    assert rc == 1
    found = [(f["location"]["file"], f["code"]) for f in json.loads(out)]
    assert ("bad.dsl", "D101") in found and ("hc_pre_pre.py", "N201") in found
    assert not any(f.endswith(("config.py", "golden_helpers.py")) for f, _ in found)
    assert err.startswith("2 file(s) checked")


def test_strict_turns_not_modelled_notes_into_errors(tmp_path, capsys):
    path = tmp_path / "dyn.py"
    path.write_text(DYNAMIC, encoding="utf-8")
    rc, out, _ = run(capsys, "check", str(path), "--no-color")
    assert rc == 0 and "P001 note: not modelled: an orchestration loop" in out
    rc, out, _ = run(capsys, "check", str(path), "--no-color", "--strict")
    assert rc == 1 and "P001 not modelled: an orchestration loop" in out


def test_reader_codes_are_selectable_explainable_and_suppressible(tmp_path, capsys):
    path = tmp_path / "dyn.py"
    path.write_text(DYNAMIC, encoding="utf-8")
    rc, out, _ = run(capsys, "check", str(path), "--ignore", "P001", "--strict")
    assert rc == 0 and "P001" not in out
    rc, out, _ = run(capsys, "explain", "P001")
    assert rc == 0 and out.startswith("P001: a PyPTO construct the reader does not model")
    suppressed = DYNAMIC.replace(
        "    for i in pl.range(n):",
        "    for i in pl.range(n):  # dslc: ignore[P001] n is at most 4 in practice",
    )
    path.write_text(suppressed, encoding="utf-8")
    rc, out, _ = run(capsys, "check", str(path), "--strict")
    assert rc == 0 and out == ""


def test_unreadable_python_is_an_input_error(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text("import pypto.language as pl\ndef f(:\n", encoding="utf-8")
    rc, out, _ = run(capsys, "check", str(path), "--no-color")
    assert rc == 2
    assert "broken.py:2:7: P003 Python syntax error" in out
    other = tmp_path / "other.py"
    other.write_text("X = 1\n", encoding="utf-8")
    rc, out, _ = run(capsys, "check", str(other), "--no-color")
    assert rc == 0 and "P002 note: does not import pypto.language" in out


def test_graph_prints_the_graph_of_a_pypto_file(capsys):
    rc, out, _ = run(capsys, "graph", str(PYPTO_FIXTURES / "seed" / "combine_post.py"))
    assert rc == 0
    graph = json.loads(out)
    assert graph["layer"] == "moe_combine" and graph["ranks"] == 16
    assert {"src": "combine", "dst": "combine_wait", "kind": "explicit", "reason": "after"} in graph["edges"]


def test_set_applies_to_pypto_constants(capsys):
    path = PYPTO_FIXTURES / "seed" / "indexer_topk_pre.py"
    rc, out, _ = run(capsys, "graph", str(path), "--set", "T=2048")
    assert rc == 0
    tasks = {t["name"]: t for t in json.loads(out)["tasks"]}
    assert tasks["prefill_idx_topk"]["blocks"] == 512
    rc, out, _ = run(capsys, "check", str(path), "--set", "NOPE=1", "--no-color")
    assert rc == 2 and "P005" in out


def test_compile_then_check_is_the_same_verdict_as_the_layer(tmp_path, capsys):
    layer = FIXTURES / "rules" / "D101" / "bad.dsl"
    assert main(["compile", str(layer), "--target", "pypto", "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    rc_dsl, out_dsl, _ = run(capsys, "check", str(layer), "--format", "json")
    rc_py, out_py, _ = run(capsys, "check", str(tmp_path / "moe_dispatch.py"), "--format", "json")
    assert rc_dsl == rc_py == 1
    codes = [f["code"] for f in json.loads(out_dsl)]
    assert "D101" in codes and [f["code"] for f in json.loads(out_py)] == codes
