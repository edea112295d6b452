"""mdBook's `SUMMARY.md`: the chapters a book publishes, each a file and the name the sidebar and
the page's `<title>` give it, read as mdBook's own summary parser reads them."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["Chapter", "chapters"]

_MARKDOWN = MarkdownIt("commonmark")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Chapter:
    name: str  # the link's text: the chapter's name in the sidebar and in the page's <title>
    path: str  # the file, relative to the book's source folder, normalised


def chapters(summary: str) -> list[Chapter]:
    """The chapters `summary` links to, in order. As mdBook's parser: a link in a prefix or
    suffix paragraph is a chapter, a list item's first link is one (its other links are text), a
    heading's link is not (`# Part` titles), and a draft `[Title]()` has no file. Links to other
    sites and fragments, which mdBook could not load, are left out."""
    found: list[Chapter] = []
    items: list[bool] = []  # per open list item: whether its chapter was taken already
    in_heading = False
    for token in _MARKDOWN.parse(summary):
        if token.type == "list_item_open":
            items.append(False)
        elif token.type == "list_item_close":
            items.pop()
        elif token.type in ("heading_open", "heading_close"):
            in_heading = token.type == "heading_open"
        elif token.type == "inline" and not in_heading:
            links = _links(token.children or [])
            if items:
                if items[-1] or not links:
                    continue
                items[-1] = True
                links = links[:1]
            found += [chapter for chapter in links if chapter.path]
    return found


def _links(children: list[Token]) -> list[Chapter]:
    """The links among an inline token's children: (text, target) as mdBook reads them."""
    links: list[Chapter] = []
    href: str | None = None
    text: list[str] = []
    for child in children:
        if child.type == "link_open":
            href, text = str(child.attrs.get("href") or ""), []
        elif child.type == "link_close" and href is not None:
            links.append(Chapter("".join(text).strip(), _path(href)))
            href = None
        elif href is not None and child.type in ("text", "code_inline"):
            text.append(child.content)
        elif href is not None and child.type == "softbreak":
            text.append(" ")
    return links


def _path(href: str) -> str:
    """The file a chapter link names ("" for a draft or a link mdBook cannot load). markdown-it
    percent-encodes targets; mdBook reads them as written, `%20` as a space."""
    target = unquote(href)
    if not target or target.startswith(("#", "/")) or _SCHEME.match(target):
        return ""
    path = posixpath.normpath(target)
    return "" if path == "." or path.startswith("../") or path == ".." else path
