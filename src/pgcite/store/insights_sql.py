"""The SQL of the insights (learn/insights.py): aggregates over the answer log within a span and
the caller's scope, read through the covering index of migration 22 (an index-only scan of
(asked_at) with the columns every figure counts, so the rows' text and sections are never read but
for the most cited pages and the examples).

Every figure sees the rows log_rows.VISIBLE lets the caller see, and the same filters: the span
[since, until), a source (one the question was asked over) and a channel."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from psycopg import sql

from pgcite.store.database import Store
from pgcite.store.log_rows import VISIBLE

# An agent's search_docs is logged with this generator: a question, but no answer to refuse or rate.
SEARCH = "search"
EVERY_SOURCE = "*"  # the label of questions asked over every source (scope NULL)

_WHERE = sql.SQL(
    VISIBLE
    + """ AND asked_at >= %(since)s AND asked_at < %(until)s
    AND (%(source)s::text IS NULL OR %(source)s = ANY(scope))
    AND (%(channel)s::text IS NULL OR channel = %(channel)s)"""
)


@dataclass(frozen=True)
class Span:
    """What the figures are counted over."""

    since: datetime
    until: datetime
    source: str | None = None
    channel: str | None = None
    allowed: Sequence[str] | None = None  # the caller's sources; None: every source

    def params(self, **more: object) -> dict[str, object]:
        allowed = list(self.allowed) if self.allowed is not None else None
        return {
            "since": self.since,
            "until": self.until,
            "source": self.source,
            "channel": self.channel,
            "allowed": allowed,
            **more,
        }


@dataclass(frozen=True)
class Counts:
    """One bucket's figures (or the whole span's), for one channel, one source or all."""

    bucket: datetime | None  # the bucket's start (UTC); None: the whole span
    channel: str | None  # set in the rows split by channel
    source: str | None  # set in the rows split by source (EVERY_SOURCE: asked over every source)
    questions: int  # every logged question, searches included
    answers: int  # questions answered or refused (not an agent's searches)
    refused: int
    rated: int
    down: int
    stale: int  # answers whose cited sections have changed since
    latency_p50: float | None  # milliseconds
    latency_p95: float | None


# One scan, every split: GROUPING SETS by bucket, by bucket and channel, by bucket and source, and the
# whole span. The source of a row is what it was asked over: one source, several joined by "+", or
# EVERY_SOURCE.
_COUNTS = sql.SQL(
    """SELECT bucket, channel, src, GROUPING(bucket) AS whole, GROUPING(channel) AS by_channel,
              GROUPING(src) AS by_source, count(*), count(*) FILTER (WHERE generator <> {search}),
              count(*) FILTER (WHERE refused), count(*) FILTER (WHERE rating IS NOT NULL),
              count(*) FILTER (WHERE rating = 'down'), count(*) FILTER (WHERE stale_at IS NOT NULL),
              percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms),
              percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)
       FROM (SELECT date_trunc(%(unit)s, asked_at, 'UTC') AS bucket, channel,
                    CASE WHEN scope IS NULL THEN {every} ELSE array_to_string(scope, '+') END AS src,
                    generator, refused, rating, stale_at, latency_ms
             FROM answer_log WHERE {where}) rows
       GROUP BY GROUPING SETS ((bucket), (bucket, channel), (bucket, src), ())"""
).format(search=sql.Literal(SEARCH), every=sql.Literal(EVERY_SOURCE), where=_WHERE)


def counts(store: Store, span: Span, unit: str) -> list[Counts]:
    """unit: "day" or "week" (a bucket's length). Rows: per bucket, per bucket and channel, per
    bucket and source, and one for the whole span (bucket None, channel None, source None)."""
    if unit not in ("day", "week"):
        raise ValueError(f"a bucket is a day or a week (got {unit!r})")
    found = []
    for row in store.conn.execute(_COUNTS, span.params(unit=unit)).fetchall():
        (
            bucket,
            channel,
            src,
            whole,
            by_channel,
            by_source,
            questions,
            answers,
            refused,
            rated,
            down,
            stale,
            p50,
            p95,
        ) = row
        found.append(
            Counts(
                None if whole else bucket,
                None if by_channel else channel,
                None if by_source else src,
                questions,
                answers,
                refused,
                rated,
                down,
                stale,
                latency_p50=float(p50) if p50 is not None else None,
                latency_p95=float(p95) if p95 is not None else None,
            )
        )
    return found


@dataclass(frozen=True)
class CitedPage:
    source: str
    path: str
    title: str  # the page's now ("" when it has gone)
    url: str
    answers: int  # answers that cited it
    citations: int  # its sections cited, over those answers


_CITED_PAGES = sql.SQL(
    """SELECT c.source, c.path, coalesce(d.title, ''), coalesce(d.url, ''), c.answers, c.citations
       FROM (SELECT r ->> 'source' AS source, r ->> 'path' AS path, count(DISTINCT a.id) AS answers,
                    count(*) AS citations
             FROM answer_log a CROSS JOIN LATERAL jsonb_array_elements(a.retrieved) r
             WHERE {where} AND NOT a.refused AND a.generator <> {search} AND (r ->> 'cited')::boolean
             GROUP BY 1, 2 ORDER BY answers DESC, citations DESC, 1, 2 LIMIT %(limit)s) c
       LEFT JOIN documents d ON d.source = c.source AND d.path = c.path
       ORDER BY c.answers DESC, c.citations DESC, c.source, c.path"""
).format(where=_WHERE, search=sql.Literal(SEARCH))


def cited_pages(store: Store, span: Span, limit: int) -> list[CitedPage]:
    """The pages whose sections the answers cited most, by answers citing them."""
    rows = store.conn.execute(_CITED_PAGES, span.params(limit=limit)).fetchall()
    return [CitedPage(*r) for r in rows]


@dataclass(frozen=True)
class Example:
    """A logged question shown as an example."""

    id: str
    question: str
    asked_at: datetime
    channel: str
    source: str  # what it was asked over, as Counts.source
    stale_at: datetime | None


_STALE = sql.SQL(
    """SELECT id, question, asked_at, channel,
              CASE WHEN scope IS NULL THEN {every} ELSE array_to_string(scope, '+') END, stale_at
       FROM answer_log WHERE {where} AND stale_at IS NOT NULL
       ORDER BY asked_at DESC, id LIMIT %(limit)s"""
).format(where=_WHERE, every=sql.Literal(EVERY_SOURCE))


def stale_examples(store: Store, span: Span, limit: int) -> list[Example]:
    """The newest answers that cited a section changed since ("ask again")."""
    rows = store.conn.execute(_STALE, span.params(limit=limit)).fetchall()
    return [Example(str(r[0]), *r[1:]) for r in rows]
