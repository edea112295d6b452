"""The part of `pgcite eval` that talks to the database and the models: each question through
`search` or `ask` exactly as the commands run them, recorded for `evaluate`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pgcite.evaluation.metrics import AnswerRecord, RankedSection, Retrieval, distinct_sections, trail_of
from pgcite.evaluation.questions import Question

if TYPE_CHECKING:
    from pgcite.core import Pgcite

# How many chunks a search fetches per distinct section wanted, and at most.
CHUNKS_PER_SECTION = 8
MAX_FETCH = 50


Progress = Callable[[str], None]


def fetch_size(k: int) -> int:
    return min(max(k, 3) * CHUNKS_PER_SECTION, MAX_FETCH)


def _owned(hit, gold_source: str | None):
    """`hit`, its path marked with its source when it is not `gold_source`'s: asked across sources,
    another source's page of the same path is not the gold page."""
    if gold_source is None or hit.source == gold_source:
        return hit
    return dataclasses.replace(hit, path=f"{hit.source}:{hit.path}")


def _tokens(embedder, hit) -> int:
    return embedder.count_tokens(f"{hit.breadcrumb}\n{hit.content}" if hit.breadcrumb else hit.content)


def run_searches(
    questions: Sequence[Question],
    app: Pgcite,
    *,
    k: int,
    source: str | None = None,
    mode: str | None = None,
    progress: Progress | None = None,
    version: str | None = None,
    rerank: bool = False,
    gold_source: str | None = None,
) -> dict[str, Retrieval]:
    """Each question through `search`, as `pgcite search` runs it (with `--rerank`: ordered as `ask` orders).
    `gold_source`: the source the gold pages are in, where `source` does not say (asked across sources)."""
    from pgcite.vocabulary import SearchFilter

    retrievals = {}
    for q in questions:
        if progress:
            progress(q.id)
        hits = [
            _owned(hit, gold_source)
            for hit in app.search(
                q.question,
                k=fetch_size(k),
                mode=mode,
                filters=SearchFilter(source=source, version=version),
                rerank=rerank,
            )
        ]
        retrievals[q.id] = Retrieval(
            tuple(distinct_sections(hits, max(k, 3))), sum(_tokens(app.embedder, h) for h in hits[:3])
        )
    return retrievals


def run_answers(
    questions: Sequence[Question],
    app: Pgcite,
    *,
    source: str | None = None,
    mode: str | None = None,
    progress: Progress | None = None,
    version: str | None = None,
    gold_source: str | None = None,
) -> dict[str, AnswerRecord]:
    """Each question through `ask`, as `pgcite ask` runs it (flagged chunks left out); `gold_source`
    as for run_searches."""
    from pgcite.vocabulary import SearchFilter

    records = {}
    for q in questions:
        if progress:
            progress(q.id)
        answer = app.ask(
            q.question, mode=mode, filters=SearchFilter(source=source, version=version, exclude_flagged=True)
        )
        by_number = {p.number: p.hit.content for p in answer.sources}
        fed = tuple(
            RankedSection(
                _owned(p.hit, gold_source).path,
                p.hit.heading,
                trail_of(p.hit.breadcrumb, p.hit.title, p.hit.heading),
                (p.hit.content,),
            )
            for p in answer.sources
        )
        records[q.id] = AnswerRecord(
            answer.text,
            answer.refused,
            tuple(answer.citations),
            tuple(by_number[n] for n in answer.citations if n in by_number),
            tuple(answer.checks.invalid_citations),
            fed,
            answer.note,
        )
    return records
