"""The version of dslc, in a module of its own so that the driver can name it without importing
the package's ``__init__`` (which loads the driver lazily for ``dsl.load``)."""

__version__ = "0.1.0"
