"""PyPTO target: one ``pypto.language`` model file per layer."""
