"""Errors a user can act on. Each message is one line: what happened, then what to do."""


class PgciteError(Exception):
    """Base class: the CLI prints the message alone, never a traceback."""


class SourceError(PgciteError):
    """A whole source cannot be read (missing folder, corrupt zip, S3 access denied)."""


class StoreError(PgciteError):
    """The database cannot be reached or used (no pgvector, no rights, bad password...)."""


class ModelMismatchError(StoreError):
    """The stored vectors come from another embedding model or dimension."""


class EmbeddingError(PgciteError):
    """The embedding model or server failed; nothing was written for the affected files."""
