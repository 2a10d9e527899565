"""Races: conflicting accesses that the task graph does not order (R501-R505)."""
