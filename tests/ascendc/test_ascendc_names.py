"""Name mangling (injective, no reserved or injectable text) and byte-identical output."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys

from ascutil import ROOT, emit, kernels
from hypothesis import given
from hypothesis import strategies as st

from lowering.codegen.ascendc import names
from lowering.codegen.ascendc.host import c_string
from lowering.codegen.ascendc.kernel import comment_text

IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def test_the_three_names_of_the_issue_stay_apart():
    spelled = {n: names.local(n) for n in ("stage.tmp", "stage_tmp", "stage__tmp")}
    assert spelled == {"stage.tmp": "v_stagezdtmp", "stage_tmp": "v_stage_tmp", "stage__tmp": "v_stage_zutmp"}


@given(st.text(min_size=1, max_size=40))
def test_encoding_is_injective_and_always_a_plain_identifier(name):
    code = names.encode(name)
    assert names.decode(code) == name
    for spelled in (names.tensor(name), names.param(name), names.local(name), names.scalar(name)):
        assert IDENT.match(spelled) and "__" not in spelled


@given(st.text(min_size=1, max_size=20), st.text(min_size=1, max_size=20))
def test_two_names_never_share_a_spelling(a, b):
    if a != b:
        assert names.local(a) != names.local(b)
        assert names.kernel("layer", 0, a) != names.kernel("layer", 0, b)
    assert names.tensor(a) != names.local(b) != names.scalar(a)


def _read_c_string(literal: str) -> bytes:
    """The bytes a C++ compiler reads from ``literal`` (the escapes c_string writes)."""
    body, out, i = literal[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == "\\":
            if body[i + 1] in '"\\':
                out.append(ord(body[i + 1]))
                i += 2
            else:
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
        else:
            assert body[i] not in '"?\n', f"unescaped {body[i]!r}"
            out.append(ord(body[i]))
            i += 1
    return bytes(out)


@given(st.text(max_size=40))
def test_text_in_comments_and_strings_cannot_end_them(text):
    assert "\n" not in comment_text(text) and "*/" not in comment_text(text)
    literal = c_string(text)
    assert literal.startswith('"') and literal.endswith('"')
    assert _read_c_string(literal) == text.encode("utf-8")


def test_local_names_that_look_alike_become_distinct_cxx_variables():
    text = """
    layer clash(T = 8) {
      input n: i32[1, 4]
      output y: i32[1, 4]
      task t on aiv {
        let z = read(n[0, 0])
        let zz = read(n[0, 1])
        let z_ = read(n[0, 2])
        let _z = read(n[0, 3])
        y[0, 0] = z + zz + z_ + _z
      }
    }
    """
    code = kernels(emit(text))
    for spelled in ("v_zz =", "v_zzzz =", "v_zz_ =", "v_zuzz ="):
        assert spelled in code
    assert "v_zz + v_zzzz" in code.replace("(", "").replace(")", "")


def _digest_in_subprocess(seed: str) -> str:
    script = (
        "import sys, hashlib; sys.path.insert(0, 'tests/ascendc')\n"
        "from ascutil import SOURCES, key\n"
        "from dsl.frontend import compile_file\n"
        "from lowering.codegen.ascendc.emit import render_project\n"
        "h = hashlib.sha256()\n"
        "for path in SOURCES:\n"
        "    if path.stat().st_size > 20000: continue\n"
        "    for g in compile_file(path):\n"
        "        try: files = render_project(g, 'h', 'v')\n"
        "        except Exception as e: h.update(str(e).encode()); continue\n"
        "        for name in sorted(files): h.update(name.encode()); h.update(files[name].encode())\n"
        "print(h.hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_output_is_byte_identical_across_runs_and_hash_seeds():
    first, second = _digest_in_subprocess("1"), _digest_in_subprocess("2")
    assert first == second and len(first) == 64
    assert hashlib.sha256(b"").hexdigest() != first
