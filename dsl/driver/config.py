"""``[tool.dslc]`` in pyproject.toml: lint selection, per-path ignores, device preset, fail-on.

    [tool.dslc]
    select = ["D", "L"]             # code prefixes or codes; default: everything
    ignore = ["D107"]
    preset = "a2a3"                 # a2a3 | a5 | sim: cores per rank the rules assume
    early-queue = 128               # early-dispatch queue capacity D110 assumes (64: simpler before #1812)
    fail-on = "error"               # error | warning | note
    format = "text"                 # text | json | sarif | github
    [tool.dslc.per-path-ignores]
    "tests/fixtures/**" = ["D101"]

Keys may be spelled with ``-`` or ``_``. Command-line options override the file. The nearest
pyproject.toml at or above the current directory is used, or the file given with ``--config``.
Per-path patterns are globs matched against the path relative to the directory of that
pyproject.toml; a pattern without ``/`` also matches the file name alone.

Every problem with the file is an E106 diagnostic pointing at the offending line.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from dsl.driver.codes import registry
from dsl.driver.diagnostics import diag
from lowering.checks.rule import EARLY_QUEUE_CAPACITY, PRESETS
from lowering.source import CompileError, Severity, Span

FORMATS = ("text", "json", "sarif", "github")
_KEYS = {"select", "ignore", "preset", "early-queue", "fail-on", "per-path-ignores", "format"}


def known_codes() -> set[str]:
    """Every code dslc can emit (the one registry, ``dsl.driver.codes``)."""
    return set(registry())


def unknown_selectors(selectors: tuple[str, ...]) -> list[str]:
    """Selectors (codes or code prefixes) that match no code dslc knows."""
    codes = known_codes()
    return [s for s in selectors if not s or not any(c.startswith(s) for c in codes)]


@dataclass
class LintConfig:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_path_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    preset: str = "a2a3"
    early_queue: int = EARLY_QUEUE_CAPACITY
    fail_on: Severity = Severity.ERROR
    format: str = "text"
    source: Path | None = None

    def enabled(self, code: str, path: str) -> bool:
        if self.select and not any(code.startswith(s) for s in self.select):
            return False
        if any(code.startswith(s) for s in self.ignore):
            return False
        if not self.per_path_ignores:
            return True
        rel = _relative(path, self.source.parent if self.source else None)
        name = Path(path).name
        for pattern, codes in self.per_path_ignores.items():
            pat = pattern.removeprefix("./")
            matches = fnmatch.fnmatchcase(rel, pat) or ("/" not in pat and fnmatch.fnmatchcase(name, pat))
            if matches and any(code.startswith(c) for c in codes):
                return False
        return True


def _relative(path: str, root: Path | None) -> str:
    p = Path(path).resolve()
    if root is not None:
        try:
            return p.relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return Path(path).as_posix()


def find_pyproject(start: Path) -> Path | None:
    for d in [start, *start.parents]:
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


_KEY_LINE = re.compile(r"""\s*(["']?)(?P<key>[^"'=\s]+)\1\s*=""")


class _File:
    """The config file's text, to point a diagnostic at the line of a key."""

    def __init__(self, path: Path, text: str = ""):
        self.path = path
        self.lines = text.splitlines()

    def span(self, key: str | None = None) -> Span:
        """The line that sets ``key`` inside a ``[tool.dslc...]`` table (else the table header)."""
        header, in_section, in_tool = None, False, False
        names = {key, key.replace("-", "_")} if key else set()
        for lineno, line in enumerate(self.lines, start=1):
            stripped = line.strip()
            if stripped.startswith("["):
                in_section = re.match(r"\[\s*tool\s*\.\s*dslc\s*[\].]", stripped) is not None
                in_tool = re.fullmatch(r"\[\s*tool\s*\]", stripped) is not None
                if in_section and header is None:
                    header = Span(str(self.path), lineno, 1, lineno, len(line) + 1)
                continue
            m = _KEY_LINE.match(line)
            if in_tool and header is None and m and m.group("key") == "dslc":  # `[tool]` + `dslc = 3`
                header = Span(str(self.path), lineno, m.start("key") + 1, lineno, m.end("key") + 1)
            if in_section and names:
                m = _KEY_LINE.match(line)
                if m and m.group("key") in names:
                    return Span(str(self.path), lineno, m.start("key") + 1, lineno, m.end("key") + 1)
        return header or Span.whole_file(str(self.path))

    def error(self, message: str, key: str | None = None) -> CompileError:
        return CompileError([diag("E106", self.span(key), f"[tool.dslc]: {message}", hint=_HINT)])


_HINT = "see `dslc explain E106` and docs/lint.md for the keys and their values"


def _codes(f: _File, key: str, value, where: str | None = None) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise f.error(f"'{where or key}' must be a list of codes or code prefixes", key)
    codes = tuple(v.strip().upper() for v in value)
    bad = unknown_selectors(codes)
    if bad:
        raise f.error(f"'{where or key}': {', '.join(map(repr, bad))} matches no dslc code", key)
    return codes


_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")


def _read(path: Path) -> tuple[_File, dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise _File(path).error(f"cannot read {path}: {err}") from None
    try:
        return _File(path, text), tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        # Python 3.11's TOMLDecodeError carries the position only in its message.
        m = _TOML_POS.search(str(err))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (max(len(text.splitlines()), 1), 1)
        raise CompileError(
            [diag("E106", Span(str(path), line, col), f"not valid TOML: {err}", hint=_HINT)]
        ) from None


def load_config(start: Path | None = None, path: Path | None = None) -> LintConfig:
    """The ``[tool.dslc]`` settings of ``path``, or of the nearest pyproject.toml above ``start``."""
    if path is None:
        path = find_pyproject((start or Path.cwd()).resolve())
        if path is None:
            return LintConfig()
    f, data = _read(path)
    tool = data.get("tool", {})
    section = tool.get("dslc") if isinstance(tool, dict) else None
    if section is None:
        return LintConfig(source=path)
    if not isinstance(section, dict):
        raise f.error("must be a table", "dslc")
    section = {k.replace("_", "-"): v for k, v in section.items()}
    unknown = set(section) - _KEYS
    if unknown:
        raise f.error(
            f"unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_KEYS))}",
            sorted(unknown)[0],
        )
    cfg = LintConfig(source=path)
    if "select" in section:
        cfg.select = _codes(f, "select", section["select"])
    if "ignore" in section:
        cfg.ignore = _codes(f, "ignore", section["ignore"])
    if "per-path-ignores" in section:
        table = section["per-path-ignores"]
        if not isinstance(table, dict):
            raise f.error("'per-path-ignores' must be a table of glob = [codes]", "per-path-ignores")
        cfg.per_path_ignores = {k: _codes(f, k, v, f"per-path-ignores.{k}") for k, v in table.items()}
    if "preset" in section:
        if section["preset"] not in PRESETS:
            raise f.error(
                f"preset {section['preset']!r} is not one of {', '.join(sorted(PRESETS))}", "preset"
            )
        cfg.preset = section["preset"]
    if "early-queue" in section:
        value = section["early-queue"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise f.error(f"early-queue {value!r} is not a positive integer", "early-queue")
        cfg.early_queue = value
    if "fail-on" in section:
        value = section["fail-on"]
        try:
            cfg.fail_on = Severity(value.lower() if isinstance(value, str) else value)
        except ValueError:
            raise f.error(f"fail-on {value!r} is not error, warning or note", "fail-on") from None
    if "format" in section:
        if section["format"] not in FORMATS:
            raise f.error(f"format {section['format']!r} is not one of {', '.join(FORMATS)}", "format")
        cfg.format = section["format"]
    return cfg
