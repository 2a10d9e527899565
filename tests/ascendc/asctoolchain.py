"""The AscendC toolchain pieces a test can run here (unique basename: pytest prepend mode).

The toolchain itself is the product's (``lowering.codegen.ascendc.toolchain``: ``dslc
compile --target ascendc`` type-checks every project with it before writing); the tests use
it with the cache ``DSLC_CACHE_DIR`` names (the test session's own, see ``tests/conftest.py``).
``.ci/run`` points ``DSLC_ASC_DEVKIT`` at ``../shared/third_party/asc-devkit``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from lowering.codegen.ascendc import toolchain
from lowering.codegen.ascendc.toolchain import Devkit, bisheng, host_view, one_unit, typecheck

__all__ = ["Devkit", "bisheng", "find_devkit", "host_view", "one_unit", "typecheck"]


def find_devkit() -> tuple[Devkit | None, str]:
    """The headers to check against, or None and the reason a test should skip."""
    cache = Path(os.environ.get("DSLC_CACHE_DIR") or os.path.join(tempfile.gettempdir(), "dslc-cache"))
    return toolchain.find_devkit(cache)
