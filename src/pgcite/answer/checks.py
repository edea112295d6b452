"""The checks run on every answer before it is trusted (documented in docs/answering.md):
- citation numbers that name no fed source are removed from the text as it streams, and reported;
- each cited sentence, list item or table row (one unit: a citation at its end covers it) is
  compared with the sources it cites: its support is the share of its content words found in them,
  or, when that is low, the best cosine similarity between the sentence and one of their
  sentences; below SEMANTIC_SUPPORT it is reported as unsupported. Shared words do not vouch for
  one that names what its sources do not, says the opposite of them, or only restates the question;
- each uncited one is compared so with each source given: pgcite cites the one that supports it
  (the answer given has the number, with_added_citations), or reports it as uncited and unsupported;
- an answer with nothing to check (no claim, no code a source gives) does not pass;
- links and e-mail addresses that appear in no fed source are reported (a poisoned page's way
  of sending readers elsewhere), and so are those found in a source but on a site other than the
  docs' own (the fed sources' base URLs and the allowed hosts); so are packages an install
  command names that no fed source mentions (a made-up name is one anybody can publish).
An answer passes (Checks.passed) when nothing is reported but links a source holds to another site."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from pgcite.answer.claims import (
    CITATION,
    SENTENCE_END,
    cited_numbers,
    code_blocks,
    content_words,
    exact_terms,
    folded,
    is_claim,
    negated_words,
    says_not,
    split_claims,
    term_in,
    without_lead_in,
)
from pgcite.embedding.models import Embedder
from pgcite.safety import foreign_links, foreign_packages, offsite_links, own_sites
from pgcite.vocabulary import REFUSAL, Passage

# A cited sentence is supported when at least half its content words occur in the cited sources,
# or, failing that, when it is this close (cosine) to one of their sentences.
LEXICAL_SUPPORT = 0.5
SEMANTIC_SUPPORT = 0.6

__all__ = ["CITATION", "AddedCitation", "Checks", "CitationFilter", "Unsupported", "check_answer", "is_refusal"]


@dataclass(frozen=True)
class Unsupported:
    sentence: str
    sources: tuple[int, ...]
    support: float
    why: str = ""  # when it is not the words' support: a name the sources lack, a "not", the question


@dataclass(frozen=True)
class AddedCitation:
    """An uncited claim one source given supports: pgcite cites that source for it."""

    sentence: str
    source: int


@dataclass
class Checks:
    invalid_citations: list[int] = field(default_factory=list)
    uncited_sentences: list[str] = field(default_factory=list)  # left with none (pgcite adds the ones it can)
    added_citations: list[AddedCitation] = field(default_factory=list)
    unsupported: list[Unsupported] = field(default_factory=list)
    foreign_links: list[str] = field(default_factory=list)
    offsite_links: list[str] = field(default_factory=list)
    foreign_packages: list[str] = field(default_factory=list)  # to install, named by no source
    # An answer with nothing to check (code no source gives, lead-ins, fragments) does not pass.
    nothing_checked: bool = False

    @property
    def passed(self) -> bool:
        """Something was checked, every claim cites a source given that supports it, and no link or
        package to install is invented. (A link to another site that a source holds is only a
        caution: the docs themselves give it.)"""
        return not (
            self.invalid_citations
            or self.uncited_sentences
            or self.unsupported
            or self.foreign_links
            or self.foreign_packages
            or self.nothing_checked
        )

    def as_json(self) -> dict:
        return dict(asdict(self), passed=self.passed)

    def warnings(self) -> list[str]:
        lines = [f"removed citation [{n}]: there is no source {n}" for n in self.invalid_citations]
        nowhere = {u.sentence for u in self.unsupported if not u.sources}  # said once, below
        lines += [f"no citation: {s!r}" for s in self.uncited_sentences if s not in nowhere]
        lines += [
            f"no citation, so pgcite cites [{a.source}], which supports it: {a.sentence!r}"
            for a in self.added_citations
        ]
        for u in self.unsupported:
            by = (
                f"not supported by {''.join(f'[{n}]' for n in u.sources)}"
                if u.sources
                else "no citation, and no source given supports it"
            )
            lines.append(f"{by} ({u.why or f'support {u.support:.2f}'}): {u.sentence!r}")
        if self.nothing_checked:
            lines.append("nothing to check: no sentence, list item or table row, and no code a source gives as it is")
        lines += [f"link not found in any source (do not trust it): {x}" for x in self.foreign_links]
        lines += [
            f"package to install that no source names (check it exists and is the right one): {x}"
            for x in self.foreign_packages
        ]
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


def check_answer(
    text: str,
    passages: Sequence[Passage],
    embedder: Embedder,
    invalid: list[int],
    allowed_hosts: str = "",
    question: str = "",
) -> Checks:
    checks = Checks(invalid_citations=list(invalid))
    by_number = {p.number: p for p in passages}
    asked = content_words(question)
    # Sentences measured by meaning: (sentence, the sources it is measured against, its lexical
    # support, cited, the cosine it needs). A cited sentence is measured against its cited sources
    # together; an uncited one against each source given that could support it, so that the one
    # that does is cited for it (small models often leave the number out). A need of -1 only
    # chooses among sources that its words already support equally.
    queue: list[tuple[str, tuple[int, ...], float, bool, float]] = []
    uncited: list[tuple[str, int]] = []  # (sentence, the source that supports it)

    def unsupported(plain: str, against: tuple[int, ...], support: float, why: str = "") -> None:
        checks.unsupported.append(Unsupported(plain, against, round(support, 3), why))
        if not against:
            checks.uncited_sentences.append(plain)

    claims = [c for c in map(without_lead_in, split_claims(text)) if is_claim(c)]
    # Code is not read as claims; a block a source gives word for word still counts as checked.
    verbatim = [b for b in code_blocks(text) if any(folded(b) in folded(p.hit.content) for p in passages)]
    checks.nothing_checked = not claims and not verbatim
    for sentence in claims:
        numbers = set(cited_numbers(sentence))
        cited = tuple(sorted(numbers & set(by_number)))
        plain = CITATION.sub("", sentence).strip()
        words = content_words(plain)
        if asked and words and words <= asked:
            # "Yes, X does Y" for "Does X do Y?": a verdict whose words all come from the question,
            # which no count of words found in a source can check.
            unsupported(plain, cited, 0.0, "it only restates the question")
            continue
        if cited:
            sources = [by_number[n] for n in cited]
            lexical = _lexical(words, sources)
            if why := _unfaithful(plain, words, sources):
                unsupported(plain, cited, lexical, why)
            elif lexical < LEXICAL_SUPPORT:
                queue.append((plain, cited, lexical, True, SEMANTIC_SUPPORT))
            continue
        # A source may be cited for it only if it gives its names, does not say the opposite, and
        # shares at least two of its words (one shared word, such as a heading's "check", proves nothing).
        fits = {
            n: _lexical(words, [p])
            for n, p in by_number.items()
            if len(words & _held(p)) >= min(2, len(words)) and not _unfaithful(plain, words, [p])
        }
        lexical = max(fits.values(), default=0.0)
        tied = tuple(n for n, share in fits.items() if share == lexical)
        if lexical >= LEXICAL_SUPPORT and len(tied) == 1:
            uncited.append((plain, tied[0]))
        elif fits:
            queue.append(
                (
                    plain,
                    tied if lexical >= LEXICAL_SUPPORT else tuple(fits),
                    lexical,
                    False,
                    -1.0 if lexical >= LEXICAL_SUPPORT else SEMANTIC_SUPPORT,
                )
            )
        else:
            unsupported(plain, (), lexical)
    if queue:
        source_sentences = {
            n: [s for s in split_claims(by_number[n].hit.content) if len(s.split()) >= 3] or [by_number[n].hit.content]
            for _, against, _, _, _ in queue
            for n in against
        }
        flat = [(n, s) for n, sentences in source_sentences.items() for s in sentences]
        vectors = embedder.embed_documents([s for s, _, _, _, _ in queue] + [s for _, s in flat])
        claim_vectors, sentence_vectors = vectors[: len(queue)], vectors[len(queue) :]
        for (plain, against, lexical, was_cited, need), claim_vector in zip(queue, claim_vectors, strict=True):
            rows = [i for i, (n, _) in enumerate(flat) if n in against]
            similarity = sentence_vectors[rows] @ claim_vector if rows else np.zeros(1)
            semantic = float(np.max(similarity))
            if semantic < need:
                unsupported(plain, against if was_cited else (), max(lexical, semantic))
            elif not was_cited:
                uncited.append((plain, flat[rows[int(np.argmax(similarity))]][0]))
    cursor = 0
    for plain, source in sorted(uncited, key=lambda x: _end_of(text, x[0]) or 0):
        at = _end_of(text, plain, cursor)
        if at is None:  # not found as written (it cannot be marked): reported instead
            checks.uncited_sentences.append(plain)
        else:
            checks.added_citations.append(AddedCitation(plain, source))
            cursor = at
    checks.foreign_links = foreign_links(text, [f"{p.hit.url}\n{p.hit.content}" for p in passages])
    checks.foreign_packages = foreign_packages(text, [p.hit.content for p in passages])
    own = own_sites([p.hit.url for p in passages], allowed_hosts)
    checks.offsite_links = [x for x in offsite_links(text, own) if x not in checks.foreign_links]
    return checks


def _end_of(text: str, claim: str, start: int = 0) -> int | None:
    """Where a claim ends in the answer's text (before its closing punctuation), from `start`."""
    words = claim.split()[-8:]
    if not words:
        return None
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.compile(pattern).search(text, start)
    if match is None:
        return None
    end = match.end()
    while end > match.start() and text[end - 1] in ".!?;:":
        end -= 1
    return end


def with_added_citations(text: str, checks: Checks) -> str:
    """The answer with the citations the checks found for its uncited claims, each written as
    ` [n]` where its claim ends."""
    cursor, out = 0, []
    for added in checks.added_citations:
        at = _end_of(text, added.sentence, cursor)
        if at is None:
            continue
        out += [text[cursor:at], f" [{added.source}]"]
        cursor = at
    return "".join(out) + text[cursor:]


def _held(passage: Passage) -> set[str]:
    return content_words(passage.hit.breadcrumb + " " + passage.hit.content)


def _lexical(words: set[str], sources: Sequence[Passage]) -> float:
    """The share of a sentence's content words that the sources hold (heading path included)."""
    if not words:
        return 1.0
    held = set().union(*(_held(p) for p in sources))
    return len(words & held) / len(words)


def _unfaithful(claim: str, words: set[str], sources: Sequence[Passage]) -> str:
    """Why shared words cannot vouch for the claim, if they cannot: it gives a name or value the
    sources do not (a model makes details up around the words it read), or it says the opposite
    of the source sentences closest to it ("your upcasters keep working" against "they don't
    apply"). Empty when neither."""
    held = folded(" ".join(p.hit.breadcrumb + " " + p.hit.content for p in sources))
    if folded(claim) in held:  # quoted word for word: it says what the source says
        return ""
    if missing := sorted(t for t in exact_terms(claim) if not term_in(t, held)):
        return "it names " + ", ".join(f"`{t}`" for t in missing) + ", which the sources do not"
    # Split as the claim is, so a quoted sentence meets itself, not the item around it (whose other
    # sentence may say "not").
    sentences = [
        part
        for p in sources
        for s in split_claims(p.hit.content) or [p.hit.content]
        for part in SENTENCE_END.split(s)
        if part.strip()
    ]
    kept = [content_words(s) for s in sentences]
    for part in SENTENCE_END.split(claim):
        own = content_words(part)
        shared = [len(own & k) for k in kept]
        most = max(shared, default=0)
        closest = [s for s, n in zip(sentences, shared, strict=True) if most and n == most]
        if not any(says_not(s) == says_not(part) for s in closest) and any(_denies(part, own, s) for s in closest):
            return "it says the opposite of the source"
    return ""


def _denies(claim: str, words: set[str], source: str) -> bool:
    """One of the two says "not" about at least two of the claim's words and the other says no "not"."""
    if says_not(claim) == says_not(source):
        return False
    under = negated_words(claim) & content_words(source) if says_not(claim) else negated_words(source) & words
    return len(under) >= 2


def is_refusal(text: str) -> bool:
    return text.strip().rstrip(".").lower() == REFUSAL.rstrip(".").lower()
