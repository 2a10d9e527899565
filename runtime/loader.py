"""Loading generated kernel modules (by path, with importlib) and caching their files.

The runtime never imports the front end or the IR: it only knows files that contain a
``PROGRAM``. The cache key is chosen by the caller (a content hash of source, parameters
and compiler version), so an unchanged layer is never regenerated or re-imported twice.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from runtime.program import Program


def cache_dir() -> Path:
    """``$DSLC_CACHE_DIR``, else ``$XDG_CACHE_HOME/dslc``, else ``~/.cache/dslc``."""
    explicit = os.environ.get("DSLC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dslc"


def write_atomically(path: Path, text: str) -> None:
    """Write via a temporary file in the same directory and rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached_module_path(name: str, key: str, text_factory) -> Path:
    """Path of the cached module ``name`` for ``key``; ``text_factory()`` renders it if absent."""
    path = cache_dir() / f"{name}_{key[:20]}.py"
    if not path.exists():
        write_atomically(path, text_factory())
    return path


def load_module(path: Path) -> ModuleType:
    """Import a generated module from ``path`` under a name unique to that file."""
    mod_name = "dslc_generated." + path.stem
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import generated module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[mod_name]
        raise
    return module


def load_program(path: Path) -> Program:
    program = getattr(load_module(path), "PROGRAM", None)
    if not isinstance(program, Program):
        raise ImportError(f"{path} defines no PROGRAM")
    return program
