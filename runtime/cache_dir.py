"""Where dslc keeps what it can make again: generated kernel modules (``runtime.loader``) and
the front end's analysis of its grammar (``dsl.parser``). A leaf module: the front end reads
it without importing the rest of the runtime."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$DSLC_CACHE_DIR``, else ``$XDG_CACHE_HOME/dslc``, else ``~/.cache/dslc``."""
    explicit = os.environ.get("DSLC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dslc"
