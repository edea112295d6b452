"""`ask`: retrieve, select, generate, and check every answer before it is trusted (checks.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pgcite.answer.checks import Checks, CitationFilter, check_answer, is_refusal, with_added_citations
from pgcite.answer.claims import cited_numbers
from pgcite.answer.generation import Generator
from pgcite.answer.verify import verify_claims
from pgcite.config import DEFAULT_SEARCH_MODE
from pgcite.embedding.models import Embedder
from pgcite.embedding.reader import reader_card
from pgcite.retrieval import calibration
from pgcite.retrieval.rerank import ReaderReranker, Reranker
from pgcite.retrieval.search import names_asked_about, retrieve, select_context, unknown_names
from pgcite.store import Store
from pgcite.vocabulary import REFUSAL, Delta, Dropped, Passage, SearchFilter, SearchHit, Sources, Usage


@dataclass
class Answer:
    question: str
    text: str
    refused: bool
    generator: str
    citations: list[int]
    sources: list[Passage]
    dropped: list[Dropped]
    checks: Checks
    usage: Usage
    note: str = ""  # why no generator was called, when it was not
    id: str | None = None  # its row in the answer log, once logged

    def cited_sections(self) -> list[tuple[tuple[int, ...], SearchHit]]:
        """Each section the answer cites, once, in the order the text first cites it, with every
        number it is cited by (two passages of one section are one source to a reader)."""
        if self.refused:
            return []
        by_number = {p.number: p.hit for p in self.sources}
        sections: dict[tuple[str, ...], tuple[list[int], SearchHit]] = {}
        for n in cited_numbers(self.text):
            if (hit := by_number.get(n)) is not None:
                numbers, _ = sections.setdefault((hit.source, hit.path, hit.heading, hit.url), ([], hit))
                if n not in numbers:
                    numbers.append(n)
        return [(tuple(numbers), hit) for numbers, hit in sections.values()]


AnswerEvent = Sources | Delta | Answer


def ask_stream(
    question: str,
    *,
    store: Store,
    embedder: Embedder,
    generator: Generator,
    max_distance: float | None = None,
    context: int = 5,
    token_budget: int = 3000,
    mode: str = DEFAULT_SEARCH_MODE,
    filters: SearchFilter = SearchFilter(exclude_flagged=True),
    allowed_hosts: str = "",
    reranker: Reranker | None = None,
) -> Iterator[AnswerEvent]:
    """Yield the Sources (before any text), the answer text as it is written (invalid citations
    already removed) as Deltas, then the checked Answer. `store` is used only before the Sources
    are yielded, so a caller may give its connection back then."""
    hits = retrieve(store, embedder, question, max_distance=max_distance, mode=mode, filters=filters, reranker=reranker)
    judges = getattr(generator, "judges_relevance", False)
    if not hits and judges and max_distance is None:
        # A chat model reads the closest sections and decides; pgcite refuses alone only when
        # nothing is closer than a typical off-topic question is (the source's floor).
        hits = retrieve(store, embedder, question, mode=mode, filters=filters, loose=True, reranker=reranker)
    usage = Usage()
    if not hits:
        yield Sources([], [])
        yield Delta(REFUSAL)
        yield Answer(
            question,
            REFUSAL,
            True,
            "none",
            [],
            [],
            [],
            Checks(),
            usage,
            note="no section is within the relevance bar"
            + (
                f" (cosine distance <= {max_distance})"
                if max_distance is not None
                else " measured for this source and model; `pgcite sources` shows it and --threshold overrides it"
            ),
        )
        return
    measured = calibration.load(store, hits[0].source)
    note = ""
    if unknown := unknown_names(store, question, filters):
        note = f"the question names {', '.join(repr(n) for n in unknown)}, which no document uses"
    # The offline generator cannot tell whether such a name matters: pgcite refuses for it when the
    # question turns on the name, not when it is context.
    if (
        unknown
        and not judges
        and names_asked_about(embedder, question, unknown, measured.vector_scale if measured else 1.0)
    ):
        closest = [Dropped(h, "closest match") for h in hits[:context]]
        yield Sources([], closest)
        yield Delta(REFUSAL)
        yield Answer(question, REFUSAL, True, "none", [], [], closest, Checks(), usage, note=note)
        return
    # The reader has read the best candidates: with the offline generator, which cannot judge, none
    # reading as an answer is a refusal. A chat model reads them and decides.
    bar = _reader_bar(reranker, measured)
    best = max(h.rank_score for h in hits[: reranker.candidates]) if bar is not None and reranker else 0.0
    if bar is not None and not judges and best < bar:
        closest = [Dropped(h, "closest match") for h in hits[:context]]
        yield Sources([], closest)
        yield Delta(REFUSAL)
        why = (
            f"no section reads as answering the question: the reader's best score {best:.2f} is "
            f"below its bar {bar:.2f}; PGCITE_READER=off turns it off"
        )
        note = f"{note}; {why}" if note else why
        yield Answer(question, REFUSAL, True, "none", [], [], closest, Checks(), usage, note=note)
        return
    selected = select_context(hits, context=context, token_budget=token_budget, count_tokens=embedder.count_tokens)
    yield Sources(selected.passages, selected.dropped)
    citations = CitationFilter({p.number for p in selected.passages})
    pieces: list[str] = []
    for raw in generator.stream(question, selected.passages, usage):
        if piece := citations.feed(raw):
            pieces.append(piece)
            yield Delta(piece)
    if tail := citations.flush():
        pieces.append(tail)
        yield Delta(tail)
    text = "".join(pieces).strip()
    refused = is_refusal(text)
    if refused:
        checks = Checks(invalid_citations=citations.invalid)
    else:
        checks = check_answer(text, selected.passages, embedder, citations.invalid, allowed_hosts, question)
        # The answer as given: streamed as written, then whole with the citations pgcite added.
        text = with_added_citations(text, checks)
        # A chat model reads each claim the words let through again, against the sections it cites.
        if getattr(generator, "verify", False):
            verify_claims(text, selected.passages, checks, generator.complete)  # type: ignore[attr-defined]
    used = sorted(set(cited_numbers(text)))
    yield Answer(
        question,
        text,
        refused,
        generator.name,
        [] if refused else used,
        selected.passages,
        selected.dropped,
        checks,
        usage,
        note=note,
    )


def _reader_bar(reranker: Reranker | None, measured: calibration.Calibration | None) -> float | None:
    """The reader's score under which nothing answers: the user's, else the one measured for the
    source with this reader, else the one measured when the reader was made; none where its making
    measured that it orders and does not refuse (reader.json's `refuses`), unless the user sets one."""
    if not isinstance(reranker, ReaderReranker):
        return None
    if reranker.bar is not None:
        return reranker.bar
    if not reader_card().get("refuses", True):
        return None
    if measured is not None and measured.reader == reranker.identity and measured.reader_bar is not None:
        return measured.reader_bar
    return reader_card().get("bar")


def ask(question: str, **options) -> Answer:
    """ask_stream, collected."""
    *_, answer = ask_stream(question, **options)
    assert isinstance(answer, Answer)
    return answer
