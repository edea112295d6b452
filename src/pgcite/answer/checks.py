"""The checks run on every answer before it is trusted (documented in docs/answering.md):
- citation numbers that name no fed source are removed from the text as it streams, and reported;
- sentences that carry no citation are reported;
- each cited sentence is compared with the sources it cites: its support is the share of its
  content words found in them, or, when that is low, the best cosine similarity between the
  sentence and one of their sentences; below SEMANTIC_SUPPORT it is reported as unsupported;
- links and e-mail addresses that appear in no fed source are reported (a poisoned page's way
  of sending readers elsewhere), and so are those found in a source but on a site other than the
  docs' own (the fed sources' base URLs and the allowed hosts)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pgcite.embedding.models import Embedder
from pgcite.safety import foreign_links, offsite_links, own_sites
from pgcite.vocabulary import REFUSAL, Passage

# A cited sentence is supported when at least half its content words occur in the cited sources,
# or, failing that, when it is this close (cosine) to one of their sentences.
LEXICAL_SUPPORT = 0.5
SEMANTIC_SUPPORT = 0.6

# Sources are numbered from 1, so "[0]" (an index in code) is never a citation.
CITATION = re.compile(r"\[([1-9]\d*(?:\s*,\s*[1-9]\d*)*)\]")
_STOPWORDS = frozenset(
    (
        "a an and are as at be been but by can do does for from has have how i if in into is it its of on or so such "
        "than that the their then there these they this to was were what when where which while who will with you your "
        "not no yes should would could may might must also only just more most very"
    ).split()
)


@dataclass(frozen=True)
class Unsupported:
    sentence: str
    sources: tuple[int, ...]
    support: float


@dataclass
class Checks:
    invalid_citations: list[int] = field(default_factory=list)
    uncited_sentences: list[str] = field(default_factory=list)
    unsupported: list[Unsupported] = field(default_factory=list)
    foreign_links: list[str] = field(default_factory=list)
    offsite_links: list[str] = field(default_factory=list)

    def warnings(self) -> list[str]:
        lines = [f"removed citation [{n}]: there is no source {n}" for n in self.invalid_citations]
        lines += [f"no citation: {s!r}" for s in self.uncited_sentences]
        lines += [
            f"not supported by {''.join(f'[{n}]' for n in u.sources)} (support {u.support:.2f}): {u.sentence!r}"
            for u in self.unsupported
        ]
        lines += [f"link not found in any source (do not trust it): {x}" for x in self.foreign_links]
        lines += [
            f"link to another site than the docs' own (check it before you follow it): {x}" for x in self.offsite_links
        ]
        return lines


class CitationFilter:
    """Removes citation numbers that name no source from streamed text, even when a "[12]"
    arrives split across pieces."""

    def __init__(self, valid: set[int]) -> None:
        self.valid = valid
        self.invalid: list[int] = []
        self._pending = ""

    def _clean(self, match: re.Match) -> str:
        numbers = [int(n) for n in re.split(r"\s*,\s*", match.group(1))]
        kept = [n for n in numbers if n in self.valid]
        self.invalid += [n for n in numbers if n not in self.valid and n not in self.invalid]
        return "".join(f"[{n}]" for n in kept)

    def feed(self, piece: str) -> str:
        text = self._pending + piece
        # Hold back an unfinished "[12" at the end until the next piece tells what it is.
        tail = re.search(r"\[[\d,\s]*$", text)
        self._pending = text[tail.start() :] if tail and len(text) - tail.start() < 24 else ""
        ready = text[: len(text) - len(self._pending)]
        return CITATION.sub(self._clean, ready)

    def flush(self) -> str:
        text, self._pending = self._pending, ""
        return CITATION.sub(self._clean, text)


def _content_words(text: str) -> set[str]:
    return {w.rstrip("s") for w in re.findall(r"[a-z0-9_]+", text.lower()) if w not in _STOPWORDS and len(w) > 1}


def _claims(answer: str) -> list[str]:
    """Sentences and list items of an answer, outside code blocks."""
    prose = re.sub(r"```.*?```", " ", answer, flags=re.DOTALL)
    claims = []
    for line in prose.splitlines():
        line = re.sub(r"^\s*(?:[-*+>#|]+|\d+[.)])\s+", "", line).strip()
        # A sentence ends at . ! or ? before a capital, quote or code span; a citation written
        # after the full stop ("... done. [2]") stays with its sentence.
        claims += [s.strip() for s in re.split(r"(?<=[.!?\]])\s+(?=[A-Z`\"(])", line) if s.strip()]
    return claims


def _is_claim(sentence: str) -> bool:
    """Worth a citation: not a lead-in ("Here is how:"), a bare citation, or a short fragment."""
    words = CITATION.sub("", sentence).split()
    return len(words) >= 4 and not sentence.rstrip().endswith(":")


def check_answer(
    text: str,
    passages: Sequence[Passage],
    embedder: Embedder,
    invalid: list[int],
    allowed_hosts: str = "",
) -> Checks:
    checks = Checks(invalid_citations=list(invalid))
    by_number = {p.number: p for p in passages}
    semantic_queue: list[tuple[str, tuple[int, ...], float]] = []
    for sentence in _claims(text):
        if not _is_claim(sentence):
            continue
        cited = tuple(
            sorted(
                {int(n) for m in CITATION.finditer(sentence) for n in re.split(r"\s*,\s*", m.group(1))} & set(by_number)
            )
        )
        if not cited:
            checks.uncited_sentences.append(CITATION.sub("", sentence).strip())
            continue
        words = _content_words(CITATION.sub("", sentence))
        source_words = set().union(
            *(_content_words(by_number[n].hit.breadcrumb + " " + by_number[n].hit.content) for n in cited)
        )
        lexical = len(words & source_words) / len(words) if words else 1.0
        if lexical < LEXICAL_SUPPORT:
            semantic_queue.append((sentence, cited, lexical))
    if semantic_queue:
        claims = [CITATION.sub("", s).strip() for s, _, _ in semantic_queue]
        source_sentences = {
            n: [s for s in _claims(by_number[n].hit.content) if len(s.split()) >= 3] or [by_number[n].hit.content]
            for _, cited, _ in semantic_queue
            for n in cited
        }
        flat = [(n, s) for n, sentences in source_sentences.items() for s in sentences]
        vectors = embedder.embed_documents(claims + [s for _, s in flat])
        claim_vectors, sentence_vectors = vectors[: len(claims)], vectors[len(claims) :]
        for (sentence, cited, lexical), claim_vector in zip(semantic_queue, claim_vectors, strict=True):
            rows = [i for i, (n, _) in enumerate(flat) if n in cited]
            semantic = float(np.max(sentence_vectors[rows] @ claim_vector)) if rows else 0.0
            if semantic < SEMANTIC_SUPPORT:
                checks.unsupported.append(
                    Unsupported(CITATION.sub("", sentence).strip(), cited, round(max(lexical, semantic), 3))
                )
    checks.foreign_links = foreign_links(text, [f"{p.hit.url}\n{p.hit.content}" for p in passages])
    own = own_sites([p.hit.url for p in passages], allowed_hosts)
    checks.offsite_links = [x for x in offsite_links(text, own) if x not in checks.foreign_links]
    return checks


def is_refusal(text: str) -> bool:
    return text.strip().rstrip(".").lower() == REFUSAL.rstrip(".").lower()
