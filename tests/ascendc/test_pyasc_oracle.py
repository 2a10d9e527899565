"""pyasc as an oracle of call sequences: dslc's kernel for each tile op against the AscendC
that Huawei's own Python binding (pyasc) translates the same tile program into.

``pyasc_kernels.py`` states each case in ``asc.language`` (keyword arguments: pyasc decides
the C++ argument order, template arguments and struct layouts) and runs in the interpreter
named by ``DSLC_PYASC_PYTHON`` (pyasc pins numpy<2, so it lives in its own environment;
``.ci/run`` makes one). Both texts are reduced to the same normal form -- one record per API
call: its name, the template arguments a caller must spell out, its arguments with
variables numbered by first use, constants and parameter structs inlined, casts and the
``AscendC::`` prefix dropped, numbers in one spelling -- and must be equal.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
from ascutil import emit, kernels

HERE = Path(__file__).resolve().parent

CASES = {
    "exp": """layer o(R = 8) {
  input x: f32[R, 64]
  output z: f32[R, 64]
  task t on aiv { z[:, :] = exp(x[:, :]) }
}""",
    "pad_div": """layer o(R = 8) {
  input x: f32[R, 128]
  output w: f32[R, 4]
  task t on aiv { w[:, :] = x[:, 4 : 8] / 3.0 }
}""",
    "scalar_ops": """layer o(R = 8) {
  input x: f32[R, 64]
  input y: f32[R, 64]
  output z: f32[R, 64]
  task t on aiv { z[:, :] = maximum(x[:, :] + y[:, :], 0.0) * 2.0 - 1.0 }
}""",
    "row_sum": """layer o(R = 1) {
  input x: f32[1, 64]
  output s: f32[1, 1]
  task t on aiv { s[:, :] = row_sum(x[:, :]) }
}""",
    "row_max": """layer o(R = 1) {
  input x: f32[1, 64]
  output s: f32[1, 1]
  task t on aiv { s[:, :] = row_max(x[:, :]) }
}""",
    "row_expand": """layer o(R = 1) {
  input x: f32[1, 64]
  input v: f32[1, 1]
  output z: f32[1, 64]
  task t on aiv { z[:, :] = row_expand_mul(x[:, :], v[:, :]) }
}""",
    "cast": """layer o(R = 8) {
  input x: f32[R, 64]
  output y: f16[R, 64]
  task t on aiv { y[:, :] = cast(x[:, :], f16) }
}""",
    "atomic_copy": """layer o(R = 8) {
  input x: f32[R, 64]
  output a: f32[R, 64]
  task t on aiv {
    let e = exp(x[:, :])
    a[:, :] += e atomic
  }
}""",
    "sort": """layer o(W = 256, K = 16) {
  input score: f32[1, W]
  output idx: i32[1, K]
  output val: f32[1, K]
  task t on aiv {
    let best = topk(score[0 : 1, :], K, valid = 200)
    val[0 : 1, :] = even_lanes(best)
    idx[0 : 1, :] = odd_lanes(best)
  }
}""",
    "notify_wait": """layer o(EP = 2) {
  ranks EP
  scalar epoch: i32
  signal arrived: i32[EP]
  task n on aiv { notify arrived[1] @ 1 += 1 }
  task w on aiv after n { wait arrived[0] >= epoch }
}""",
    "matmul": """layer o(K = 64) {
  input x: f32[16, K]
  input w: f32[16, K]
  output y: f32[16, 16]
  task t on aic { y[:, :] = matmul(x[:, :], w[:, :], b_trans) }
}""",
    "unary": """layer o(R = 8) {
  input x: f32[R, 64]
  output z: f32[R, 64]
  task t on aiv { z[:, :] = relu(rsqrt(sqrt(abs(log(recip(x[:, :])))))) }
}""",
    "binary": """layer o(R = 8) {
  input x: f32[R, 64]
  input y: f32[R, 64]
  output z: f32[R, 64]
  task t on aiv { z[:, :] = minimum(maximum(x[:, :] * y[:, :], x[:, :]) - y[:, :], 2.0) }
}""",
    "gather": """layer o(W = 64) {
  input x: f32[1, W]
  input i: i32[1, 16]
  output z: f32[1, 16]
  task t on aiv { z[:, :] = gather(x[:, :], i[:, :]) }
}""",
    "logic": """layer o(R = 1) {
  input x: f32[1, 64]
  input y: f32[1, 64]
  output z: f32[1, 64]
  task t on aiv { z[:, :] = select(x[:, :] < y[:, :] and not (x[:, :] == 0.0), x[:, :], 0.0) }
}""",
    "int_ops": """layer o(R = 1) {
  input c: i32[1, 64]
  output z: i32[1, 64]
  task t on aiv { z[:, :] = select(c[:, :] >= 0, c[:, :] / 16 + c[:, :] % 16, -1) }
}""",
    "strided": """layer o(R = 8) {
  input x: f32[R, 64]
  output y: f16[R, 64]
  task t on aiv { y[:, 1 : 64 : 2] = cast(x[:, 0 : 64 : 2], f16) }
}""",
    "matmul_kn": """layer o(K = 64) {
  input x: i8[16, K]
  input w: i8[K, 32]
  output y: i32[16, 32]
  task t on aic { y[:, :] = matmul(x[:, :], w[:, :]) }
}""",
    "mix": """layer o(R = 16) {
  input x: f32[R, 64]
  input w: f32[16, 64]
  output z: f32[R, 16]
  task t on mix {
    let p = matmul(x[:, :], w[:, :], b_trans)
    z[:, :] = exp(p)
  }
}""",
}
#: The reference kernels run one block straight through: dslc's block-indexed workspace slot
#: (``ws[((block * 16) * 16)]``) is, for block 0, the workspace base the reference uses.
BLOCK0 = {"mix": (re.compile(r"\[\(\(block \* \d+\) \* \d+\)\]"), "")}
#: Calls of dslc's kernel that pyasc has no binding for, dropped before comparing.
NO_BINDING = {"sort": {"CreateVecIndex"}}

#: Calls whose template arguments cannot be deduced from the arguments (kept in the record).
_EXPLICIT = {
    "SetAtomicAdd", "SetFlag", "WaitFlag", "PipeBarrier", "DataCacheCleanAndInvalid", "AllocTensor",
    "DeQue", "GetWithOffset", "ReinterpretCast", "SyncAll", "CrossCoreSetFlag", "CrossCoreWaitFlag",
    "FetchEventID",
}  # fmt: skip
#: ``pipe.FetchEventID(HardEvent::K)`` (dslc, the asc-devkit idiom) and ``pipe.FetchEventID<HardEvent::K>()``
#: (pyasc): one API, the event as a run-time or a template argument.
_FETCH = re.compile(
    r"^(?:event_t|u?int\d+_t) (\w+) = (?:static_cast<event_t>\()?(\w+)\.FetchEventID(?:<([\w:]+)>\(\)|\(([\w:]+)\))\)?;$"
)
_SKIP = ("InitBuffer", "SetGlobalBuffer", "set_ffts_base_addr", "KERNEL_TASK_TYPE_DEFAULT")
#: Constructors with trailing parameters that the short form leaves at these values (headers:
#: kernel_struct_fixpipe.h FixpipeParamsV220's 5- and 12-argument constructors).
_DEFAULTS = {
    "FixpipeParamsV220": ["0", "0", "1", "0", "0", "0", "0"],  # quantPre NoQuant .. isChannelSplit
    "LoadData2dTransposeParams": ["0"],  # addrMode (kernel_struct_mm.h: 0 by default)
}
_STRUCT = re.compile(r"^(?:AscendC::)?(\w+(?:<[^;{}()]*>)?) (\w+)\s*[{(](.*)[})];$")
_ALIAS = re.compile(r"^AscendC::(?:LocalTensor|GlobalTensor)<[^>]*> (\w+) = (\w+)\[(\w+)\];$")
_CONST = re.compile(r"^constexpr [\w:<> ]+? (\w+) = (.+);$")
_ARRAY = re.compile(r"^u?int\d+_t (\w+)\[\d+\](?: = \{(.*)\})?;$")
_ELEMENT = re.compile(r"^(\w+)\[(\w+)\] = (\w+);$")
_CALL = re.compile(
    r"^(?:(?:const )?(?:AscendC::)?[\w:<>, ]+? )?(?:(\w+) = )?(?:(\w+)\.)?(?:AscendC::)?(\w+)(<.*?>)?\((.*)\);(?:\s*//.*)?$"
)


def _split(args: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in args:
        if ch in "([{<" and not (ch == "<" and cur.rstrip().endswith(("<", " "))):
            depth += 1
        elif ch in ")]}>" and depth:
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() else out


class Normaliser:
    """Reads one kernel text into call records; see the module doc."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {"EVENT_ID0": "0", "true": "1", "false": "0"}
        self.version: dict[str, int] = {}
        self.numbered: dict[str, str] = {}
        self.records: list[str] = []
        self.casts: dict[str, str | None] = {}  # "ReinterpretCast<T>(X)" -> its first result

    def name(self, var: str, define: bool = False) -> str:
        if define:
            self.version[var] = self.version.get(var, 0) + 1
        key = f"{var}#{self.version.get(var, 0)}"
        if key not in self.numbered:
            self.numbered[key] = f"X{len(self.numbered)}"
        return self.numbered[key]

    def arg(self, text: str) -> str:
        text = text.strip()
        while m := re.fullmatch(r"static_cast<[^()]*>\((.*)\)", text) or re.fullmatch(
            r"\((?:float|half|bool|u?int\d+_t)\)(.*)", text
        ):
            text = m.group(1).strip()
        text = text.replace("AscendC::", "").replace("QuantMode_t::", "")
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        if text in self.values:
            return self.values[text]
        if m := re.fullmatch(r"(\w+)\[(.+)\]", text):
            return f"{self.arg(m.group(1))}[{self.arg(m.group(2))}]"
        if re.fullmatch(r"[\d\s*+()-]*\d[\d\s*+()-]*", text) and not re.fullmatch(r"[-+]?\d+", text):
            return str(eval(text))  # index arithmetic of an unrolled row loop: digits and + - * only
        if re.fullmatch(r"0b[01]+", text):
            return str(int(text, 2))
        if re.fullmatch(r"[-+]?(\d+\.?\d*(e[-+]?\d+)?|\.\d+)f?", text, re.I):
            value = float(text.rstrip("fF"))
            return str(int(value)) if value.is_integer() else repr(value)
        if text in ("-__builtin_huge_valf()", "-__builtin_inff()", "-INFINITY", "-inf"):
            return "-inf"
        if m := re.fullmatch(r"([A-Z]\w*(?:<[^{}]*>)?)\{(.*)\}", text):
            return self.struct(m.group(1), m.group(2))
        if "::" in text or re.fullmatch(r"PIPE_\w+", text):
            return text.rsplit("::", 1)[-1]
        if re.fullmatch(r"[A-Za-z_]\w*", text):
            return self.name(text)
        return text

    def struct(self, kind: str, args: str) -> str:
        kind = kind.replace("AscendC::", "")
        values = [self.arg(a) for a in _split(args)]
        base = kind.split("<")[0]
        if base in _DEFAULTS and len(values) == 5:
            values = values + _DEFAULTS[base]
        return f"{kind}{{{', '.join(values)}}}"

    def read(self, text: str, drop: set[str]) -> list[str]:
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith(
                ("//", "#", "extern", "{", "}", "for ", "while", "if ", "break", "return")
            ):
                continue
            if (
                any(s in line for s in _SKIP)
                or re.match(r"^(AscendC::)?(TPipe|TQue|TQueBind|TBuf|GlobalTensor)", line)
                and "=" not in line
            ):
                continue
            if m := _FETCH.match(line):
                kind = (m.group(3) or m.group(4)).replace("AscendC::", "")
                self.records.append(
                    f"{self.name(m.group(1), define=True)} = FetchEventID<{kind}>({self.name(m.group(2))})"
                )
            elif m := _CONST.match(line):
                self.values[m.group(1)] = self.arg(m.group(2))
            elif m := _ALIAS.match(line):
                self.values[m.group(1)] = f"{self.arg(m.group(2))}[{self.arg(m.group(3))}]"
            elif m := _ARRAY.match(line):
                items = [self.arg(a) for a in _split(m.group(2) or "")]
                self.values[m.group(1)] = "[" + ", ".join(items) + "]"
                self.arrays = getattr(self, "arrays", {})
                self.arrays[m.group(1)] = items
            elif (m := _ELEMENT.match(line)) and m.group(1) in getattr(self, "arrays", {}):
                items = self.arrays[m.group(1)]
                items.append(self.arg(m.group(3)))
                self.values[m.group(1)] = "[" + ", ".join(items) + "]"
            elif re.match(r"^(u?int64_t \w+( = 0)?|bool \w+ = \w+|\w+ = (true|false));$", line):
                continue  # a scalar the API writes (GatherMask's count) or dslc's accumulator flag
            elif (m := _STRUCT.match(line)) and not line.startswith(("AscendC::LocalTensor", "float ")):
                self.values[m.group(2)] = self.struct(m.group(1), m.group(3))
            elif m := _CALL.match(line):
                result, receiver, fn, targs, args = m.groups()
                if fn in drop:
                    continue
                targs = (targs or "").replace("AscendC::", "") if fn in _EXPLICIT else ""
                targs = re.sub(r"\b0x([0-9a-fA-F]+)\b", lambda h: str(int(h.group(1), 16)), targs)
                parts = ([self.name(receiver)] if receiver else []) + [self.arg(a) for a in _split(args)]
                record = f"{fn}{targs}({', '.join(parts)})"
                if fn == "ReinterpretCast" and result:
                    # pyasc's passes merge identical casts of one tensor (CSE); so does the normal form
                    seen = self.casts.setdefault(record, None)
                    if seen is not None:
                        self.values[result] = seen
                        continue
                    self.casts[record] = self.name(result, define=True)
                    self.records.append(f"{self.casts[record]} = {record}")
                    continue
                if result:
                    record = f"{self.name(result, define=True)} = {record}"
                self.records.append(record)
            else:
                raise AssertionError(f"unparsed line: {line}")
        return self.records


_ROW_LOOP = re.compile(r"^( *)for \(int32_t (r\d+) = (\d+); \2 < (\d+); \+\+\2\) \{$")


def unroll_row_loops(text: str) -> str:
    """dslc's per-row loops (``for (int32_t r6 = 0; r6 < 1; ++r6) { ... }``), unrolled with the
    index substituted: pyasc unrolls a Python ``range`` of constant trip count itself."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _ROW_LOOP.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent, var, lo, hi = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        end = next(j for j in range(i + 1, len(lines)) if lines[j] == indent + "}")
        body = lines[i + 1 : end]
        for k in range(lo, hi):
            out.extend(re.sub(rf"\b{var}\b", str(k), line) for line in body)
        i = end + 1
    return "\n".join(out)


def normal(text: str, drop: set[str] | None = None) -> list[str]:
    body = text[re.search(r'extern "C"\s+__global__', text).start() :]
    return Normaliser().read(unroll_row_loops(body), drop or set())


@cache
def reference() -> dict[str, str]:
    python = os.environ.get("DSLC_PYASC_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip(
            "pyasc is not installed (DSLC_PYASC_PYTHON names an interpreter with pyasc; .ci/run makes one)"
        )
    proc = subprocess.run(
        [python, str(HERE / "pyasc_kernels.py")], capture_output=True, text=True, timeout=600, cwd=HERE
    )
    if proc.returncode != 0:
        pytest.fail(f"pyasc could not translate the reference kernels:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


@pytest.mark.parametrize("case", sorted(CASES))
def test_dslc_calls_the_api_as_pyasc_does(case):
    theirs = normal(reference()[case])
    text = kernels(emit(CASES[case]))
    if case in BLOCK0:
        text = BLOCK0[case][0].sub(BLOCK0[case][1], text)
    ours = normal(text, NO_BINDING.get(case))
    assert ours == theirs


def test_the_oracle_notices_a_swapped_argument_and_a_wrong_struct_field():
    text = kernels(emit(CASES["row_sum"]))
    good = normal(text)
    swapped = normal(
        text.replace("AscendC::ReduceSum(ub3, in2, ub4, 64)", "AscendC::ReduceSum(ub3, ub4, in2, 64)")
    )
    field = normal(text.replace("DataCopyExtParams{1, 4, 0, 0, 0}", "DataCopyExtParams{1, 4, 0, 0, 1}"))
    assert swapped != good and field != good
    assert normal('extern "C" __global__\nAscendC::Foo(a, 1.0f, EVENT_ID0);') == ["Foo(X0, 1, 0)"]
