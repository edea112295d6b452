"""mdBook: `book.toml` names the source folder (`[book] src`, default `src`) and the book's
language; `SUMMARY.md` says which files are pages and names them (mdbook_summary.py). Pages are
routed `a/b.md` -> `a/b.html`, `README.md` -> `index.html`; anchors by mdBook's rule. The `links`
preprocessor (mdbook_links.py) reads includes and honours `\\{{#...}}` escapes; hidden HTML and
a custom preprocessor's placeholders are dropped (mdbook_hidden.py)."""

from __future__ import annotations

import glob
import posixpath
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pgcite.ingest.anchors import MDBOOK
from pgcite.ingest.markdown import Dialect
from pgcite.ingest.sites.base import Files, Includes, Page, Site
from pgcite.ingest.sites.languages import language_tag
from pgcite.ingest.sites.mdbook_hidden import drop_unseen
from pgcite.ingest.sites.mdbook_links import expand
from pgcite.ingest.sites.mdbook_summary import chapters
from pgcite.ingest.sources import Document

__all__ = ["MdBook"]

# mdBook's own preprocessors: none of them fills in `{{ name }}` placeholders.
_BUILT_IN = {"links", "index"}


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
        book = _table(config, "book")
        self.content_dirs = (str(book.get("src") or "src").strip("/"),)
        if tag := language_tag(book.get("language")):
            self.languages, self.default_language = (tag,), tag
        # A preprocessor of the book's own may replace `{{ name }}`; without one they show as written.
        self._own_preprocessor = bool(set(_table(config, "preprocessor")) - _BUILT_IN)
        self._summary = posixpath.normpath(posixpath.join(self.content_dirs[0], "SUMMARY.md"))
        self._names: dict[str, str] | None = self._read_summary()  # site path -> chapter name
        self._positions = {site_path: n for n, site_path in enumerate(self._names or {})}
        self._titles: dict[str, str] = {}  # site path -> its `{{#title}}`, set while it is read

    def _read_summary(self) -> dict[str, str] | None:
        """The chapters' names by site path; None when there is no SUMMARY.md naming a file (every
        Markdown file is a page then)."""
        try:
            found = chapters(self.files.read(self._summary))
        except OSError:
            return None
        names = {posixpath.normpath(posixpath.join(self.content_dirs[0], c.path)): c.name for c in found}
        return names or None

    # --- which files are pages: SUMMARY.md's chapters, as exact paths -------------------------

    @property
    def include(self) -> tuple[str, ...]:
        if self._names is None:
            return super().include
        globs = []
        for site_path in self._names:
            source_path = self.files.to_source(site_path)
            if source_path != ".." and not source_path.startswith("../"):  # outside the ingested folder
                # "./" anchors it at the source root (a glob without "/" matches a name anywhere).
                globs.append("./" + glob.escape(source_path))
        return tuple(globs)

    # --- what a page is ------------------------------------------------------------------

    def route(self, site_path: str, front_matter: Mapping[str, Any]) -> str:
        folder, name = posixpath.split(posixpath.relpath(site_path, self.content_dirs[0]))
        stem = posixpath.splitext(name)[0]
        prefix = f"{folder}/" if folder else ""
        return f"{prefix}index.html" if stem.lower() in ("readme", "index") else f"{prefix}{stem}.html"

    def prepare(self, body: str, includes: Includes) -> str:
        expanded = expand(body, includes)
        if expanded.title:
            self._titles[includes.page] = expanded.title
        return drop_unseen(expanded.text, self.dialect.parser, placeholders=self._own_preprocessor)

    def position_of(self, site_path: str, includes: Includes) -> int | None:
        """Its place in SUMMARY.md (noted as included by `render`)."""
        return self._positions.get(site_path)

    def render(self, document: Document) -> Page:
        """The page, titled by its first heading as a reader sees it at the top of the page; a
        page without one by what mdBook names it in its <title> and sidebar: its `{{#title}}`,
        else its SUMMARY.md entry."""
        page = super().render(document)
        site_path = self.files.to_site(document.path)
        title = self._titles.pop(site_path, "") or (self._names or {}).get(site_path, "")
        headed = page.title != self.fallback_title(site_path, {})
        if title and not headed and title != page.title:
            page = replace(page, title=title, parsed=replace(page.parsed, title=title))
        if self._names is not None:  # its name and being a page at all come from SUMMARY.md
            page = replace(page, included=(*page.included, self._summary))
        return page


def _table(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name)
    return value if isinstance(value, dict) else {}
