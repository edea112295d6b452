"""The embedded offline generator: answers by quoting the passages' own units, each cited.

`ExtractiveGenerator` cuts the fed passages into *units* (units.py: prose sentences, list items, table rows
written back with their header, whole fenced code blocks, and a lead-in with the short block it
introduces), scores each against the question, and writes the best few with ` [n]` after each. It
never writes a word that is not in a cited passage, so it cannot invent, nor synthesise.

A unit's relevance is 0.6 x its cosine with the question + 0.4 x the IDF-weighted share of the
question's words it holds + up to 0.08 for those words in its headings, less a penalty when most
of its words are the question's own (a unit that only restates or quotes the question is never
chosen). A prior for the passage's rank (0.16 for [1], falling to 0 at [6]) orders the units but
does not make one relevant. The answer is exactly `Not in the documents.` when no unit's
relevance reaches `min_score`, or the passages hold too little of the question's word weight
(`min_coverage`). Otherwise up to `max_units` units within MARGIN of the best are written: the
best unit first, then the rest of its passage and the other passages, each in document order; a
chosen sentence brings along the lead-in and block after it, and a paragraph's last sentence the
code block right after it.

How the numbers were chosen, and what they measure on every question set: docs/answering.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from pgcite.answer.units import Atom, Candidate, lead_in, passage_candidates
from pgcite.answer.words import CAMEL, WORD, content_words
from pgcite.embedding.models import Embedder
from pgcite.vocabulary import REFUSAL, Passage, Usage

__all__ = ["DEFAULT_MIN_COVERAGE", "DEFAULT_MIN_SCORE", "ExtractiveGenerator", "ScoredUnit"]

DEFAULT_MIN_SCORE = 0.25
DEFAULT_MIN_COVERAGE = 0.08

W_COSINE = 0.6
W_OVERLAP = 0.4
W_HEADING = 0.08
W_RANK = 0.16
W_ACTION = 0.1  # for a how-question, a unit holding code (a command, setting, call) gains this
MARGIN = 0.7  # units within this fraction of the best are candidates
ECHO = 0.5  # a unit with less than this share of words the question lacks is docked for echoing it
W_ECHO = 0.3
MIN_NOVELTY = 0.25  # below this, a unit only restates the question (or quotes it) and never answers
DUPLICATE = 0.8  # containment of content words above which a unit repeats a chosen one
LONG_UNIT = 40  # words per atom above which word overlap is discounted (by sqrt(LONG_UNIT / words))
EMBED_CHARS = 600  # a unit's text is cut to about this many characters (~150 tokens) for embedding
READER_LEADS = True  # where pgcite's reader read the first section in windows, its best window's unit leads


@dataclass(frozen=True)
class ScoredUnit:
    """A candidate unit with its score parts, for calibration and inspection."""

    passage: int  # the passage number it would be cited as
    kind: str  # "prose" | "item" | "row" | "code" | "group"
    text: str
    score: float
    relevance: float
    cosine: float
    overlap: float
    heading: float


# --- writing ---------------------------------------------------------------------------------


def _table_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _render(chosen: list[tuple[Passage, Atom]]) -> Iterator[str]:
    """Yield the answer piece by piece (separator included in the piece that follows it)."""
    previous: tuple[Passage, Atom] | None = None
    for passage, atom in chosen:
        cite = f"[{passage.number}]"
        same_passage = previous is not None and previous[0] is passage
        prev = previous[1] if previous is not None else None
        if previous is None:
            sep = ""
        elif same_passage and prev is not None and prev.kind == atom.kind == "prose":
            sep = " "
        elif (same_passage and prev is not None and prev.kind == atom.kind == "item") or (
            same_passage and prev is not None and prev.kind == atom.kind == "row" and prev.block == atom.block
        ):
            sep = "\n"
        elif same_passage and prev is not None and prev.kind == "prose" and lead_in(prev.text) and atom.kind == "item":
            sep = "\n"  # a lead-in sits right above its list
        else:
            sep = "\n\n"
        if atom.kind == "prose":
            text = f"{atom.text} {cite}"
        elif atom.kind == "item":
            text = f"- {atom.text} {cite}"
        elif atom.kind == "row":
            width = max(len(atom.header), len(atom.cells))
            cells = list(atom.cells) + [""] * (width - len(atom.cells))
            cells[-1] = f"{cells[-1]} {cite}".strip()
            text = _table_row(cells)
            if sep != "\n":  # first row of this table in the answer: header first
                header = list(atom.header) + [""] * (width - len(atom.header))
                aligns = list(atom.aligns) + ["---"] * (width - len(atom.aligns))
                text = f"{_table_row(header)}\n{_table_row(aligns)}\n{text}"
        else:
            text = f"{atom.text}\n{cite}"
        yield sep + text
        previous = (passage, atom)


# --- the generator ---------------------------------------------------------------------------


class ExtractiveGenerator:
    """Answers with the passages' own best sentences, items, rows and code blocks, each cited."""

    name = "extractive"
    judges_relevance = False  # it quotes; whether to refuse is decided from scores (answer.py, refuse())

    def __init__(
        self,
        embedder: Embedder,
        *,
        max_units: int = 5,
        min_score: float = DEFAULT_MIN_SCORE,
        min_coverage: float = DEFAULT_MIN_COVERAGE,
    ) -> None:
        if max_units < 1:
            raise ValueError("max_units must be at least 1")
        self.embedder = embedder
        self.max_units = max_units
        self.min_score = min_score
        self.min_coverage = min_coverage

    # scoring ------------------------------------------------------------------------------

    def _score(self, question: str, passages: Sequence[Passage]) -> tuple[list[Candidate], float]:
        """The candidates, best first, and the question's coverage by the passages (see _select)."""
        ordered = sorted(passages, key=lambda p: p.number)
        candidates = [c for i, p in enumerate(ordered) for c in passage_candidates(i, p)]
        if not candidates or not question.strip():
            return [], 0.0
        # IDF over the atoms of the fed passages (each atom counted once)
        atom_words: dict[int, frozenset[str]] = {}
        for c in candidates:
            for a in c.atoms:
                atom_words.setdefault(id(a), content_words(a.embed_text))
        total = len(atom_words)
        df: dict[str, int] = {}
        for words in atom_words.values():
            for w in words:
                df[w] = df.get(w, 0) + 1
        q_words = content_words(question)
        how = asks_how(question)
        idf = {w: math.log((total + 1) / (df.get(w, 0) + 0.5)) for w in q_words}
        q_weight = sum(idf.values())
        found = set().union(*atom_words.values(), *(c.heading_words for c in candidates))
        coverage = sum(idf[w] for w in q_words & found) / q_weight if q_weight > 0 else 1.0

        # Every atom is embedded once, in one call; a unit of several atoms (a lead-in and its
        # list) gets the length-weighted mean of its atoms' vectors, which is what the model's
        # mean pooling would give, less the attention across the parts.
        texts = sorted({_for_embedding(a.embed_text) for c in candidates for a in c.atoms})
        vectors = np.asarray(self.embedder.embed_documents(texts), dtype=np.float32)
        row_of = {t: n for n, t in enumerate(texts)}
        query = np.asarray(self.embedder.embed_query(question), dtype=np.float32)
        for c in candidates:
            rows = [row_of[_for_embedding(a.embed_text)] for a in c.atoms]
            if len(rows) == 1:
                vector = vectors[rows[0]]
            else:
                weights = np.array([len(_for_embedding(a.embed_text)) for a in c.atoms], dtype=np.float32)
                vector = weights @ vectors[rows]
                vector = vector / (np.linalg.norm(vector) or 1.0)
            c.cosine = float(vector @ query)
            c.overlap = sum(idf[w] for w in q_words & c.words) / q_weight if q_weight > 0 else 0.0
            per_atom = len(WORD.findall(c.embed_text)) / len(c.atoms)
            if per_atom > LONG_UNIT:
                c.overlap *= math.sqrt(LONG_UNIT / per_atom)
            c.heading = sum(idf[w] for w in q_words & c.heading_words) / q_weight if q_weight > 0 else 0.0
            rank = max(0.0, 1.0 - 0.2 * (c.passage.number - 1))
            c.novelty = _novelty(c, q_words, atom_words)
            c.relevance = (
                W_COSINE * c.cosine
                + W_OVERLAP * c.overlap
                + W_HEADING * c.heading
                - W_ECHO * max(0.0, ECHO - c.novelty)
            )
            c.score = c.relevance + W_RANK * rank + (W_ACTION if how and _holds_action(c) else 0.0)
        candidates = [c for c in candidates if c.novelty >= MIN_NOVELTY]
        candidates.sort(key=lambda c: (-round(c.score, 6), c.order))
        return candidates, coverage

    def rank(self, question: str, passages: Sequence[Passage]) -> list[ScoredUnit]:
        """Every candidate unit, best first, with its score parts (for calibration)."""
        return [
            ScoredUnit(
                c.passage.number,
                "group" if len(c.atoms) > 1 else c.atoms[0].kind,
                "\n".join(a.text for a in c.atoms),
                c.score,
                c.relevance,
                c.cosine,
                c.overlap,
                c.heading,
            )
            for c in self._score(question, passages)[0]
        ]

    def _select(self, question: str, passages: Sequence[Passage]) -> list[tuple[Passage, Atom]]:
        candidates, coverage = self._score(question, passages)
        # A question about something the passages never name ("Does pgcite support Elasticsearch?")
        # scores like an answerable one: the product's name and topic are all over the passages.
        # Its coverage tells them apart: that name, on many units, weighs little there; the words
        # naming what is asked, on none, weigh most.
        # The bar is on relevance alone: the rank prior orders units, it does not make one relevant.
        if not candidates or max(c.relevance for c in candidates) < self.min_score or coverage < self.min_coverage:
            return []
        floor = MARGIN * candidates[0].score
        chosen: list[Candidate] = []
        used: set[int] = set()
        taken: dict[int, list[Atom]] = {}
        for c in candidates:
            if len(chosen) >= self.max_units or c.score < floor:
                break
            if (
                c.relevance < self.min_score
                or any(id(a) in used for a in c.atoms)
                or any(_duplicate(c, d) for d in chosen)
            ):
                continue
            chosen.append(c)
            used.update(id(a) for a in c.atoms)
            if c.tail and not any(id(a) in used for a in c.tail):
                taken[id(c)] = c.tail
                used.update(id(a) for a in c.tail)
        # The passage of the best unit is written first, then the others as they were ranked;
        # within a passage, units keep the document's order.
        # For a how-question the unit holding the action leads, with its passage.
        if asks_how(question) and (action := next((c for c in chosen if _holds_action(c)), None)):
            chosen.remove(action)
            chosen.insert(0, action)
        # The reader read the first section with the question, unit by unit: its best unit there is
        # quoted first, then the rest as below.
        read = _reader_lead(candidates) if READER_LEADS else None
        if read is not None:
            atoms = {id(a) for a in read.atoms}
            chosen = [c for c in chosen if c is not read and not atoms & {id(a) for a in c.atoms}]
            chosen = [read, *chosen[: self.max_units - 1]]
        # The answer opens with the unit that answers (chosen[0]), then the rest of its passage in
        # the document's order: an earlier sentence of that passage is context, not the answer.
        first_choice: dict[int, int] = {}
        for n, c in enumerate(chosen):
            first_choice.setdefault(c.order[0], n)
        pairs = [
            (c.passage, a, (first_choice[c.order[0]], c is not chosen[0]))
            for c in chosen
            for a in [*c.atoms, *taken.get(id(c), [])]
        ]
        pairs.sort(key=lambda t: (*t[2], t[1].position))
        return [(p, a) for p, a, _ in pairs]

    def stream(self, question: str, passages: Sequence[Passage], usage: Usage) -> Iterator[str]:
        chosen = self._select(question, passages)
        if not chosen:
            yield REFUSAL
            return
        yield from _render(chosen)

    def answer(self, question: str, passages: Sequence[Passage]) -> str:
        return "".join(self.stream(question, passages, Usage()))


# A question asking how to do something, or which command, option or setting does it: its answer is
# the unit holding the action, not the page's introduction of what the feature is for.
_NAMED_THING = (
    r"(?:command|option|setting|flag|parameter|argument|method|function|class|attribute|property|field|key|variable"
    r"|config\w*)s?"
)
_HOW = re.compile(rf"\bhow (?:do|does|can|could|should|would|to|is)\b|\b(?:which|what) {_NAMED_THING}\b", re.IGNORECASE)


def _reader_lead(candidates: Sequence[Candidate]) -> Candidate | None:
    """The best-scored unit of the first passage within the reader's best window of it, if any."""
    for c in candidates:
        quote = c.passage.hit.reader_quote
        if c.passage.number == 1 and quote and all(a.embed_text in quote for a in c.atoms):
            return c
    return None


def asks_how(question: str) -> bool:
    return _HOW.search(question) is not None


def _holds_action(c: Candidate) -> bool:
    return any(a.kind == "code" or "`" in a.text for a in c.atoms)


_IDENTIFIER = re.compile(r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b")


def _for_embedding(text: str) -> str:
    # the model reads `respectPrefersColorScheme` as word pieces: spell identifiers out as words
    text = _IDENTIFIER.sub(lambda m: " ".join(p.lower() for p in CAMEL.findall(m.group(0))), text)
    if len(text) <= EMBED_CHARS:
        return text
    cut = text.rfind(" ", 0, EMBED_CHARS)
    return text[: cut if cut > EMBED_CHARS // 2 else EMBED_CHARS]


def _novelty(c: Candidate, question_words: frozenset[str], atom_words: dict[int, frozenset[str]]) -> float:
    """The share of content words the question lacks, in the unit's least novel atom of three
    words or more (a lead-in then a code example of the question itself restates it)."""
    shares = [
        len(words - question_words) / len(words) for words in (atom_words[id(a)] for a in c.atoms) if len(words) >= 3
    ]
    if not shares:
        return len(c.words - question_words) / len(c.words) if c.words else 0.0
    return min(shares)


def _duplicate(a: Candidate, b: Candidate) -> bool:
    if a.embed_text == b.embed_text:
        return True
    small = min(len(a.words), len(b.words))
    if small < 3:
        return False
    return len(a.words & b.words) / small >= DUPLICATE
