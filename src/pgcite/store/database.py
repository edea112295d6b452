"""All SQL lives here: connecting, migrations, writes of one document in one transaction, search."""

from __future__ import annotations

import contextlib
import hashlib
import json
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import psycopg
from pgvector import HalfVector
from pgvector.psycopg import register_vector
from psycopg import errors as pgerrors
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from pgcite.config import Settings
from pgcite.errors import ModelMismatchError, StoreError
from pgcite.vocabulary import SearchFilter, SearchHit
from pgcite.store import calibration_sql, search_sql, server
from pgcite.store.schema import MIGRATIONS

READER_ROLE = "pgcite_reader"
MAX_INDEXED_DIMENSION = 4000  # pgvector HNSW on the halfvec type
PGVECTOR_NEEDED = (0, 8)  # halfvec (0.7) and iterative index scans (0.8)
# Candidates per insert while the HNSW graph is built (pgvector's default is 64): a better graph, so
# at a million vectors ef_search 800 finds 0.957 of the exact top 10 instead of 0.878, for 4.6 times
# the build (docs/storage.md, "Vectors at a million"). Also in schema migration 10.
HNSW_EF_CONSTRUCTION = 512
# The same model gives the fingerprint texts the same vectors to about 1e-6 (a server computing in
# half precision to about 1e-3); another model's are far off.
FINGERPRINT_MATCH = 0.99


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


# The recorded model, per connection: it never changes once recorded, and reading it cost two
# queries a question (a search is one round trip, search_sql.py).
_RECORDED_MODEL: weakref.WeakKeyDictionary[psycopg.Connection, tuple[str, int]] = weakref.WeakKeyDictionary()


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


def _where(dsn: str) -> str:
    info = conninfo_to_dict(dsn)
    host = info.get("host") or "localhost"
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or info.get('user') or ''}"


def _connection_error(dsn: str, exc: psycopg.OperationalError) -> StoreError:
    """One line for the ways a connection fails, with what to do."""
    where = _where(dsn)
    text = str(exc).lower()
    state = getattr(exc, "sqlstate", None)
    if state == "28P01" or "password authentication failed" in text:
        return StoreError(f"PostgreSQL at {where} refused the password; fix the user/password in PGCITE_DATABASE_URL")
    if state == "3D000" or ("database" in text and "does not exist" in text):
        return StoreError(f"database at {where} does not exist; create it (createdb) or fix PGCITE_DATABASE_URL")
    if "connection refused" in text or "no such file or directory" in text:
        return StoreError(
            f"cannot connect to PostgreSQL at {where} (connection refused); start the server or fix PGCITE_DATABASE_URL"
        )
    if "timeout" in text or "timed out" in text:
        return StoreError(
            f"PostgreSQL at {where} did not answer in time; check the host and port in PGCITE_DATABASE_URL"
        )
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
    return StoreError(f"cannot connect to PostgreSQL at {where}: {first_line}; check PGCITE_DATABASE_URL")


def _privilege_error(conn: psycopg.Connection, what: str) -> StoreError:
    user, db = conn.info.user, conn.info.dbname
    return StoreError(
        f"role {user!r} may not {what} in database {db!r}; run pgcite as the database owner, "
        f"or have an admin GRANT CREATE ON SCHEMA public TO {user}"
    )


class Store:
    """A pgcite database. Autocommit: every write is an explicit transaction."""

    def __init__(self, conn: psycopg.Connection, where: str) -> None:
        self.conn = conn
        self.where = where  # shown by `pgcite status`

    # --- connecting -------------------------------------------------------------------------

    @classmethod
    def open(cls, settings: Settings, *, read_only: bool = False) -> Store:
        """Connect (starting the embedded server if no DSN is set) and bring the schema up to date.

        read_only: the query path. Runs with read-only transactions as the pgcite_reader role."""
        if settings.database_url:
            dsn, where = settings.database_url, _where(settings.database_url)
        else:
            dsn, where = server.start(settings.home), f"embedded PostgreSQL in {settings.home}"
        try:
            conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise _connection_error(dsn, exc) from None
        store = cls(conn, where)
        store.migrate()
        if read_only:
            cls.configure_reader(conn)
        return store

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def configure_reader(conn: psycopg.Connection) -> None:
        """Make a connection the query path's: vectors as numpy, read-only transactions, and the
        pgcite_reader role where the login may take it."""
        register_vector(conn)
        conn.execute("SET default_transaction_read_only = on")
        # From PostgreSQL 16 on, membership alone does not allow SET ROLE: ask for that right.
        right = "SET" if conn.info.server_version >= 160000 else "MEMBER"
        may_set = conn.execute(
            "SELECT pg_has_role(current_user, oid, %s) FROM pg_roles WHERE rolname = %s", (right, READER_ROLE)
        ).fetchone()
        if may_set and may_set[0]:
            conn.execute(f"SET ROLE {READER_ROLE}")

    # --- schema -----------------------------------------------------------------------------

    def _schema_version(self) -> int:
        if not self.conn.execute("SELECT to_regclass('pgcite_schema') IS NOT NULL").fetchone()[0]:
            return 0
        return self.conn.execute("SELECT coalesce(max(version), 0) FROM pgcite_schema").fetchone()[0]

    def schema_current(self) -> bool:
        return self._schema_version() == len(MIGRATIONS)

    def migrate(self) -> None:
        """Create pgvector and apply pending migrations, serialised across processes. An up-to-date
        database needs no DDL, so a role with SELECT rights alone can search."""
        conn = self.conn
        try:
            if self._schema_version() < len(MIGRATIONS):
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('pgcite:migrate', 0))")
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                    self._require_pgvector()
                    conn.execute("CREATE TABLE IF NOT EXISTS pgcite_schema (version int NOT NULL)")
                    current = self._schema_version()  # again, under the lock
                    for version, step in enumerate(MIGRATIONS[current:], start=current + 1):
                        conn.execute(step)
                        conn.execute("INSERT INTO pgcite_schema (version) VALUES (%s)", (version,))
                    if current < len(MIGRATIONS):
                        self._grant_reader()
        except pgerrors.FeatureNotSupported:
            raise StoreError(
                f"PostgreSQL at {self.where} has no pgvector extension; install pgvector on that server "
                "(e.g. the postgresql-NN-pgvector package), or unset PGCITE_DATABASE_URL to use the embedded one"
            ) from None
        except pgerrors.UndefinedFile:
            raise StoreError(
                f"PostgreSQL at {self.where} has no pgvector extension files; install pgvector on that server"
            ) from None
        except pgerrors.InsufficientPrivilege as exc:
            if "extension" in str(exc):
                raise StoreError(
                    f"role {conn.info.user!r} may not create the vector extension in database {conn.info.dbname!r}; "
                    "have an admin run CREATE EXTENSION vector there, or connect as its owner"
                ) from None
            raise _privilege_error(conn, "create pgcite's tables") from None
        register_vector(conn)

    def _require_pgvector(self) -> None:
        """Half-precision vectors need pgvector 0.7, iterative index scans 0.8."""
        version = self.server_versions()[1]
        if tuple(int(part) for part in version.split(".")[:2]) < PGVECTOR_NEEDED:
            raise StoreError(
                f"PostgreSQL at {self.where} has pgvector {version}; pgcite needs "
                f"{'.'.join(map(str, PGVECTOR_NEEDED))} or newer: install it on that server, then run "
                "ALTER EXTENSION vector UPDATE in the database"
            )

    def _grant_reader(self) -> None:
        """A NOLOGIN role that may only SELECT: the query path runs as it. Best effort: a role
        without CREATEROLE still works, with read-only transactions alone."""
        self.conn.execute(
            f"""
            DO $$ BEGIN
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{READER_ROLE}') THEN
                    CREATE ROLE {READER_ROLE} NOLOGIN;
                END IF;
                GRANT USAGE ON SCHEMA public TO {READER_ROLE};
                GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER_ROLE};
            EXCEPTION WHEN insufficient_privilege THEN NULL;
            END $$"""
        )

    # --- the embedding model ----------------------------------------------------------------

    def stored_model(self) -> tuple[str, int] | None:
        if (recorded := _RECORDED_MODEL.get(self.conn)) is not None:
            return recorded
        rows = dict(
            self.conn.execute(
                "SELECT key, value FROM pgcite_settings WHERE key IN ('embedding_model', 'embedding_dimension')"
            ).fetchall()
        )
        if "embedding_model" not in rows:
            return None
        recorded = _RECORDED_MODEL[self.conn] = rows["embedding_model"], int(rows["embedding_dimension"])
        return recorded

    def bind_model(self, model: str, dimension: int) -> None:
        """Record the model on first use; refuse any other model afterwards."""
        if dimension > MAX_INDEXED_DIMENSION:
            raise StoreError(
                f"{model} makes {dimension}-dimensional vectors; pgvector's HNSW index takes at most "
                f"{MAX_INDEXED_DIMENSION}: choose a smaller model, or ask the server for fewer dimensions"
            )
        with self.conn.transaction():
            # The same lock as migrations: both change the schema and grant rights.
            self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('pgcite:migrate', 0))")
            stored = self.stored_model()
            if stored is None:
                self.conn.execute(
                    "INSERT INTO pgcite_settings (key, value) VALUES ('embedding_model', %s), ('embedding_dimension', %s)",
                    (model, str(dimension)),
                )
                # The dimension is an integer we computed, not user text: safe to format.
                self.conn.execute(f"ALTER TABLE chunks ADD COLUMN embedding halfvec({int(dimension)}) NOT NULL")
                self._grant_reader()
                return
        self.check_model(model, dimension)

    def check_model(self, model: str, dimension: int | None = None) -> None:
        stored = self.stored_model()
        if stored is None:
            raise StoreError(
                f"nothing has been ingested into {self.where} yet; ingest a folder first (`pgcite ingest FOLDER`)",
                kind="conflict",
            )
        stored_model, stored_dim = stored
        if stored_model == model and dimension is not None and dimension != stored_dim:
            raise ModelMismatchError(
                f"the embedding model answers with {dimension}-dimensional vectors under the name {model}, but the "
                f"database holds {stored_dim}-dimensional vectors of that name: the server runs another model; "
                "point PGCITE_EMBEDDING_URL at one serving the model the database was built with, or use a fresh "
                "database (PGCITE_HOME / PGCITE_DATABASE_URL) and re-ingest"
            )
        if stored_model != model or (dimension is not None and dimension != stored_dim):
            asked = f"{model}" + (f" ({dimension} dims)" if dimension is not None else "")
            raise ModelMismatchError(
                f"the database holds vectors of {stored_model} ({stored_dim} dims) but pgcite is set to use {asked}; "
                f"set PGCITE_EMBEDDING_MODEL={stored_model}, or use a fresh database (PGCITE_HOME / PGCITE_DATABASE_URL) "
                "and re-ingest"
            )

    def check_fingerprint(self, model: str, vectors: np.ndarray, *, record: bool = False) -> None:
        """Refuse an embedder whose vectors of the fixed fingerprint texts differ from those stored
        at the first ingest: another model served under the recorded name. `record`: store them
        when none are (a database from before fingerprints)."""
        row = self.conn.execute("SELECT value FROM pgcite_settings WHERE key = 'embedding_fingerprint'").fetchone()
        if row is None:
            if record:
                self.conn.execute(
                    "INSERT INTO pgcite_settings (key, value) VALUES ('embedding_fingerprint', %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    (json.dumps(np.round(vectors, 6).tolist()),),
                )
            return
        stored = np.asarray(json.loads(row[0]), dtype=np.float32)
        if stored.shape != vectors.shape:
            return  # a dimension that differs is check_model's to explain
        agreement = float(np.min(np.sum(stored * vectors, axis=1)))
        if agreement < FINGERPRINT_MATCH:
            raise ModelMismatchError(
                f"the embedding model answers under the name {model} with vectors unlike those the database was "
                f"built with (cosine {agreement:.2f} on fixed texts, {FINGERPRINT_MATCH} needed): the server runs "
                "another model under that name; point PGCITE_EMBEDDING_URL at one serving the model the database "
                "was built with, or use a fresh database (PGCITE_HOME / PGCITE_DATABASE_URL) and re-ingest"
            )

    # --- sources and documents --------------------------------------------------------------

    def upsert_source(
        self,
        name: str,
        location: str,
        base_url: str,
        version: str = "",
        *,
        site: str = "",
        default_version: str | None = None,
        options: dict | None = None,
    ) -> tuple[str, str] | None:
        """Create or update a source; returns its previous (base URL, version), None when new.
        options: the ingest's arguments, kept for a sync."""
        default = version if default_version is None else default_version
        with self.conn.transaction():
            previous = self.conn.execute(
                "SELECT base_url, version FROM sources WHERE name = %s FOR UPDATE", (name,)
            ).fetchone()
            self.conn.execute(
                """INSERT INTO sources (name, location, base_url, version, site, default_version, options)
                   VALUES (%s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (name) DO UPDATE
                   SET location = excluded.location, base_url = excluded.base_url, version = excluded.version,
                       site = excluded.site, default_version = excluded.default_version, options = excluded.options,
                       updated_at = now()""",
                (name, location, base_url, version, site, default, Jsonb(options or {})),
            )
            self.conn.execute(
                "UPDATE chunks SET in_default_version = (version = %(d)s) "
                "WHERE source = %(n)s AND in_default_version <> (version = %(d)s)",
                {"d": default, "n": name},
            )
        return (previous[0], previous[1]) if previous else None

    @contextlib.contextmanager
    def source_lock(self, name: str) -> Iterator[None]:
        """Serialise ingests of one source across processes (the second waits, then finds the
        work done)."""
        self.conn.execute("SELECT pg_advisory_lock(hashtextextended('pgcite:source:' || %s, 0))", (name,))
        try:
            yield
        finally:
            if self.conn.info.transaction_status == pq.TransactionStatus.IDLE:
                self.conn.execute("SELECT pg_advisory_unlock(hashtextextended('pgcite:source:' || %s, 0))", (name,))
            else:  # left mid-command (Ctrl-C): the lock goes with the session
                self.conn.close()

    def stored_files(self, source: str) -> dict[str, StoredFile]:
        rows = self.conn.execute(
            "SELECT path, checksum, includes, stamp, file_checksum FROM documents WHERE source = %s", (source,)
        )
        return {
            path: StoredFile(checksum, tuple(includes), stamp, file_checksum)
            for path, checksum, includes, stamp, file_checksum in rows
        }

    def restamp(self, source: str, stamps: dict[str, tuple[str, str]]) -> None:
        """path -> (stamp, file checksum) of files read again and found the same (touched, or
        stored before stamps were kept): the next scan skips them."""
        if stamps:
            with self.conn.transaction(), self.conn.cursor() as cur:
                cur.executemany(
                    "UPDATE documents SET stamp = %s, file_checksum = %s WHERE source = %s AND path = %s",
                    [(stamp, file_checksum, source, path) for path, (stamp, file_checksum) in stamps.items()],
                )

    def cached_embeddings(self, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Vectors already stored for these texts (any document): the embedding cache."""
        if not hashes:
            return {}
        rows = self.conn.execute(
            "SELECT DISTINCT ON (embed_hash) embed_hash, embedding FROM chunks WHERE embed_hash = ANY(%s)",
            (list(hashes),),
        ).fetchall()
        return {bytes(h): v.to_numpy().astype(np.float32) for h, v in rows}

    def replace_document(
        self,
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
    ) -> None:
        """Insert or replace one document and all its chunks, atomically."""
        with self.conn.transaction():
            self._statistics_now_stale()
            (doc_id,) = self.conn.execute(
                """INSERT INTO documents (source, path, title, url, checksum, version, kind, includes, stamp,
                                          file_checksum)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (source, path) DO UPDATE
                   SET title = excluded.title, url = excluded.url, checksum = excluded.checksum,
                       version = excluded.version, kind = excluded.kind, includes = excluded.includes,
                       stamp = excluded.stamp, file_checksum = excluded.file_checksum, ingested_at = now()
                   RETURNING id""",
                (source, path, title, url, checksum, version, kind, list(includes), stamp, file_checksum),
            ).fetchone()
            self.conn.execute("DELETE FROM chunks WHERE document_id = %s", (doc_id,))
            with self.conn.cursor().copy(
                """COPY chunks (id, document_id, source, path, version, ord, heading, heading_path, breadcrumb,
                                anchor, url, content, tokens, embed_hash, embedding, flags)
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
                        ]
                    )
            self.conn.execute(
                "UPDATE chunks SET in_default_version = false WHERE document_id = %s AND version <> "
                "(SELECT default_version FROM sources WHERE name = %s)",
                (doc_id, source),
            )
            # The page prior's vector (search_sql.PAGE_WEIGHT), kept so a search reads one row a page.
            self.conn.execute(
                "UPDATE documents SET page_embedding = (SELECT avg(embedding) FROM chunks "
                "WHERE document_id = %s) WHERE id = %s",
                (doc_id, doc_id),
            )

    def delete_documents(self, source: str, paths: Sequence[str]) -> int:
        if not paths:
            return 0
        with self.conn.transaction():
            self._statistics_now_stale()
            cur = self.conn.execute("DELETE FROM documents WHERE source = %s AND path = ANY(%s)", (source, list(paths)))
            return cur.rowcount

    def remove_source(self, name: str) -> bool:
        with self.conn.transaction():
            removed = self.conn.execute("DELETE FROM sources WHERE name = %s", (name,)).rowcount > 0
        if removed:  # its words no longer count in BM25
            self.refresh_statistics()
        return removed

    def list_sources(self) -> list[SourceInfo]:
        rows = self.conn.execute(
            """SELECT s.name, s.location, s.base_url,
                      (SELECT count(*) FROM documents d WHERE d.source = s.name),
                      (SELECT count(*) FROM chunks c WHERE c.source = s.name),
                      to_char(s.updated_at, 'YYYY-MM-DD HH24:MI:SS'), s.site, s.default_version,
                      ARRAY(SELECT DISTINCT d.version FROM documents d WHERE d.source = s.name ORDER BY 1),
                      s.options, extract(epoch FROM s.sync_interval)::int,
                      coalesce(to_char(s.synced_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), ''), s.last_sync,
                      s.calibration
               FROM sources s ORDER BY s.name"""
        ).fetchall()
        return [
            SourceInfo(
                *row[:8],
                versions=tuple(row[8]),
                options=row[9],
                sync_interval=row[10],
                synced_at=row[11],
                last_sync=row[12],
                calibration=row[13],
            )
            for row in rows
        ]

    def has_chunks(self) -> bool:  # without counting a million rows
        return self.conn.execute("SELECT EXISTS (SELECT FROM chunks)").fetchone()[0]

    def chunk_count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def server_versions(self) -> tuple[str, str]:
        pg = self.conn.execute("SHOW server_version").fetchone()[0]
        vector = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        return pg, vector

    # --- the vector index -------------------------------------------------------------------

    VECTOR_INDEX = "chunks_embedding_hnsw"

    def has_vector_index(self) -> bool:
        return self.conn.execute("SELECT to_regclass(%s) IS NOT NULL", (self.VECTOR_INDEX,)).fetchone()[0]

    def drop_vector_index(self) -> None:
        """Before a bulk load: COPY into an HNSW-indexed table is ~100x slower than building after."""
        self.conn.execute(f"DROP INDEX IF EXISTS {self.VECTOR_INDEX}")

    def refresh_indexes(self) -> None:
        """After an ingest: build the HNSW index if it is missing; refresh BM25's statistics if chunks
        were written or removed since they last were (by this ingest, or by one killed before it got here)."""
        if (model := self.stored_model()) is not None and not self.has_vector_index():
            self.conn.execute(f"SET maintenance_work_mem = '{index_build_memory(self.chunk_count(), model[1])}MB'")
            self.conn.execute(
                f"CREATE INDEX IF NOT EXISTS {self.VECTOR_INDEX} ON chunks "
                f"USING hnsw (embedding halfvec_cosine_ops) WITH (ef_construction = {HNSW_EF_CONSTRUCTION})"
            )
            self.conn.execute("RESET maintenance_work_mem")
        if self.statistics_stale():
            self.refresh_statistics()

    def refresh_statistics(self) -> None:
        """BM25's statistics (materialized views) from the chunks stored now."""
        # The flag goes first: a write committed after it sets it again, and is refreshed next time.
        self.conn.execute("DELETE FROM pgcite_settings WHERE key = 'statistics_stale'")
        self.conn.execute("REFRESH MATERIALIZED VIEW lexeme_idf")
        self.conn.execute("REFRESH MATERIALIZED VIEW source_stats")

    def statistics_stale(self) -> bool:
        return self.conn.execute(
            "SELECT EXISTS (SELECT FROM pgcite_settings WHERE key = 'statistics_stale')"
        ).fetchone()[0]

    def _statistics_now_stale(self) -> None:
        self.conn.execute(
            "INSERT INTO pgcite_settings (key, value) VALUES ('statistics_stale', 'true') ON CONFLICT (key) DO NOTHING"
        )

    # --- search -----------------------------------------------------------------------------

    def search(self, vector: np.ndarray, text: str, k: int, **options) -> list[SearchHit]:
        """The k best chunks for a question, best first (search_sql.search has the options)."""
        return search_sql.search(self.conn, vector, text, k, **options)

    def unknown_terms(self, terms: Sequence[str], filters: SearchFilter = SearchFilter()) -> list[str]:
        """The terms no chunk of the filter's source (or of the sources it allows) holds a word of."""
        return search_sql.unknown_terms(self.conn, terms, filters)

    # --- calibration (calibration.py) ---------------------------------------------------------

    def source_chunk_count(self, source: str) -> int:
        return calibration_sql.chunk_count(self.conn, source)

    def sample_headings(self, source: str, limit: int) -> list[tuple[str, str]]:
        return calibration_sql.sample_headings(self.conn, source, limit)

    def best_scores(self, vectors: np.ndarray, source: str) -> np.ndarray:
        return calibration_sql.best_scores(self.conn, vectors, source)

    def save_calibration(self, source: str, calibration: dict | None) -> None:
        calibration_sql.save(self.conn, source, calibration)

    def load_calibration(self, source: str) -> dict | None:
        return calibration_sql.load(self.conn, source)


def index_build_memory(rows: int, dimension: int) -> int:
    """Megabytes of maintenance_work_mem for building the HNSW index over `rows` vectors: the whole
    graph in memory (a half-precision vector and its neighbour lists, about 2 * dimension + 700
    bytes a row, a quarter more for margin), from 256 MB to 4 GB. A graph that outgrows it still
    builds, many times slower (docs/storage.md, "Vectors at a million")."""
    return max(256, min(4096, round(rows * (2 * dimension + 700) * 1.25 / 2**20)))


def embed_hash(model: str, text: str) -> bytes:
    return hashlib.sha256(f"{model}\0{text}".encode()).digest()
