"""Which of a crawled site's pages are copies of another (crawl.py): a page whose canonical URL
(`<link rel="canonical">`) names another page of the site.

Such a page is left out as a copy only when that other page agrees: its content is the same
(one page served at two URLs) or it names itself as canonical (a page that knows it is the one
to read). Otherwise the page is kept at its own URL: any page can name any other, and a page
taken as a copy on its word alone would take that page's place (its content stored under that
page's URL, the real page then dropped as already read). A page is stored under its own URL
always, never under the URL it names.

The named page may not be read yet: the page then waits for it; a page never read (the page
limit, the deadline, a page gone) leaves those waiting on it kept."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pgcite.ingest.sources import Document

__all__ = ["Canonicals"]

_UNCHANGED = "unchanged"  # a page answered 304: its content was not sent


class Canonicals:
    def __init__(self, known: Mapping[str, str]) -> None:
        self.known = known  # the paths stored before (a 304 keeps the decision made then)
        # What is known of each page taken: (checksum, whether it names itself), _UNCHANGED, or
        # None (gone, skipped, not a page, left out).
        self._pages: dict[str, tuple[str, bool] | str | None] = {}
        self._waiting: dict[str, list[Document]] = {}  # a named page's path -> the pages naming it

    def taken(
        self, path: str, page: Document | None = None, names_itself: bool = False, unchanged: bool = False
    ) -> None:
        """What the crawl learnt of the page at `path`: read (`page`), a 304, or neither."""
        self._pages[path] = (page.checksum, names_itself) if page else _UNCHANGED if unchanged else None

    def undecided(self, page: Document, target: str) -> bool:
        """Whether `page`, naming `target`, must wait for it to be read (it is then kept for later)."""
        if target in self._pages:
            return False
        self._waiting.setdefault(target, []).append(page)
        return True

    def is_copy(self, page: Document, target: str) -> bool:
        there = self._pages.get(target)
        if isinstance(there, tuple):
            checksum, names_itself = there
            return names_itself or checksum == page.checksum
        if there == _UNCHANGED:  # not sent again: the decision made when it was read stands
            return page.path not in self.known
        return False  # gone, skipped, not a page, left out: this page is the one there is

    def settle(self, path: str) -> Iterator[tuple[Document, bool]]:
        """The pages that waited on `path`, now taken, each with whether it is a copy; then those
        that waited on them, and so on."""
        ready = [path]
        while ready:
            target = ready.pop()
            for page in self._waiting.pop(target, []):
                copy = self.is_copy(page, target)
                self._pages[page.path] = None if copy else (page.checksum, False)
                yield page, copy
                ready.append(page.path)

    def never_read(self) -> list[str]:
        """The named pages that no answer came for: those waiting on them are settled as kept."""
        return list(self._waiting)
