"""Cut a parsed document into chunks that fit the embedding model's window.

`chunk_by_headings` (the default) packs whole blocks of one section at a time, so a chunk never
mixes two sections, and prefixes each chunk with a "Title > H2 > H3" breadcrumb that counts
against the token budget. `chunk_fixed` is the baseline: fixed windows of model tokens over the
whole document text.

Token counts are counts of the model's tokens WITHOUT [CLS]/[SEP]; all-MiniLM-L6-v2 reads 256
tokens including those two, hence `max_tokens=254`.

Decisions worth knowing:
- When a breadcrumb alone would take more than half of `max_tokens` (absurdly deep or long
  headings), that section's chunks carry no breadcrumb rather than starving the content.
- Fenced code is never cut below `hard_cap`, including fences nested in a list or blockquote;
  those nested fences are never cut at all (a chunk holding one may exceed `max_tokens`).
  A single code line longer than `hard_cap` stays whole in its piece.
- Overlap reuses whole trailing blocks, then trailing sentences of a paragraph or trailing
  lines of a list/blockquote/HTML block; it never takes part of a table or of code, and there
  is none into or out of a lone over-budget code chunk.
- `chunk_fixed` needs token offsets, so it takes a `Tokenizer` (count + spans), not a counter.
  Its text (`document_text`) keeps the heading lines ("## H2") between sections' blocks.
- Sizes are computed by counting each piece once and adding (exact for this WordPiece tokenizer,
  whose tokens never span whitespace); every packed group is then checked with an exact count
  and halved if it does not fit, so other tokenizers cannot overflow the budget either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgcite.embedding.tokenizer import CountTokens, Tokenizer
from pgcite.ingest.markdown import Block, ParsedDocument, Section
from pgcite.ingest.splitting import bounded, is_fence, split_block, split_lines, split_sentences

__all__ = ["Chunk", "chunk_by_headings", "chunk_fixed", "document_text"]

SEPARATOR = "\n\n"  # between breadcrumb and content, and between blocks


@dataclass(frozen=True)
class Chunk:
    index: int  # 0..n-1 within the document
    heading_path: tuple[str, ...]  # () for the intro
    anchor: str | None
    breadcrumb: str  # "Title > H2 > H3", "Title" for the intro, "" when not embedded
    content: str  # the chunk's text without the breadcrumb
    tokens: int  # count_tokens(embed_text)

    @property
    def heading(self) -> str:
        return self.heading_path[-1] if self.heading_path else ""

    @property
    def embed_text(self) -> str:
        return _embed_text(self.breadcrumb, self.content)


def _embed_text(breadcrumb: str, content: str) -> str:
    return f"{breadcrumb}{SEPARATOR}{content}" if breadcrumb else content


# --- heading-aware packing ---------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    text: str
    kind: str
    tokens: int
    solo: bool  # over budget (code): a chunk of its own, no overlap into or out of it


def _units(blocks: Sequence[Block], budget: int, code_limit: int, count: CountTokens) -> list[_Unit]:
    units: list[_Unit] = []
    for block in blocks:
        size = count(block.text)
        if size <= budget:
            units.append(_Unit(block.text, block.kind, size, False))
            continue
        pieces = split_block(block, size, budget, code_limit, count)
        solo = block.kind == "code"
        units.extend(_Unit(text, block.kind, tokens, solo or tokens > budget) for text, tokens in pieces)
    return units


def _overlap(previous: Sequence[_Unit], limit: int, count: CountTokens) -> list[_Unit]:
    """Trailing whole units of the previous chunk, then trailing sentences/lines, up to `limit`."""
    seed: list[_Unit] = []
    used = 0
    for unit in reversed(previous):
        if used + unit.tokens <= limit:
            seed.insert(0, unit)
            used += unit.tokens
            continue
        if unit.kind == "paragraph":
            parts, sep = split_sentences(unit.text), " "
        elif unit.kind in ("list", "blockquote", "html", "other"):
            parts, sep = split_lines(unit.text), "\n"
        else:  # never a fragment of a table or of code
            break
        taken: list[str] = []
        taken_tokens = 0
        for part in reversed(parts):
            part_tokens = count(part)
            if used + taken_tokens + part_tokens > limit or is_fence(part):
                break
            taken.insert(0, part)
            taken_tokens += part_tokens
        if taken:
            seed.insert(0, _Unit(sep.join(taken), unit.kind, taken_tokens, False))
        break
    return seed


def _pack_section(
    blocks: Sequence[Block],
    breadcrumb: str,
    count: CountTokens,
    max_tokens: int,
    overlap_tokens: int,
    hard_cap: int,
    additive: bool = False,
) -> list[tuple[str, int]]:
    """(content, tokens of the embedded text) of each chunk of one section. `additive`: the
    tokenizer's counts add up over whitespace (Tokenizer.additive), so a chunk's is its parts' sum."""
    prefix_tokens = count(breadcrumb) if breadcrumb else 0
    units = _units(blocks, max_tokens - prefix_tokens, hard_cap - prefix_tokens, count)

    def estimate(group: Sequence[_Unit]) -> int:
        return prefix_tokens + sum(u.tokens for u in group)

    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    for unit in units:
        if unit.solo:
            if current:
                groups.append(current)
            groups.append([unit])
            current = []
        elif not current or estimate([*current, unit]) <= max_tokens:
            current.append(unit)  # after a lone code chunk there is nothing to overlap with
        else:
            groups.append(current)
            seed = _overlap(current, overlap_tokens, count) if overlap_tokens > 0 else []
            while seed and estimate([*seed, unit]) > max_tokens:
                seed.pop(0)
            current = [*seed, unit]
    if current:
        groups.append(current)

    def exact(group: list[_Unit]) -> list[tuple[str, int]]:
        # One exact count per chunk unless the parts' sum is exact; halving only matters for a
        # tokenizer that is not additive.
        content = SEPARATOR.join(u.text for u in group)
        tokens = estimate(group) if additive else count(_embed_text(breadcrumb, content))
        if tokens <= max_tokens or len(group) == 1:
            return [(content, tokens)]
        return exact(group[: len(group) // 2]) + exact(group[len(group) // 2 :])

    return [chunk for group in groups for chunk in exact(group)]


def _breadcrumb(title: str, heading_path: tuple[str, ...]) -> str:
    return " > ".join(part for part in (title, *heading_path) if part)


def chunk_by_headings(
    doc: ParsedDocument,
    count_tokens: CountTokens,
    *,
    max_tokens: int = 254,
    overlap_tokens: int = 0,
    hard_cap: int | None = None,
    with_breadcrumb: bool = True,
    additive: bool = False,
) -> list[Chunk]:
    """Pack each section's blocks into chunks of at most `max_tokens`, breadcrumb included.
    `additive`: counts add up over whitespace (Tokenizer.additive), so each text is counted once."""
    if max_tokens < 1 or overlap_tokens < 0:
        raise ValueError("max_tokens must be >= 1 and overlap_tokens >= 0")
    count_tokens = bounded(count_tokens)
    cap = hard_cap if hard_cap is not None else 4 * max_tokens
    chunks: list[Chunk] = []
    for section in doc.sections:
        blocks = [block for block in section.blocks if block.text.strip()]
        if not blocks:
            continue
        breadcrumb = _breadcrumb(doc.title, section.heading_path) if with_breadcrumb else ""
        if breadcrumb and count_tokens(breadcrumb) > max_tokens // 2:
            breadcrumb = ""
        packed = _pack_section(blocks, breadcrumb, count_tokens, max_tokens, overlap_tokens, cap, additive)
        for content, tokens in packed:
            chunks.append(Chunk(len(chunks), section.heading_path, section.anchor, breadcrumb, content, tokens))
    return chunks


# --- fixed windows (baseline) ------------------------------------------------------------


def _document_text(doc: ParsedDocument) -> tuple[str, list[tuple[int, Section]]]:
    """Full text and the character offset at which each non-empty section starts."""
    parts = [f"# {doc.title}"]
    starts: list[tuple[int, Section]] = []
    offset = len(parts[0]) + len(SEPARATOR)
    for section in doc.sections:
        texts = [b.text for b in section.blocks if b.text.strip()]
        if section.heading_path:
            texts.insert(0, f"{'#' * (len(section.heading_path) + 1)} {section.heading_path[-1]}")
        if not texts:
            continue
        starts.append((offset, section))
        parts.extend(texts)
        offset += sum(len(t) + len(SEPARATOR) for t in texts)
    return SEPARATOR.join(parts), starts


def document_text(doc: ParsedDocument) -> str:
    """The text `chunk_fixed` windows over: "# Title", then each heading line and its blocks."""
    return _document_text(doc)[0]


def chunk_fixed(
    doc: ParsedDocument,
    tokenizer: Tokenizer,
    *,
    window: int,
    overlap: int,
    with_breadcrumb: bool = False,
) -> list[Chunk]:
    """Windows of `window` tokens, each starting `window - overlap` tokens after the previous."""
    if window < 1 or not 0 <= overlap < window:
        raise ValueError("need window >= 1 and 0 <= overlap < window")
    text, starts = _document_text(doc)
    spans = tokenizer.spans(text)
    chunks: list[Chunk] = []
    start = 0
    while start < len(spans):
        end = min(start + window, len(spans))
        first_char = spans[start][0]
        content = text[first_char : spans[end - 1][1]]
        # The window belongs to the section it starts in (the intro before the first heading).
        section = next((s for offset, s in reversed(starts) if offset <= first_char), None)
        path = section.heading_path if section else ()
        anchor = section.anchor if section else None
        breadcrumb = _breadcrumb(doc.title, path) if with_breadcrumb else ""
        tokens = tokenizer.count(_embed_text(breadcrumb, content))
        chunks.append(Chunk(len(chunks), path, anchor, breadcrumb, content, tokens))
        if end == len(spans):
            break
        start += window - overlap
    return chunks
