"""Loading generated kernel modules (by path, with importlib) and caching their files.

The runtime never imports the front end or the IR: it only knows files that contain a
``PROGRAM``. The cache key is chosen by the caller (a content hash of source, parameters
and compiler version), so an unchanged layer is never regenerated or re-imported twice.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from runtime.cache_dir import cache_dir
from runtime.files import ensure_directory, write_text
from runtime.program import Program

CACHE_SEAL = "# dslc cache entry, sha256 of the text above: "


def _sealed(text: str) -> str:
    return f"{text}{CACHE_SEAL}{hashlib.sha256(text.encode('utf-8')).hexdigest()}\n"


def _intact(path: Path) -> bool:
    """Is the cache entry at ``path`` whole (its seal matches the text above it)?"""
    try:
        data = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    text, sep, seal = data.rpartition(CACHE_SEAL)
    return bool(sep) and seal == hashlib.sha256(text.encode("utf-8")).hexdigest() + "\n"


def cached_module_path(name: str, key: str, text_factory) -> Path:
    """Path of the cached module ``name`` for ``key``; ``text_factory()`` renders it if absent.

    Each entry ends with a seal (the sha256 of its text): an entry that was truncated,
    edited or damaged on disk is detected when it is next used and rendered again."""
    directory = ensure_directory(cache_dir())
    path = directory / f"{name}_{key[:20]}.py"
    if not _intact(path):
        sys.modules.pop(_module_name(path), None)
        write_text(path, _sealed(text_factory()))
    return path


def _module_name(path: Path) -> str:
    return "dslc_generated." + path.stem


def load_module(path: Path) -> ModuleType:
    """Import a generated module from ``path`` under a name unique to that file."""
    mod_name = _module_name(path)
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
