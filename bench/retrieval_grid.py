"""Hybrid-search weight grid on a question set with gold sections.

Ingests the corpus once into a throw-away embedded database, then scores the questions with vector
search, text search, and hybrid search at every pair of weights on the grid, all through the real
search SQL (the weights are the module constants CHUNK_WEIGHT and SECTION_WEIGHT of
pgcite.store.search_sql, set per cell). Prints hit@1, MRR@3 and recall@3 per row (k = 3, distinct
sections, as `pgcite eval`) and the median search time per question; the default row is marked
with *.

Usage: .venv/bin/python bench/retrieval_grid.py [QUESTIONS.jsonl CORPUS_DIR]
Default: the Anthropic dev questions and pages in ../shared/corpora/anthropic-docs.
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from pathlib import Path

from pgcite.config import Settings
from pgcite.embedding.models import LocalEmbedder
from pgcite.evaluation.metrics import evaluate
from pgcite.evaluation.questions import load_questions
from pgcite.evaluation.runs import run_searches
from pgcite.core import Pgcite
from pgcite.store import search_sql
from scratch import question_set, scratch_settings

CHUNK_WEIGHTS = (0.3, 0.5, 0.7, 1.0)
SECTION_WEIGHTS = (0.0, 0.1, 0.2, 0.3)
K = 3


def main() -> int:
    questions, corpus = question_set(__doc__)
    with scratch_settings("pgcite-grid-") as settings:
        return run(load_questions(questions), corpus, settings)


def run(questions, corpus: Path, settings: Settings) -> int:
    embedder = LocalEmbedder()
    # Every row asks the same questions: embed each once, up front, so s/query times the search.
    embedder.embed_query = functools.lru_cache(maxsize=None)(embedder.embed_query)
    for q in questions:
        embedder.embed_query(q.question)
    defaults = search_sql.CHUNK_WEIGHT, search_sql.SECTION_WEIGHT
    with Pgcite(settings, embedder=embedder) as app:
        report = app.ingest(str(corpus), source="grid")
        print(f"corpus: {corpus} ({report.new} files, {report.chunks_embedded} chunks; {report.seconds:.0f} s)")
        print(f"questions: {len(questions)}, k = {K}\n")
        print(f"{'search':<34} {'hit@1':>6} {'MRR@3':>6} {'recall@3':>8} {'s/query':>8}")

        def row(label: str, mode: str) -> None:
            stamps: list[float] = []  # taken as each question starts, and once at the end
            retrievals = run_searches(questions, app, k=K, mode=mode,
                                      progress=lambda _: stamps.append(time.perf_counter()))
            stamps.append(time.perf_counter())
            metrics = evaluate(questions, retrievals, k=K).metrics
            per_query = statistics.median(b - a for a, b in zip(stamps, stamps[1:]))
            print(f"{label:<34} {metrics['hit@1'].value:6.2f} {metrics['mrr'].value:6.3f} "
                  f"{metrics['recall'].value:8.3f} {per_query:8.3f}")

        row("vector", "vector")
        row("text (chunk BM25)", "text")
        try:
            for chunk_weight in CHUNK_WEIGHTS:
                for section_weight in SECTION_WEIGHTS:
                    search_sql.CHUNK_WEIGHT, search_sql.SECTION_WEIGHT = chunk_weight, section_weight
                    mark = "*" if (chunk_weight, section_weight) == defaults else " "
                    row(f"{mark}hybrid chunk {chunk_weight:.1f} section {section_weight:.1f}", "hybrid")
        finally:
            search_sql.CHUNK_WEIGHT, search_sql.SECTION_WEIGHT = defaults
    return 0


if __name__ == "__main__":
    sys.exit(main())
