"""NumPy target: the kernels the simulator runs."""
