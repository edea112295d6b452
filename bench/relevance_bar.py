"""Calibration of the relevance bar's word match (docs/answering.md, "Passing on words").

Ingests the Anthropic and Marten corpora and pgcite's docs into a throw-away embedded database,
then, for each question of their sets and for OFF_TOPIC questions against each corpus, looks at the
20 best hybrid results: the best cosine score, and the best coverage (share of the question's word
weight) among results within WORD_MATCH's distance. Prints the cases the word match decides (no
result within the cosine bar) and, for coverage bars around the default, how many answerable
questions pass and which unanswerable ones do.

Usage: .venv/bin/python bench/relevance_bar.py   (the corpora are read from ../shared/corpora)
"""

from __future__ import annotations

import sys
from pathlib import Path

from pgcite.config import Settings
from pgcite.embedding import LocalEmbedder
from pgcite.evaluation import load_questions
from pgcite.ingest import ingest, open_location
from pgcite.retrieval import DEFAULT_MAX_DISTANCE, WORD_MATCH_COVERAGE, WORD_MATCH_SLACK
from pgcite.store import SearchFilter, Store
from scratch import CORPORA, scratch_settings

REPO = Path(__file__).resolve().parents[1]
SETS = {  # source: (corpus folder, questions)
    "anthropic": (CORPORA / "anthropic-docs" / "pages", CORPORA / "anthropic-docs" / "questions-dev.jsonl"),
    "marten": (CORPORA / "marten-docs", REPO / "eval" / "marten.jsonl"),
    "pgcite": (REPO / "docs", REPO / "eval" / "pgcite-docs.jsonl"),
}
OFF_TOPIC = [
    "Am I a cat?", "Who painted the Mona Lisa?", "What is the capital of France?", "How tall is Mount Everest?",
    "What is the best recipe for banana bread?", "Who won the 2018 football World Cup?",
    "How do I change a flat tyre?", "What is the boiling point of water at sea level?",
    "Which planet is closest to the sun?", "How many legs does a spider have?", "What is the plot of Hamlet?",
    "How do I knit a scarf?", "What time is it in Tokyo?", "Can you recommend a good hiking trail in Colorado?",
    "What is the square root of 144?", "Who wrote Pride and Prejudice?",
]
WORD_DISTANCE = DEFAULT_MAX_DISTANCE + WORD_MATCH_SLACK


def main() -> int:
    missing = [str(p) for corpus, questions in SETS.values() for p in (corpus, questions) if not p.exists()]
    if missing:
        print(f"skipped: not found: {', '.join(missing)} (the corpora live in ../shared/corpora beside the repo)")
        return 0
    with scratch_settings("pgcite-bar-") as settings:
        return run(settings)


def run(settings: Settings) -> int:
    embedder = LocalEmbedder()
    cases = []  # (source, id, question, answerable, best cosine score, best coverage within WORD_DISTANCE)
    with Store.open(settings) as store:
        for source, (corpus, questions) in SETS.items():
            report = ingest(open_location(str(corpus), settings), source_name=source, base_url="",
                            settings=settings, store=store, embedder=embedder)
            print(f"{source}: {report.new} files, {report.chunks_embedded} chunks embedded")
            asked = [(q.id, q.question, q.answerable) for q in load_questions(questions)]
            asked += [(f"off-topic-{n}", text, False) for n, text in enumerate(OFF_TOPIC, 1)]
            for qid, text, answerable in asked:
                hits = store.search(embedder.embed_query(text), text, 20, mode="hybrid",
                                    filters=SearchFilter(source=source, exclude_flagged=True))
                best_score = max((h.score for h in hits), default=0.0)
                coverage = max((h.coverage for h in hits if h.distance <= WORD_DISTANCE), default=0.0)
                cases.append((source, qid, text, answerable, best_score, coverage))

    bar = 1 - DEFAULT_MAX_DISTANCE
    print(f"\nno result within the cosine bar (score >= {bar:.2f}); best coverage within distance {WORD_DISTANCE:.2f}:")
    for source, qid, text, answerable, score, coverage in sorted(cases, key=lambda c: -c[5]):
        if score < bar and coverage >= 0.2:
            print(f"  {'answerable  ' if answerable else 'unanswerable'} {coverage:.3f}  {source}:{qid}  {text[:60]}")
    answerable = [c for c in cases if c[3]]
    print(f"\n{len(answerable)} answerable, {len(cases) - len(answerable)} not (questions the docs do not "
          f"answer, and {len(OFF_TOPIC)} off-topic per corpus)")
    for coverage_bar in (0.5, 0.55, 0.6, 0.7, 1.01):
        passing = [c for c in cases if c[4] >= bar or c[5] >= coverage_bar]
        wrong = [f"{c[0]}:{c[1]}" for c in passing if not c[3]]
        mark = "*" if coverage_bar == WORD_MATCH_COVERAGE else " "
        print(f"{mark}coverage bar {coverage_bar:.2f}: answerable pass {sum(c[3] for c in passing)}/{len(answerable)}; "
              f"unanswerable pass {len(wrong)}: {' '.join(wrong)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
