"""Markup a reader never sees, in any generator's Markdown: comments, container fences, GitHub
alert markers and (via tags.py, references.py, characters.py) HTML and JSX tags, reference-style
links, entities and emoji shortcodes; and the tools the generators' own passes share (fence-aware
line walks, inline code kept out of reach).

Every rule here runs on prose only: callers hand it text that holds no code block, and inline
code spans are swapped for placeholders first, so `<!-- x -->` or `<Tabs>` quoted in backticks
stays as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from pgcite.ingest.characters import decode_emoji, decode_entities
from pgcite.ingest.references import resolve_references
from pgcite.ingest.tags import jsx_expression_end, strip_tags

__all__ = [
    "Fence",
    "clean_prose",
    "fence_closes",
    "fence_open",
    "protect_code_spans",
    "split_fenced",
]

# --- fences -------------------------------------------------------------------------------

# A backtick fence's info string has no backtick: "```a``` b" is inline code, not a fence.
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t>]*)(?P<marker>`{3,}(?!.*`)|~{3,})(?P<info>.*)")
_FENCE_CLOSE = re.compile(r"^[ \t>]*(?P<marker>`{3,}|~{3,})[ \t]*$")


@dataclass(frozen=True)
class Fence:
    indent: str
    marker: str
    info: str


def fence_open(line: str) -> Fence | None:
    """The fence `line` opens (the first line, when given several), or None."""
    match = _FENCE_OPEN.match(line)
    return Fence(match["indent"], match["marker"], match["info"].strip()) if match else None


def fence_closes(line: str, fence: Fence) -> bool:
    match = _FENCE_CLOSE.match(line)
    return match is not None and match["marker"][0] == fence.marker[0] and len(match["marker"]) >= len(fence.marker)


def split_fenced(text: str) -> Iterator[tuple[list[str], Fence | None]]:
    """Runs of lines, in order: prose (fence None) or one whole fenced block, fence lines
    included. Fences are found at any indentation, as site generators' own passes need (a fence
    inside an indented admonition is still a fence)."""
    prose: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        fence = fence_open(lines[i])
        if fence is None:
            prose.append(lines[i])
            i += 1
            continue
        if prose:
            yield prose, None
            prose = []
        end = i + 1
        while end < len(lines) and not fence_closes(lines[end], fence):
            end += 1
        yield lines[i : end + 1], fence  # an unclosed fence runs to the end, as in CommonMark
        i = end + 1
    if prose:
        yield prose, None


# --- inline code --------------------------------------------------------------------------

_BACKTICKS = re.compile(r"(?<!\\)`+")
_PLACEHOLDER = re.compile("\ue000(\\d+)\ue001")


def protect_code_spans(text: str) -> tuple[str, Callable[[str], str]]:
    """`text` with each inline code span replaced by a placeholder no rule matches, and the
    function that puts the spans back. A span is a run of n backticks closed by the next run of
    exactly n within the same paragraph (CommonMark)."""
    spans: list[str] = []
    out: list[str] = []
    pos = 0
    for opening in _BACKTICKS.finditer(text):
        if opening.start() < pos:
            continue
        paragraph_end = re.compile(r"\n[ \t]*\n").search(text, opening.end())
        limit = paragraph_end.start() if paragraph_end else len(text)
        closing = next(
            (m for m in _BACKTICKS.finditer(text, opening.end(), limit) if len(m.group()) == len(opening.group())), None
        )
        if closing is None:
            continue
        out.append(text[pos : opening.start()])
        out.append(f"\ue000{len(spans)}\ue001")
        spans.append(text[opening.start() : closing.end()])
        pos = closing.end()
    out.append(text[pos:])

    def restore(cleaned: str) -> str:
        return _PLACEHOLDER.sub(lambda m: spans[int(m.group(1))], cleaned)

    return "".join(out), restore


# --- the generic pass ---------------------------------------------------------------------

_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MDX_COMMENT = re.compile(r"\{/\*.*?\*/\}", re.DOTALL)
_CONTAINER = re.compile(
    r"^(?P<indent>[ \t]*):{3,}[ \t]*(?P<kind>[\w-]*)[ \t]*"
    r"(?:\[(?P<bracketed>[^\]]*)\]|(?P<title>.*?))[ \t]*(?:\{[^}]*\})?[ \t]*$"
)
_GENERIC_TITLES = {
    "info",
    "tip",
    "note",
    "warning",
    "danger",
    "caution",
    "important",
    "details",
    "success",
    "example",
    "abstract",
    "question",
    "failure",
    "bug",
    "quote",
    "attention",
    "error",
    "hint",
    "check",
    "todo",
    "seealso",
}
_MARKER_LINE = re.compile(
    r"""^[ \t]*(?:
        <a[ \t]+id=['"]snippet-[^'"]*['"][ \t]*>[ \t]*</a>          # MarkdownSnippets start anchor
      | <sup>[ \t]*<a[^>]*>[ \t]*snippet[ \t]+source[ \t]*</a>.*</sup>  # MarkdownSnippets footer
      | <<<[ \t]+\S.*                                            # a code import left unresolved
      | \[\[toc\]\]                                              # table of contents
      | \[TOC\]
    )[ \t]*$""",
    re.VERBOSE | re.IGNORECASE,
)


def _keep_newlines(match: re.Match[str]) -> str:
    return "\n" * match.group(0).count("\n")


def _container_line(match: re.Match[str]) -> str:
    title = (match.group("bracketed") or match.group("title") or "").strip()
    generic = title.lower() in _GENERIC_TITLES | {match.group("kind").lower()}
    # The title is glued to the next line (no blank) so it stays in the same block.
    return f"{match.group('indent')}**{title}**" if title and not generic else ""


# A GitHub alert's marker opens its blockquote: `> [!NOTE]`; Hugo and Obsidian also take a fold
# sign and a title, `> [!WARNING]+ Radiation hazard`, and any type name (case-insensitive).
_ALERT = re.compile(r"^(?P<quote>[ \t]*>(?:[ \t]*>)*)[ \t]*\[!(?P<kind>[A-Za-z]+)\][+-]?[ \t]*(?P<title>.*?)[ \t]*$")


def _quote_depth(line: str) -> int:
    match = re.match(r"[ \t]*>(?:[ \t]*>)*", line)
    return match.group(0).count(">") if match else 0


def _alert_line(match: re.Match[str]) -> str:
    """An alert renders as an admonition: its marker leaves what a container's fence leaves (a
    custom title as a bold line), inside the blockquote, which a marker alone on its line opens."""
    title, quote = match.group("title"), match.group("quote")
    if title and title.lower() not in _GENERIC_TITLES | {match.group("kind").lower()}:
        return f"{quote} **{title}**"
    return quote[: quote.rindex(">")].rstrip()  # one level out: a nested quote is not ended


def clean_prose(segment: str, *, jsx: bool = False, references: Mapping[str, str] | None = None) -> str:
    """Remove the markup every generator shares from text that holds no code block: comments,
    tags (see `strip_tags`), `:::` container fences (a custom title kept as a bold line), GitHub
    alert markers (likewise), snippet markers and table-of-contents placeholders; reference-style
    links whose definition is in `references` (the page's) become inline links; entities and emoji
    shortcodes are decoded. With `jsx` (MDX pages), `{expressions}` go too: in MDX a brace in
    prose is always code, never text (a literal one is written `\\{`)."""
    text, restore = protect_code_spans(segment)
    text = _HTML_COMMENT.sub(_keep_newlines, text)
    text = _MDX_COMMENT.sub(_keep_newlines, text)
    lines = []
    depth = 0  # the quote depth of the line before: an alert marker opens a blockquote
    for line in text.split("\n"):
        container = _CONTAINER.match(line)
        alert = _ALERT.match(line)
        if container:
            lines.append(_container_line(container))
        elif alert and _quote_depth(line) > depth:
            lines.append(_alert_line(alert))
        elif _MARKER_LINE.match(line):
            lines.append("")
        else:
            lines.append(line)
        depth = _quote_depth(line) if line.strip() else 0
    text = resolve_references("\n".join(lines), references or {}, restore)
    text = strip_tags(text, jsx)
    if jsx:
        text = _drop_expressions(text)
    return restore(decode_emoji(decode_entities(text)))


_HEADING_ID = re.compile(r"\{#[\w:.-]+\}")


def _drop_expressions(text: str) -> str:
    out: list[str] = []
    pos = 0
    i = text.find("{")
    while i >= 0:
        if i > 0 and text[i - 1] == "\\":  # \{ is a literal brace
            out.append(text[pos : i - 1] + "{")
            pos = i + 1
            i = text.find("{", pos)
            continue
        if heading_id := _HEADING_ID.match(text, i):  # {#id} after a heading is its id, kept
            i = text.find("{", heading_id.end())
            continue
        end = jsx_expression_end(text, i)
        if end < 0:
            break
        out.append(text[pos:i] + "\n" * text[i:end].count("\n"))
        pos = end
        i = text.find("{", pos)
    out.append(text[pos:])
    return "".join(out).replace("\\}", "}")
