"""The C++ check every AscendC project passes before it is written (``dslc compile``).

Two levels, the second only where the AscendC headers are:

- **Always**: the lexical check (:func:`lexical_problems`): brackets balanced outside
  comments and literals, every literal closed, nothing but printable ASCII. A template that
  renders a half-written kernel is caught here, on any machine.
- **With** ``DSLC_ASC_DEVKIT`` (the asc-devkit class library, unpacked or as the shared
  ``asc-devkit-*.tar.gz``): the kernels and the host program are compiled as one
  translation unit with ``g++ -std=c++17 -fsyntax-only`` in the headers' CPU-debug mode
  (dav-2201), against the declaration-only tikicpulib and ACL headers in ``headers/`` (or
  CANN's own under ``ASCEND_HOME_PATH``). A unit that passed is remembered by its sha256 in
  the cache, so an unchanged project is not compiled twice.

A project that fails either check is a bug of the target, never the user's mistake: the
driver reports it as an internal error and writes nothing. A devkit that cannot be used
(the variable names a directory without the headers, no g++) is :class:`DevkitError`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lowering.codegen.common import GeneratedCodeError
from runtime.files import write_text

HEADERS = Path(__file__).resolve().parent / "headers"
TIKICPULIB_SHIM = HEADERS / "tikicpulib"
ACL_SHIM = HEADERS / "acl"
ENV = "DSLC_ASC_DEVKIT"
_LAUNCH = re.compile(r"<<<[^<>]*>>>")
_PAIRS = {")": "(", "]": "[", "}": "{"}


class DevkitError(Exception):
    """``DSLC_ASC_DEVKIT`` is set but cannot be used; ``str()`` says why."""


@dataclass(frozen=True)
class Devkit:
    root: Path  # the asc-devkit tree (include/, impl/)
    generated: Path  # holds kernel_tiling/kernel_tiling.h
    tikicpulib: Path | None  # real CANN tikicpulib headers, if any

    def include_flags(self) -> list[str]:
        r = self.root
        dirs = [r, r / "include"]
        dirs += [
            r / "include" / d for d in ("basic_api", "adv_api", "utils", "c_api", "simt_api", "aicpu_api")
        ]
        dirs += [r / "impl"] + [
            r / "impl" / d for d in ("basic_api", "adv_api", "utils", "c_api", "simt_api")
        ]
        flags = ["-isystem", str(self.tikicpulib or TIKICPULIB_SHIM), f"-I{self.generated}"]
        acl = (
            Path(os.environ["ASCEND_HOME_PATH"]) / "include" if "ASCEND_HOME_PATH" in os.environ else ACL_SHIM
        )
        return flags + [f"-I{d}" for d in dirs] + [f"-I{acl}"]


def _unpack(archive: Path, cache: Path) -> Path:
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
    target = cache / "asc-devkit" / digest
    root = target / "asc-devkit"
    if not (root / "include" / "kernel_operator.h").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="unpack-", dir=target.parent))
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(staging, filter="data")
        except (tarfile.TarError, OSError) as err:
            shutil.rmtree(staging, ignore_errors=True)
            raise DevkitError(f"holds {archive.name}, which cannot be unpacked: {err}") from None
        try:
            os.replace(staging, target)
        except OSError:  # another process unpacked it first
            shutil.rmtree(staging, ignore_errors=True)
    if not (root / "include" / "kernel_operator.h").is_file():
        raise DevkitError(f"holds {archive.name}, which has no asc-devkit/include/kernel_operator.h")
    return root


def _generate_tiling(root: Path, cache: Path) -> Path:
    out = cache / "asc-devkit" / ("gen-" + hashlib.sha256(str(root).encode()).hexdigest()[:12])
    header = out / "kernel_tiling" / "kernel_tiling.h"
    if not header.is_file():
        script = root / "impl" / "adv_api" / "cmake" / "scripts" / "gen_kernel_tiling_data_def.py"
        if not script.is_file():
            raise DevkitError(f"has no {script.relative_to(root)} to generate kernel_tiling.h with")
        tmp = out / "kernel_tiling" / f".{os.getpid()}.h"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, str(script), str(root / "include" / "adv_api"), str(tmp)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise DevkitError(f"cannot generate kernel_tiling.h ({script.name}: {last})")
        os.replace(tmp, header)
    return out


def find_devkit(cache: Path) -> tuple[Devkit | None, str]:
    """The headers named by ``DSLC_ASC_DEVKIT`` (unpacked into ``cache`` if an archive), or
    None and the reason there are none."""
    if shutil.which("g++") is None:
        return None, "no g++ on PATH"
    where = os.environ.get(ENV)
    if not where:
        return None, f"{ENV} is not set (.ci/run sets it to ../shared/third_party/asc-devkit)"
    path = Path(where)
    tiki = None
    if "ASCEND_HOME_PATH" in os.environ:
        candidate = Path(os.environ["ASCEND_HOME_PATH"]) / "tools" / "tikicpulib" / "lib" / "include"
        tiki = candidate if candidate.is_dir() else None
    try:
        if (path / "include" / "kernel_operator.h").is_file():
            root = path
        else:
            archives = sorted(path.glob("asc-devkit-*.tar.gz")) if path.is_dir() else []
            if not archives:
                raise DevkitError("holds neither include/kernel_operator.h nor asc-devkit-*.tar.gz")
            root = _unpack(archives[-1], cache)
        return Devkit(root, _generate_tiling(root, cache), tiki), ""
    except DevkitError as err:
        return None, f"{ENV}={where} {err}"


def host_view(text: str) -> str:
    """The host program as g++ can parse it: ``kernel<<<b, l2, s>>>(args)`` -> ``kernel(args)``."""
    return _LAUNCH.sub("", text)


def typecheck(devkit: Devkit, workdir: Path, main: str) -> subprocess.CompletedProcess:
    """``g++ -fsyntax-only`` of ``workdir/main`` in AscendC CPU-debug mode (dav-2201)."""
    cmd = [
        "g++",
        "-std=c++17",
        "-fsyntax-only",
        "-DASCENDC_CPU_DEBUG=1",
        "-D__NPU_ARCH__=2201",
        "-Wno-narrowing",
        *devkit.include_flags(),
        f"-I{workdir}",
        str(workdir / main),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)


def bisheng() -> str | None:
    return shutil.which("bisheng")


def one_unit(projects: list[dict[str, str]]) -> str:
    """One translation unit holding every project: all kernel headers, then each host program
    (launches stripped, see ``host_view``) inside a namespace of its own, so ``main`` and
    ``dslc_host`` do not clash. Parsing kernel_operator.h once is most of the cost."""
    includes: list[str] = []
    kernels: list[str] = []
    hosts: list[str] = []
    for i, files in enumerate(projects):
        for name, text in files.items():
            if name.endswith("_kernels.h"):
                kernels.append(f'#include "{name}"')
            elif name.endswith(".asc"):
                body = []
                for line in host_view(text).splitlines():
                    if line.startswith("#include <"):
                        includes.append(line)
                    elif not line.startswith("#include"):
                        body.append(line)
                hosts.append(f"namespace host{i} {{\n" + "\n".join(body) + f"\n}}  // namespace host{i}\n")
    head = sorted(set(includes)) + ['#include "acl/acl.h"']
    return "\n".join(head + kernels) + "\n" + "\n".join(hosts)


# ---------------------------------------------------------------- the checks


def lexical_problems(name: str, text: str) -> list[str]:
    """What makes ``text`` not even lexically C++: unbalanced brackets (outside comments,
    string and character literals), an unclosed literal or comment, a non-ASCII or control
    character. Empty for a well-formed file."""
    problems: list[str] = []
    stack: list[tuple[str, int]] = []
    line, i, n = 1, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif not (c.isascii() and (c.isprintable() or c in "\t\r")):
            problems.append(f"{name}:{line}: character {c!r} outside printable ASCII")
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                problems.append(f"{name}:{line}: unterminated comment")
                break
            line += text.count("\n", i, end)
            i = end + 2
            continue
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j >= n or text[j] != c:
                kind = "string" if c == '"' else "character"
                problems.append(f"{name}:{line}: unterminated {kind} literal")
            i = j + 1
            continue
        elif c in "([{":
            stack.append((c, line))
        elif c in ")]}":
            if not stack or stack[-1][0] != _PAIRS[c]:
                problems.append(f"{name}:{line}: {c!r} closes nothing")
            else:
                stack.pop()
        i += 1
    problems += [f"{name}:{at}: {c!r} is never closed" for c, at in stack]
    return problems


def check_project(files: dict[str, str], cache: Path) -> str:
    """Check the C++ files of one project before they are written; returns how (for the
    driver's message). Raises GeneratedCodeError when they are not valid C++, DevkitError when
    ``DSLC_ASC_DEVKIT`` is set but unusable."""
    problems = [
        p
        for name, text in files.items()
        if name.endswith((".h", ".asc"))
        for p in lexical_problems(name, text)
    ]
    if problems:
        raise GeneratedCodeError(
            "the ascendc target generated C++ that is not well formed: " + "; ".join(problems[:5])
        )
    if not os.environ.get(ENV):
        return f"lexical check only ({ENV} is not set)"
    devkit, why = find_devkit(cache)
    if devkit is None:
        raise DevkitError(why)
    unit = one_unit([files])
    digest = hashlib.sha256("\0".join(devkit.include_flags()).encode("utf-8"))
    for name, text in sorted(files.items()):
        digest.update(b"\0" + name.encode("utf-8") + b"\0" + text.encode("utf-8"))
    seal = cache / "asc-typechecked" / digest.hexdigest()
    if seal.is_file():
        return "g++ -fsyntax-only against asc-devkit (cached)"
    with tempfile.TemporaryDirectory(prefix="dslc-asc-") as tmp:
        work = Path(tmp)
        for name, text in files.items():
            (work / name).write_text(text, encoding="utf-8")
        (work / "unit.cpp").write_text(unit, encoding="utf-8")
        proc = typecheck(devkit, work, "unit.cpp")
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "error" in line]
        raise GeneratedCodeError(
            "the ascendc target generated C++ that does not compile against asc-devkit (g++ "
            "-fsyntax-only): " + "; ".join(errors[:5] or proc.stderr.splitlines()[:5])
        )
    write_text(seal, "")
    return "g++ -fsyntax-only against asc-devkit"
