"""Independent NumPy goldens for the DeepSeek-V4-Flash layers (deepseek-v4-layers.md).

One module per layer: `hc_pre`, `hc_post`, `moe`, `prefill_indexer`, `prefill_csa`. Each
exposes `CONFIG` (the reference's sizes), `REDUCED` (small sizes, structural constants kept),
`make_inputs(cfg, seed)`, its golden function(s), `golden(inputs, cfg)` and `TOLERANCES`
(the reference's comparator per output). They are written from the reference math, never
from a kernel, and share only the numerics in `_common`.
"""
