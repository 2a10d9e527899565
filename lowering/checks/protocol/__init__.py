"""Protocol rules: signal arithmetic, epochs, clears, data-before-signal, rank divergence.

The shared counting model (which notifies a wait must observe, per epoch and per cell)
lives in ``counting``; every other module here is one rule.
"""
