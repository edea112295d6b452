"""Cutting one block that is over the token budget into pieces that fit, at the coarsest boundary
that works (list items, lines, sentences, words, characters); a table's pieces repeat its header and
code is cut between lines into complete fences (see chunking.py for the decisions)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import pairwise

from markdown_it import MarkdownIt

from pgcite.embedding.tokenizer import CountTokens
from pgcite.ingest.markdown import Block
from pgcite.ingest.markup import Fence, fence_closes, fence_open

__all__ = ["CHARS_PER_TOKEN", "Sized", "bounded", "is_fence", "split_block", "split_lines", "split_sentences"]

_MD = MarkdownIt("commonmark").enable("table")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")

Sized = tuple[str, int]  # a piece of text and its token count


def is_fence(text: str) -> bool:
    return fence_open(text) is not None


def split_sentences(text: str) -> list[str]:
    return _SENTENCE_END.split(text)


def _words(text: str) -> list[str]:
    return text.split()


def split_lines(text: str) -> list[str]:
    """Lines, except that a fenced code region stays one item so it is never cut."""
    out: list[str] = []
    fence: list[str] = []
    opening: Fence | None = None
    for line in text.split("\n"):
        if fence and opening is not None:
            fence.append(line)
            if fence_closes(line, opening):
                out.append("\n".join(fence))
                fence = []
        elif opened := fence_open(line):
            fence, opening = [line], opened
        else:
            out.append(line)
    if fence:
        out.append("\n".join(fence))
    return out


def _list_items(text: str) -> list[str]:
    """Top-level items of a Markdown list, each with its nested content."""
    lines = text.split("\n")
    starts = [
        tok.map[0] for tok in _MD.parse(text) if tok.type == "list_item_open" and tok.level == 1 and tok.map is not None
    ]
    if not starts:
        return [text]
    bounds = [0, *starts[1:], len(lines)]
    return ["\n".join(lines[a:b]).strip("\n") for a, b in pairwise(bounds)]


def _group(
    pieces: Sequence[Sized], sep: str, limit: int, count: CountTokens, head: str = "", tail: str = ""
) -> list[Sized]:
    """Greedily join consecutive pieces into texts of at most `limit` tokens.

    `head`/`tail` wrap every group (a table header, a code fence). Sizes are added up, then each
    group is checked exactly and halved until it fits or is a single piece.
    """

    def render(group: Sequence[Sized]) -> str:
        return "\n".join(part for part in (head, sep.join(p for p, _ in group), tail) if part)

    base = count(render([])) if head or tail else 0
    groups: list[list[Sized]] = []
    current: list[Sized] = []
    size = base
    for piece in pieces:
        if current and size + piece[1] > limit:
            groups.append(current)
            current, size = [], base
        current.append(piece)
        size += piece[1]
    if current:
        groups.append(current)

    def fit(group: list[Sized]) -> list[Sized]:
        text = render(group)
        tokens = count(text)
        if tokens <= limit or len(group) == 1:
            return [(text, tokens)]
        return fit(group[: len(group) // 2]) + fit(group[len(group) // 2 :])

    return [out for group in groups for out in fit(group)]


def _split_chars(text: str, limit: int, count: CountTokens) -> list[Sized]:
    """Last resort for a single "word" over the budget (a huge URL): longest prefixes that fit."""
    pieces: list[Sized] = []
    while text:
        lo, hi = 1, min(len(text), limit * CHARS_PER_TOKEN)  # at least one character, at most what `limit` allows
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(text[:mid]) <= limit:
                lo = mid
            else:
                hi = mid - 1
        pieces.append((text[:lo], count(text[:lo])))
        text = text[lo:].lstrip()
    return pieces


Splitter = tuple[Callable[[str], list[str]], str]  # (split function, separator to rejoin)
_PROSE_LEVELS: dict[str, list[Splitter]] = {
    "paragraph": [(split_sentences, " "), (_words, " ")],
    "list": [(_list_items, "\n"), (split_lines, "\n"), (split_sentences, " "), (_words, " ")],
}
_DEFAULT_LEVELS: list[Splitter] = [(split_lines, "\n"), (split_sentences, " "), (_words, " ")]


def _split(
    text: str, levels: Sequence[Splitter], limit: int, count: CountTokens, size: int | None = None
) -> list[Sized]:
    """Split prose into pieces of at most `limit` tokens, at the coarsest boundary that works."""
    size = count(text) if size is None else size
    if size <= limit or is_fence(text):  # nested fences are never cut
        return [(text, size)]
    if not levels:
        return _split_chars(text, limit, count)
    split, sep = levels[0]
    parts = [part for part in split(text) if part.strip()]
    if len(parts) <= 1:
        return _split(text, levels[1:], limit, count, size)
    pieces = [piece for part in parts for piece in _split(part, levels[1:], limit, count)]
    return _group(pieces, sep, limit, count)


def _split_table(text: str, limit: int, count: CountTokens) -> list[Sized]:
    """Rows grouped under a repeated header (header line + delimiter line)."""
    lines = text.split("\n")
    head = "\n".join(lines[:2])
    room = limit - count(head)
    if len(lines) < 3 or room <= 0:
        return _split(text, _DEFAULT_LEVELS, limit, count)
    rows = [piece for row in lines[2:] for piece in _split(row, [(_words, " ")], room, count)]
    return _group(rows, "\n", limit, count, head=head)


def _split_code(text: str, limit: int, count: CountTokens) -> list[Sized]:
    """Code pieces of at most `limit` tokens, cut between lines, each a complete fence."""
    lines = text.split("\n")
    opening = fence_open(lines[0])
    if opening is None:  # indented code: any run of its lines is still indented code
        return _group([(line, count(line)) for line in lines], "\n", limit, count)
    body = lines[1:]
    closing = opening.indent + opening.marker
    if body and fence_closes(body[-1], opening):
        closing = body.pop()
    sized = [(line, count(line)) for line in body]
    return _group(sized, "\n", limit, count, head=lines[0], tail=closing)


def split_block(block: Block, size: int, budget: int, code_limit: int, count: CountTokens) -> list[Sized]:
    """Pieces of a block of `size` tokens, over `budget`: code at `code_limit` (it may exceed the budget up to
    there), a table by rows under its header, other kinds at the coarsest boundary that works."""
    if block.kind == "code":
        return [(block.text, size)] if size <= code_limit else _split_code(block.text, code_limit, count)
    if block.kind == "table":
        return _split_table(block.text, budget, count)
    levels = _PROSE_LEVELS.get(block.kind, _DEFAULT_LEVELS)
    return _split(block.text, levels, budget, count, size)


# WordPiece reads a run of more than 100 word characters as one unknown token, however long: such
# a run counts as one token per CHARS_PER_TOKEN characters, so a 5 MB "word" is split like any
# other oversized text instead of passing as a 5-token chunk (prose runs 4 to 5 characters a token).
CHARS_PER_TOKEN = 16
_UNREAD_RUN = re.compile(r"\w{101,}")


def bounded(count_tokens: CountTokens) -> CountTokens:
    def count(text: str) -> int:
        return count_tokens(text) + sum(-(-len(run) // CHARS_PER_TOKEN) - 1 for run in _UNREAD_RUN.findall(text))

    return count
