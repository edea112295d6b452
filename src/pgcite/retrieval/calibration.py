"""Each source's relevance bar and vector weight, measured with the model that embedded it.

A cosine score means nothing alone: the bundled model scores an unrelated passage about 0.2, an
e5-family model about 0.83. So when a source is ingested (and again when its model changes or its
chunk count moves by a quarter), pgcite asks it two kinds of questions with its own model:
- off-topic ones, shipped with pgcite (data/offtopic.txt: cooking, law, sport... never software),
  whose best scores show what "unrelated" scores against this source;
- questions its own sections answer, one per sampled heading, whose best scores show what
  "answered" scores.
The bar sits above nearly every off-topic question (its OFFTOPIC_QUANTILE), and the cosine term of
the hybrid score is scaled by the gap between the two medians, so that a model whose cosines sit
in a narrow band weighs as much against BM25 as the bundled one does. With pgcite's reader on, its
refusal bar is measured the same way (measure_reader)."""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pgcite.embedding.models import Embedder
    from pgcite.retrieval.rerank import ReaderReranker, ScoringReranker
    from pgcite.store import Store

# Headings sampled per source as questions its sections answer.
HEADING_QUESTIONS = 200
# The bar lies above this share of the off-topic questions' best scores.
OFFTOPIC_QUANTILE = 0.99
# The bundled model's gap between the medians of answered and off-topic best scores, on the six
# held-out sites (docs/answering.md, "A bar for each source and model"): the cosine term of the
# hybrid score is multiplied by REFERENCE_GAP / gap, so the bundled model ranks as before and
# another model's cosines weigh as much.
REFERENCE_GAP = 0.45
# Measured again when the chunk count has grown or shrunk by this share since.
REMEASURE_CHANGE = 0.25


@dataclass(frozen=True)
class Calibration:
    model: str
    chunks: int  # the source's chunks when measured
    offtopic_median: float  # best cosine score of an off-topic question against the source
    offtopic_high: float  # ... at OFFTOPIC_QUANTILE
    answered_median: float  # best cosine score of a question from one of its headings
    answered_low: float  # ... its 10th percentile
    questions: int  # heading questions asked
    measured_at: str
    # pgcite's reader (ReaderScores), when it is on: which reader, and its best scores for heading
    # questions with their section (answered, 10th percentile) and with it taken out (median, 90th).
    reader: str = ""
    reader_answered_low: float | None = None
    reader_unanswered_median: float | None = None
    reader_unanswered_high: float | None = None

    @property
    def bar(self) -> float:
        """The relevance bar, as a cosine distance: a chunk further away is not relevant."""
        return round(1.0 - self.offtopic_high, 4)

    @property
    def floor(self) -> float:
        """Further than this (a cosine distance) nothing is close: a typical off-topic question's best."""
        return round(1.0 - self.offtopic_median, 4)

    @property
    def gap(self) -> float:
        return max(self.answered_median - self.offtopic_median, 0.01)

    @property
    def vector_scale(self) -> float:
        return round(REFERENCE_GAP / self.gap, 4)

    @property
    def reader_bar(self) -> float | None:
        """The reader's best score under which nothing answers (the offline generator refuses)."""
        if self.reader_answered_low is None or self.reader_unanswered_high is None:
            return None
        return round(reader_bar_of(self.reader_answered_low, self.reader_unanswered_high), 4)

    def to_json(self) -> dict:
        return {
            **asdict(self),
            "bar": self.bar,
            "floor": self.floor,
            "vector_scale": self.vector_scale,
            "reader_bar": self.reader_bar,
        }

    @classmethod
    def from_json(cls, data: dict | None) -> Calibration | None:
        if not data:
            return None
        fields = cls.__dataclass_fields__
        return cls(**{name: data[name] for name in fields if name in data or fields[name].default is MISSING})

    def stale(self, model: str, chunks: int) -> bool:
        return model != self.model or abs(chunks - self.chunks) > REMEASURE_CHANGE * max(self.chunks, 1)


@lru_cache(maxsize=1)
def offtopic_questions() -> tuple[str, ...]:
    text = resources.files("pgcite").joinpath("data/offtopic.txt").read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


# The off-topic questions' vectors, per model, embedded once per process. The first question is
# embedded again on each use and must come back the same: a server that now runs another model
# under the same name gets its own vectors.
_OFFTOPIC_VECTORS: dict[str, np.ndarray] = {}


def _offtopic_vectors(embedder: Embedder) -> np.ndarray:
    questions = offtopic_questions()
    key = "\0".join(str(getattr(embedder, name, "")) for name in ("model", "url", "query_prefix", "query_input_type"))
    cached = _OFFTOPIC_VECTORS.get(key)
    if cached is not None:
        probe = embedder.embed_queries(list(questions[:1]))[0]
        if probe.shape == cached[0].shape and float(probe @ cached[0]) > 0.999:
            return cached
    _OFFTOPIC_VECTORS[key] = embedder.embed_queries(list(questions))
    return _OFFTOPIC_VECTORS[key]


def heading_question(title: str, heading: str) -> str:
    """A question a section answers, from its heading: the heading alone when it says enough,
    with its page's title when it is one or two words ("Options", "Usage")."""
    return heading if len(heading.split()) >= 3 or not title else f"{title}: {heading}"


def measure(store: Store, embedder: Embedder, source: str) -> Calibration | None:
    """Ask the source both kinds of questions; None when it has no chunk to ask."""
    chunks = store.source_chunk_count(source)
    if not chunks:
        return None
    headings = store.sample_headings(source, HEADING_QUESTIONS)
    questions = [heading_question(title, heading) for title, heading in headings]
    offtopic = store.best_scores(_offtopic_vectors(embedder), source)
    answered = store.best_scores(embedder.embed_queries(questions), source) if questions else offtopic
    return Calibration(
        model=embedder.model,
        chunks=chunks,
        offtopic_median=round(float(np.median(offtopic)), 4),
        offtopic_high=round(float(np.quantile(offtopic, OFFTOPIC_QUANTILE)), 4),
        answered_median=round(float(np.median(answered)), 4),
        answered_low=round(float(np.quantile(answered, 0.1)), 4),
        questions=len(questions),
        measured_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S"),
    )


# Heading questions the reader is measured on, per source (about 10 s of its time at ingest).
READER_QUESTIONS = 40


def reader_bar_of(answered_low: float, unanswered_high: float) -> float:
    """Where the reader's bar lies between what the source's own answered and unanswered heading
    questions score (docs/reader.md, "Refusing")."""
    return (answered_low + unanswered_high) / 2


@dataclass(frozen=True)
class ReaderScores:
    """The reader's best score for questions from the source's own headings: with their section
    among the candidates (answered), and with it taken out (on topic, and unanswered)."""

    answered: list[float]
    unanswered: list[float]


def measure_reader(store: Store, embedder: Embedder, reader: ScoringReranker, source: str) -> ReaderScores:
    """Each sampled heading's question, searched as `pgcite search` does, read by the reader."""
    from pgcite.retrieval.search import search
    from pgcite.vocabulary import SearchFilter

    answered, unanswered = [], []
    for title, heading in store.sample_headings(source, READER_QUESTIONS):
        question = heading_question(title, heading)
        hits = search(store, embedder, question, k=reader.candidates, filters=SearchFilter(source=source))
        scores = reader.score_hits(question, hits)
        own = [(h.title, h.heading) == (title, heading) for h in hits]
        if any(own):
            answered.append(max(s for s, o in zip(scores, own, strict=True) if o))
        if not all(own):
            unanswered.append(max(s for s, o in zip(scores, own, strict=True) if not o))
    return ReaderScores(answered, unanswered)


def refresh(store: Store, embedder: Embedder, source: str, reader: ReaderReranker | None = None) -> Calibration | None:
    """The source's calibration, measured again when it has none, or its model or size changed;
    with a reader, its scores too when they were measured with another reader or not at all."""
    current = Calibration.from_json(store.load_calibration(source))
    if current is None or current.stale(embedder.model, store.source_chunk_count(source)):
        current = measure(store, embedder, source)
    elif reader is None or current.reader == reader.identity:
        return current
    if current is not None and reader is not None:
        scores = measure_reader(store, embedder, reader, source)
        if scores.answered and scores.unanswered:
            current = replace(
                current,
                reader=reader.identity,
                reader_answered_low=round(float(np.quantile(scores.answered, 0.1)), 4),
                reader_unanswered_median=round(float(np.median(scores.unanswered)), 4),
                reader_unanswered_high=round(float(np.quantile(scores.unanswered, 0.9)), 4),
            )
    store.save_calibration(source, current.to_json() if current else None)
    return current


def load(store: Store, source: str) -> Calibration | None:
    return Calibration.from_json(store.load_calibration(source))
