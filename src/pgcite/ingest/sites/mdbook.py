"""mdBook: `book.toml` names the source folder (`[book] src`, default `src`); `SUMMARY.md` is the
table of contents, not a page. Pages are routed `a/b.md` -> `a/b.html`, `README.md` ->
`index.html`; anchors by mdBook's rule. `{{#include file}}`, with `:ANCHOR` or line ranges,
`{{#rustdoc_include}}` and `{{#playground}}` read the file into the page."""

from __future__ import annotations

import posixpath
import re
import tomllib
from collections.abc import Mapping
from typing import Any

from pgcite.ingest.anchors import MDBOOK
from pgcite.ingest.markdown import Dialect
from pgcite.ingest.sites.base import Files, Includes, Site, code_fence, fence_language, select_lines

__all__ = ["MdBook"]

_INCLUDE = re.compile(
    r"\{\{#(?P<kind>include|rustdoc_include|playground)[ \t]+(?P<path>[^\s:}]+)(?::(?P<selector>[^\s}]*))?[^}]*\}\}"
)
_OTHER_HELPER = re.compile(r"\{\{#(?:title|template)[^}]*\}\}")
_ANCHOR_MARK = re.compile(r"^[^\n]*\bANCHOR(?:_END)?:[ \t]*[\w-]+[^\n]*\n?", re.MULTILINE)


def _anchor(text: str, name: str) -> str:
    match = re.search(
        rf"^[^\n]*\bANCHOR:[ \t]*{re.escape(name)}\b[^\n]*\n(?P<body>.*?)^[^\n]*\bANCHOR_END:[ \t]*{re.escape(name)}\b",
        text,
        re.DOTALL | re.MULTILINE,
    )
    return match["body"].rstrip("\n") if match else ""


class MdBook(Site):
    name = "mdbook"
    dialect = Dialect(anchors=MDBOOK)
    markers = ("book.toml",)
    partials = ("SUMMARY.md",)

    def __init__(self, files: Files) -> None:
        super().__init__(files)
        try:
            config = tomllib.loads(files.read("book.toml"))
        except (OSError, tomllib.TOMLDecodeError):
            config = {}
        book = config.get("book")
        book = book if isinstance(book, dict) else {}
        self.content_dirs = (str(book.get("src") or "src").strip("/"),)

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        folder, name = posixpath.split(posixpath.relpath(site_path, self.content_dirs[0]))
        stem = posixpath.splitext(name)[0]
        prefix = f"{folder}/" if folder else ""
        return f"{prefix}index.html" if stem.lower() in ("readme", "index") else f"{prefix}{stem}.html"

    def prepare(self, body: str, includes: Includes, depth: int = 0) -> str:
        def include(match: re.Match[str]) -> str:
            path = includes.resolve(match["path"])
            text = includes.read(path, depth, match["path"])
            if text is None:
                return ""
            selector = match["selector"] or ""
            if selector and not re.fullmatch(r"[\d:]*", selector):
                text = _anchor(text, selector)
            elif selector:
                text = select_lines(text, selector)
            text = _ANCHOR_MARK.sub("", text)
            if match["kind"] == "playground":
                return code_fence(text, fence_language(path))
            return self.prepare(text, includes.at(path), depth + 1) if path.endswith(".md") else text.rstrip("\n")

        return _OTHER_HELPER.sub("", _INCLUDE.sub(include, body))
