"""Errors a user can act on. Each message is one line: what happened, then what to do. Each
carries a kind, which the server maps to an HTTP status (KINDS); messages name no CLI flag,
since the same core answers the command line and HTTP."""

from __future__ import annotations

# kind -> HTTP status
KINDS = {
    "bad_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "too_large": 413,
    "unsupported_media_type": 415,
    "rate_limited": 429,
    "unavailable": 503,
}


def error_body(message: str, kind: str) -> dict:
    """An error as every HTTP response of pgcite's carries it, in OpenAI's shape."""
    return {"error": {"message": message, "type": kind, "code": kind}}


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (its class name when it has none)."""
    return (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]


class PgciteError(Exception):
    """Base class: the CLI prints the message alone, never a traceback."""

    kind = "bad_request"

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            if kind not in KINDS:
                raise ValueError(f"unknown error kind {kind!r}")
            self.kind = kind

    @property
    def status(self) -> int:
        return KINDS[self.kind]


class UnknownSourceError(PgciteError):
    """A question or command names a source there is not (a typo): a usage error, exit 2 on the CLI."""

    kind = "not_found"
    exit_code = 2


class SourceError(PgciteError):
    """A whole source cannot be read (missing folder, corrupt zip, S3 access denied)."""


class StoreError(PgciteError):
    """The database cannot be reached or used (no pgvector, no rights, bad password...)."""

    kind = "unavailable"


class ModelMismatchError(StoreError):
    """The stored vectors come from another embedding model or dimension."""

    kind = "conflict"


class EmbeddingError(PgciteError):
    """The embedding model or server failed; nothing was written for the affected files."""

    kind = "unavailable"
