"""dslc: a compiler, lint and simulator for NPU layers written as task graphs."""

from dsl.version import __version__

__all__ = ["__version__", "load"]


def load(path, *, layer=None, **params):
    """Compile a layer and import its generated kernels; see :mod:`dsl.driver.api`."""
    from dsl.driver.api import load as _load

    return _load(path, layer=layer, **params)
