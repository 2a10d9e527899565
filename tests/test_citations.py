"""Every document the repository cites is one a reader of the repository can open.

Comments, docstrings, diagnostics and docs cite documents by path (``docs/lint.md``,
``runtime-semantics.md``), by section (``docs/runtime-semantics.md §5``), by heading
(``docs/simulator.md, 'Model'``) and by Markdown link (``[lint.md](lint.md#codes)``). This
test reads every tracked text file (nothing is imported) and fails on a citation of

- one of the team's notes that live outside the repository (``docs/references.md``, the page
  that explains what they were, is the one place that may name them);
- a ``.md`` path that is in the repository under no reading of it (beside the citing file,
  from the root, or under ``docs/``), unless the line says the document is upstream
  (``simpler's docs/war-anti-dependency.md``);
- a section sign with no document before it (a bare ``§1.4``), a section of a numbered page
  that does not exist, or a section of a page that has no numbered sections;
- a quoted heading or a link anchor the cited page does not have.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = (".py", ".md", ".dsl", ".j2", ".txt")
SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "build", "dist", ".ci", ".hypothesis", ".ruff_cache"}

#: The team's notes kept beside the project, never shipped with it, by the names code cited them.
ABSENT_NOTES = re.compile(
    r"runtime-model|seed-bugs|pypto-surface|deepseek-v4-layers|DESIGN\.md|shared/reference"
    r"|\b(?:RM|SB|PS) §"
)
#: The page that says what the notes were and where their facts are now.
NOTES_PAGE = "docs/references.md"
#: Where a line may name an absent note for another reason than citing it.
NOT_CITATIONS = {
    # the PyPTO API manifest the emitter's tests check generated code against: a data file
    ("tests/pypto/pyptoutil.py", "shared/reference"),
    # this test's own patterns
    ("tests/test_citations.py", "*"),
}
#: ``.md`` names that are not documents: files a test creates.
NOT_DOCUMENTS = {("tests/cli/test_precommit_hooks.py", "notes.dsl.md")}
#: A line naming one of these says that the document it cites is upstream, not ours.
UPSTREAM = re.compile(r"\b(?:simpler|pypto-lib|pypto|pto-isa|PTOAS|CANN|cann-recipes-infer|upstream)\b")

DOC_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.md)\b(?!\.j2)")
SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*|\S)")
QUOTED_HEADING = re.compile(r"((?:[\w.-]+/)*[\w-]+\.md),\s+'([^'\n]+)'")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
#: A section sign belongs to the last document named before it on its line or the line above.
SECTION_REACH = 1


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [
            p.relative_to(ROOT).as_posix()
            for p in ROOT.rglob("*")
            if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts)
        ]
    return sorted(f for f in out if f.endswith(SUFFIXES) and (ROOT / f).is_file())


def resolve(citing: str, cited: str) -> str | None:
    """The repository path ``cited`` names, read beside ``citing``, from the root or in docs/."""
    base = Path(citing).parent
    for candidate in (base / cited, Path(cited), Path("docs") / cited):
        path = (ROOT / candidate).resolve()
        if path.is_file() and path.is_relative_to(ROOT):
            return path.relative_to(ROOT).as_posix()
    return None


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def headings(doc: str) -> tuple[str, ...]:
    text = (ROOT / doc).read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return tuple(m.group(1).strip() for m in re.finditer(r"^#{1,6}\s+(.+)$", text, re.M))


@cache
def anchors(doc: str) -> frozenset[str]:
    text = (ROOT / doc).read_text(encoding="utf-8")
    explicit = re.findall(r"""<a\s+(?:id|name)=["']([^"']+)["']""", text)
    return frozenset(explicit) | {slug(h) for h in headings(doc)}


@cache
def sections(doc: str) -> frozenset[str]:
    """The numbers of a page's numbered headings (``## 5. Dispatch`` -> ``5``)."""
    found = (re.match(r"(\d+(?:\.\d+)*)\.?\s", h) for h in headings(doc))
    return frozenset(m.group(1) for m in found if m)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def problems_in(name: str) -> list[str]:
    text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    out: list[str] = []
    exempt = {tok for f, tok in NOT_CITATIONS if f == name}
    if name != NOTES_PAGE and "*" not in exempt:
        for m in ABSENT_NOTES.finditer(text):
            if m.group(0) not in exempt:
                out.append(
                    f"{name}:{line_of(text, m.start())}: cites {m.group(0)!r}, a note outside the repository"
                )
    if "*" in exempt:
        return out
    docs_at: list[tuple[int, str | None, str, int]] = []  # (line, resolved path, as written, end)
    for m in DOC_PATH.finditer(text):
        cited = m.group(1)
        if (name, cited) in NOT_DOCUMENTS:
            continue
        path = resolve(name, cited)
        docs_at.append((line_of(text, m.end()), path, cited, m.end()))
        if path is None and not ABSENT_NOTES.search(cited):
            line = lines[line_of(text, m.start()) - 1]
            if not UPSTREAM.search(line):
                out.append(
                    f"{name}:{line_of(text, m.start())}: cites {cited}, which is not in the repository"
                )
    own = name if name.endswith(".md") and sections(name) else None
    for m in SECTION.finditer(text):
        number = m.group(1)
        at = line_of(text, m.start())
        before = [d for d in docs_at if at - SECTION_REACH <= d[0] and d[3] <= m.start()]
        where = f"{name}:{at}"
        if before:
            _, doc, cited, _ = before[-1]
        elif own:
            doc, cited = own, name
        else:
            out.append(f"{where}: §{number} names no document")
            continue
        if doc is None:
            continue  # reported above (an absent note or an unknown path)
        if not sections(doc):
            out.append(f"{where}: §{number} of {cited}, which has no numbered sections")
        elif number not in sections(doc):
            out.append(f"{where}: {cited} has no §{number}")
    for m in QUOTED_HEADING.finditer(text):
        doc = resolve(name, m.group(1))
        quoted = m.group(2).strip().lower()
        if doc and doc.endswith(".md") and not any(h.lower().startswith(quoted) for h in headings(doc)):
            out.append(f"{name}:{line_of(text, m.start())}: {m.group(1)} has no heading {m.group(2)!r}")
    if name.endswith(".md"):
        for m in MD_LINK.finditer(text):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            doc = resolve(name, path) if path else name
            where = f"{name}:{line_of(text, m.start())}"
            if doc is None:
                if not (Path(name).parent / path).exists() and not (ROOT / Path(name).parent / path).exists():
                    out.append(f"{where}: links to {path}, which is not in the repository")
            elif anchor and doc.endswith(".md") and anchor not in anchors(doc):
                out.append(f"{where}: {doc} has no anchor #{anchor}")
    return out


def test_the_scan_sees_the_sources_and_the_docs():
    files = tracked_files()
    assert "docs/runtime-semantics.md" in files and "lowering/edges.py" in files
    assert sum(f.endswith(".py") for f in files) > 100


@pytest.mark.parametrize("part", ["dsl", "lowering", "runtime", "models", "tests", "bench", "docs", "root"])
def test_every_cited_document_is_in_the_repository(part):
    files = [f for f in tracked_files() if (f.split("/")[0] if "/" in f else "root") == part]
    problems = [p for f in files for p in problems_in(f)]
    assert problems == [], "\n".join(problems)


def test_the_checks_catch_what_they_are_for(tmp_path, monkeypatch):
    """The patterns themselves: each kind of broken citation is found, a good one is not."""
    monkeypatch.setattr("test_citations.ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n<a id='x'></a>\n\n## 1. One\n\n## Two\n")
    (tmp_path / "docs" / "flat.md").write_text("# Flat\n\n## Model\n")
    for f in (headings, anchors, sections):
        f.cache_clear()
    src = (
        "# see seed-bugs.md §2.2\n"
        "# see docs/run.md\n"
        "# see docs/page.md §1 and docs/page.md §3\n"
        "#\n# bare reference §1.6\n"
        "# docs/flat.md §2\n"
        "# docs/flat.md, 'Model' and docs/flat.md, 'Dispatch'\n"
        "# simpler's docs/war-anti-dependency.md\n"
    )
    (tmp_path / "m.py").write_text(src)
    (tmp_path / "docs" / "links.md").write_text(
        "[a](page.md#x) [b](page.md#two) [c](page.md#nope) [d](gone.md)\n"
    )
    try:
        found = problems_in("m.py") + problems_in("docs/links.md")
    finally:
        for f in (headings, anchors, sections):
            f.cache_clear()
    text = "\n".join(found)
    assert "'seed-bugs'" in text
    assert "docs/run.md, which is not in the repository" in text
    assert "docs/page.md has no §3" in text and "no §1\n" not in text + "\n"
    assert "§1.6 names no document" in text
    assert "§2 of docs/flat.md, which has no numbered sections" in text
    assert "has no heading 'Dispatch'" in text and "'Model'" not in text
    assert "war-anti-dependency" not in text
    assert "#nope" in text and "#x" not in text and "#two" not in text
    assert "links to gone.md" in text
