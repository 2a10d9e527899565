"""``[tool.dslc]`` in pyproject.toml: lint selection, per-path ignores, device preset, fail-on.

    [tool.dslc]
    select = ["D", "N201"]          # code prefixes or codes; default: everything
    ignore = ["D105"]
    preset = "a2a3"                 # a2a3 | a5 | sim: cores per rank the rules assume
    fail-on = "error"               # error | warning | note
    [tool.dslc.per-path-ignores]
    "tests/fixtures/**" = ["D101"]

Command-line options override the file. The nearest pyproject.toml at or above the current
directory is used.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from dsl.codes import diag
from lowering.checks.rule import PRESETS
from lowering.source import CompileError, Severity, Span

_KEYS = {"select", "ignore", "preset", "fail-on", "per-path-ignores", "format"}


@dataclass
class LintConfig:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_path_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    preset: str = "a2a3"
    fail_on: Severity = Severity.ERROR
    format: str = "text"
    source: Path | None = None

    def enabled(self, code: str, path: str) -> bool:
        if self.select and not any(code.startswith(s) for s in self.select):
            return False
        if any(code.startswith(s) for s in self.ignore):
            return False
        rel = _relative(path, self.source.parent if self.source else None)
        for pattern, codes in self.per_path_ignores.items():
            if fnmatch.fnmatch(rel, pattern) and any(code.startswith(c) for c in codes):
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


def _bad(path: Path, message: str) -> CompileError:
    return CompileError([diag("E106", Span.whole_file(str(path)), f"[tool.dslc]: {message}")])


def _codes(path: Path, key: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad(path, f"'{key}' must be a list of code prefixes")
    return tuple(v.upper() for v in value)


def load_config(start: Path | None = None) -> LintConfig:
    path = find_pyproject((start or Path.cwd()).resolve())
    if path is None:
        return LintConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise _bad(path, f"cannot read: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise CompileError(
            [diag("E106", Span(str(path), err.lineno or 1, err.colno or 1), str(err))]
        ) from None
    section = data.get("tool", {}).get("dslc")
    if section is None:
        return LintConfig(source=path)
    if not isinstance(section, dict):
        raise _bad(path, "must be a table")
    unknown = set(section) - _KEYS
    if unknown:
        raise _bad(path, f"unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_KEYS))}")
    cfg = LintConfig(source=path)
    if "select" in section:
        cfg.select = _codes(path, "select", section["select"])
    if "ignore" in section:
        cfg.ignore = _codes(path, "ignore", section["ignore"])
    if "per-path-ignores" in section:
        table = section["per-path-ignores"]
        if not isinstance(table, dict):
            raise _bad(path, "'per-path-ignores' must be a table of glob = [codes]")
        cfg.per_path_ignores = {k: _codes(path, f"per-path-ignores.{k}", v) for k, v in table.items()}
    if "preset" in section:
        if section["preset"] not in PRESETS:
            raise _bad(path, f"preset must be one of {', '.join(PRESETS)}")
        cfg.preset = section["preset"]
    if "fail-on" in section:
        try:
            cfg.fail_on = Severity(section["fail-on"])
        except ValueError:
            raise _bad(path, "fail-on must be error, warning or note") from None
    if "format" in section:
        cfg.format = str(section["format"])
    return cfg
