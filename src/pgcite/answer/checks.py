"""The checks run on every answer before it is trusted (documented in docs/answering.md):
- citation numbers that name no fed source are removed from the text as it streams, and reported;
- each cited sentence, list item or table row (one unit: a citation at its end covers it) is
  compared with the sources it cites: its support is the share of its content words found in them,
  or, when that is low, the best cosine similarity between the sentence and one of their
  sentences; below SEMANTIC_SUPPORT it is reported as unsupported;
- each uncited one is compared so with each source given: pgcite cites the one that supports it
  (the answer given has the number, with_added_citations), or reports it as uncited and unsupported;
- links and e-mail addresses that appear in no fed source are reported (a poisoned page's way
  of sending readers elsewhere), and so are those found in a source but on a site other than the
  docs' own (the fed sources' base URLs and the allowed hosts).
An answer passes (Checks.passed) when nothing is reported but links a source holds to another site."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from markdown_it import MarkdownIt

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

    @property
    def passed(self) -> bool:
        """Every claim cites a source given that supports it, and no link is invented. (A link to
        another site that a source holds is only a caution: the docs themselves give it.)"""
        return not (self.invalid_citations or self.uncited_sentences or self.unsupported or self.foreign_links)

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
            lines.append(f"{by} (support {u.support:.2f}): {u.sentence!r}")
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


_MD = MarkdownIt("commonmark").enable("table")
# A sentence ends at . ! or ? before a capital, quote or code span; a citation written after the
# full stop ("... done. [2]") stays with its sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?\]])\s+(?=[A-Z`\"(])")
_PIPE_ROW = re.compile(r"^\s*\|(.+?)\|?\s*$")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _claims(answer: str) -> list[str]:
    """The units a citation covers, outside code: each sentence of a paragraph (wrapped lines
    joined), each list item and each table body row whole (cells joined by " | "; the header
    names columns, it claims nothing). Headings claim nothing either. A citation at the end of
    an item or row is the one its writer gave it."""
    tokens = _MD.parse(answer)
    claims: list[str] = []
    items: list[tuple[int, list[str]]] = []  # open list items: (place in claims, own paragraphs)
    row: list[str] | None = None
    in_head = False
    for i, tok in enumerate(tokens):
        if tok.type == "list_item_open":
            items.append((len(claims), []))
        elif tok.type == "list_item_close":
            place, paragraphs = items.pop()
            if text := _one_line(" ".join(paragraphs)):
                claims.insert(place, text)  # before its nested items, as it is written
        elif tok.type in ("thead_open", "thead_close"):
            in_head = tok.type == "thead_open"
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close" and row is not None:
            if not in_head and any(row):
                claims.append(" | ".join(cell for cell in row if cell))
            row = None
        elif tok.type == "inline":
            kind = tokens[i - 1].type if i else ""
            if row is not None:
                row.append(_one_line(tok.content))
            elif kind == "heading_open":
                continue
            elif items and kind == "paragraph_open":
                items[-1][1].append(tok.content)
            else:
                claims += _sentences(tok.content)
    return claims


def _sentences(paragraph: str) -> list[str]:
    """A paragraph's sentences; a line that is a table row left unparsed (no header) is one."""
    claims: list[str] = []
    lines: list[str] = []

    def flush() -> None:
        claims.extend(_SENTENCE_END.split(_one_line(" ".join(lines))))
        lines.clear()

    for line in paragraph.split("\n"):
        if row := _PIPE_ROW.match(line):
            flush()
            claims.append(" | ".join(cell.strip() for cell in row.group(1).split("|") if cell.strip()))
        else:
            lines.append(line)
    flush()
    return [claim for claim in claims if claim]


def _is_claim(sentence: str) -> bool:
    """Worth a citation: not a lead-in ("Here is how:"), a bare citation, or a short fragment."""
    words = [w for w in CITATION.sub("", sentence).split() if w != "|"]
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
    # (sentence, the sources it is measured against, its best lexical support, cited): a cited
    # sentence against its cited sources together; an uncited one against each source given, so
    # that the one supporting it can be cited for it (small models often leave the number out).
    queue: list[tuple[str, tuple[int, ...], float, bool]] = []
    uncited: list[tuple[str, int]] = []  # (sentence, the source that supports it)
    for sentence in _claims(text):
        if not _is_claim(sentence):
            continue
        numbers = {int(n) for m in CITATION.finditer(sentence) for n in re.split(r"\s*,\s*", m.group(1))}
        cited = tuple(sorted(numbers & set(by_number)))
        plain = CITATION.sub("", sentence).strip()
        words = _content_words(plain)
        if cited:
            lexical = _lexical(words, [by_number[n] for n in cited])
            if lexical < LEXICAL_SUPPORT:
                queue.append((plain, cited, lexical, True))
            continue
        best, lexical = max(
            ((n, _lexical(words, [by_number[n]])) for n in by_number), key=lambda x: x[1], default=(0, 0.0)
        )
        if lexical >= LEXICAL_SUPPORT:
            uncited.append((plain, best))
        else:
            queue.append((plain, tuple(by_number), lexical, False))
    if queue:
        source_sentences = {
            n: [s for s in _claims(by_number[n].hit.content) if len(s.split()) >= 3] or [by_number[n].hit.content]
            for _, against, _, _ in queue
            for n in against
        }
        flat = [(n, s) for n, sentences in source_sentences.items() for s in sentences]
        vectors = embedder.embed_documents([s for s, _, _, _ in queue] + [s for _, s in flat])
        claim_vectors, sentence_vectors = vectors[: len(queue)], vectors[len(queue) :]
        for (plain, against, lexical, was_cited), claim_vector in zip(queue, claim_vectors, strict=True):
            rows = [i for i, (n, _) in enumerate(flat) if n in against]
            similarity = sentence_vectors[rows] @ claim_vector if rows else np.zeros(1)
            semantic = float(np.max(similarity))
            if semantic >= SEMANTIC_SUPPORT:
                if not was_cited:
                    uncited.append((plain, flat[rows[int(np.argmax(similarity))]][0]))
                continue
            checks.unsupported.append(
                Unsupported(plain, against if was_cited else (), round(max(lexical, semantic), 3))
            )
            if not was_cited:
                checks.uncited_sentences.append(plain)
    cursor = 0
    for plain, source in sorted(uncited, key=lambda x: _end_of(text, x[0]) or 0):
        at = _end_of(text, plain, cursor)
        if at is None:  # not found as written (it cannot be marked): reported instead
            checks.uncited_sentences.append(plain)
        else:
            checks.added_citations.append(AddedCitation(plain, source))
            cursor = at
    checks.foreign_links = foreign_links(text, [f"{p.hit.url}\n{p.hit.content}" for p in passages])
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


def _lexical(words: set[str], sources: Sequence[Passage]) -> float:
    """The share of a sentence's content words that the sources hold (heading path included)."""
    if not words:
        return 1.0
    held = set().union(*(_content_words(p.hit.breadcrumb + " " + p.hit.content) for p in sources))
    return len(words & held) / len(words)


def is_refusal(text: str) -> bool:
    return text.strip().rstrip(".").lower() == REFUSAL.rstrip(".").lower()
