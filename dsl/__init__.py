"""dslc: a compiler, lint and simulator for NPU layers written as task graphs."""

__version__ = "0.1.0"


def load(path, *, layer=None, **params):
    """Compile a layer and import its generated kernels; see :mod:`dsl.driver.api`."""
    from dsl.driver.api import load as _load

    return _load(path, layer=layer, **params)
