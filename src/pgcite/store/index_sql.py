"""What a search reads besides the rows, and when it is rebuilt: the HNSW vector index (dropped for
a bulk load, built after it) and BM25's statistics (materialized views, flagged stale by writes)."""

from __future__ import annotations

import psycopg

from pgcite.store.scalar import scalar

# Candidates per insert while the HNSW graph is built (pgvector's default is 64): a better graph, so
# at a million vectors ef_search 800 finds 0.957 of the exact top 10 instead of 0.878, for 4.6 times
# the build (docs/storage.md, "Vectors at a million"). Also in schema migration 10.
HNSW_EF_CONSTRUCTION = 512
VECTOR_INDEX = "chunks_embedding_hnsw"


def has_chunks(conn: psycopg.Connection) -> bool:  # without counting a million rows
    return scalar(conn, "SELECT EXISTS (SELECT FROM chunks)")


def chunk_count(conn: psycopg.Connection) -> int:
    return scalar(conn, "SELECT count(*) FROM chunks")


def has_vector_index(conn: psycopg.Connection) -> bool:
    return scalar(conn, "SELECT to_regclass(%s) IS NOT NULL", (VECTOR_INDEX,))


def drop_vector_index(conn: psycopg.Connection) -> None:
    """Before a bulk load: COPY into an HNSW-indexed table is ~100x slower than building after."""
    conn.execute(f"DROP INDEX IF EXISTS {VECTOR_INDEX}")


def refresh_indexes(conn: psycopg.Connection, model: tuple[str, int] | None) -> None:
    """After an ingest: build the HNSW index if it is missing; refresh BM25's statistics if chunks
    were written or removed since they last were (by this ingest, or by one killed before it got here).
    model: the recorded (model, dimension), None before the first ingest (no vector column yet)."""
    if model is not None and not has_vector_index(conn):
        conn.execute(f"SET maintenance_work_mem = '{index_build_memory(chunk_count(conn), model[1])}MB'")
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {VECTOR_INDEX} ON chunks "
            f"USING hnsw (embedding halfvec_cosine_ops) WITH (ef_construction = {HNSW_EF_CONSTRUCTION})"
        )
        conn.execute("RESET maintenance_work_mem")
    if statistics_stale(conn):
        refresh_statistics(conn)


def refresh_statistics(conn: psycopg.Connection) -> None:
    """BM25's statistics (materialized views) from the chunks stored now."""
    # The flag goes first: a write committed after it sets it again, and is refreshed next time.
    conn.execute("DELETE FROM pgcite_settings WHERE key = 'statistics_stale'")
    conn.execute("REFRESH MATERIALIZED VIEW lexeme_idf")
    conn.execute("REFRESH MATERIALIZED VIEW source_stats")


def statistics_stale(conn: psycopg.Connection) -> bool:
    return scalar(conn, "SELECT EXISTS (SELECT FROM pgcite_settings WHERE key = 'statistics_stale')")


def statistics_now_stale(conn: psycopg.Connection) -> None:
    conn.execute(
        "INSERT INTO pgcite_settings (key, value) VALUES ('statistics_stale', 'true') ON CONFLICT (key) DO NOTHING"
    )


def index_build_memory(rows: int, dimension: int) -> int:
    """Megabytes of maintenance_work_mem for building the HNSW index over `rows` vectors: the whole
    graph in memory (a half-precision vector and its neighbour lists, about 2 * dimension + 700
    bytes a row, a quarter more for margin), from 256 MB to 4 GB. A graph that outgrows it still
    builds, many times slower (docs/storage.md, "Vectors at a million")."""
    return max(256, min(4096, round(rows * (2 * dimension + 700) * 1.25 / 2**20)))
