"""Search time as the index grows, at 1x, 10x and 50x a real corpus.

Ingests the corpus once into a throw-away embedded database, then grows it by copying every
document under new paths (same text, so the same words and BM25 statistics per chunk; embeddings
jittered so the HNSW graph holds distinct points). At each size it asks the questions in vector
mode, in hybrid mode with the full-text side scoring every chunk that holds a question word (no
postings budget), and in hybrid mode as shipped (TEXT_POSTINGS), and prints the median seconds per
search and the ratios between them.

Usage: .venv/bin/python bench/search_scale.py [QUESTIONS.jsonl CORPUS_DIR]
Default: the Anthropic dev questions and pages in ../shared/corpora/anthropic-docs.
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from pathlib import Path

from pgcite.config import Settings
from pgcite.embedding import LocalEmbedder
from pgcite.evaluation import load_questions
from pgcite.ingest import ingest, open_location
from pgcite.retrieval import search
from pgcite.store import SearchFilter, Store, database
from scratch import question_set, scratch_settings

SCALES = (1, 10, 50)
K = 10

# One more copy of every document of source `scale`, under copy<n>/, its chunks' embeddings jittered.
_COPY_DOCUMENTS = """
INSERT INTO documents (source, path, title, url, checksum, version)
SELECT source, %(prefix)s || path, title, url, checksum, version FROM documents
WHERE source = 'scale' AND path NOT LIKE 'copy%%'
"""
_COPY_CHUNKS = """
INSERT INTO chunks (id, document_id, source, path, version, ord, heading, heading_path, breadcrumb,
                    anchor, url, content, tokens, embed_hash, flags, embedding)
SELECT %(prefix)s || c.id, copy.id, c.source, copy.path, c.version, c.ord, c.heading, c.heading_path,
       c.breadcrumb, c.anchor, c.url, c.content, c.tokens, c.embed_hash, c.flags,
       (SELECT array_agg(x + (random() - 0.5) * 0.02 ORDER BY i)
        FROM unnest(c.embedding::real[]) WITH ORDINALITY AS e(x, i))::vector
FROM chunks c JOIN documents d ON d.id = c.document_id
JOIN documents copy ON copy.source = d.source AND copy.path = %(prefix)s || d.path
WHERE c.source = 'scale' AND d.path NOT LIKE 'copy%%'
"""


def main() -> int:
    questions, corpus = question_set(__doc__)
    with scratch_settings("pgcite-scale-") as settings:
        return run([q.question for q in load_questions(questions)], corpus, settings)


def median_seconds(store: Store, embedder: LocalEmbedder, questions: list[str], mode: str) -> float:
    times = []
    for question in questions:
        started = time.perf_counter()
        search(store, embedder, question, k=K, mode=mode, filters=SearchFilter(source="scale"))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(questions: list[str], corpus: Path, settings: Settings) -> int:
    embedder = LocalEmbedder()
    # Embed each question once, up front, so the timings are the search alone.
    embedder.embed_query = functools.lru_cache(maxsize=None)(embedder.embed_query)
    for question in questions:
        embedder.embed_query(question)
    with Store.open(settings) as store:
        report = ingest(open_location(str(corpus), settings), source_name="scale", base_url="",
                        settings=settings, store=store, embedder=embedder)
        print(f"corpus: {corpus} ({report.new} files, {report.chunks_embedded} chunks; {report.seconds:.0f} s)")
        print(f"questions: {len(questions)}, k = {K}, median seconds per search\n")
        print(f"{'size':>5} {'chunks':>7} {'vector':>8} {'no budget':>10} {'hybrid':>8} {'no budget/hybrid':>17} "
              f"{'hybrid/vector':>14}")
        copies = 1
        for scale in SCALES:
            if scale > copies:
                store.drop_vector_index()
                with store.conn.transaction():
                    for n in range(copies, scale):
                        store.conn.execute(_COPY_DOCUMENTS, {"prefix": f"copy{n}/"})
                        store.conn.execute(_COPY_CHUNKS, {"prefix": f"copy{n}/"})
                store.refresh_indexes()
                store.conn.execute("ANALYZE chunks")
                copies = scale
            chunks = store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            vector = median_seconds(store, embedder, questions, "vector")
            budget = database.TEXT_POSTINGS
            try:
                database.TEXT_POSTINGS = 2**31 - 1
                unbounded = median_seconds(store, embedder, questions, "hybrid")
            finally:
                database.TEXT_POSTINGS = budget
            hybrid = median_seconds(store, embedder, questions, "hybrid")
            print(f"{scale:>4}x {chunks:>7} {vector:8.3f} {unbounded:10.3f} {hybrid:8.3f} {unbounded / hybrid:17.1f} "
                  f"{hybrid / vector:14.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
