"""What every chat shows of an answer, whatever its markup: the text with each [n] a link to its
section, the sections it cited, and the links the checks did not trust. Each platform's render module
gives its own escaping and link syntax; text from the documents is data, escaped by it."""

from __future__ import annotations

import re
from collections.abc import Callable

from pgcite.answer.flow import Answer
from pgcite.vocabulary import SearchHit

MARKER = re.compile(r"\[([1-9]\d*)\]")


def web(url: str) -> bool:
    """Only a web address becomes a link."""
    return url.startswith(("https://", "http://"))


def cited_text(
    text: str, answer: Answer, escape: Callable[[str], str], link: Callable[[str, str], str]
) -> list[tuple[str, bool]]:
    """The answer's text as pieces (markup, is-a-citation): the words escaped, each [n] that names a
    source `link(url, "[n]")`. A piece is whole: a render that must cut cuts between them."""
    by_number = {p.number: p.hit for p in answer.sources}
    pieces: list[tuple[str, bool]] = []
    at = 0
    for m in MARKER.finditer(text):
        pieces.append((escape(text[at : m.start()]), False))
        hit = by_number.get(int(m.group(1)))
        pieces.append((link(hit.url, m.group(0)) if hit else escape(m.group(0)), True))
        at = m.end()
    pieces.append((escape(text[at:]), False))
    return [p for p in pieces if p[0]]


def cited_sources(answer: Answer) -> list[tuple[str, SearchHit]]:
    """The sections the answer cites, each once, as "[n]" (or "[n][m]") in the order the text first
    cites them (none for a refusal)."""
    return [("".join(f"[{n}]" for n in numbers), hit) for numbers, hit in answer.cited_sections()]


def label(hit: SearchHit) -> str:
    return hit.breadcrumb or hit.title or hit.path


def untrusted_links(answer: Answer) -> list[str]:
    """Links in the answer that are not on the docs' own site (the checks found them)."""
    return [*answer.checks.foreign_links, *answer.checks.offsite_links]
