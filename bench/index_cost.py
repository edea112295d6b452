"""What an index of the chunks table costs ingest (issue 16): seconds per 1,000 chunks written by
Store.replace_document, with the section index of schema migration 9 and with the document index it
replaced, in the same run.

The chunks are the Marten docs' own, with their stored vectors (the base home of
bench/scale_corpus.py), written document by document into a scratch database: once as a first
ingest writes them (no HNSW index, built after) and once as a later ingest does (into the indexed
table, over the same chunks already stored under another source). Three rounds, alternating the
two schemas; medians.

Then, on the corpus for scale as it stands in the base home (bench/scale_corpus.py, 100,000 chunks
and more), the cost of the HNSW graph's quality: the index built with pgvector's default
ef_construction (64) and with pgcite's, and the same 2,000 chunks inserted into each (a later
ingest's writes), per 1,000 chunks. The base home's index is left as pgcite builds it.

Usage: .venv/bin/python bench/index_cost.py
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections import defaultdict

from pgcite.store import ChunkRow, Store, index_sql
from scale_corpus import base_settings, ensure_base
from scratch import scratch_settings

ROUNDS = 3
SCHEMAS = {
    "document index (before)": "DROP INDEX IF EXISTS chunks_section_idx; "
                               "CREATE INDEX IF NOT EXISTS chunks_document_idx ON chunks (document_id)",
    "section index (after)": "DROP INDEX IF EXISTS chunks_document_idx; "
                             "CREATE INDEX IF NOT EXISTS chunks_section_idx ON chunks (document_id, heading_path)",
}


def marten_documents() -> dict[tuple[str, str, str], list[ChunkRow]]:
    """(path, title, checksum) -> its chunks, as stored in the base home."""
    documents: dict[tuple[str, str, str], list[ChunkRow]] = defaultdict(list)
    with Store.open(base_settings()) as store:
        rows = store.conn.execute(
            "SELECT d.path, d.title, d.checksum, c.id, c.ord, c.heading, c.heading_path, c.breadcrumb, c.anchor, "
            "c.url, c.content, c.tokens, c.embed_hash, c.embedding FROM chunks c JOIN documents d ON d.id = "
            "c.document_id WHERE c.source = 'marten' ORDER BY c.id").fetchall()
    for path, title, checksum, *chunk in rows:
        id_, ord_, heading, heading_path, breadcrumb, anchor, url, content, tokens, embed_hash, embedding = chunk
        documents[(path, title, checksum)].append(ChunkRow(
            id_.removeprefix("marten:"), ord_, heading, tuple(heading_path), breadcrumb, anchor, url, content,
            tokens, bytes(embed_hash), embedding.to_numpy()))
    return documents


def write(store: Store, source: str, documents) -> float:
    started = time.perf_counter()
    store.upsert_source(source, "bench", "")
    for (path, title, checksum), chunks in documents.items():
        store.replace_document(source, path, title, "", checksum,
                               [dataclasses.replace(c, id=f"{source}:{c.id}") for c in chunks])
    return time.perf_counter() - started


def main() -> int:
    ensure_base(base_settings())
    documents = marten_documents()
    count = sum(len(c) for c in documents.values())
    per_1k: dict[tuple[str, str], list[float]] = defaultdict(list)
    with scratch_settings("pgcite-index-cost-") as settings, Store.open(settings) as store:
        store.bind_model("all-MiniLM-L6-v2", 384)
        for round_ in range(ROUNDS):
            for name, ddl in SCHEMAS.items():
                store.conn.execute("TRUNCATE sources CASCADE")
                store.conn.execute(ddl)
                store.drop_vector_index()
                per_1k[(name, "first ingest")].append(write(store, "first", documents) / count * 1000)
                store.refresh_indexes()
                per_1k[(name, "later ingest")].append(write(store, "later", documents) / count * 1000)
    print(f"\n{count} Marten chunks in {len(documents)} documents, written by Store.replace_document; "
          f"seconds per 1,000 chunks, median of {ROUNDS}\n")
    print(f"{'schema':<26} {'first ingest':>13} {'later ingest':>13}")
    for name in SCHEMAS:
        print(f"{name:<26} {statistics.median(per_1k[(name, 'first ingest')]):13.2f} "
              f"{statistics.median(per_1k[(name, 'later ingest')]):13.2f}")
    graph_quality(dict(list(documents.items())[:60]))
    return 0


def graph_quality(documents) -> None:
    count = sum(len(c) for c in documents.values())
    with Store.open(base_settings()) as store:
        rows = store.chunk_count()
        print(f"\n{rows:,} chunks in the base home; {count} Marten chunks inserted into its HNSW index\n")
        print(f"{'ef_construction':>15} {'build s':>8} {'insert s per 1,000':>19}")
        pgcite_value = index_sql.HNSW_EF_CONSTRUCTION
        try:
            for ef_construction in (64, pgcite_value):  # the last build leaves pgcite's index
                index_sql.HNSW_EF_CONSTRUCTION = ef_construction
                store.remove_source("inserted")
                store.drop_vector_index()
                started = time.perf_counter()
                store.refresh_indexes()
                built = time.perf_counter() - started
                inserted = write(store, "inserted", documents) / count * 1000
                print(f"{ef_construction:>15} {built:8.0f} {inserted:19.2f}", flush=True)
        finally:
            index_sql.HNSW_EF_CONSTRUCTION = pgcite_value
            store.remove_source("inserted")


if __name__ == "__main__":
    raise SystemExit(main())
