"""IR -> IR lowering passes, one per module, each named for what it does (xDSL style)."""
