__version__ = "0.1.0"


def load(path, *, layer=None, **params):
    """Compile a layer and import its generated kernels; see :mod:`dsl.api`."""
    from dsl.api import load as _load

    return _load(path, layer=layer, **params)
