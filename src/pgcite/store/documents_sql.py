"""The rows of sources and documents: a source's record, one document and its chunks written in one
transaction, what an ingest compares against (stored files, cached vectors), and removals."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg import pq
from psycopg.rows import kwargs_row
from psycopg.types.json import Jsonb

from pgcite.store import index_sql
from pgcite.store.scalar import scalar


@dataclass(frozen=True)
class ChunkRow:
    id: str
    ord: int
    heading: str
    heading_path: tuple[str, ...]
    breadcrumb: str
    anchor: str | None
    url: str
    content: str
    tokens: int
    embed_hash: bytes
    embedding: np.ndarray
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceInfo:
    name: str
    location: str
    base_url: str
    documents: int
    chunks: int
    updated_at: str
    site: str = ""
    default_version: str = ""
    versions: tuple[str, ...] = ()
    default_language: str = ""
    languages: dict[str, int] = field(default_factory=dict)  # language -> pages, the default first
    options: dict = field(default_factory=dict)  # the ingest's arguments, for a sync (sync_rows.py)
    sync_interval: int | None = None  # seconds between scheduled syncs; None: no schedule
    synced_at: str = ""
    last_sync: dict | None = None  # sync_rows.record: trigger, seconds, counts, what changed, error
    calibration: dict | None = None  # calibration.Calibration.to_json: the bar measured for its model


class StoredFile(NamedTuple):
    checksum: str  # ingest.processing_checksum
    includes: tuple[str, ...]
    stamp: str  # the listing's stamp of the file when it was read (sources.py)
    file_checksum: str  # sha256 of the file's bytes


def upsert_source(
    conn: psycopg.Connection,
    name: str,
    location: str,
    base_url: str,
    version: str = "",
    *,
    site: str = "",
    default_version: str | None = None,
    default_language: str = "",
    options: dict | None = None,
) -> tuple[str, str] | None:
    """Create or update a source; returns its previous (base URL, version), None when new.
    options: the ingest's arguments, kept for a sync."""
    default = version if default_version is None else default_version
    with conn.transaction():
        previous = conn.execute("SELECT base_url, version FROM sources WHERE name = %s FOR UPDATE", (name,)).fetchone()
        conn.execute(
            """INSERT INTO sources (name, location, base_url, version, site, default_version, default_language,
                                    options)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (name) DO UPDATE
               SET location = excluded.location, base_url = excluded.base_url, version = excluded.version,
                   site = excluded.site, default_version = excluded.default_version,
                   default_language = excluded.default_language, options = excluded.options, updated_at = now()""",
            (name, location, base_url, version, site, default, default_language, Jsonb(options or {})),
        )
        conn.execute(
            "UPDATE chunks SET in_default_version = (version = %(d)s) "
            "WHERE source = %(n)s AND in_default_version <> (version = %(d)s)",
            {"d": default, "n": name},
        )
    return (previous[0], previous[1]) if previous else None


@contextlib.contextmanager
def source_lock(conn: psycopg.Connection, name: str) -> Iterator[None]:
    """Serialise ingests of one source across processes (the second waits, then finds the
    work done)."""
    conn.execute("SELECT pg_advisory_lock(hashtextextended('pgcite:source:' || %s, 0))", (name,))
    try:
        yield
    finally:
        if conn.info.transaction_status == pq.TransactionStatus.IDLE:
            conn.execute("SELECT pg_advisory_unlock(hashtextextended('pgcite:source:' || %s, 0))", (name,))
        else:  # left mid-command (Ctrl-C): the lock goes with the session
            conn.close()


def stored_files(conn: psycopg.Connection, source: str) -> dict[str, StoredFile]:
    rows = conn.execute(
        "SELECT path, checksum, includes, stamp, file_checksum FROM documents WHERE source = %s", (source,)
    )
    return {
        path: StoredFile(checksum, tuple(includes), stamp, file_checksum)
        for path, checksum, includes, stamp, file_checksum in rows
    }


def restamp(conn: psycopg.Connection, source: str, stamps: dict[str, tuple[str, str]]) -> None:
    """path -> (stamp, file checksum) of files read again and found the same (touched, or
    stored before stamps were kept): the next scan skips them."""
    if stamps:
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "UPDATE documents SET stamp = %s, file_checksum = %s WHERE source = %s AND path = %s",
                [(stamp, file_checksum, source, path) for path, (stamp, file_checksum) in stamps.items()],
            )


def reroute_document(
    conn: psycopg.Connection, source: str, path: str, url: str, checksum: str, stamp: str, file_checksum: str
) -> bool:
    """A page whose text is as stored, published at `url` now (another builder, route or base URL):
    its link and its chunks' (each its anchor on the page) set in place, vectors and text kept.
    True when its link moved."""
    with conn.transaction():
        row = conn.execute(
            "SELECT id, url FROM documents WHERE source = %s AND path = %s FOR UPDATE", (source, path)
        ).fetchone()
        if row is None:
            return False
        conn.execute(
            "UPDATE documents SET url = %s, checksum = %s, stamp = %s, file_checksum = %s WHERE id = %s",
            (url, checksum, stamp, file_checksum, row[0]),
        )
        # As the writer joins them (join_url): no link without a base URL, `#anchor` where a section has one.
        conn.execute(
            "UPDATE chunks SET url = CASE WHEN %(url)s = '' OR coalesce(anchor, '') = '' THEN %(url)s "
            "ELSE %(url)s || '#' || anchor END WHERE document_id = %(id)s",
            {"url": url, "id": row[0]},
        )
    return row[1] != url


def cached_embeddings(conn: psycopg.Connection, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
    """Vectors already stored for these texts (any document): the embedding cache."""
    if not hashes:
        return {}
    rows = conn.execute(
        "SELECT DISTINCT ON (embed_hash) embed_hash, embedding FROM chunks WHERE embed_hash = ANY(%s)",
        (list(hashes),),
    ).fetchall()
    return {bytes(h): v.to_numpy().astype(np.float32) for h, v in rows}


# Each section's words and length, from its chunks (schema migration 20).
_SECTIONS_OF_DOCUMENT = """
INSERT INTO sections (document_id, heading_path, source, tokens, fts)
SELECT document_id, heading_path, min(source), sum(tokens), pgcite_tsvector_sum(fts ORDER BY ord)
FROM chunks WHERE document_id = %s GROUP BY document_id, heading_path
"""


def replace_document(
    conn: psycopg.Connection,
    source: str,
    path: str,
    title: str,
    url: str,
    checksum: str,
    chunks: Sequence[ChunkRow],
    version: str = "",
    kind: str = "page",
    includes: Sequence[str] = (),
    stamp: str = "",
    file_checksum: str = "",
    *,
    markdown: str | None = None,
    description: str = "",
    language: str = "",
    position: int | None = None,
) -> None:
    """Insert or replace one document and all its chunks, atomically. `markdown`: the page as cleaned
    (None: not kept, as before migration 14); `position`: its place in the site's reading order."""
    with conn.transaction():
        index_sql.statistics_now_stale(conn)
        doc_id = scalar(
            conn,
            """INSERT INTO documents (source, path, title, url, checksum, version, kind, includes, stamp,
                                      file_checksum, markdown, description, language, position)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (source, path) DO UPDATE
               SET title = excluded.title, url = excluded.url, checksum = excluded.checksum,
                   version = excluded.version, kind = excluded.kind, includes = excluded.includes,
                   stamp = excluded.stamp, file_checksum = excluded.file_checksum, markdown = excluded.markdown,
                   description = excluded.description, language = excluded.language,
                   position = excluded.position, ingested_at = now()
               RETURNING id""",
            (
                source,
                path,
                title,
                url,
                checksum,
                version,
                kind,
                list(includes),
                stamp,
                file_checksum,
                markdown,
                description,
                language,
                position,
            ),
        )
        conn.execute("DELETE FROM chunks WHERE document_id = %s", (doc_id,))
        with conn.cursor().copy(
            """COPY chunks (id, document_id, source, path, version, ord, heading, heading_path, breadcrumb,
                            anchor, url, content, tokens, embed_hash, embedding, flags, language)
               FROM STDIN WITH (FORMAT BINARY)"""
        ) as copy:
            copy.set_types(
                [
                    "text",
                    "int8",
                    "text",
                    "text",
                    "text",
                    "int4",
                    "text",
                    "text[]",
                    "text",
                    "text",
                    "text",
                    "text",
                    "int4",
                    "bytea",
                    "halfvec",
                    "text[]",
                    "text",
                ]
            )
            for c in chunks:
                copy.write_row(
                    [
                        c.id,
                        doc_id,
                        source,
                        path,
                        version,
                        c.ord,
                        c.heading,
                        list(c.heading_path),
                        c.breadcrumb,
                        c.anchor,
                        c.url,
                        c.content,
                        c.tokens,
                        c.embed_hash,
                        HalfVector(c.embedding),
                        list(c.flags),
                        language,
                    ]
                )
        conn.execute(
            "UPDATE chunks SET in_default_version = false WHERE document_id = %s AND version <> "
            "(SELECT default_version FROM sources WHERE name = %s)",
            (doc_id, source),
        )
        conn.execute("DELETE FROM sections WHERE document_id = %s", (doc_id,))
        conn.execute(_SECTIONS_OF_DOCUMENT, (doc_id,))
        # The page prior's vector (search_sql.PAGE_WEIGHT), kept so a search reads one row a page.
        conn.execute(
            "UPDATE documents SET page_embedding = (SELECT avg(embedding) FROM chunks "
            "WHERE document_id = %s) WHERE id = %s",
            (doc_id, doc_id),
        )


def delete_documents(conn: psycopg.Connection, source: str, paths: Sequence[str]) -> int:
    if not paths:
        return 0
    with conn.transaction():
        index_sql.statistics_now_stale(conn)
        cur = conn.execute("DELETE FROM documents WHERE source = %s AND path = ANY(%s)", (source, list(paths)))
        return cur.rowcount


def remove_source(conn: psycopg.Connection, name: str) -> bool:
    with conn.transaction():
        removed = conn.execute("DELETE FROM sources WHERE name = %s", (name,)).rowcount > 0
    if removed:  # its words no longer count in BM25
        index_sql.refresh_statistics(conn)
    return removed


def _source_info(**row: Any) -> SourceInfo:
    return SourceInfo(
        **row | {"versions": tuple(row["versions"]), "languages": {k: int(v) for k, v in row["languages"] or []}}
    )


def record_languages(conn: psycopg.Connection, name: str) -> None:
    """The languages a source's pages are in, kept on the source for every search to read."""
    conn.execute(
        "UPDATE sources SET languages = ARRAY(SELECT DISTINCT language FROM documents "
        "WHERE source = %(n)s AND language <> '' ORDER BY 1) WHERE name = %(n)s",
        {"n": name},
    )


def source_languages(conn: psycopg.Connection, sources: Sequence[str] | None) -> list[tuple[str, str, list[str]]]:
    """(name, default language, languages) of the sources whose pages name a language."""
    return conn.execute(
        "SELECT name, default_language, languages FROM sources "
        "WHERE cardinality(languages) > 0 AND (%(s)s::text[] IS NULL OR name = ANY(%(s)s)) ORDER BY name",
        {"s": list(sources) if sources is not None else None},
    ).fetchall()


def list_sources(conn: psycopg.Connection) -> list[SourceInfo]:
    with conn.cursor(row_factory=kwargs_row(_source_info)) as cursor:
        return cursor.execute(
            """SELECT s.name, s.location, s.base_url,
                      (SELECT count(*) FROM documents d WHERE d.source = s.name) AS documents,
                      (SELECT count(*) FROM chunks c WHERE c.source = s.name) AS chunks,
                      to_char(s.updated_at, 'YYYY-MM-DD HH24:MI:SS') AS updated_at, s.site, s.default_version,
                      ARRAY(SELECT DISTINCT d.version FROM documents d WHERE d.source = s.name ORDER BY 1) AS versions,
                      s.default_language,
                      (SELECT array_agg(ARRAY[l.language, l.pages::text]
                                        ORDER BY l.language <> s.default_language, l.language)
                       FROM (SELECT d.language, count(*) AS pages FROM documents d
                             WHERE d.source = s.name AND d.language <> '' GROUP BY 1) l) AS languages,
                      s.options, extract(epoch FROM s.sync_interval)::int AS sync_interval,
                      coalesce(to_char(s.synced_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), '') AS synced_at,
                      s.last_sync, s.calibration
               FROM sources s ORDER BY s.name"""
        ).fetchall()


def embed_hash(model: str, text: str) -> bytes:
    return hashlib.sha256(f"{model}\0{text}".encode()).digest()
