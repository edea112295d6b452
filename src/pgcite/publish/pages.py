"""Reading pages and sections back, on the application object: what a coding agent or an llms.txt
reader gets instead of chunks. Scoped like search: outside a caller's sources nothing exists."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from pgcite.errors import PgciteError
from pgcite.safety import check_text
from pgcite.store import Store, pages_sql
from pgcite.store.pages_sql import MAX_REFERENCE_CHARS, PageText, SectionText


def _not_found(what: str) -> PgciteError:
    return PgciteError(f"no {what}; find one with search_docs or GET /v1/search", kind="not_found")


def _checked(reference: str, what: str) -> str:
    if not reference or len(reference) > MAX_REFERENCE_CHARS:
        raise PgciteError(f"a {what} is 1 to {MAX_REFERENCE_CHARS} characters", kind="bad_request")
    try:
        return check_text(reference)
    except ValueError as exc:
        raise PgciteError(f"the {what}: {exc}", kind="bad_request") from None


class PageOps:
    """Mixed into core.Pgcite, which provides the reader."""

    if TYPE_CHECKING:

        def reader(self) -> AbstractContextManager[Store]: ...

    def page(
        self,
        *,
        url: str | None = None,
        source: str | None = None,
        path: str | None = None,
        allowed: Sequence[str] | None = None,
    ) -> PageText:
        """A page by its published URL, or by source and path, with its cleaned Markdown."""
        if url is None and (source is None or path is None):
            raise PgciteError("name a page by its url, or by its source and path", kind="bad_request")
        with self.reader() as store:
            found = pages_sql.read_page(
                store.conn,
                url=_checked(url, "url") if url is not None else None,
                source=_checked(source, "source") if source is not None else None,
                path=_checked(path, "path") if path is not None else None,
                allowed=allowed,
            )
        if found is None:
            raise _not_found(f"page at {url!r}" if url is not None else f"page {path!r} in {source!r}")
        if found.markdown is None:
            raise PgciteError(
                f"the page {found.path!r} was stored before pgcite kept pages' text; "
                f"`pgcite sync {found.source}` reads it again",
                kind="not_found",
            )
        return found

    def section(self, chunk_id: str, allowed: Sequence[str] | None = None) -> SectionText:
        """The whole section a search result (a chunk id) comes from."""
        with self.reader() as store:
            found = pages_sql.read_section(store.conn, _checked(chunk_id, "section id"), allowed)
        if found is None:
            raise _not_found(f"section {chunk_id!r}")
        return found

    def pages(self, source: str) -> list[PageText]:
        """A source's pages of its default version, without their text (the caller checked its scope)."""
        with self.reader() as store:
            return pages_sql.list_pages(store.conn, source)

    def page_texts(self, source: str, batch: int = 20) -> Iterator[PageText]:
        """`pages` with their Markdown, read `batch` at a time (a site may hold hundreds of MB), with
        no connection held between batches, while the caller sends them on."""
        last = None
        while True:
            with self.reader() as store:
                pages = pages_sql.page_texts_after(store.conn, source, last, batch)
            yield from pages
            if len(pages) < batch:
                return
            last = pages[-1]
