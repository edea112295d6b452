"""The search SQL: the vector and word sides of a search, the hybrid score and its filters, and
the question's terms that no document uses."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import pq

from pgcite.errors import StoreError
from pgcite.vocabulary import SearchFilter, SearchHit

SEARCH_MODES = ("vector", "text", "hybrid")
BM25_K1, BM25_B = 1.2, 0.75
# Hybrid score: cosine similarity + CHUNK_WEIGHT * chunk BM25 + SECTION_WEIGHT * section BM25, each
# BM25 divided by the question's best. Chosen on three question sets (Anthropic, Marten, pgcite's
# docs), where it beat reciprocal rank fusion on all three (docs/retrieval.md has the tables).
CHUNK_WEIGHT, SECTION_WEIGHT = 0.5, 0.2
# Release notes rank below guide pages for a question that is not about a release: their
# rank score is multiplied by this (docs/retrieval.md, "Release notes").
CHANGELOG_FACTOR = 0.8
# Hybrid score: plus PAGE_WEIGHT * the cosine of the chunk's page (the mean of its chunks' vectors),
# so a section of the page that is about the question as a whole ranks above a stray match elsewhere.
PAGE_WEIGHT = 0.3
# The full-text side looks up the question's rarest words, up to this many (word, chunk) pairs, so
# its cost stops growing with the index; no result changed on the three question sets
# (docs/retrieval.md, "Search time on a large index").
TEXT_POSTINGS = 1000
# HNSW candidates per scan (pgvector's default is 40): at 100,000 chunks 800 finds 0.994 of the exact
# top 10, 100 only 0.896; at a million vectors 800 keeps p95 under 0.02 s (docs/storage.md).
EF_SEARCH = 800

# Connections whose session has the search settings (setting them per search cost a transaction
# of four statements).
_SEARCH_READY: weakref.WeakSet[psycopg.Connection] = weakref.WeakSet()


@dataclass(frozen=True)
class WordMatch:
    """A second way past the relevance bar, in text and hybrid modes: the more of the question's
    word weight a chunk holds (each word weighted by its IDF in the chunk's source, a word the
    source never uses by the IDF of a word in no chunk), the further it may be. The allowed
    distance grows in proportion from the bar, for no word, to the bar plus `slack`, for a share
    of `coverage` or more. The slack is in the bundled model's units: a source whose model spreads
    its cosines less gets it divided by its vector scale (calibration.py)."""

    coverage: float
    slack: float


def prepare(conn: psycopg.Connection) -> None:
    """Give the connection's session the search settings, once."""
    if conn not in _SEARCH_READY:
        # Custom plans: psycopg prepares the search after five runs, and PostgreSQL's generic plan
        # then cannot see which source a filter names, so it walked the HNSW graph for a source
        # of 1% of a million rows (0.25 s, k found for 57 of 126 questions) where the plan for
        # that source reads its rows through the source index (0.011 s, always k).
        conn.execute(
            f"SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = {int(EF_SEARCH)}; "
            "SET plan_cache_mode = force_custom_plan"
        )
        if conn.info.transaction_status == pq.TransactionStatus.IDLE:  # not undone by a rollback
            _SEARCH_READY.add(conn)


def search(
    conn: psycopg.Connection,
    vector: np.ndarray,
    text: str,
    k: int,
    *,
    mode: str = "vector",
    filters: SearchFilter = SearchFilter(),
    max_distance: float | None = None,
    calibrated: bool = False,
    bar_key: str = "bar",
    default_bar: float = 0.58,
    word_match: WordMatch | None = None,
    candidates: int = 100,
    demote_changelogs: bool = False,
) -> list[SearchHit]:
    """The k best chunks for a question, best first, ties broken by id.

    vector: nearest by cosine distance (HNSW). text: BM25 over PostgreSQL full-text search, with
    OR semantics so a question's words need not all appear. hybrid: each side's top
    `candidates`, scored by cosine similarity + CHUNK_WEIGHT * the chunk's BM25 +
    SECTION_WEIGHT * its section's BM25 (its chunks' words and length together, kept at ingest in
    table sections), each BM25 relative to the best among the candidates. The text side's
    candidates hold one of the question's rarest words (TEXT_POSTINGS); BM25 is exact for every
    candidate. BM25 statistics are those of the chunk's own source. Every hit carries
    its cosine distance, and the relevance bar applies to it in every mode: max_distance when
    given, else with `calibrated` each source's own (calibration.py: `bar_key` "bar", or "floor"
    for where nothing is close; `default_bar` for a source never calibrated); with `word_match`, a
    chunk that holds more of the question's words passes at a larger distance. Each source's
    cosine term is multiplied by its model's calibrated vector scale over the sources searched
    (one source alone: its own). Without a version filter, each
    source answers from its default version. With
    `demote_changelogs`, release notes' rank scores are multiplied by CHANGELOG_FACTOR.

    Iterative index scans keep filtered searches from silently returning fewer than k rows;
    relaxed order is re-sorted by the outer query."""
    if mode not in SEARCH_MODES:
        raise StoreError(f"unknown search mode {mode!r}; use one of {', '.join(SEARCH_MODES)}", kind="bad_request")
    params = {
        "q": np.asarray(vector, dtype=np.float32),
        "text": text,
        "k": k,
        "n": max(candidates, k),
        "source": filters.source,
        "prefix": filters.path_prefix,
        "version": filters.version,
        "lang_sources": [s for s, _ in filters.languages] if filters.languages is not None else None,
        "lang_values": [lang for _, lang in filters.languages] if filters.languages is not None else None,
        "exclude_flagged": filters.exclude_flagged,
        "allowed": list(filters.allowed_sources) if filters.allowed_sources is not None else None,
        "max_distance": max_distance,
        "barred": max_distance is not None or calibrated,
        "default_bar": default_bar,
        "bar_key": bar_key,
        "min_coverage": word_match.coverage if word_match else 1.0,
        "slack": word_match.slack if word_match else 0.0,
        "use_vector": mode in ("vector", "hybrid"),
        "use_text": mode in ("text", "hybrid"),
        "chunk_weight": CHUNK_WEIGHT,
        "section_weight": SECTION_WEIGHT,
        "k1": BM25_K1,
        "b": BM25_B,
        "postings": TEXT_POSTINGS,
        "page_weight": PAGE_WEIGHT,
        "demote": demote_changelogs,
        "changelog_factor": CHANGELOG_FACTOR,
    }
    prepare(conn)
    rows = conn.execute(_SEARCH_SQL, params).fetchall()
    return [
        SearchHit(
            id_,
            source,
            path,
            url,
            title,
            heading,
            breadcrumb,
            content,
            float(distance),
            tuple(flags),
            float(rank_score),
            float(coverage),
        )
        for id_, source, path, url, title, heading, breadcrumb, content, distance, flags, rank_score, coverage in rows
    ]


def unknown_terms(conn: psycopg.Connection, terms: Sequence[str], filters: SearchFilter = SearchFilter()) -> list[str]:
    """The terms no chunk of the filter's source (or of the sources it allows) holds a word
    of, as the full-text index reads them; a term made only of stopwords is never unknown."""
    if not terms:
        return []
    sources = [filters.source] if filters.source else filters.allowed_sources
    rows = conn.execute(
        _UNKNOWN_TERMS_SQL, {"terms": list(terms), "sources": list(sources) if sources is not None else None}
    ).fetchall()
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
    AND (%(lang_sources)s::text[] IS NULL OR NOT c.source = ANY(%(lang_sources)s)
         OR (c.source, c.language) IN (SELECT * FROM unnest(%(lang_sources)s::text[], %(lang_values)s::text[])))
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
-- Each question word in each source searched: how many chunks hold it, its IDF, and the source's
-- average chunk and section lengths (read once, for both the rare words and the scores).
word_weights AS MATERIALIZED (
    SELECT i.source, i.lexeme, i.ndoc, i.idf, st.chunk_tokens, st.section_tokens
    FROM text_query t JOIN lexeme_idf i ON i.lexeme = ANY(t.lexemes) JOIN source_stats st USING (source)
    WHERE %(source)s::text IS NULL OR i.source = %(source)s
),
-- The full-text side's candidates: chunks holding one of the question's rarest words, taken
-- rarest first while the chunks holding them add up to at most %(postings)s (the rarest always).
-- A chunk holding none of them holds only common words; skipping it bounds the cost on a large index.
rare_query AS (
    SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS tsq
    FROM (SELECT lexeme, sum(ndoc) OVER rarest AS through, row_number() OVER rarest AS place
          FROM (SELECT lexeme, sum(ndoc) AS ndoc FROM word_weights GROUP BY lexeme) postings
          WINDOW rarest AS (ORDER BY ndoc, lexeme)) ranked
    WHERE through <= %(postings)s OR place = 1
    HAVING count(*) > 0
),
-- The chunks to score: the full-text side's candidates and the vector side's chunks, one row per
-- question word each holds (a chunk holding none: one row without a word).
chunk_words AS MATERIALIZED (
    SELECT c.id, c.in_vector, c.source, c.tokens, x.lexeme, cardinality(x.positions) AS tf
    FROM (SELECT c.id, c.source, c.tokens, c.fts, false AS in_vector FROM rare_query r JOIN chunks c ON c.fts @@ r.tsq
          WHERE {_FILTERS} AND c.id NOT IN (SELECT id FROM vector_side)
          UNION ALL
          SELECT c.id, c.source, c.tokens, c.fts, true FROM vector_side JOIN chunks c USING (id) WHERE %(use_text)s) c
    CROSS JOIN text_query t
    -- The question's words alone, picked out in C before unnesting (every position of fts has weight
    -- D; they get A): 2.5 times as fast as unnesting every word of the chunk and filtering.
    LEFT JOIN LATERAL unnest(ts_filter(setweight(c.fts, 'A', t.lexemes), '{{a}}')) AS x ON true
),
-- Per chunk: its BM25 and the question's word weight it holds.
chunk_scores AS MATERIALIZED (
    SELECT c.id, bool_or(c.in_vector) AS in_vector,
           sum(w.idf * (c.tf * (%(k1)s + 1))
               / (c.tf + %(k1)s * (1 - %(b)s + %(b)s * c.tokens / w.chunk_tokens))) AS bm25,
           sum(w.idf) AS matched_weight
    FROM chunk_words c LEFT JOIN word_weights w ON w.source = c.source AND w.lexeme = c.lexeme
    GROUP BY c.id
),
-- The question's total word weight in each source (a word in no chunk: the IDF of document frequency 0).
question_weight AS (
    SELECT st.source, sum(coalesce(i.idf, ln(1 + (st.chunks + 0.5) / 0.5))) AS weight
    FROM text_query t CROSS JOIN unnest(t.lexemes) AS q(lexeme) CROSS JOIN source_stats st
    LEFT JOIN lexeme_idf i ON i.source = st.source AND i.lexeme = q.lexeme
    GROUP BY st.source
),
-- The vector side's chunks and the text side's best (by chunk BM25), with their scores.
candidate_chunks AS (
    SELECT k.id, k.bm25, k.matched_weight, c.document_id, c.heading_path,
           row_number() OVER (PARTITION BY c.document_id, c.heading_path) = 1 AS first_of_section
    FROM (SELECT id, bm25, matched_weight
          FROM (SELECT *, row_number() OVER (ORDER BY bm25 DESC NULLS LAST, id) AS text_rank FROM chunk_scores) ranked
          WHERE in_vector OR (bm25 IS NOT NULL AND text_rank <= %(n)s)
          UNION ALL
          SELECT id, NULL, NULL FROM vector_side WHERE id NOT IN (SELECT id FROM chunk_scores)) k
    JOIN chunks c USING (id)
),
-- ... and their section's BM25, from the section's words and length as kept at ingest (table
-- sections), so words spread over a section's chunks still count together. Scored once per section
-- of a candidate, through its key: the cost follows the candidates, not the size of their sections.
candidates AS MATERIALIZED (
    SELECT id, bm25, matched_weight, max(section_bm25) OVER (PARTITION BY document_id, heading_path) AS section_bm25
    FROM (SELECT k.*, CASE WHEN k.first_of_section AND %(use_text)s THEN (
              SELECT sum(w.idf * (x.tf * (%(k1)s + 1))
                         / (x.tf + %(k1)s * (1 - %(b)s + %(b)s * x.tokens / w.section_tokens)))
              FROM (SELECT s.source, s.tokens, x.lexeme, cardinality(x.positions) AS tf
                    FROM sections s CROSS JOIN text_query t
                    CROSS JOIN unnest(ts_filter(setweight(s.fts, 'A', t.lexemes), '{{a}}')) AS x
                    WHERE s.document_id = k.document_id AND s.heading_path = k.heading_path) x
              -- a lateral subquery kept whole (OFFSET 0), so the section's words are unnested once,
              -- not once per question word
              CROSS JOIN LATERAL (SELECT w.idf, w.section_tokens FROM word_weights w
                                  WHERE w.source = x.source AND w.lexeme = x.lexeme OFFSET 0) w) END AS section_bm25
          FROM candidate_chunks k) scored
),
-- One cosine scale per model over the sources searched: a source's own scale would weigh its
-- cosines against another source's of the same model (a worse match outranking a better one). The
-- harmonic mean of their scales is the reference gap over their mean gap (calibration.py).
scales AS (
    SELECT name, count(*) OVER model / sum(1 / (calibration->>'vector_scale')::float8) OVER model AS vector_scale
    FROM sources
    WHERE (calibration->>'vector_scale')::float8 > 0
      AND (%(source)s::text IS NULL OR name = %(source)s)
      AND (%(allowed)s::text[] IS NULL OR name = ANY(%(allowed)s))
    WINDOW model AS (PARTITION BY calibration->>'model')
),
-- Each candidate's page as a whole: the cosine of the mean of its chunks' vectors (a page prior),
-- kept with the document at ingest.
pages AS (
    SELECT d.id AS document_id, 1 - (d.page_embedding <=> %(q)s) AS page_score
    FROM documents d WHERE %(page_weight)s > 0 AND %(use_vector)s AND %(use_text)s
      AND d.id IN (SELECT c.document_id FROM candidates k JOIN chunks c USING (id))
)
SELECT c.id, c.source, d.path, c.url, d.title, c.heading, c.breadcrumb, c.content, v.distance, c.flags,
       CASE WHEN %(use_vector)s AND %(use_text)s
                 THEN b.vector_scale * (1 - v.distance + %(page_weight)s * coalesce(pg.page_score, 0))
                      + best.share * (%(chunk_weight)s * coalesce(k.bm25 / nullif(best.chunk, 0), 0)
                                      + %(section_weight)s * coalesce(k.section_bm25 / nullif(best.section, 0), 0))
            WHEN %(use_vector)s THEN 1 - v.distance
            ELSE k.bm25 END
       * CASE WHEN %(demote)s AND d.kind = 'changelog' THEN %(changelog_factor)s ELSE 1 END AS rank_score,
       w.coverage
FROM candidates k JOIN chunks c USING (id) JOIN documents d ON d.id = c.document_id
LEFT JOIN pages pg ON pg.document_id = c.document_id
LEFT JOIN question_weight qw ON qw.source = c.source
-- BM25 relative to the best of the chunk's own source: each source's words weigh by its own
-- statistics, which another source's do not compare with.
JOIN (SELECT source, chunk, section, coalesce(held / nullif(max(held) OVER (), 0), 1) AS share
      FROM (SELECT c.source, max(k.bm25) AS chunk, max(k.section_bm25) AS section,
                   max(k.matched_weight / nullif(qw.weight, 0)) AS held
            FROM candidates k JOIN chunks c USING (id) LEFT JOIN question_weight qw ON qw.source = c.source
            GROUP BY c.source) per_source) best ON best.source = c.source
CROSS JOIN LATERAL (SELECT c.embedding <=> %(q)s AS distance) v
CROSS JOIN LATERAL (SELECT coalesce(k.matched_weight / nullif(qw.weight, 0), 0) AS coverage) w
-- The source's calibration (calibration.py): its bar, and how its model's cosines weigh.
LEFT JOIN sources src ON src.name = c.source
LEFT JOIN scales sc ON sc.name = c.source
CROSS JOIN LATERAL (SELECT coalesce(%(max_distance)s::float8, (src.calibration->>%(bar_key)s)::float8,
                                    %(default_bar)s) AS bar,
                           coalesce(sc.vector_scale, 1) AS vector_scale) b
WHERE NOT %(barred)s
   OR v.distance <= b.bar + %(slack)s::float8 / b.vector_scale * least(1, w.coverage / %(min_coverage)s::float8)
ORDER BY rank_score DESC, c.id
LIMIT %(k)s
"""
