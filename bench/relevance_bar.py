"""Calibration of the relevance bar's word match (docs/answering.md, "Passing on words").

Ingests the shared corpora and pgcite's docs into a throw-away embedded database, then, for each
question of their sets and for OFF_TOPIC questions against each corpus, keeps the 20 best hybrid
results' cosine distance and coverage (share of the question's word weight). A result passes when
its distance is at most the bar plus WORD_MATCH_SLACK * min(1, coverage / FULL); prints, for FULL
around the default WORD_MATCH_COVERAGE (and for the single step the bar used before: coverage >=
0.55 within 0.75), how many answerable questions have a result that passes, which questions that
are not answerable do, and how many answerable questions have the result holding their answer_fact
among those that pass.

Usage: .venv/bin/python bench/relevance_bar.py   (the corpora are read from ../shared/corpora)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pgcite.config import Settings
from pgcite.embedding.models import LocalEmbedder
from pgcite.evaluation.questions import load_questions
from pgcite.ingest.flow import ingest, open_location
from pgcite.retrieval.search import DEFAULT_MAX_DISTANCE, WORD_MATCH_COVERAGE, WORD_MATCH_SLACK
from pgcite.store import SearchFilter, Store
from scratch import CORPORA, scratch_settings

REPO = Path(__file__).resolve().parents[1]
SETS = {  # source: (corpus folder, base URL, question files)
    "anthropic": (CORPORA / "anthropic-docs" / "pages", "",
                  (CORPORA / "anthropic-docs" / "questions-dev.jsonl", REPO / "eval" / "anthropic-dev-facts.jsonl")),
    "marten": (CORPORA / "marten-docs", "", (REPO / "eval" / "marten.jsonl",)),
    "pgcite": (REPO / "docs", "", (REPO / "eval" / "pgcite-docs.jsonl",)),
    "fastapi": (CORPORA / "fastapi-docs" / "docs" / "en", "", (REPO / "eval" / "fastapi.jsonl",)),
    "docusaurus": (CORPORA / "docusaurus-docs" / "website", "https://docusaurus.io/",
                   (REPO / "eval" / "docusaurus.jsonl",)),
}
OFF_TOPIC = [
    "Am I a cat?", "Who painted the Mona Lisa?", "What is the capital of France?", "How tall is Mount Everest?",
    "What is the best recipe for banana bread?", "Who won the 2018 football World Cup?",
    "How do I change a flat tyre?", "What is the boiling point of water at sea level?",
    "Which planet is closest to the sun?", "How many legs does a spider have?", "What is the plot of Hamlet?",
    "How do I knit a scarf?", "What time is it in Tokyo?", "Can you recommend a good hiking trail in Colorado?",
    "What is the square root of 144?", "Who wrote Pride and Prejudice?",
]


def passes(distance: float, coverage: float, full: float | None) -> bool:
    """The word-match rule with the allowance reaching its end at `full`; None: the old step."""
    if full is None:
        return distance <= DEFAULT_MAX_DISTANCE or (coverage >= 0.55 and distance <= 0.75)
    return distance <= DEFAULT_MAX_DISTANCE + WORD_MATCH_SLACK * min(1.0, coverage / full)


def main() -> int:
    missing = [str(p) for corpus, _, files in SETS.values() for p in (corpus, *files) if not p.exists()]
    if missing:
        print(f"skipped: not found: {', '.join(missing)} (the corpora live in ../shared/corpora beside the repo)")
        return 0
    with scratch_settings("pgcite-bar-") as settings:
        return run(settings)


def run(settings: Settings) -> int:
    embedder = LocalEmbedder()
    cases = []  # (source:id, answerable, [(distance, coverage, holds the answer_fact)])
    with Store.open(settings) as store:
        for source, (corpus, base_url, files) in SETS.items():
            report = ingest(open_location(str(corpus), settings), source_name=source, base_url=base_url,
                            settings=settings, store=store, embedder=embedder)
            print(f"{source}: {report.new} files, {report.chunks_embedded} chunks embedded")
            asked = [(q.id, q.question, q.answerable, q.answer_fact) for q in load_questions(*files)]
            asked += [(f"off-topic-{n}", text, False, None) for n, text in enumerate(OFF_TOPIC, 1)]
            for qid, text, answerable, fact in asked:
                hits = store.search(embedder.embed_query(text), text, 20, mode="hybrid",
                                    filters=SearchFilter(source=source, exclude_flagged=True))
                cases.append((f"{source}:{qid}", answerable, [
                    (h.distance, h.coverage, bool(fact and re.search(fact, h.content, re.IGNORECASE))) for h in hits]))

    answerable = [c for c in cases if c[1]]
    print(f"\n{len(answerable)} answerable, {len(cases) - len(answerable)} not (questions the docs do not "
          f"answer, and {len(OFF_TOPIC)} off-topic per corpus); bar {DEFAULT_MAX_DISTANCE}, slack {WORD_MATCH_SLACK}")
    for full in (None, 0.35, 0.45, WORD_MATCH_COVERAGE, 0.7):
        passing = [(name, ok, [h for h in hits if passes(h[0], h[1], full)]) for name, ok, hits in cases]
        wrong = [name for name, ok, hits in passing if not ok and hits]
        with_fact = sum(any(h[2] for h in hits[:5]) for _, ok, hits in passing if ok)
        label = "step at 0.55 (before)" if full is None else f"allowance full at {full:.2f}"
        mark = "*" if full == WORD_MATCH_COVERAGE else " "
        print(f"{mark}{label}: answerable with a result {sum(bool(h) for _, ok, h in passing if ok)}/{len(answerable)}, "
              f"answer_fact in the first 5 that pass {with_fact}; not answerable with a result {len(wrong)}: "
              f"{' '.join(wrong)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
