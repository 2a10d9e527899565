"""dslc: a compiler, lint and simulator for NPU layers written as task graphs."""

import os

# The simulator runs thousands of small GEMMs one after another; a BLAS thread pool only
# adds contention there (10-30x slower on a loaded 2-core machine). An explicit setting wins;
# this only takes effect when NumPy is imported after dsl (as in the dslc command).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"


def load(path, *, layer=None, **params):
    """Compile a layer and import its generated kernels; see :mod:`dsl.driver.api`."""
    from dsl.driver.api import load as _load

    return _load(path, layer=layer, **params)
