"""Pages and sections read back whole, for readers rather than search: MCP's read_page and
read_section, llms.txt and each page's Markdown copy. A caller's scope is a filter here too, so a
page outside it reads exactly as one that does not exist."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg.rows import kwargs_row

# Chunk ids are "{source}:{path}#{index}" and URLs are a site's; both are short. Anything longer is
# not one, and is refused before it reaches an index.
MAX_REFERENCE_CHARS = 2000


@dataclass(frozen=True)
class PageText:
    source: str
    path: str
    title: str
    url: str
    version: str
    description: str
    kind: str  # "page" or "changelog"
    markdown: str | None  # None: stored before pgcite kept pages (read again by the next sync)
    position: int | None = None  # its place in the site's reading order


@dataclass(frozen=True)
class SectionText:
    id: str  # the chunk asked for
    source: str
    path: str
    title: str  # the page's
    heading_path: tuple[str, ...]
    url: str
    version: str
    markdown: str  # the section's chunks in order, under its heading


_PAGE_COLUMNS = "d.source, d.path, d.title, d.url, d.version, d.description, d.kind, d.markdown, d.position"
# A source's pages in its site's reading order, the pages without a place after, by URL.
_NO_PLACE = 2**31 - 1
_READING_ORDER = f"coalesce(d.position, {_NO_PLACE}), d.url, d.path"


def _page(**row) -> PageText:
    return PageText(**row)


def _scope(allowed: Sequence[str] | None) -> tuple[str, list]:
    return ("AND d.source = ANY(%s)", [list(allowed)]) if allowed is not None else ("", [])


def read_page(
    conn: psycopg.Connection,
    *,
    source: str | None = None,
    path: str | None = None,
    url: str | None = None,
    allowed: Sequence[str] | None = None,
) -> PageText | None:
    """The page at `path` of `source`, or the one published at `url` (its anchor and a trailing
    slash do not matter); None when there is none the caller may read."""
    scope, scope_args = _scope(allowed)
    if url is not None:
        bare = url.split("#", 1)[0].rstrip("/")
        where, args = "rtrim(d.url, '/') = %s", [bare]
        if source is not None:
            where, args = where + " AND d.source = %s", [*args, source]
    elif source is not None and path is not None:
        where, args = "d.source = %s AND d.path = %s", [source, path]
    else:
        raise ValueError("read_page needs a url, or a source and a path")
    with conn.cursor(row_factory=kwargs_row(_page)) as cursor:
        # Of a URL several versions may share, the source's default version first.
        return cursor.execute(
            f"""SELECT {_PAGE_COLUMNS} FROM documents d JOIN sources s ON s.name = d.source
                WHERE {where} {scope}
                ORDER BY d.version = s.default_version DESC, d.source, d.path LIMIT 1""",
            [*args, *scope_args],
        ).fetchone()


def read_section(conn: psycopg.Connection, chunk_id: str, allowed: Sequence[str] | None = None) -> SectionText | None:
    """The whole section a chunk belongs to (its heading's text, without subsections)."""
    scope, scope_args = _scope(allowed)
    row = conn.execute(
        f"""SELECT c.id, d.source, d.path, d.title, c.heading_path, c.url, d.version,
                   string_agg(s.content, E'\\n\\n' ORDER BY s.ord)
            FROM chunks c JOIN documents d ON d.id = c.document_id
            JOIN chunks s ON s.document_id = c.document_id AND s.heading_path = c.heading_path
            WHERE c.id = %s {scope}
            GROUP BY c.id, d.source, d.path, d.title, c.heading_path, c.url, d.version""",
        [chunk_id, *scope_args],
    ).fetchone()
    if row is None:
        return None
    chunk, source, path, title, heading_path, url, version, body = row
    heading = f"{'#' * (len(heading_path) + 1)} {heading_path[-1]}" if heading_path else f"# {title}"
    return SectionText(chunk, source, path, title, tuple(heading_path), url, version, f"{heading}\n\n{body}\n")


def list_pages(conn: psycopg.Connection, source: str) -> list[PageText]:
    """The pages of a source's default version in reading order, without their text."""
    with conn.cursor(row_factory=kwargs_row(_page)) as cursor:
        return cursor.execute(
            f"""SELECT {_PAGE_COLUMNS.replace("d.markdown", "NULL AS markdown")}
                FROM documents d JOIN sources s ON s.name = d.source
                WHERE d.source = %s AND d.version = s.default_version
                ORDER BY {_READING_ORDER}""",
            [source],
        ).fetchall()


def page_texts_after(conn: psycopg.Connection, source: str, after: PageText | None, limit: int) -> list[PageText]:
    """The next `limit` pages of `list_pages`' order after `after`, with their Markdown: read in
    batches, each on a connection taken and given back, so a slow reader of a large llms-full.txt
    holds none while it reads."""
    keyset = f"AND ({_READING_ORDER}) > (%s, %s, %s)" if after is not None else ""
    with conn.cursor(row_factory=kwargs_row(_page)) as cursor:
        cursor.execute(
            f"""SELECT {_PAGE_COLUMNS} FROM documents d JOIN sources s ON s.name = d.source
                WHERE d.source = %s AND d.version = s.default_version {keyset}
                ORDER BY {_READING_ORDER} LIMIT %s""",
            [source, *(_place(after) if after is not None else ()), limit],
        )
        return cursor.fetchall()


def _place(page: PageText) -> tuple[int, str, str]:
    return (_NO_PLACE if page.position is None else page.position, page.url, page.path)
