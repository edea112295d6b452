"""Question sets, metrics, runs and comparisons (pgcite eval, eval/ scripts)."""
