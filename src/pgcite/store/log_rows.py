"""The SQL of the answer log (table answer_log, migration 7).

A caller scoped to sources sees a row only when the row's scope (the sources its question was
asked over) lies within them; a row asked over every source is seen by unscoped callers alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from psycopg.types.json import Jsonb

from pgcite.errors import PgciteError
from pgcite.store.database import Store
from pgcite.store.scalar import scalar

RATINGS = ("up", "down")
VISIBLE = "(%(allowed)s::text[] IS NULL OR (scope IS NOT NULL AND scope <@ %(allowed)s::text[]))"
# What the gaps report starts from: refused, answered with unsupported claims, or marked down.
_UNANSWERED = "(refused OR jsonb_array_length(checks -> 'unsupported') > 0 OR rating = 'down')"


@dataclass(frozen=True)
class LogEntry:
    id: str
    asked_at: datetime
    channel: str  # cli, api, chat or page
    key_name: str | None
    scope: tuple[str, ...] | None  # the sources the question was asked over; None: every source
    question: str
    source: str | None  # the filters it was asked with
    path: str | None
    version: str | None
    retrieved: list[dict]  # the sections past the bar, fed (with their number) and left out
    answer: str
    refused: bool
    checks: dict
    generator: str
    note: str
    latency_ms: int
    rating: str | None = None
    comment: str | None = None
    rated_at: datetime | None = None
    confirmed: bool = False  # a refusal the team confirmed: the docs do not say
    stale_at: datetime | None = None  # when a section it cited was found changed or gone


_COLUMNS = [f.name for f in dataclasses.fields(LogEntry)]
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM answer_log"


def _entry(row: tuple) -> LogEntry:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["id"] = str(values["id"])
    values["scope"] = tuple(values["scope"]) if values["scope"] is not None else None
    return LogEntry(**values)


def cited_pages(retrieved: Sequence[dict]) -> tuple[list[str], list[int]]:
    """The pages whose sections an answer cited, each once as "source:path" (a source's name has no
    colon), in order, and how many of its sections: the columns the insights count (migration 22)."""
    counts: dict[str, int] = {}
    for section in retrieved:
        if section.get("cited"):
            page = f"{section['source']}:{section['path']}"
            counts[page] = counts.get(page, 0) + 1
    pages = sorted(counts)
    return pages, [counts[p] for p in pages]


def first_page(retrieved: Sequence[dict]) -> tuple[str | None, str | None]:
    """The (source, path) whose page's language is the answer's: its first fed section's (one with
    a number), else its first section's; (None, None) when it has none. A question is read in one
    language (retrieval/languages.py), so its sections share it."""
    first = next((s for s in retrieved if s.get("number") is not None), retrieved[0] if retrieved else None)
    return (first["source"], first["path"]) if first else (None, None)


# The language column (migration 22): the page's, looked up in the same statement.
_LANGUAGE = "coalesce((SELECT language FROM documents WHERE source = %s AND path = %s), '')"


def insert(store: Store, entries: Sequence[LogEntry]) -> None:
    columns = _COLUMNS[:16]  # feedback comes later
    with store.conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO answer_log ({', '.join(columns)}, cited_pages, cited_counts, language) "
            f"VALUES ({', '.join(['%s'] * (len(columns) + 2))}, {_LANGUAGE}) ON CONFLICT (id) DO NOTHING",
            [[*(_value(e, c) for c in columns), *cited_pages(e.retrieved), *first_page(e.retrieved)] for e in entries],
        )


def _value(entry: LogEntry, column: str) -> object:
    value = getattr(entry, column)
    if column in ("retrieved", "checks"):
        return Jsonb(value)
    return list(value) if column == "scope" and value is not None else value


def entries(
    store: Store,
    *,
    since: datetime | None = None,
    refused: bool = False,
    unanswered: bool = False,
    stale: bool = False,
    source: str | None = None,
    allowed: Sequence[str] | None = None,
    limit: int | None = 100,
    until: datetime | None = None,
    channel: str | None = None,
    language: str | None = None,
) -> list[LogEntry]:
    """Newest first. refused: only refusals; unanswered: what the gaps report starts from; stale:
    only answers that cited a section since changed; until: asked before it; channel: asked there;
    language: answered from pages in it (migration 22's column)."""
    rows = store.conn.execute(
        f"""{_SELECT} WHERE {VISIBLE} AND (%(since)s::timestamptz IS NULL OR asked_at >= %(since)s)
            AND (%(until)s::timestamptz IS NULL OR asked_at < %(until)s)
            AND (%(channel)s::text IS NULL OR channel = %(channel)s)
            AND (%(language)s::text IS NULL OR language = %(language)s)
            AND (NOT %(refused)s OR refused) AND (NOT %(unanswered)s OR {_UNANSWERED})
            AND (NOT %(stale)s OR stale_at IS NOT NULL)
            AND (%(source)s::text IS NULL OR %(source)s = ANY(scope))
            ORDER BY asked_at DESC, id LIMIT %(limit)s""",
        {
            "allowed": _list(allowed),
            "since": since,
            "refused": refused,
            "unanswered": unanswered,
            "stale": stale,
            "source": source,
            "limit": limit,
            "until": until,
            "channel": channel,
            "language": language,
        },
    ).fetchall()
    return [_entry(r) for r in rows]


# A cited section reads as it did while some chunk of its page still has the text it had (an
# edit above it renumbers chunk ids without changing it). Rows logged before md5s were kept never match.
_SAME_TEXT = """EXISTS (SELECT 1 FROM documents d JOIN chunks c ON c.document_id = d.id
                       WHERE d.source = r ->> 'source' AND d.path = r ->> 'path'
                         AND md5(c.content) = r ->> 'content_md5')"""


def mark_stale(store: Store, source: str) -> int:
    """Mark the logged answers that cited a section of `source` whose text has changed or gone
    (each cited section's md5 is logged with it; rows logged before that are left alone)."""
    return store.conn.execute(
        f"""UPDATE answer_log a SET stale_at = now()
           WHERE a.stale_at IS NULL AND NOT a.refused
             AND EXISTS (SELECT 1 FROM jsonb_array_elements(a.retrieved) r
                         WHERE (r ->> 'cited')::boolean AND r ->> 'source' = %(source)s AND r ? 'content_md5'
                           AND NOT {_SAME_TEXT})""",
        {"source": source},
    ).rowcount


def one(store: Store, answer_id: str, allowed: Sequence[str] | None = None) -> LogEntry | None:
    """The row with this full id, when the caller may see it."""
    row = store.conn.execute(
        f"{_SELECT} WHERE id = %(id)s AND {VISIBLE}", {"id": answer_id, "allowed": _list(allowed)}
    ).fetchone()
    return _entry(row) if row else None


@dataclass(frozen=True)
class SectionNow:
    """A logged section as the docs have it now."""

    # "same": its text is still on its page; "changed": its heading is, with other text; "removed":
    # neither (or the page is gone); "unknown": logged before the text's md5 was kept.
    state: str
    title: str = ""  # the page's
    content: str = ""  # its text now ("same" or "changed")
    url: str = ""
    flags: tuple[str, ...] = ()


def sections_now(store: Store, sections: Sequence[dict]) -> list[SectionNow]:
    """Each logged section (an entry of `retrieved`) looked up in the docs as they are now."""
    pages = sorted({(s["source"], s["path"]) for s in sections})
    rows = store.conn.execute(
        """SELECT d.source, d.path, md5(c.content), c.breadcrumb, d.title, c.content, c.url, c.flags
           FROM documents d JOIN chunks c ON c.document_id = d.id
           WHERE (d.source, d.path) IN (SELECT * FROM unnest(%s::text[], %s::text[]))
           ORDER BY d.source, d.path, c.ord""",
        ([p[0] for p in pages], [p[1] for p in pages]),
    ).fetchall()
    by_text: dict[tuple, tuple] = {}
    by_heading: dict[tuple, tuple] = {}
    for r in rows:  # the first chunk with that text, or under that heading
        by_text.setdefault(r[:3], r)
        by_heading.setdefault((r[0], r[1], r[3]), r)
    found = []
    for s in sections:
        md5 = s.get("content_md5")
        same = by_text.get((s["source"], s["path"], md5))
        row = same or by_heading.get((s["source"], s["path"], s.get("breadcrumb")))
        state = "unknown" if md5 is None else "same" if same else "changed" if row else "removed"
        found.append(SectionNow(state, row[4], row[5], row[6], tuple(row[7] or ())) if row else SectionNow(state))
    return found


def resolve(store: Store, id_or_prefix: str, allowed: Sequence[str] | None = None) -> str:
    """The full id of a row the caller may see, from its id or the first 8 or more of its characters."""
    text = id_or_prefix.strip().lower()
    if len(text) < 8 or any(ch not in "0123456789abcdef-" for ch in text):
        raise PgciteError(
            f"{id_or_prefix!r} is not an answer id (or its first 8 characters or more); `pgcite log` lists them",
            kind="not_found",
        )
    rows = store.conn.execute(
        f"SELECT id FROM answer_log WHERE {VISIBLE} AND id::text LIKE %(prefix)s LIMIT 2",
        {"allowed": _list(allowed), "prefix": text + "%"},
    ).fetchall()
    if len(rows) != 1:
        raise PgciteError(
            f"no logged answer {id_or_prefix!r}"
            if not rows
            else f"{id_or_prefix!r} names more than one logged answer; give more of its id",
            kind="not_found",
        )
    return str(rows[0][0])


def rate(store: Store, answer_id: str, rating: str, comment: str | None, allowed: Sequence[str] | None = None) -> bool:
    return (
        store.conn.execute(
            f"""UPDATE answer_log SET rating = %(rating)s, comment = %(comment)s, rated_at = now()
            WHERE id = %(id)s AND {VISIBLE}""",
            {"rating": rating, "comment": comment or None, "id": answer_id, "allowed": _list(allowed)},
        ).rowcount
        > 0
    )


def confirm(store: Store, answer_id: str, allowed: Sequence[str] | None = None) -> bool:
    return (
        store.conn.execute(
            f"UPDATE answer_log SET confirmed = true WHERE id = %(id)s AND refused AND {VISIBLE}",
            {"id": answer_id, "allowed": _list(allowed)},
        ).rowcount
        > 0
    )


def prune(store: Store, days: int) -> int:
    """Delete the rows older than `days` days; 0 keeps every row."""
    if days <= 0:
        return 0
    return store.conn.execute(
        "DELETE FROM answer_log WHERE asked_at < now() - make_interval(days => %s)", (days,)
    ).rowcount


def count(store: Store) -> int:
    return scalar(store.conn, "SELECT count(*) FROM answer_log")


def _list(values: Sequence[str] | None) -> list[str] | None:
    return list(values) if values is not None else None
