"""The error and warning *sites* ``dslc check`` reports on a tree of real PyPTO files, and their verdicts.

    python bench/corpus_sites.py run TREE OUT [--timeout S] [--jobs N] [--list FILES]
    python bench/corpus_sites.py report OUT [--against OLD]

``run`` checks every ``.py`` file under ``TREE`` (or the files ``--list`` names, relative to ``TREE``) on its
own, smallest first, as a user would: ``timeout S dslc check FILE --format json`` with ``TREE`` as
the working directory, so model folders import each other as they do upstream. Each file's
diagnostics, exit code and wall time land in ``OUT/runs.jsonl``.

``report`` counts the sites of a run: a site is (code, file, line, column) of an error or a
warning, counted once however many checked files report it (the files import each other). Each
site takes the verdict the triage tables give it -- the per-site table of
``docs/corpus-findings.md`` ("Every error and warning site"), overridden by the re-judged table of
``docs/corpus-triage.md`` -- and sites no table names are listed as *unjudged*, to be read in the
code before anything is concluded. ``--against OLD`` lists the sites added and removed against an
earlier run. The FP rate is FP / sites (issue 10's target: 10 %).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE_ROW = re.compile(r"^\|\s*(?:\d+\s*\|\s*)?([A-Z]\d{3})\s*\|\s*([\w./-]+\.py:\d+:\d+)\s*\|(.*)$")
VERDICT = re.compile(r"\*\*(TP|FP|unclear)\*\*|\|\s*(TP|FP|unclear)\s*\|")

Site = tuple[str, str, int, int]


def run(tree: Path, out: Path, files: list[str], timeout: float, jobs: int) -> None:
    if not files:
        paths = sorted(tree.rglob("*.py"), key=lambda p: p.stat().st_size)
        files = [str(p.relative_to(tree)) for p in paths]
    out.mkdir(parents=True, exist_ok=True)

    def check(name: str) -> dict:
        start = time.monotonic()
        cmd = ["timeout", str(timeout), "dslc", "check", name, "--format", "json"]
        proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
        try:
            diagnostics = json.loads(proc.stdout) if proc.stdout.strip() else []
        except json.JSONDecodeError:
            diagnostics = []
        return {
            "file": name,
            "rc": proc.returncode,
            "seconds": round(time.monotonic() - start, 2),
            "diagnostics": diagnostics,
            "stderr": proc.stderr[-2000:],
        }

    with (out / "runs.jsonl").open("w", encoding="utf-8") as sink:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for record in pool.map(check, files):
                sink.write(json.dumps(record) + "\n")
                sink.flush()
                print(f"{record['rc']:>4} {record['seconds']:>7.1f}s {record['file']}", flush=True)


def load_sites(out: Path) -> tuple[dict[Site, dict], list[dict]]:
    sites: dict[Site, dict] = {}
    records = [json.loads(line) for line in (out / "runs.jsonl").open(encoding="utf-8")]
    for record in records:
        for d in record["diagnostics"]:
            if d["severity"] not in ("error", "warning"):
                continue
            loc = d["location"]
            key = (d["code"], loc["file"], loc["line"], loc["column"])
            entry = sites.setdefault(key, {"message": d["message"], "files": set()})
            entry["files"].add(record["file"])
    return sites, records


def verdicts() -> dict[Site, str]:
    """Per-site verdicts of the triage tables; the re-judged table wins."""
    table: dict[Site, str] = {}
    for doc in ("docs/corpus-findings.md", "docs/corpus-triage.md"):
        for line in (ROOT / doc).read_text(encoding="utf-8").splitlines():
            row = SITE_ROW.match(line)
            if not row:
                continue
            code, where, rest = row.groups()
            found = VERDICT.findall(rest)
            if not found:
                continue
            name, line_no, col = where.rsplit(":", 2)
            verdict = [v for pair in found for v in pair if v]
            # In the triage table the *new* verdict is the bold one; elsewhere the first.
            bold = [b for b, _ in found if b]
            table[(code, name, int(line_no), int(col))] = bold[0] if bold else verdict[0]
    return table


def report(out: Path, against: Path | None) -> None:
    sites, records = load_sites(out)
    judged = verdicts()
    timeouts = [r["file"] for r in records if r["rc"] == 124]
    crashed = [r["file"] for r in records if r["rc"] not in (0, 1, 124)]
    counts = Counter(judged.get(site, "unjudged") for site in sites)
    total = len(sites)
    print(f"files {len(records)}, timed out {len(timeouts)}, other exit codes {len(crashed)}")
    for name in timeouts:
        print(f"  timeout: {name}")
    for name in crashed:
        print(f"  exit: {name}")
    print(f"sites {total}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if total:
        print(f"FP rate {counts['FP'] / total:.1%} (unjudged counted as not FP)")
    by_code = Counter((site[0], judged.get(site, "unjudged")) for site in sites)
    for code in sorted({c for c, _ in by_code}):
        cells = ", ".join(f"{v} {n}" for (c, v), n in sorted(by_code.items()) if c == code)
        print(f"  {code}: {cells}")
    for site in sorted(s for s in sites if s not in judged):
        print(f"  unjudged {site[0]} {site[1]}:{site[2]}:{site[3]}  {sites[site]['message'][:150]}")
    if against is not None:
        old, _ = load_sites(against)
        for label, keys in (("added", set(sites) - set(old)), ("removed", set(old) - set(sites))):
            print(f"{label} {len(keys)}")
            for site in sorted(keys):
                message = (sites.get(site) or old[site])["message"][:150]
                verdict = judged.get(site, "unjudged")
                print(f"  {label} [{verdict}] {site[0]} {site[1]}:{site[2]}:{site[3]}  {message}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run")
    run_p.add_argument("tree", type=Path)
    run_p.add_argument("out", type=Path)
    run_p.add_argument("--list", type=Path, help="check only the files named in this file, one per line")
    run_p.add_argument("--timeout", type=float, default=200)
    run_p.add_argument("--jobs", type=int, default=2)
    rep_p = sub.add_parser("report")
    rep_p.add_argument("out", type=Path)
    rep_p.add_argument("--against", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run" and not args.tree.is_dir():
        parser.error(f"{args.tree}: not a directory")
    if args.command == "run" and args.list and not args.list.is_file():
        parser.error(f"--list {args.list}: no such file")
    if args.command == "report":
        for out in (args.out, args.against):
            if out is not None and not (out / "runs.jsonl").is_file():
                parser.error(f"{out}: no runs.jsonl (make one with `run`)")
    if args.command == "run":
        files = args.list.read_text(encoding="utf-8").split() if args.list else []
        run(args.tree.resolve(), args.out, files, args.timeout, args.jobs)
    else:
        report(args.out, args.against)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
