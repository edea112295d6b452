"""All SQL lives here: connecting, migrations, writes of one document in one transaction, search."""

from __future__ import annotations

import contextlib
import hashlib
import json
import weakref
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import psycopg
from pgvector import HalfVector
from pgvector.psycopg import register_vector
from psycopg import errors as pgerrors
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict

from ..config import Settings
from ..errors import ModelMismatchError, StoreError
from ..vocabulary import SearchFilter, SearchHit
from . import server
from .schema import MIGRATIONS

READER_ROLE = "pgcite_reader"
MAX_INDEXED_DIMENSION = 4000  # pgvector HNSW on the halfvec type
PGVECTOR_NEEDED = (0, 8)  # halfvec (0.7) and iterative index scans (0.8)
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


SEARCH_MODES = ("vector", "text", "hybrid")
BM25_K1, BM25_B = 1.2, 0.75
# Hybrid score: cosine similarity + CHUNK_WEIGHT * chunk BM25 + SECTION_WEIGHT * section BM25, each
# BM25 divided by the question's best. Chosen on three question sets (Anthropic, Marten, pgcite's
# docs), where it beat reciprocal rank fusion on all three (docs/retrieval.md has the tables).
CHUNK_WEIGHT, SECTION_WEIGHT = 0.5, 0.2
# Release notes rank below guide pages for a question that is not about a release: their
# rank score is multiplied by this (docs/retrieval.md, "Release notes").
CHANGELOG_FACTOR = 0.8
# The full-text side looks up the question's rarest words, up to this many (word, chunk) pairs, so
# its cost stops growing with the index; no result changed on the three question sets
# (docs/retrieval.md, "Search time on a large index").
TEXT_POSTINGS = 1000
# HNSW candidates per scan (pgvector's default is 40): at 100,000 chunks 800 finds 0.994 of the exact
# top 10 in 0.041 s (p95), 100 only 0.896 (docs/storage.md, "Search at scale").
EF_SEARCH = 800


# What a connection keeps once read, so that a search is one round trip: the recorded model (it
# never changes once recorded; checking it cost two queries a question) and whether the search
# settings are set for the session (they cost a transaction of four statements a search).
_RECORDED_MODEL: "weakref.WeakKeyDictionary[psycopg.Connection, tuple[str, int]]" = weakref.WeakKeyDictionary()
_SEARCH_READY: "weakref.WeakSet[psycopg.Connection]" = weakref.WeakSet()


@dataclass(frozen=True)
class WordMatch:
    """A second way past the relevance bar, in text and hybrid modes: the more of the question's
    word weight a chunk holds (each word weighted by its IDF in the chunk's source, a word the
    source never uses by the IDF of a word in no chunk), the further it may be. The allowed
    distance grows in proportion from the bar, for no word, to `max_distance`, for a share of
    `coverage` or more."""

    coverage: float
    max_distance: float


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
        return StoreError(f"PostgreSQL at {where} did not answer in time; check the host and port in PGCITE_DATABASE_URL")
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
    def open(cls, settings: Settings, *, read_only: bool = False) -> "Store":
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

    def __enter__(self) -> "Store":
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
        (version,) = self.conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if tuple(int(part) for part in version.split(".")[:2]) < PGVECTOR_NEEDED:
            raise StoreError(
                f"PostgreSQL at {self.where} has pgvector {version}; pgcite needs "
                f"{'.'.join(map(str, PGVECTOR_NEEDED))} or newer: install it on that server, then run "
                "ALTER EXTENSION vector UPDATE in the database")

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
            raise StoreError(f"nothing has been ingested into {self.where} yet; ingest a folder first (`pgcite ingest FOLDER`)",
                             kind="conflict")
        stored_model, stored_dim = stored
        if stored_model == model and dimension is not None and dimension != stored_dim:
            raise ModelMismatchError(
                f"the embedding model answers with {dimension}-dimensional vectors under the name {model}, but the "
                f"database holds {stored_dim}-dimensional vectors of that name: the server runs another model; "
                "point PGCITE_EMBEDDING_URL at one serving the model the database was built with, or use a fresh "
                "database (PGCITE_HOME / PGCITE_DATABASE_URL) and re-ingest")
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
                self.conn.execute("INSERT INTO pgcite_settings (key, value) VALUES ('embedding_fingerprint', %s) "
                                  "ON CONFLICT (key) DO NOTHING", (json.dumps(np.round(vectors, 6).tolist()),))
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
                "was built with, or use a fresh database (PGCITE_HOME / PGCITE_DATABASE_URL) and re-ingest")

    # --- sources and documents --------------------------------------------------------------

    def upsert_source(self, name: str, location: str, base_url: str, version: str = "", *, site: str = "",
                      default_version: str | None = None) -> tuple[str, str] | None:
        """Create or update a source; returns its previous (base URL, version), None when new."""
        default = version if default_version is None else default_version
        with self.conn.transaction():
            previous = self.conn.execute(
                "SELECT base_url, version FROM sources WHERE name = %s FOR UPDATE", (name,)
            ).fetchone()
            self.conn.execute(
                """INSERT INTO sources (name, location, base_url, version, site, default_version)
                   VALUES (%s, %s, %s, %s, %s, %s)
                   ON CONFLICT (name) DO UPDATE
                   SET location = excluded.location, base_url = excluded.base_url, version = excluded.version,
                       site = excluded.site, default_version = excluded.default_version, updated_at = now()""",
                (name, location, base_url, version, site, default),
            )
            self.conn.execute("UPDATE chunks SET in_default_version = (version = %(d)s) "
                              "WHERE source = %(n)s AND in_default_version <> (version = %(d)s)", {"d": default, "n": name})
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

    def document_checksums(self, source: str) -> dict[str, tuple[str, tuple[str, ...]]]:
        """path -> (stored checksum, the files the page includes)."""
        rows = self.conn.execute("SELECT path, checksum, includes FROM documents WHERE source = %s", (source,))
        return {path: (checksum, tuple(includes)) for path, checksum, includes in rows}

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
        self, source: str, path: str, title: str, url: str, checksum: str, chunks: Sequence[ChunkRow],
        version: str = "", kind: str = "page", includes: Sequence[str] = (),
    ) -> None:
        """Insert or replace one document and all its chunks, atomically."""
        with self.conn.transaction():
            (doc_id,) = self.conn.execute(
                """INSERT INTO documents (source, path, title, url, checksum, version, kind, includes)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (source, path) DO UPDATE
                   SET title = excluded.title, url = excluded.url, checksum = excluded.checksum,
                       version = excluded.version, kind = excluded.kind, includes = excluded.includes,
                       ingested_at = now()
                   RETURNING id""",
                (source, path, title, url, checksum, version, kind, list(includes)),
            ).fetchone()
            self.conn.execute("DELETE FROM chunks WHERE document_id = %s", (doc_id,))
            with self.conn.cursor().copy(
                """COPY chunks (id, document_id, source, path, version, ord, heading, heading_path, breadcrumb,
                                anchor, url, content, tokens, embed_hash, embedding, flags)
                   FROM STDIN WITH (FORMAT BINARY)"""
            ) as copy:
                copy.set_types(
                    ["text", "int8", "text", "text", "text", "int4", "text", "text[]", "text",
                     "text", "text", "text", "int4", "bytea", "halfvec", "text[]"]
                )
                for c in chunks:
                    copy.write_row(
                        [c.id, doc_id, source, path, version, c.ord, c.heading, list(c.heading_path), c.breadcrumb,
                         c.anchor, c.url, c.content, c.tokens, c.embed_hash, HalfVector(c.embedding), list(c.flags)]
                    )
            self.conn.execute("UPDATE chunks SET in_default_version = false WHERE document_id = %s AND version <> "
                              "(SELECT default_version FROM sources WHERE name = %s)", (doc_id, source))

    def delete_documents(self, source: str, paths: Sequence[str]) -> int:
        if not paths:
            return 0
        with self.conn.transaction():
            cur = self.conn.execute(
                "DELETE FROM documents WHERE source = %s AND path = ANY(%s)", (source, list(paths))
            )
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
                      ARRAY(SELECT DISTINCT d.version FROM documents d WHERE d.source = s.name ORDER BY 1)
               FROM sources s ORDER BY s.name"""
        ).fetchall()
        return [SourceInfo(*row[:8], versions=tuple(row[8])) for row in rows]

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
        """After an ingest: build the HNSW index if it is missing, refresh BM25's statistics."""
        if (model := self.stored_model()) is not None and not self.has_vector_index():
            rows = self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            self.conn.execute(f"SET maintenance_work_mem = '{index_build_memory(rows, model[1])}MB'")
            self.conn.execute(
                f"CREATE INDEX IF NOT EXISTS {self.VECTOR_INDEX} ON chunks USING hnsw (embedding halfvec_cosine_ops)"
            )
            self.conn.execute("RESET maintenance_work_mem")
        self.refresh_statistics()

    def refresh_statistics(self) -> None:
        """BM25's statistics (materialized views) from the chunks stored now."""
        self.conn.execute("REFRESH MATERIALIZED VIEW lexeme_idf")
        self.conn.execute("REFRESH MATERIALIZED VIEW source_stats")

    # --- search -----------------------------------------------------------------------------

    def search(
        self,
        vector: np.ndarray,
        text: str,
        k: int,
        *,
        mode: str = "vector",
        filters: SearchFilter = SearchFilter(),
        max_distance: float | None = None,
        word_match: WordMatch | None = None,
        candidates: int = 100,
        demote_changelogs: bool = False,
    ) -> list[SearchHit]:
        """The k best chunks for a question, best first, ties broken by id.

        vector: nearest by cosine distance (HNSW). text: BM25 over PostgreSQL full-text search, with
        OR semantics so a question's words need not all appear. hybrid: each side's top
        `candidates`, scored by cosine similarity + CHUNK_WEIGHT * the chunk's BM25 +
        SECTION_WEIGHT * its section's BM25, each BM25 relative to the question's best. The text
        side's candidates hold one of the question's rarest words (TEXT_POSTINGS); BM25 is exact
        for every candidate. BM25 statistics are those of the chunk's own source. Every hit carries
        its cosine distance, and max_distance (the relevance bar) applies to it in every mode; with
        `word_match`, a chunk that holds more of the question's words passes at a larger distance.
        Without a version filter, each source answers from its default version. With
        `demote_changelogs`, release notes' rank scores are multiplied by CHANGELOG_FACTOR.

        Iterative index scans keep filtered searches from silently returning fewer than k rows;
        relaxed order is re-sorted by the outer query."""
        if mode not in SEARCH_MODES:
            raise StoreError(f"unknown search mode {mode!r}; use one of {', '.join(SEARCH_MODES)}", kind="bad_request")
        params = {
            "q": np.asarray(vector, dtype=np.float32), "text": text, "k": k, "n": max(candidates, k),
            "source": filters.source, "prefix": filters.path_prefix, "version": filters.version,
            "exclude_flagged": filters.exclude_flagged,
            "allowed": list(filters.allowed_sources) if filters.allowed_sources is not None else None,
            "max_distance": max_distance,
            "min_coverage": word_match.coverage if word_match else None,
            "coverage_max_distance": word_match.max_distance if word_match else None,
            "use_vector": mode in ("vector", "hybrid"), "use_text": mode in ("text", "hybrid"),
            "chunk_weight": CHUNK_WEIGHT, "section_weight": SECTION_WEIGHT, "k1": BM25_K1, "b": BM25_B,
            "postings": TEXT_POSTINGS, "demote": demote_changelogs, "changelog_factor": CHANGELOG_FACTOR,
        }
        if self.conn not in _SEARCH_READY:
            # Custom plans: psycopg prepares the search after five runs, and PostgreSQL's generic plan
            # then cannot see which source a filter names, so it walked the HNSW graph for a source
            # of 1% of a million rows (0.26 s, k found for 57 of 126 questions) where the plan for
            # that source reads its rows through the source index (0.02 s, always k).
            self.conn.execute(f"SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = {int(EF_SEARCH)}; "
                              "SET plan_cache_mode = force_custom_plan")
            if self.conn.info.transaction_status == pq.TransactionStatus.IDLE:  # not undone by a rollback
                _SEARCH_READY.add(self.conn)
        rows = self.conn.execute(_SEARCH_SQL, params).fetchall()
        return [SearchHit(*row[:8], distance=float(row[8]), flags=tuple(row[9]), rank_score=float(row[10]),
                          coverage=float(row[11])) for row in rows]


    def unknown_terms(self, terms: Sequence[str], filters: SearchFilter = SearchFilter()) -> list[str]:
        """The terms no chunk of the filter's source (or of the sources it allows) holds a word
        of, as the full-text index reads them; a term made only of stopwords is never unknown."""
        if not terms:
            return []
        sources = [filters.source] if filters.source else filters.allowed_sources
        rows = self.conn.execute(_UNKNOWN_TERMS_SQL, {
            "terms": list(terms), "sources": list(sources) if sources is not None else None}).fetchall()
        return [row[0] for row in rows]

_UNKNOWN_TERMS_SQL = """
SELECT term FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS t(term, place)
CROSS JOIN LATERAL (SELECT tsvector_to_array(to_tsvector('english', term)) AS lexemes) l
WHERE cardinality(l.lexemes) > 0
  AND NOT EXISTS (SELECT 1 FROM lexeme_idf i
                  WHERE i.lexeme = ANY(l.lexemes) AND (%(sources)s::text[] IS NULL OR i.source = ANY(%(sources)s)))
ORDER BY place
"""

# Filters, shared by both sides of the search.
_FILTERS = """
    (%(source)s::text IS NULL OR c.source = %(source)s)
    AND (%(prefix)s::text IS NULL OR starts_with(c.path, %(prefix)s))
    AND (c.version = %(version)s OR %(version)s::text IS NULL AND c.in_default_version)
    AND (NOT %(exclude_flagged)s OR c.flags = '{}')
    AND (%(allowed)s::text[] IS NULL OR c.source = ANY(%(allowed)s))
"""

_SEARCH_SQL = f"""
WITH vector_side AS MATERIALIZED (
    SELECT c.id FROM chunks c
    WHERE %(use_vector)s AND {_FILTERS}
    ORDER BY c.embedding <=> %(q)s LIMIT %(n)s
),
query_lexemes AS (
    SELECT array_agg(DISTINCT lexeme) AS lexemes
    FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS lexeme
    WHERE %(use_text)s
),
text_query AS (
    SELECT lexemes, array_to_string(ARRAY(SELECT quote_literal(l) FROM unnest(lexemes) l), ' | ')::tsquery AS tsq
    FROM query_lexemes WHERE lexemes IS NOT NULL
),
-- The full-text side's candidates: chunks holding one of the question's rarest words, taken
-- rarest first while the chunks holding them add up to at most %(postings)s (the rarest always).
-- A chunk holding none of them holds only common words; skipping it bounds the cost on a large index.
rare_query AS (
    SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS tsq
    FROM (SELECT lexeme, sum(ndoc) OVER rarest AS through, row_number() OVER rarest AS place
          FROM (SELECT i.lexeme, sum(i.ndoc) AS ndoc
                FROM text_query t JOIN lexeme_idf i ON i.lexeme = ANY(t.lexemes)
                WHERE %(source)s::text IS NULL OR i.source = %(source)s
                GROUP BY i.lexeme) postings
          WINDOW rarest AS (ORDER BY ndoc, lexeme)) ranked
    WHERE through <= %(postings)s OR place = 1
    HAVING count(*) > 0
),
-- Sections to score: those of the candidates and of the vector side's chunks.
scored_sections AS MATERIALIZED (
    SELECT c.document_id, c.heading_path FROM rare_query r JOIN chunks c ON c.fts @@ r.tsq
    WHERE {_FILTERS}
    UNION
    SELECT c.document_id, c.heading_path FROM vector_side JOIN chunks c USING (id) WHERE %(use_text)s
),
-- The IDF of each question word in each source, with the source's average chunk and section lengths.
word_weights AS MATERIALIZED (
    SELECT i.source, i.lexeme, i.idf, st.chunk_tokens, st.section_tokens
    FROM text_query t JOIN lexeme_idf i ON i.lexeme = ANY(t.lexemes) JOIN source_stats st USING (source)
    WHERE %(source)s::text IS NULL OR i.source = %(source)s
),
-- Every chunk of the scored sections (reached through the section index, so the cost follows the
-- candidates, not the index), with its section's length (all its chunks count) and, when it passes
-- the filters, one row per question word it holds: the word's count and weight. A chunk holding
-- none has one row without a word, so its section's score still reaches it.
section_words AS MATERIALIZED (
    SELECT c.id, c.document_id, c.heading_path, c.tokens, c.section_length, c.searchable,
           c.id IN (SELECT id FROM vector_side) AS in_vector, u.lexeme, u.tf, w.idf, w.chunk_tokens, w.section_tokens
    FROM (SELECT c.id, c.source, c.document_id, c.heading_path, c.tokens, c.fts, ({_FILTERS}) AS searchable,
                 sum(c.tokens) OVER (PARTITION BY c.document_id, c.heading_path) AS section_length
          FROM scored_sections s JOIN chunks c ON c.document_id = s.document_id AND c.heading_path = s.heading_path) c
    CROSS JOIN text_query t
    -- The question's words alone, picked out in C before unnesting (every position of fts has weight
    -- D; they get A): 2.5 times as fast as unnesting every word of the chunk and filtering.
    LEFT JOIN LATERAL (SELECT x.lexeme, cardinality(x.positions) AS tf
                       FROM unnest(ts_filter(setweight(c.fts, 'A', t.lexemes), '{{a}}')) AS x(lexeme, positions)
                       WHERE c.searchable) u ON true
    LEFT JOIN word_weights w ON w.source = c.source AND w.lexeme = u.lexeme
),
-- Per chunk: its BM25, the question's word weight it holds, and its section's BM25 (each word's
-- count summed over the section's chunks, against the section's length: words spread over a
-- section's chunks still count together). Windows, not joins: the planner cannot size these rows.
chunk_scores AS MATERIALIZED (
    SELECT id, bool_or(in_vector) AS in_vector,
           sum(idf * (tf * (%(k1)s + 1)) / (tf + %(k1)s * (1 - %(b)s + %(b)s * tokens / chunk_tokens))) AS bm25,
           sum(idf) AS matched_weight, max(section_bm25) AS section_bm25
    FROM (SELECT *, sum(CASE WHEN first THEN idf * (section_tf * (%(k1)s + 1))
                             / (section_tf + %(k1)s * (1 - %(b)s + %(b)s * section_length / section_tokens)) END)
                        OVER (PARTITION BY document_id, heading_path) AS section_bm25
          FROM (SELECT *, sum(tf) OVER word AS section_tf, row_number() OVER word = 1 AND lexeme IS NOT NULL AS first
                FROM section_words WINDOW word AS (PARTITION BY document_id, heading_path, lexeme)) per_word
         ) per_section
    GROUP BY id
),
-- The question's total word weight in each source (a word in no chunk: the IDF of document frequency 0).
question_weight AS (
    SELECT st.source, sum(coalesce(i.idf, ln(1 + (st.chunks + 0.5) / 0.5))) AS weight
    FROM text_query t CROSS JOIN unnest(t.lexemes) AS q(lexeme) CROSS JOIN source_stats st
    LEFT JOIN lexeme_idf i ON i.source = st.source AND i.lexeme = q.lexeme
    GROUP BY st.source
),
-- The vector side's chunks and the text side's best (by chunk BM25), with their scores.
candidates AS (
    SELECT id, bm25, matched_weight, section_bm25
    FROM (SELECT *, row_number() OVER (ORDER BY bm25 DESC NULLS LAST, id) AS text_rank FROM chunk_scores) ranked
    WHERE in_vector OR (bm25 IS NOT NULL AND text_rank <= %(n)s)
    UNION ALL
    SELECT id, NULL, NULL, NULL FROM vector_side WHERE id NOT IN (SELECT id FROM chunk_scores)
)
SELECT c.id, c.source, d.path, c.url, d.title, c.heading, c.breadcrumb, c.content, v.distance, c.flags,
       CASE WHEN %(use_vector)s AND %(use_text)s
                 THEN 1 - v.distance + %(chunk_weight)s * coalesce(k.bm25 / nullif(best.chunk, 0), 0)
                                     + %(section_weight)s * coalesce(k.section_bm25 / nullif(best.section, 0), 0)
            WHEN %(use_vector)s THEN 1 - v.distance
            ELSE k.bm25 END
       * CASE WHEN %(demote)s AND d.kind = 'changelog' THEN %(changelog_factor)s ELSE 1 END AS rank_score,
       w.coverage
FROM candidates k JOIN chunks c USING (id) JOIN documents d ON d.id = c.document_id
LEFT JOIN question_weight qw ON qw.source = c.source
CROSS JOIN (SELECT max(bm25) AS chunk, max(section_bm25) AS section FROM chunk_scores) best
CROSS JOIN LATERAL (SELECT c.embedding <=> %(q)s AS distance) v
CROSS JOIN LATERAL (SELECT coalesce(k.matched_weight / nullif(qw.weight, 0), 0) AS coverage) w
WHERE %(max_distance)s::float8 IS NULL OR v.distance <= %(max_distance)s
   OR v.distance <= %(max_distance)s + (%(coverage_max_distance)s::float8 - %(max_distance)s)
                     * least(1, w.coverage / %(min_coverage)s::float8)
ORDER BY rank_score DESC, c.id
LIMIT %(k)s
"""


def index_build_memory(rows: int, dimension: int) -> int:
    """Megabytes of maintenance_work_mem for building the HNSW index over `rows` vectors: the whole
    graph in memory (a half-precision vector and its neighbour lists, about 2 * dimension + 700
    bytes a row, a quarter more for margin), from 256 MB to 4 GB. A graph that outgrows it still
    builds, many times slower (docs/storage.md, "Vectors at a million")."""
    return max(256, min(4096, round(rows * (2 * dimension + 700) * 1.25 / 2**20)))


def embed_hash(model: str, text: str) -> bytes:
    return hashlib.sha256(f"{model}\0{text}".encode()).digest()
