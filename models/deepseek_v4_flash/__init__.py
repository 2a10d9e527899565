"""DeepSeek-V4-Flash layers (MoE, hc_pre/hc_post, prefill indexer, sparse CSA)."""
