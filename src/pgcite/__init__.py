"""pgcite: cited answers from your documentation, stored in PostgreSQL + pgvector."""

__version__ = "0.1.0"
