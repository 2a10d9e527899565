"""Real layers written in the dslc language, with their goldens and configurations."""
