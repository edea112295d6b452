"""Clean VitePress-flavoured Markdown and parse it into sections of blocks.

`clean` removes site-generator markup (front matter, `:::` containers, MarkdownSnippets
markers, `<<<` includes, `[[toc]]`, HTML comments) without ever touching code.
`parse` splits the cleaned text into heading sections made of top-level blocks, each block
being a verbatim slice of the cleaned source, so code keeps its exact text.

Decisions worth knowing:
- A container's custom title (`::: warning Upgrading from 9.3`) is kept as a bold line
  `**Upgrading from 9.3**` glued to the container's first line, so it stays with its text;
  a title that only repeats a generic label (`::: tip INFO`, `::: warning WARNING`) is dropped.
- Removed lines become blank lines (not deleted) so the blocks around them stay separate,
  as they are on the rendered page; runs of blank lines are then collapsed outside code.
- `<<<` code imports are dropped whatever the path (`@/...` or `./...`): their code lives in
  another file.
- HTML comments are removed anywhere outside code blocks, including `<!--@include: ...-->`
  (the included file is indexed on its own) and, rarely, a comment quoted in inline code.
- The first H1 that opens the document is the title and is not part of any heading path;
  any other H1 is treated exactly like an H2.
- The text before the first H2 forms an intro section with heading path () and anchor None:
  a citation for it links to the page itself.
- A line of a paragraph that is a run of two or more of the page's own headings, in order
  ("Install Configure Usage", or squeezed "InstallConfigureUsage"), is the page's table of
  contents left behind when a site was scraped into Markdown. It is dropped: it holds no
  content, and in whichever section it lands it would match every heading's words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["Block", "Section", "ParsedDocument", "clean", "parse", "slugify"]


@dataclass(frozen=True)
class Block:
    kind: str  # "paragraph" | "list" | "table" | "code" | "blockquote" | "html" | "other"
    text: str  # cleaned Markdown source of the block
    heading_path: tuple[str, ...]  # H2..H6 texts in force; () in the intro
    anchor: str | None  # slug of the innermost H2..H6 heading; None in the intro


@dataclass(frozen=True)
class Section:
    heading_path: tuple[str, ...]
    anchor: str | None  # None only for the intro section (heading_path ())
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class ParsedDocument:
    title: str
    front_matter: dict[str, Any]
    sections: tuple[Section, ...]


_MD = MarkdownIt("commonmark").enable("table")  # VitePress renders with markdown-it too

# --- clean -------------------------------------------------------------------------------

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*$\n?", re.DOTALL | re.MULTILINE)
_CONTAINER = re.compile(r"^(?P<indent>[ \t]*):{3,}[ \t]*(?P<kind>[\w-]*)[ \t]*(?P<title>.*?)[ \t]*$")
_SNIPPET_LINE = re.compile(
    r"""^[ \t]*(?:
        <a[ \t]+id=['"]snippet-[^'"]*['"][ \t]*>[ \t]*</a>          # snippet start anchor
      | <sup>[ \t]*<a[^>]*>[ \t]*snippet[ \t]+source[ \t]*</a>.*</sup>  # snippet footer
      | <<<[ \t]+\S.*                                            # VitePress code import
      | \[\[toc\]\]                                              # table of contents
    )[ \t]*$""",
    re.VERBOSE | re.IGNORECASE,
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_GENERIC_TITLES = {"info", "tip", "note", "warning", "danger", "caution", "important", "details"}
_BLANK_RUN = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")


def _split_front_matter(text: str) -> tuple[str, dict[str, Any]]:
    match = _FRONT_MATTER.match(text)
    if not match:
        return text, {}
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        data = None
    return text[match.end() :], data if isinstance(data, dict) else {}


def _code_line_ranges(text: str) -> list[tuple[int, int]]:
    """Line ranges [start, end) of fenced and indented code, as markdown-it (VitePress) sees them."""
    return [
        (tok.map[0], tok.map[1])
        for tok in _MD.parse(text)
        if tok.type in ("fence", "code_block") and tok.map is not None
    ]


def _clean_prose(segment: str) -> str:
    """Remove site-generator markup from text that holds no code block."""
    segment = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), segment)
    out: list[str] = []
    for line in segment.split("\n"):
        container = _CONTAINER.match(line)
        if container:
            title = container.group("title")
            generic = title.lower() in _GENERIC_TITLES | {container.group("kind").lower()}
            # The title is glued to the next line (no blank) so it stays in the same block.
            out.append(f"{container.group('indent')}**{title}**" if title and not generic else "")
        elif _SNIPPET_LINE.match(line):
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def clean(text: str) -> tuple[str, dict[str, Any]]:
    """Return (body without site-generator markup, front matter); code blocks stay untouched."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    body, front_matter = _split_front_matter(text)
    lines = body.split("\n")
    pieces: list[str] = []
    pos = 0
    for start, end in _code_line_ranges(body):
        if start > pos:
            pieces.append(_BLANK_RUN.sub("\n\n", _clean_prose("\n".join(lines[pos:start]))))
        pieces.append("\n".join(lines[start:end]))
        pos = end
    if pos < len(lines):
        pieces.append(_BLANK_RUN.sub("\n\n", _clean_prose("\n".join(lines[pos:]))))
    cleaned = "\n".join(pieces).strip("\n")
    return (cleaned + "\n" if cleaned else ""), front_matter


# --- slugs -------------------------------------------------------------------------------

_COMBINING = re.compile("[\u0300-\u036f]")
_CONTROL = re.compile("[\u0000-\u001f]")
_SPECIAL = re.compile(r"[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:\"'“”‘’<>,.?/]+")


def slugify(heading: str) -> str:
    """Anchor slug exactly as VitePress computes it (@mdit-vue/shared `slugify`)."""
    slug = unicodedata.normalize("NFKD", heading)
    slug = _COMBINING.sub("", slug)
    slug = _CONTROL.sub("", slug)
    slug = _SPECIAL.sub("-", slug)
    slug = re.sub(r"-{2,}", "-", slug).strip("-")
    slug = re.sub(r"^(\d)", r"_\1", slug)
    return slug.lower()


def _unique(slug: str, used: set[str]) -> str:
    """markdown-it-anchor's uniqueSlug: foo, foo-1, foo-2..."""
    candidate, i = slug, 1
    while candidate in used:
        candidate, i = f"{slug}-{i}", i + 1
    used.add(candidate)
    return candidate


# --- parse -------------------------------------------------------------------------------

_CUSTOM_ANCHOR = re.compile(r"\s*\{#([^\s{}]+)\}\s*$")
_BLOCK_KINDS = {
    "paragraph_open": "paragraph",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "table_open": "table",
    "fence": "code",
    "code_block": "code",
    "blockquote_open": "blockquote",
    "html_block": "html",
}


def _heading_text(inline: Token | None) -> tuple[str, str | None]:
    """(visible text without markup, custom anchor from `{#id}` or None)."""
    children = (inline.children or []) if inline is not None else []
    # Like markdown-it-anchor's getTokensText: text and inline code only (no HTML badges).
    raw = "".join(c.content for c in children if c.type in ("text", "code_inline"))
    text = " ".join(raw.split())
    custom = _CUSTOM_ANCHOR.search(text)
    if custom:
        return text[: custom.start()].strip(), custom.group(1)
    return text, None


def _slice(lines: list[str], token: Token, kind: str) -> str:
    assert token.map is not None
    text = "\n".join(lines[token.map[0] : token.map[1]])
    # Indentation of code is meaningful; elsewhere surrounding whitespace is noise.
    return text.strip("\n").rstrip() if kind == "code" else text.strip()


def _squeeze(text: str) -> str:
    return "".join(text.split()).casefold()


def _drop_outline(paragraph: str, headings: list[str]) -> str:
    """`paragraph` without its lines that are a run of >= 2 consecutive `headings` (squeezed)."""

    def is_run(line: str) -> bool:
        for start in range(len(headings) - 1):
            position, count = 0, 0
            for heading in headings[start:]:
                if not heading or not line.startswith(heading, position):
                    break
                position, count = position + len(heading), count + 1
                if position == len(line):
                    return count >= 2
        return False

    return "\n".join(line for line in paragraph.split("\n") if not is_run(_squeeze(line))).strip()


def parse(text: str, fallback_title: str) -> ParsedDocument:
    """Clean `text` and split it into sections (one per heading) of top-level blocks."""
    body, front_matter = clean(text)
    lines = body.split("\n")
    tokens = _MD.parse(body)

    # Anchors for every heading, nested ones included, in document order (as markdown-it-anchor).
    used: set[str] = set()
    anchors: dict[int, str] = {}
    texts: dict[int, str] = {}
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            heading, custom = _heading_text(tokens[i + 1] if i + 1 < len(tokens) else None)
            texts[i] = heading
            anchors[i] = _unique(custom if custom else slugify(heading), used)

    outline = [_squeeze(heading) for heading in texts.values()]  # document order
    title: str | None = None
    stack: list[tuple[int, str]] = []  # (level, text) of the headings in force
    anchor: str | None = None
    seen_heading = False
    sections: list[Section] = []
    blocks: list[Block] = []
    started = False  # False while in the intro, which is omitted when empty

    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.nesting == -1:
            continue  # only top-level blocks; nested tokens belong to their container
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            if level == 1 and title is None:
                title = texts[i]
                if not seen_heading:  # the H1 opening the page is its title, not a section
                    seen_heading = True
                    continue
            seen_heading = True
            if started or blocks:
                sections.append(Section(tuple(t for _, t in stack), anchor, tuple(blocks)))
            started = True
            level = max(level, 2)  # any other H1 behaves as an H2
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, texts[i]))
            anchor, blocks = anchors[i], []
            continue
        if tok.type == "hr" or tok.map is None:
            continue
        kind = _BLOCK_KINDS.get(tok.type, "other")
        text_ = _slice(lines, tok, kind)
        if kind == "paragraph":
            text_ = _drop_outline(text_, outline)
        if text_:
            blocks.append(Block(kind, text_, tuple(t for _, t in stack), anchor))
    if started or blocks:
        sections.append(Section(tuple(t for _, t in stack), anchor, tuple(blocks)))

    if title is None:
        fm_title = front_matter.get("title")
        title = str(fm_title).strip() if fm_title else fallback_title
    return ParsedDocument(title or fallback_title, front_matter, tuple(sections))
