"""Fuzz campaign (issue 14): mutated sources through ``dslc check``, ``dslc run`` and ``dslc compile``.

Seeds are every ``*.dsl`` of ``tests/fixtures`` and ``models`` and the ``dsl`` blocks of
``docs/language.md``. Each case mutates one seed (seeded, reproducible) with one of:

* token edits -- delete, duplicate, swap, insert a token of the language, truncate;
* character edits -- delete, insert, flip a byte (also invalid UTF-8, a NUL, a BOM);
* stress edits -- an integer literal replaced by a huge one (10^7, 2^31, 2^40, 10^12), a
  loop nest or an expression grown past the limits, an identifier renamed to a name that
  collides under mangling (``x`` -> ``x__``, ``stage_tmp``, ``in``), a runtime-scalar range
  blown up, an spmd grid of ten million blocks.

Every case runs in this process through ``dsl.driver.cli.main``: ``check --format json``,
``run --timeout 5 --no-lint`` and ``compile --target numpy|pypto|ascendc -o DIR`` (the target
rotates; ``DSLC_ASC_DEVKIT`` is unset, so AscendC projects get the lexical check, not g++). Each command has its own CPU-time budget (a ``SIGVTALRM`` timer, separate from
the simulator's own wall-clock watchdog). Counted, per command, all of which must be zero:

* **internal errors**: output containing ``internal error``;
* **tracebacks**: output containing ``Traceback`` (or any exception escaping ``main``);
* **hangs**: a command that exceeded its budget;
* **unparsable outputs**: ``check --format json`` whose stdout is not JSON, a module
  ``compile`` wrote that Python does not ``compile()``, or an AscendC file that is not
  lexically C++ (``lowering.codegen.ascendc.toolchain.lexical_problems``).

Run: ``python bench/fuzz_campaign.py --cases 10000 --log fuzz.jsonl`` (``--seed``, ``--jobs``
for worker processes, ``--budget`` seconds of CPU per command; with ``--log`` every chunk of
100 cases is appended as it finishes and a campaign started again skips the chunks it holds). Memory is capped at 8 GB per process
(``RLIMIT_AS``); a MemoryError would surface as an internal error. Results: bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsl.driver.cli import main  # noqa: E402
from lowering.codegen.ascendc.toolchain import lexical_problems  # noqa: E402

TOKEN = re.compile(r"\s+|#[^\n]*|\"[^\"\n]*\"|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|\.\.|[+\-*/=<>!]=|//|\S")
VOCAB = [
    "{", "}", "(", ")", "[", "]", ",", ":", "=", "+=", "@", ".", "..", "==", ">=", "-", "*", "/",
    "%", "task", "layer", "for", "if", "else", "let", "spmd", "after", "on", "aiv", "aic", "mix",
    "input", "output", "scratch", "window", "signal", "notify", "wait", "barrier", "remote_store",
    "block", "rank", "nranks", "epoch", "call", "golden", "guard", "scalar", "in", "0", "1", "16",
    "-1", "1.5", "inf", "atomic", "early_resolve", "sync_start", "manual", "reduce_sum", "return",
]  # fmt: skip
HUGE = ["10000000", "2147483648", "1099511627776", "1000000000000", "4294967296"]
COLLIDING = ["x__", "stage_tmp", "stage__tmp", "in", "block_", "_v1", "pl", "my_rank", "r", "expected"]
COMMANDS = ("check", "run", "compile")
BUDGET = {"check": 60.0, "run": 60.0, "compile": 60.0}


def seeds() -> list[str]:
    out = [
        p.read_text(encoding="utf-8")
        for base in ("tests/fixtures", "models")
        for p in sorted((ROOT / base).rglob("*.dsl"))
    ]
    doc = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    out += re.findall(r"^```dsl[^\n]*\n(.*?)^```", doc, re.S | re.M)
    return out


def token_edit(r: random.Random, text: str) -> str:
    tokens = TOKEN.findall(text) or [text]
    i = r.randrange(len(tokens))
    kind = r.randrange(5)
    if kind == 0:
        del tokens[i]
    elif kind == 1:
        tokens.insert(i, tokens[i])
    elif kind == 2:
        j = r.randrange(len(tokens))
        tokens[i], tokens[j] = tokens[j], tokens[i]
    elif kind == 3:
        tokens.insert(i, " " + r.choice(VOCAB) + " ")
    else:
        tokens = tokens[:i]
    return "".join(tokens)


def char_edit(r: random.Random, text: str) -> bytes:
    data = bytearray(text.encode("utf-8"))
    if not data:
        return bytes(data)
    i = r.randrange(len(data))
    kind = r.randrange(5)
    if kind == 0:
        del data[i]
    elif kind == 1:
        data.insert(i, r.randrange(32, 127))
    elif kind == 2:
        data[i] = r.randrange(256)  # possibly invalid UTF-8, a NUL
    elif kind == 3:
        data[:0] = b"\xef\xbb\xbf"  # a byte-order mark
    else:
        data.insert(i, r.choice(b"{}()[];"))
    return bytes(data)


def stress_edit(r: random.Random, text: str) -> str:
    kind = r.randrange(6)
    if kind == 0:  # an integer literal replaced by a huge one
        ints = list(re.finditer(r"\b\d+\b", text))
        if ints:
            m = r.choice(ints)
            return text[: m.start()] + r.choice(HUGE) + text[m.end() :]
    if kind == 1:  # a loop nest grown past the targets' limits, inside the first task body
        m = re.search(r"task [^{]*\{", text)
        if m:
            depth = r.choice([19, 20, 21, 25])
            loops = "".join(f"for q{k} in range(1) {{ " for k in range(depth))
            return text[: m.end()] + f"\n    {loops}{'} ' * depth}\n" + text[m.end() :]
    if kind == 2:  # an expression grown past the depth limit
        m = re.search(r"=\s*([^\n;{}]+)\n", text)
        if m:
            term = m.group(1).strip()
            n = r.choice([50, 101, 500])
            grown = " + ".join([f"({term})"] * 2) if r.random() < 0.5 else "-" * n + f"({term})"
            if r.random() < 0.5:
                grown = " + ".join(["1"] * n)
            return text[: m.start(1)] + grown + text[m.end(1) :]
    if kind == 3:  # an identifier renamed to one that collides under mangling
        names = sorted(set(re.findall(r"\b(?:input|output|inout|scratch|let)\s+([A-Za-z_]\w*)", text)))
        if names:
            old = r.choice(names)
            return re.sub(rf"\b{re.escape(old)}\b", r.choice(COLLIDING), text)
    if kind == 4:  # a runtime scalar with a range that does not fit, or a huge one
        m = re.search(r"scalar (\w+): (\w+)", text)
        if m:
            return (
                text[: m.end()]
                + r.choice([" in 1..4294967296", " in 1..100000000", " in 0..1000000000000"])
                + re.sub(r"^ in [^\n]*", "", text[m.end() :])
            )
    if kind == 5:  # a grid of ten million blocks
        if "spmd(" in text:
            return re.sub(r"spmd\([^)]*\)", "spmd(10000000)", text, count=1)
    return token_edit(r, text)


def mutate(r: random.Random, seed: str) -> bytes:
    choice = r.random()
    if choice < 0.45:
        text = seed
        for _ in range(r.randint(1, 3)):
            text = token_edit(r, text)
        return text.encode("utf-8")
    if choice < 0.65:
        return char_edit(r, seed)
    return stress_edit(r, seed).encode("utf-8")


class Hang(BaseException):
    """The command used up its CPU budget (raised by SIGVTALRM; dslc catches Exception only)."""


def _on_budget(_signum, _frame):
    raise Hang


def invoke(argv: list[str], budget: float) -> tuple[int | None, str, str, str | None]:
    """(exit code, stdout, stderr, problem) of one in-process ``dslc`` command."""
    out, err = io.StringIO(), io.StringIO()
    signal.setitimer(signal.ITIMER_VIRTUAL, budget)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except Hang:
        return None, out.getvalue(), err.getvalue(), "hang"
    except BaseException as exc:  # noqa: BLE001 - anything escaping main is a traceback
        return None, out.getvalue(), err.getvalue() + f"Traceback: {type(exc).__name__}: {exc}", "traceback"
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
    return code, out.getvalue(), err.getvalue(), None


def problems_of(command: str, code, out: str, err: str, problem: str | None, outdir: Path) -> list[str]:
    found = [problem] if problem else []
    text = out + err
    if "internal error" in text:
        found.append("internal error")
    if "Traceback" in text and "traceback" not in found:
        found.append("traceback")
    if command == "check" and problem is None:
        try:
            json.loads(out)
        except ValueError:
            found.append("unparsable output")
    if command == "compile" and code == 0:
        for module in outdir.rglob("*.py"):
            try:
                compile(module.read_text(encoding="utf-8"), str(module), "exec")
            except (SyntaxError, ValueError):
                found.append("unparsable output")
        for cxx in [*outdir.rglob("*.h"), *outdir.rglob("*.asc")]:
            if lexical_problems(cxx.name, cxx.read_text(encoding="utf-8")):
                found.append("unparsable output")
    return found


def run_cases(args: tuple[int, int, int, float]) -> dict:
    start, stop, seed, budget = args
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    signal.signal(signal.SIGVTALRM, _on_budget)
    work = Path(tempfile.mkdtemp(prefix="dslc-fuzz-"))
    os.environ["DSLC_CACHE_DIR"] = str(work / "cache")
    os.environ.pop("DSLC_ASC_DEVKIT", None)
    pool = seeds()
    counts: Counter = Counter()
    exits: Counter = Counter()
    examples: dict[str, list] = {}
    slowest: dict[str, float] = {c: 0.0 for c in COMMANDS}
    for case in range(start, stop):
        r = random.Random(seed * 1_000_003 + case)
        source = work / "case.dsl"
        source.write_bytes(mutate(r, r.choice(pool)))
        target = ("numpy", "pypto", "ascendc")[case % 3]
        outdir = work / f"out{case % 4}"
        shutil.rmtree(outdir, ignore_errors=True)
        argvs = {
            "check": ["check", str(source), "--format", "json"],
            "run": ["run", str(source), "--timeout", "5", "--no-lint"],
            "compile": ["compile", str(source), "--target", target, "-o", str(outdir)],
        }
        for command, argv in argvs.items():
            t0 = time.process_time()
            code, out, err, problem = invoke(argv, budget)
            slowest[command] = max(slowest[command], time.process_time() - t0)
            exits[(command, code)] += 1
            for p in problems_of(command, code, out, err, problem, outdir):
                counts[(command, p)] += 1
                examples.setdefault(f"{command}: {p}", []).append((case, (out + err)[-400:]))
        for name in [m for m in sys.modules if m.startswith(("dslc_generated.", "dslc_golden"))]:
            del sys.modules[name]  # keep the process's memory flat over thousands of cases
    shutil.rmtree(work, ignore_errors=True)
    return {
        "start": start,
        "stop": stop,
        "seed": seed,
        "counts": {f"{c}|{p}": n for (c, p), n in counts.items()},
        "exits": {f"{c}|{code}": n for (c, code), n in exits.items()},
        "examples": {k: v[:3] for k, v in examples.items()},
        "slowest": slowest,
    }


CHUNK = 100  # cases per worker process (a fresh process each: memory stays flat)


def summarise(parts: list[dict], cases: int, seed: int, elapsed: float, jobs: int) -> dict:
    counts: Counter = Counter()
    exits: Counter = Counter()
    examples: dict[str, list] = {}
    slowest = {c: 0.0 for c in COMMANDS}
    for part in parts:
        counts.update(part["counts"])
        exits.update(part["exits"])
        for k, v in part["examples"].items():
            examples.setdefault(k, []).extend(v)
        slowest = {c: max(slowest[c], part["slowest"][c]) for c in COMMANDS}
    print(f"{cases:,} mutated sources (seed {seed}), {elapsed:.0f} s wall, {jobs} job(s)")
    print(
        f"{'command':<8} {'internal errors':>15} {'tracebacks':>10} {'hangs':>6} {'unparsable':>10}  exit codes"
    )
    for c in COMMANDS:
        row = [
            counts.get(f"{c}|{p}", 0) for p in ("internal error", "traceback", "hang", "unparsable output")
        ]
        codes = ", ".join(
            f"{k.split('|')[1]}: {n}"
            for k, n in sorted(exits.items(), key=lambda kv: kv[0])
            if k.startswith(c + "|")
        )
        print(f"{c:<8} {row[0]:>15} {row[1]:>10} {row[2]:>6} {row[3]:>10}  {codes}")
    print("slowest command (CPU s): " + ", ".join(f"{c} {slowest[c]:.1f}" for c in COMMANDS))
    for k, v in examples.items():
        print(f"--- {k}: {len(v)} case(s), e.g. case {v[0][0]}:\n{v[0][1]}")
    return {"counts": counts, "exits": exits, "examples": examples, "slowest": slowest}


def main_campaign() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--budget", type=float, default=60.0, help="CPU seconds per command")
    parser.add_argument(
        "--log",
        metavar="FILE.jsonl",
        help="append each chunk's result here; chunks already in it are skipped",
    )
    parser.add_argument("--json", metavar="FILE", help="write the full result here")
    args = parser.parse_args()
    t0 = time.monotonic()
    parts: list[dict] = []
    done: set[int] = set()
    log = Path(args.log) if args.log else None
    if log is not None and log.exists():  # resume: a killed campaign keeps what it measured
        for line in log.read_text(encoding="utf-8").splitlines():
            part = json.loads(line)
            if part.get("seed") == args.seed and part["start"] < args.cases:
                parts.append(part)
                done.add(part["start"])
    total = -(-args.cases // CHUNK)
    chunks = [
        (i, min(i + CHUNK, args.cases), args.seed, args.budget)
        for i in range(0, args.cases, CHUNK)
        if i not in done
    ]
    with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=1) as workers:
        for part in workers.imap_unordered(run_cases, chunks, chunksize=1):
            parts.append(part)
            if log is not None:
                with log.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(part) + "\n")
            found = sum(part["counts"].values())
            print(
                f"  {len(parts)}/{total} chunks, "
                f"{time.monotonic() - t0:.0f} s, {found} problem(s) in cases {part['start']}..{part['stop'] - 1}",
                flush=True,
            )
    result = summarise(
        parts, sum(p["stop"] - p["start"] for p in parts), args.seed, time.monotonic() - t0, args.jobs
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 1 if result["counts"] else 0


if __name__ == "__main__":
    sys.exit(main_campaign())
