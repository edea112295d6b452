"""HTML and JSX tags in Markdown prose: read as a browser or MDX would (attributes, `{...}`
expressions) and replaced by what a reader sees. Callers hand it prose only, code kept out of
reach (markup.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["HTML_ELEMENTS", "Tag", "is_markup", "iter_tags", "jsx_expression_end", "strip_tags"]

_TAG_START = re.compile(r"(?<!\\)<(/?)([A-Za-z][\w.-]*)")  # `\<html>` is an escaped "<": text
_ATTRIBUTE = re.compile(r"\s*([^\s=/>\"'{}]+)(?:\s*=\s*(\"[^\"]*\"|'[^']*'|\{|[^\s>\"'{}]+))?", re.DOTALL)
_EMPTY_LINK = re.compile(r"\[\s*\]\([^)\s]*\)")  # what a link around an image leaves
_MAX_TAG = 4000  # characters; a "<" that opens no tag within this is text

# HTML's own elements. In Markdown (not MDX) a lowercase tag that is not one of them is text a
# page shows: scraped docs write prompt tags such as <thinking> or <document> in plain prose.
HTML_ELEMENTS = frozenset(
    (
        "a abbr address area article aside audio b base bdi bdo big blockquote body br button canvas caption "
        "center cite code col colgroup data datalist dd del details dfn dialog div dl dt em embed fieldset "
        "figcaption figure font footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins "
        "kbd label legend li link main map mark menu meta meter nav nobr noscript object ol optgroup option "
        "output p param picture pre progress q rp rt ruby s samp script section select small source span strike "
        "strong style sub summary sup svg table tbody td template textarea tfoot th thead time title tr track tt "
        "u ul var video wbr"
    ).split()
)
# Their content is not text a reader sees (or is data for scripts).
_HIDDEN = {
    "script",
    "style",
    "svg",
    "iframe",
    "noscript",
    "template",
    "head",
    "object",
    "canvas",
    "video",
    "audio",
    "picture",
    "math",
    "select",
    "textarea",
}
# Block-level: a line break keeps the text on either side apart.
_BLOCK = {
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "ul",
    "ol",
    "li",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "pre",
    "figure",
    "figcaption",
    "dl",
    "dt",
    "dd",
    "details",
    "center",
    "form",
    "fieldset",
    "hr",
}
_CELLS = {"td", "th", "br"}
_MARKS = {"code": "`", "kbd": "`", "samp": "`", "tt": "`", "strong": "**", "b": "**", "em": "*", "i": "*"}
# JSX components whose label is what the reader sees as a tab or box title.
_LABELLED = {"tabitem": ("label", "value"), "admonition": ("title",)}


@dataclass(frozen=True)
class Tag:
    name: str
    closing: bool
    self_closing: bool
    attrs: dict[str, str]
    start: int
    end: int


def jsx_expression_end(text: str, start: int) -> int:
    """Index just past the `}` closing the `{` at `start` (quotes and nesting respected), or -1."""
    depth, i, quote = 0, start, ""
    while i < len(text) and i - start < _MAX_TAG:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _scan_tag(text: str, match: re.Match[str]) -> Tag | None:
    """The tag starting at `match`, attributes read as HTML/JSX, or None when it is not a tag
    (an autolink such as <https://x>, a comparison such as a <b)."""
    closing, name = match.group(1) == "/", match.group(2)
    i = match.end()
    if i < len(text) and text[i] not in " \t\n/>":
        return None
    attrs: dict[str, str] = {}
    while i < len(text) and i - match.start() < _MAX_TAG:
        if text[i] == ">":
            return Tag(name, closing, False, attrs, match.start(), i + 1)
        if text.startswith("/>", i):
            return Tag(name, closing, True, attrs, match.start(), i + 2)
        if text[i].isspace():
            i += 1
            continue
        if text[i] == "{":  # a spread {...props}
            end = jsx_expression_end(text, i)
            if end < 0:
                return None
            i = end
            continue
        attribute = _ATTRIBUTE.match(text, i)
        if attribute is None or attribute.end() == i:
            i += 1  # a stray quote or brace: a browser skips it too
            continue
        value = attribute.group(2) or ""
        i = attribute.end()
        if value == "{":
            end = jsx_expression_end(text, i - 1)
            if end < 0:
                return None
            value, i = text[i - 1 : end], end
        attrs[attribute.group(1).lower()] = value.strip("\"'")
    return None


def _replacement(tag: Tag, links: list[str], inline: bool) -> str:
    name = tag.name.lower()
    if name == "a":
        if tag.closing:
            href = links.pop() if links else ""
            return f"]({href})" if href else ""
        href = "" if tag.self_closing else tag.attrs.get("href", "")
        href = "" if href.startswith("{") else href
        if not tag.self_closing:
            links.append(href)
        return "[" if href else ""
    if name in _MARKS:
        return _MARKS[name]
    if name == "summary":
        return "**\n" if tag.closing else "\n**"
    if name in _LABELLED and not tag.closing:
        label = next(
            (tag.attrs[a] for a in _LABELLED[name] if tag.attrs.get(a) and not tag.attrs[a].startswith("{")), ""
        )
        return f"\n**{label}**\n" if label else "\n"
    if name in _CELLS:
        return " "
    if name in _BLOCK or (tag.name[:1].isupper() and not inline):
        return "\n"
    return ""


def is_markup(name: str, jsx: bool) -> bool:
    """Whether a tag of this name is markup: an HTML element, a component (capitalised), or in MDX
    any tag at all."""
    return jsx or name[:1].isupper() or name.lower() in HTML_ELEMENTS


def iter_tags(text: str, jsx: bool = True) -> Iterator[Tag]:
    """The tags of `text` that are markup (see `is_markup`), in order, none overlapping."""
    pos = 0
    for match in _TAG_START.finditer(text):
        if match.start() < pos:
            continue
        tag = _scan_tag(text, match)
        if tag is not None and is_markup(tag.name, jsx):
            yield tag
            pos = tag.end


def strip_tags(text: str, jsx: bool = True) -> str:
    """HTML and JSX tags replaced by what a reader sees: their text, with links kept as Markdown
    links, code/bold/italic as Markdown, a tab's or summary's label as a bold line, and hidden
    elements (script, style, svg...) dropped with their content."""
    out: list[str] = []
    links: list[str] = []
    pos = 0
    for tag in iter_tags(text, jsx):
        if tag.start < pos:  # inside a hidden element already dropped
            continue
        out.append(text[pos : tag.start])
        pos = tag.end
        if tag.name.lower() in _HIDDEN and not tag.closing and not tag.self_closing:
            close = re.compile(rf"</{re.escape(tag.name)}\s*>", re.IGNORECASE).search(text, tag.end)
            if close:
                pos = close.end()
            continue
        # A component inside a line of text (<Highlight>, <Link>) is inline; on a line of its own, a block.
        line_start = text.rfind("\n", 0, tag.start) + 1
        line_end = text.find("\n", tag.end)
        inline = bool(text[line_start : tag.start].strip()) and bool(
            text[tag.end : None if line_end < 0 else line_end].strip()
        )
        out.append(_replacement(tag, links, inline))
    out.append(text[pos:])
    return _EMPTY_LINK.sub("", "".join(out))
