"""Races: conflicting accesses that the task graph does not order (R501-R505), and the
assumption the lint makes about rows chosen by data (R506)."""
