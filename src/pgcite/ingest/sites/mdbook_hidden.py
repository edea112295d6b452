"""What an mdBook page holds that its reader never sees as text: HTML elements its theme hides
(`class="hidden"`: `display: none !important` in mdBook's general.css) with their content, Font
Awesome icons (an empty `<i class="fa-...">` becomes an SVG), and the `{{ name }}` placeholders a
book's own preprocessor fills in. Only prose: code shows all of them as written."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from pgcite.ingest.markup import protect_code_spans
from pgcite.ingest.tags import Tag, iter_tags

__all__ = ["drop_unseen"]

_PLACEHOLDER = re.compile(r"\{\{\s*[A-Za-z_][^{}\n]*\}\}")  # not `{{#helper}}`, `{{/helper}}`
_SPAN = re.compile("\ue000\\d+\ue001")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_DISPLAY_NONE = re.compile(r"display\s*:\s*none", re.IGNORECASE)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_CLOSING_I = re.compile(r"</i\s*>", re.IGNORECASE)


def drop_unseen(text: str, parser: MarkdownIt, *, placeholders: bool) -> str:
    """`text` without hidden elements and (with `placeholders`: the book runs a preprocessor of
    its own) `{{ name }}` placeholders in its prose; a removed part keeps its line breaks."""
    prose = _mask_code(text, parser)
    spans = _hidden(prose)
    if placeholders:
        spans += [(m.start(), m.end()) for m in _PLACEHOLDER.finditer(prose)]
    out: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        if start < pos:
            continue  # inside a part removed already
        out.append(text[pos:start] + "\n" * text.count("\n", start, end))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _mask(text: str) -> str:
    return re.sub(r"[^\n]", "\x00", text)


def _mask_code(text: str, parser: MarkdownIt) -> str:
    """`text` with every character of code (blocks, inline spans, <code> and <pre> elements)
    replaced by NUL, line breaks kept: offsets into it are offsets into `text`."""
    lines = text.split("\n")
    for token in parser.parse(text):
        if token.type in ("fence", "code_block") and token.map:
            first, last = token.map
            lines[first:last] = [_mask(line) for line in lines[first:last]]
    masked = "\n".join(lines)
    protected, restore = protect_code_spans(masked)
    masked = _SPAN.sub(lambda m: _mask(restore(m.group())), protected)
    covered = 0  # the end of the last element masked: a <code> inside a <pre> is masked with it
    for tag in list(iter_tags(masked, jsx=False)):
        if tag.start >= covered and tag.name.lower() in ("code", "pre") and not tag.closing and not tag.self_closing:
            covered = _closing(masked, tag)
            masked = masked[: tag.end] + _mask(masked[tag.end : covered]) + masked[covered:]
    return masked


def _is_hidden(tag: Tag) -> bool:
    return (
        "hidden" in tag.attrs.get("class", "").split()
        or "hidden" in tag.attrs
        or bool(_DISPLAY_NONE.search(tag.attrs.get("style", "")))
    )


def _is_icon(tag: Tag, prose: str) -> bool:
    """mdBook's `convert_fontawesome`: an `<i>` with no content and an `fa-<icon>` class."""
    if tag.name.lower() != "i" or not _CLOSING_I.match(prose, tag.end):
        return False
    classes = tag.attrs.get("class", "").split()
    return any(c.startswith("fa-") and c not in ("fa-regular", "fa-solid", "fa-brands") for c in classes)


def _hidden(prose: str) -> list[tuple[int, int]]:
    spans = []
    for tag in iter_tags(prose, jsx=False):
        if not tag.closing and (_is_hidden(tag) or _is_icon(tag, prose)):
            void = tag.self_closing or tag.name.lower() in _VOID
            spans.append((tag.start, tag.end if void else _closing(prose, tag, whole=True)))
    return spans


def _closing(text: str, opening: Tag, *, whole: bool = False) -> int:
    """Where the element `opening` opens ends: before its closing tag (after it, with `whole`),
    same-named elements nested inside counted. Unclosed: the end of its HTML block (a blank line)."""
    depth = 0
    name = opening.name.lower()
    for tag in iter_tags(text[opening.end :], jsx=False):
        if tag.name.lower() != name or tag.self_closing:
            continue
        if not tag.closing:
            depth += 1
        elif depth:
            depth -= 1
        else:
            return opening.end + (tag.end if whole else tag.start)
    blank = _BLANK_LINE.search(text, opening.end)
    return blank.start() if blank else len(text)
