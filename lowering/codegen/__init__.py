"""Code generation: one folder per target (driver and helpers), templates in ``codegen_templates/<target>``."""
