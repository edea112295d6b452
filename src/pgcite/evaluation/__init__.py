"""Question sets, metrics, runs and comparisons (pgcite eval, eval/ scripts).
May import the core and everything below it; only the cli imports it."""
