"""Clean Markdown of the markup every site generator shares and parse it into sections of blocks.

`clean` removes front matter and shared markup (markup.py, tags.py: tags, comments, `:::`
containers, GitHub alerts, snippet markers, `[[toc]]`; references.py: reference-style links become
inline links; characters.py: entities and emoji shortcodes) without ever touching code; a site
generator's own markup is turned into Markdown before (sites/). `parse` splits the cleaned text
into heading sections made of top-level blocks, each block a verbatim slice of the cleaned source,
so code keeps its exact text. A `Dialect` says where a generator reads Markdown its own way: its anchor rule,
and whether indented code exists (not in MDX).

Decisions worth knowing:
- A container's custom title (`::: warning Upgrading from 9.3`) is kept as a bold line
  `**Upgrading from 9.3**` glued to the container's first line, so it stays with its text;
  a title that only repeats a generic label (`::: tip INFO`, `::: warning WARNING`) is dropped.
- Removed lines become blank lines (not deleted) so the blocks around them stay separate,
  as they are on the rendered page; runs of blank lines are then collapsed outside code.
- The first H1 that opens the document is the title and is not part of any heading path;
  any other H1 is treated exactly like an H2.
- A heading's trailing attribute list (`{#id}`, `{ #id .class }`, `{: #id }`) is not part of
  its text; its `#id` is the anchor.
- The text before the first H2 forms an intro section with heading path () and anchor None:
  a citation for it links to the page itself.
- A line of a paragraph that is a run of two or more of the page's own headings, in order
  ("Install Configure Usage", or squeezed "InstallConfigureUsage"), is the page's table of
  contents left behind when a site was scraped into Markdown. It is dropped: it holds no
  content, and in whichever section it lands it would match every heading's words.
"""

from __future__ import annotations

import contextlib
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from pgcite.ingest import bounded_yaml, markup, references
from pgcite.ingest.anchors import GITHUB, AnchorRule
from pgcite.safety import visible

__all__ = [
    "PLAIN",
    "Block",
    "Dialect",
    "ParsedDocument",
    "Section",
    "clean",
    "clean_body",
    "load_front_matter",
    "parse",
    "parse_body",
    "split_front_matter",
]


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
    markdown: str = ""  # the cleaned body, includes read in: what read_page and llms-full.txt serve

    @property
    def description(self) -> str:
        """The front matter's one-line summary, which llms.txt lists beside the page's link."""
        value = self.front_matter.get("description")
        return " ".join(value.split()) if isinstance(value, str) else ""


_MARKDOWN = MarkdownIt("commonmark").enable("table")  # VitePress renders with markdown-it too
# MDX (Docusaurus, Starlight) has no indented code: indentation inside JSX is layout.
_MDX = MarkdownIt("commonmark").enable("table").disable("code")


@dataclass(frozen=True)
class Dialect:
    """Where a site generator reads Markdown its own way."""

    anchors: AnchorRule = GITHUB
    indented_code: bool = True  # False for MDX
    jsx: bool = False  # MDX: {expressions} and {/* comments */} are code, not text

    @property
    def parser(self) -> MarkdownIt:
        return _MARKDOWN if self.indented_code else _MDX


PLAIN = Dialect()

# --- clean -------------------------------------------------------------------------------

_YAML_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*$\n?", re.DOTALL | re.MULTILINE)
_TOML_FRONT_MATTER = re.compile(r"\A\+\+\+[ \t]*\n(.*?)^\+\+\+[ \t]*$\n?", re.DOTALL | re.MULTILINE)
_BLANK_RUN = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")


def load_front_matter(
    yaml_text: str, problems: list[str] | None = None, loader_class: Callable[[str], Any] = yaml.SafeLoader
) -> object:
    """YAML front matter, its aliases bounded (a "billion laughs" title grew one ingest to 4.2 GB
    once read): None when it is not YAML, or when it is refused, which `problems` is told in one line."""
    try:
        return bounded_yaml.load(yaml_text, loader_class)
    except bounded_yaml.Refused as err:
        if problems is not None:
            problems.append(f"front matter left out: {err}")
    except yaml.YAMLError:
        pass
    return None


def split_front_matter(text: str, problems: list[str] | None = None) -> tuple[str, dict[str, Any]]:
    """(body, front matter): YAML between `---` lines, or TOML between `+++` lines (Hugo). Front
    matter that does not parse, nests thousands deep or is not a mapping is dropped all the same;
    YAML refused by its aliases' bound or its depth is said in `problems`, one line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    data: object = None
    if match := _YAML_FRONT_MATTER.match(text):
        data = load_front_matter(match.group(1), problems)
    elif match := _TOML_FRONT_MATTER.match(text):
        with contextlib.suppress(tomllib.TOMLDecodeError, RecursionError):
            data = tomllib.loads(match.group(1))
    if not match:
        return text, {}
    return text[match.end() :], data if isinstance(data, dict) else {}


def clean_body(body: str, dialect: Dialect = PLAIN) -> str:
    """`body` without the markup every generator shares (markup.clean_prose); code untouched.
    Reference-style links are resolved against the whole page's definitions, which are dropped."""
    env: dict[str, Any] = {}
    tokens = dialect.parser.parse(body, env)  # code as the generator's parser sees it, and definitions
    code = [(t.map[0], t.map[1]) for t in tokens if t.type in ("fence", "code_block") and t.map is not None]
    definitions = references.definition_lines(env)
    lines = ["" if n in definitions else line for n, line in enumerate(body.split("\n"))]
    links = references.references_of(env)
    pieces: list[str] = []
    pos = 0
    for start, end in [*code, (len(lines), len(lines))]:
        if start > pos:
            prose = markup.clean_prose("\n".join(lines[pos:start]), jsx=dialect.jsx, references=links)
            pieces.append(_BLANK_RUN.sub("\n\n", prose))
        if end > start:
            pieces.append("\n".join(lines[start:end]))
        pos = max(pos, end)
    cleaned = "\n".join(pieces).strip("\n")
    return cleaned + "\n" if cleaned else ""


def clean(text: str, dialect: Dialect = PLAIN) -> tuple[str, dict[str, Any]]:
    """Return (body without site-generator markup, front matter); code blocks stay untouched."""
    body, front_matter = split_front_matter(text)
    return clean_body(body, dialect), front_matter


# --- parse -------------------------------------------------------------------------------

# A trailing attribute list: {#id}, { #id .class }, {: #id key=value }.
# An id may hold what a URL's fragment may: an API reference's `{#/pets/addPet}` or Redoc's
# `{#tag/Pets/paths/~1pets~1%7Bid%7D/get}` (sites/openapi_anchors.py).
_ID_CHARS = r"[\w:./%~&!$'()*+,;=@?-]+"
_ATTRIBUTE = rf"""(?:#{_ID_CHARS}|\.[\w:.-]+|[\w-]+=(?:"[^"]*"|'[^']*'|\S+))"""
_ATTRIBUTE_LIST = re.compile(rf"\s*\{{:?\s*({_ATTRIBUTE}(?:\s+{_ATTRIBUTE})*)\s*\}}\s*$")
_ID = re.compile(rf"(?:^|\s)#({_ID_CHARS})")
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
    attributes = _ATTRIBUTE_LIST.search(text)
    if attributes:
        explicit = _ID.search(attributes.group(1))
        return text[: attributes.start()].strip(), explicit.group(1) if explicit else None
    return text, None


def _slice(lines: list[str], token: Token, kind: str) -> str:
    assert token.map is not None
    text = "\n".join(lines[token.map[0] : token.map[1]])
    # Indentation of code is meaningful; elsewhere surrounding whitespace is noise, and a
    # paragraph's lines carry none (MDX keeps JSX layout indentation in them).
    if kind == "code":
        return text.strip("\n").rstrip()
    if kind == "paragraph":
        return "\n".join(line.strip() for line in text.strip().split("\n"))
    return text.strip()


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


def parse(text: str, fallback_title: str, dialect: Dialect = PLAIN) -> ParsedDocument:
    """Clean `text` and split it into sections (one per heading) of top-level blocks."""
    body, front_matter = split_front_matter(text)
    return parse_body(body, front_matter, fallback_title, dialect)


def parse_body(
    body: str, front_matter: dict[str, Any], fallback_title: str, dialect: Dialect = PLAIN
) -> ParsedDocument:
    """`parse` for a body whose front matter is already split off."""
    body = clean_body(visible(body), dialect)  # no invisible character hides what a link says
    lines = body.split("\n")
    tokens = dialect.parser.parse(body)

    # Anchors for every heading, nested ones included, in document order (as markdown-it-anchor).
    used: set[str] = set()
    anchors: dict[int, str] = {}
    texts: dict[int, str] = {}
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            heading, custom = _heading_text(tokens[i + 1] if i + 1 < len(tokens) else None)
            texts[i] = heading
            anchors[i] = dialect.anchors.unique(custom or dialect.anchors.slugify(heading), used)

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
        fm_title = front_matter.get("title")  # a title is a string (a number at most), not a structure
        title = str(fm_title).strip() if isinstance(fm_title, (str, int, float)) and fm_title else fallback_title
    return ParsedDocument(title or fallback_title, front_matter, tuple(sections), body.strip() + "\n")
