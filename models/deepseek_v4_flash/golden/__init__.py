"""Independent NumPy goldens for the DeepSeek-V4-Flash layers.

*The reference* is the layer as pypto-lib defines it at `5791a8ee`: its file under
`models/deepseek_v4_flash_dspark/` and the torch `golden_*` function in it, which each module
names; what each layer computes is stated in models/deepseek_v4_flash/README.md.

One module per layer: `hc_pre`, `hc_post`, `moe`, `prefill_indexer`, `prefill_csa`. Each
exposes `CONFIG` (the reference's sizes), `REDUCED` (small sizes, structural constants kept),
`make_inputs(cfg, seed)`, its golden function(s), `golden(inputs, cfg)` and `TOLERANCES`
(the reference's comparator per output). They are written from the reference math, never
from a kernel, and share only the numerics in `_common`.
"""
