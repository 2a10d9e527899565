"""Catch and false-alarm rates of the lint, judged by ``dslc verify``.

Population: every rule fixture (``tests/fixtures/rules/<CODE>/bad*.dsl``, ``good*.dsl``,
``note*.dsl``) of the rules whose claims verify can judge -- a hang or a schedule-dependent
result: the handshake, speculation and protocol rules (D1xx), N201, N202 and the race rules
(R50x) -- at every admissible parameter point of every structure class with at most
``--max-ranks`` ranks (2 by default: verify's state space grows with the ranks, and at 4 most
handshake fixtures do not finish within the budget), each explored at 1, 2 and 3 rounds.
The inputs, runtime scalars and AIC clusters of a fixture are those of its case in
``tests/checks/test_verify_ground_truth.py`` (alternating mode flags, routing tables, ...);
the parameters and rounds are the ones enumerated here.

Verdicts, per (fixture, point):
  * buggy: some round count gives a violation (a deadlock, two schedules with different bits,
    or a golden failure);
  * correct: every round count verifies complete (every schedule, no violation);
  * open: neither within the state budget (not counted in the rates, listed).

The lint is judged twice:
  * at the point: the rules on the graph compiled at that point (``dslc check --set ...``'s
    compiled point), flagged when a finding of severity warning or error is reported;
  * as run: ``dslc check FILE`` at the declared defaults (every structure class and probe
    point, docs/lint.md "Coverage"), per fixture: flagged when any warning or error is
    reported; buggy when some point is buggy, correct when every point is correct.

Catch rate = flagged / buggy; false-alarm rate = flagged / correct.

Usage: ``python bench/bench_lint_coverage.py [--max-ranks 2] [--max-states 300000]
[--timeout 8] [--json OUT.json] [--only D101 ...]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsl.driver.coverage import lint_source  # noqa: E402
from dsl.frontend import compile_file  # noqa: E402
from lowering.checks import run_rules  # noqa: E402
from lowering.checks.rule import CheckContext  # noqa: E402
from lowering.source import Severity  # noqa: E402
from lowering.symbolic import evaluate  # noqa: E402
from runtime.verify import explore  # noqa: E402

RULES = ROOT / "tests" / "fixtures" / "rules"
JUDGED = ("D1", "N201", "N202", "R50")
ROUNDS = (1, 2, 3)


def ground_truth():
    """The verify ground-truth test module (its cases, input hooks and golden check)."""
    path = ROOT / "tests" / "checks" / "test_verify_ground_truth.py"
    spec = importlib.util.spec_from_file_location("verify_ground_truth", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def population() -> list[Path]:
    return sorted(
        p
        for p in RULES.glob("*/*.dsl")
        if p.parent.name.startswith(JUDGED) and p.name.startswith(("bad", "good", "note"))
    )


def points(path: Path, max_ranks: int) -> list[dict[str, int]]:
    """The admissible points (ranged parameters only) with at most ``max_ranks`` ranks."""
    (graph,) = compile_file(path)
    ranged = [n for n, p in graph.params.items() if p.domain is not None]
    out = []
    for env in graph.admissible_points(limit=64, any_structure=True):
        if evaluate(graph.ranks, env) <= max_ranks:
            out.append({n: env[n] for n in ranged})
    return out or [{}]


def flagged(diags) -> list[str]:
    return sorted({d.code for d in diags if d.severity in (Severity.WARNING, Severity.ERROR)})


def lint_at(path: Path, point: dict[str, int]) -> list[str]:
    out = []
    for g in compile_file(path, point or None):
        out += run_rules(g, CheckContext(g))
    return flagged(out)


def lint_as_run(path: Path) -> list[str]:
    findings, _ = lint_source(path.read_text(encoding="utf-8"), str(path), None, None, None, "a2a3")
    return flagged(findings)


def verify(gt, path: Path, point: dict[str, int], rounds: int, max_states: int, timeout: float) -> str:
    fixture = str(path.relative_to(ROOT / "tests" / "fixtures"))
    base = next((c for c in gt.CASES if c.fixture == fixture), gt.Case(fixture, "complete"))
    case = dataclasses.replace(base, params={**base.params, **point}, rounds=rounds)
    layer, inputs, per_rank, config = gt._prepare(case)
    res = explore(
        layer.program,
        per_rank,
        config,
        max_states=max_states,
        timeout=timeout,
        check_outputs=gt._golden(layer, inputs, config),
        determinism=True,
        shortest=False,
    )
    if res.violation is not None:
        return res.violation.kind
    return "complete" if res.complete else "open"


def rate(hit: int, total: int) -> str:
    return f"{hit}/{total} = {100 * hit / total:.1f} %" if total else "n/a"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-ranks", type=int, default=2)
    ap.add_argument("--max-states", type=int, default=300_000)
    ap.add_argument("--timeout", type=float, default=8.0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only", nargs="*", default=(), help="rule folders to run (default: every judged rule)")
    args = ap.parse_args()
    gt = ground_truth()
    rows, files = [], []
    start = time.process_time()
    for path in population():
        if args.only and path.parent.name not in args.only:
            continue
        name = f"{path.parent.name}/{path.name}"
        per_point = []
        for point in points(path, args.max_ranks):
            verdicts = []
            for rounds in ROUNDS:
                v = verify(gt, path, point, rounds, args.max_states, args.timeout)
                verdicts.append(v)
                if v not in ("complete", "open"):
                    break  # buggy: the later round counts cannot make it correct
            buggy = any(v not in ("complete", "open") for v in verdicts)
            verdict = "buggy" if buggy else "correct" if all(v == "complete" for v in verdicts) else "open"
            row = {
                "fixture": name,
                "point": point,
                "verify": verdicts,
                "verdict": verdict,
                "lint": lint_at(path, point),
            }
            rows.append(row)
            per_point.append(row)
            print(
                f"{name} {point or ''}: verify {verdicts} -> {verdict}; lint at point {row['lint']}",
                flush=True,
            )
        verdicts = {r["verdict"] for r in per_point}
        verdict = "buggy" if "buggy" in verdicts else "correct" if verdicts == {"correct"} else "open"
        files.append({"fixture": name, "verdict": verdict, "lint": lint_as_run(path)})
    cpu = time.process_time() - start

    def summary(items):
        buggy = [r for r in items if r["verdict"] == "buggy"]
        correct = [r for r in items if r["verdict"] == "correct"]
        return {
            "catch": rate(sum(bool(r["lint"]) for r in buggy), len(buggy)),
            "false_alarm": rate(sum(bool(r["lint"]) for r in correct), len(correct)),
            "open": len([r for r in items if r["verdict"] == "open"]),
            "missed": [(r["fixture"], r.get("point")) for r in buggy if not r["lint"]],
            "false_alarms": [(r["fixture"], r.get("point"), r["lint"]) for r in correct if r["lint"]],
        }

    report = {"points": summary(rows), "files": summary(files), "cpu_s": round(cpu, 1)}
    print(f"\n{len(files)} fixtures, {len(rows)} (fixture, point) pairs, {cpu:.0f} s CPU")
    for level in ("points", "files"):
        s = report[level]
        print(f"{level}: catch {s['catch']}, false alarms {s['false_alarm']}, open {s['open']}")
        for m in s["missed"]:
            print(f"  missed: {m}")
        for f in s["false_alarms"]:
            print(f"  false alarm: {f}")
    if args.json:
        args.json.write_text(json.dumps({"report": report, "rows": rows, "files": files}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
