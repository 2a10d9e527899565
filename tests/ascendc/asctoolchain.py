"""The AscendC toolchain pieces a test can run here, found once (unique basename: pytest
prepend mode).

- **Headers**: ``DSLC_ASC_DEVKIT`` names a directory holding the asc-devkit class library,
  either unpacked (``include/kernel_operator.h``) or as the shared archive
  (``asc-devkit-*.tar.gz``, unpacked once into the cache, read-only use). ``.ci/run`` points
  it at ``../shared/third_party/asc-devkit``. ``kernel_tiling/kernel_tiling.h`` is generated
  by the archive's own ``gen_kernel_tiling_data_def.py``.
- **tikicpulib**: with ``ASCEND_HOME_PATH`` set (a CANN toolkit), its headers are used;
  otherwise ``tests/ascendc/shim`` (declarations only) stands in.
- **bisheng**: when on PATH, the real compiler (``--npu-arch=dav-2201``).

``typecheck(sources)`` compiles one translation unit with ``g++ -std=c++17 -fsyntax-only``
in CPU-debug mode and returns the compiler's result.
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

HERE = Path(__file__).resolve().parent
SHIM = HERE / "shim"
ACL_SHIM = HERE / "shim_acl"
ENV = "DSLC_ASC_DEVKIT"
_LAUNCH = re.compile(r"<<<[^<>]*>>>")


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
        flags = ["-isystem", str(self.tikicpulib or SHIM), f"-I{self.generated}"]
        acl = (
            Path(os.environ["ASCEND_HOME_PATH"]) / "include" if "ASCEND_HOME_PATH" in os.environ else ACL_SHIM
        )
        return flags + [f"-I{d}" for d in dirs] + [f"-I{acl}"]


def _cache() -> Path:
    base = os.environ.get("DSLC_CACHE_DIR") or os.path.join(tempfile.gettempdir(), "dslc-cache")
    return Path(base) / "asc-devkit"


def _unpack(archive: Path) -> Path:
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
    target = _cache() / digest
    root = target / "asc-devkit"
    if (root / "include" / "kernel_operator.h").is_file():
        return root
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="unpack-", dir=target.parent))
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    try:
        os.replace(staging, target)
    except OSError:  # another process unpacked it first
        shutil.rmtree(staging, ignore_errors=True)
    return root


def _generate_tiling(root: Path) -> Path:
    out = _cache() / ("gen-" + hashlib.sha256(str(root).encode()).hexdigest()[:12])
    header = out / "kernel_tiling" / "kernel_tiling.h"
    if not header.is_file():
        script = root / "impl" / "adv_api" / "cmake" / "scripts" / "gen_kernel_tiling_data_def.py"
        tmp = out / "kernel_tiling" / f".{os.getpid()}.h"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(script), str(root / "include" / "adv_api"), str(tmp)],
            check=True,
            capture_output=True,
        )
        os.replace(tmp, header)
    return out


def find_devkit() -> tuple[Devkit | None, str]:
    """The headers to check against, or None and the reason a test should skip."""
    if shutil.which("g++") is None:
        return None, "no g++ on PATH"
    where = os.environ.get(ENV)
    if not where:
        return None, f"{ENV} is not set (.ci/run sets it to ../shared/third_party/asc-devkit)"
    path = Path(where)
    if (path / "include" / "kernel_operator.h").is_file():
        root = path
    else:
        archives = sorted(path.glob("asc-devkit-*.tar.gz")) if path.is_dir() else []
        if not archives:
            return None, f"{ENV}={where} holds neither include/kernel_operator.h nor asc-devkit-*.tar.gz"
        root = _unpack(archives[-1])
    tiki = None
    if "ASCEND_HOME_PATH" in os.environ:
        candidate = Path(os.environ["ASCEND_HOME_PATH"]) / "tools" / "tikicpulib" / "lib" / "include"
        tiki = candidate if candidate.is_dir() else None
    return Devkit(root, _generate_tiling(root), tiki), ""


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
