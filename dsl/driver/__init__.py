"""The driver: CLI commands, the ``dsl.load`` API, ``dslc fix``, report formats and ``[tool.dslc]`` config."""
