"""A pgcite database: connecting, migrations and the embedding model it is bound to. The Store object
carries the connection; the SQL of documents, indexes, search and calibration lives in the *_sql modules."""

from __future__ import annotations

import contextlib
import json
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import errors as pgerrors
from psycopg.conninfo import conninfo_to_dict

from pgcite.config import Settings
from pgcite.errors import ModelMismatchError, StoreError
from pgcite.store import calibration_sql, documents_sql, index_sql, search_sql, server
from pgcite.store.documents_sql import SourceInfo, StoredFile
from pgcite.store.scalar import scalar
from pgcite.store.schema import MIGRATIONS
from pgcite.vocabulary import SearchFilter, SearchHit

READER_ROLE = "pgcite_reader"
MAX_INDEXED_DIMENSION = 4000  # pgvector HNSW on the halfvec type
PGVECTOR_NEEDED = (0, 8)  # halfvec (0.7) and iterative index scans (0.8)
# The same model gives the fingerprint texts the same vectors to about 1e-6 (a server computing in
# half precision to about 1e-3); another model's are far off.
FINGERPRINT_MATCH = 0.99

# The recorded model, per connection: it never changes once recorded, and reading it cost two
# queries a question (a search is one round trip, search_sql.py).
_RECORDED_MODEL: weakref.WeakKeyDictionary[psycopg.Connection, tuple[str, int]] = weakref.WeakKeyDictionary()


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


# How long a connection trusts the languages it read (a new language is searched within this).
LANGUAGES_TTL = 5.0
# Per connection, not per Store (the query path wraps each pooled connection in a new Store): when it
# read them, after how many of this process's own changes (searched at once), and what it read.
_LANGUAGES: weakref.WeakKeyDictionary[psycopg.Connection, tuple[float, int, list]] = weakref.WeakKeyDictionary()
_languages_changed = 0


def _languages_now_changed() -> None:
    global _languages_changed
    _languages_changed += 1


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
        dsn, where = cls.locate(settings)
        try:
            conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise _connection_error(dsn, exc) from None
        store = cls(conn, where)
        store.migrate()
        if read_only:
            cls.configure_reader(conn)
        return store

    @staticmethod
    def locate(settings: Settings) -> tuple[str, str]:
        """The DSN to connect with (starting the embedded server when none is set), and where that is."""
        if settings.database_url:
            return settings.database_url, _where(settings.database_url)
        return server.start(settings.home), f"embedded PostgreSQL in {settings.home}"

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
        if not scalar(self.conn, "SELECT to_regclass('pgcite_schema') IS NOT NULL"):
            return 0
        return scalar(self.conn, "SELECT coalesce(max(version), 0) FROM pgcite_schema")

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

    def server_versions(self) -> tuple[str, str]:
        pg = scalar(self.conn, "SHOW server_version")
        vector = scalar(self.conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        return pg, vector

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
        rows: dict[str, str] = dict(
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
                    "INSERT INTO pgcite_settings (key, value) "
                    "VALUES ('embedding_model', %s), ('embedding_dimension', %s)",
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
                f"set PGCITE_EMBEDDING_MODEL={stored_model}, or use a fresh database "
                "(PGCITE_HOME / PGCITE_DATABASE_URL) and re-ingest"
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

    # --- sources and documents (documents_sql.py) ----------------------------------------------

    def upsert_source(self, name: str, location: str, base_url: str, version: str = "", **options: Any):
        """`documents_sql.upsert_source` (its keyword options) on this store's connection."""
        return documents_sql.upsert_source(self.conn, name, location, base_url, version, **options)

    def record_languages(self, name: str) -> None:
        documents_sql.record_languages(self.conn, name)
        _languages_now_changed()

    def source_languages(self, sources: Sequence[str] | None = None) -> list[tuple[str, str, list[str]]]:
        """(name, default language, languages) of the sources with languages, read at most every
        LANGUAGES_TTL seconds on one connection: a search stays one round trip."""
        now = time.monotonic()
        read = _LANGUAGES.get(self.conn)
        if read is None or now - read[0] > LANGUAGES_TTL or read[1] != _languages_changed:
            read = _LANGUAGES[self.conn] = (now, _languages_changed, documents_sql.source_languages(self.conn, None))
        rows = read[2]
        return rows if sources is None else [row for row in rows if row[0] in set(sources)]

    def source_lock(self, name: str) -> contextlib.AbstractContextManager[None]:
        return documents_sql.source_lock(self.conn, name)

    def stored_files(self, source: str) -> dict[str, StoredFile]:
        return documents_sql.stored_files(self.conn, source)

    def restamp(self, source: str, stamps: dict[str, tuple[str, str]]) -> None:
        documents_sql.restamp(self.conn, source, stamps)

    def cached_embeddings(self, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        return documents_sql.cached_embeddings(self.conn, hashes)

    def replace_document(self, *args: Any, **kwargs: Any) -> None:
        """`documents_sql.replace_document` (its arguments) on this store's connection."""
        documents_sql.replace_document(self.conn, *args, **kwargs)

    def delete_documents(self, source: str, paths: Sequence[str]) -> int:
        return documents_sql.delete_documents(self.conn, source, paths)

    def remove_source(self, name: str) -> bool:
        removed = documents_sql.remove_source(self.conn, name)
        _languages_now_changed()
        return removed

    def list_sources(self) -> list[SourceInfo]:
        return documents_sql.list_sources(self.conn)

    # --- the vector index and BM25's statistics (index_sql.py) -------------------------------

    def has_chunks(self) -> bool:
        return index_sql.has_chunks(self.conn)

    def chunk_count(self) -> int:
        return index_sql.chunk_count(self.conn)

    def has_vector_index(self) -> bool:
        return index_sql.has_vector_index(self.conn)

    def drop_vector_index(self) -> None:
        index_sql.drop_vector_index(self.conn)

    def refresh_indexes(self) -> None:
        index_sql.refresh_indexes(self.conn, self.stored_model())

    def refresh_statistics(self) -> None:
        index_sql.refresh_statistics(self.conn)

    def statistics_stale(self) -> bool:
        return index_sql.statistics_stale(self.conn)

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
