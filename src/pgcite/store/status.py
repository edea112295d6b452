"""What `pgcite status` reports about the database: versions, model, sources, size, indexes."""

from __future__ import annotations

from dataclasses import dataclass

from pgcite.store import log_rows
from pgcite.store.database import SourceInfo, Store


@dataclass(frozen=True)
class Status:
    database: str  # where it is, for people
    postgres: str
    pgvector: str
    model: tuple[str, int] | None  # the stored vectors' model and dimension; None before any ingest
    sources: list[SourceInfo]
    chunks: int
    vector_index: bool
    schema_current: bool
    answers_logged: int


def status(store: Store) -> Status:
    pg, vector = store.server_versions()
    return Status(
        store.where,
        pg,
        vector,
        store.stored_model(),
        store.list_sources(),
        store.chunk_count(),
        store.has_vector_index(),
        store.schema_current(),
        log_rows.count(store),
    )
