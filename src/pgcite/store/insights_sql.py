"""The SQL of the insights (learn/insights.py): aggregates over the answer log within a span and
the caller's scope, read through the covering index of migration 22 (an index-only scan of
(asked_at) with the columns every figure counts, the pages each answer cited among them, so the
rows' text and sections are never read but for the examples).

Every figure sees the rows log_rows.VISIBLE lets the caller see, and the same filters: the span
[since, until), a source (one the question was asked over), a channel and a language (the pages'
the answer came from, log_rows.insert)."""

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
    AND (%(channel)s::text IS NULL OR channel = %(channel)s)
    AND (%(language)s::text IS NULL OR language = %(language)s)"""
)


@dataclass(frozen=True)
class Span:
    """What the figures are counted over."""

    since: datetime
    until: datetime
    source: str | None = None
    channel: str | None = None
    allowed: Sequence[str] | None = None  # the caller's sources; None: every source
    language: str | None = None  # a language tag, lower case ("en", "pt-br")

    def params(self, **more: object) -> dict[str, object]:
        allowed = list(self.allowed) if self.allowed is not None else None
        return {
            "since": self.since,
            "until": self.until,
            "source": self.source,
            "channel": self.channel,
            "language": self.language,
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


# A bucket's start, as date_trunc(unit, asked_at, 'UTC') gives it (that form is twice as slow per row).
_BUCKET = "date_trunc(%(unit)s, asked_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"

# Every count by bucket, channel, scope and language (one hashed pass, a few hundred rows); every
# split and sum of counts() is added up from them, and the languages asked in. The percentiles,
# which cannot be added up, take a second pass by bucket alone (a sort of the span's latencies).
_FINE = sql.SQL(
    """SELECT {bucket}, channel, scope, language, count(*), count(*) FILTER (WHERE generator <> {search}),
              count(*) FILTER (WHERE refused), count(*) FILTER (WHERE rating IS NOT NULL),
              count(*) FILTER (WHERE rating = 'down'), count(*) FILTER (WHERE stale_at IS NOT NULL)
       FROM answer_log WHERE {where} GROUP BY 1, 2, 3, 4"""
).format(bucket=sql.SQL(_BUCKET), search=sql.Literal(SEARCH), where=_WHERE)
_LATENCY = sql.SQL(
    """SELECT bucket, GROUPING(bucket), percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms),
              percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)
       FROM (SELECT {bucket} AS bucket, latency_ms FROM answer_log WHERE {where}) rows
       GROUP BY GROUPING SETS ((bucket), ())"""
).format(bucket=sql.SQL(_BUCKET), where=_WHERE)
# Sorting a month's latencies takes more than the default 4 MB (a sort on disk, a third slower).
_WORK_MEM = "64MB"


def counts(store: Store, span: Span, unit: str) -> tuple[list[Counts], dict[str, int]]:
    """unit: "day" or "week" (a bucket's length). Rows: per bucket, per bucket and channel, per
    bucket and source, and one for the whole span (bucket None, channel None, source None); the
    latency percentiles are the buckets' and the span's (None in the rows split by channel or source).
    And the questions per language asked in ('' when the pages had none)."""
    if unit not in ("day", "week"):
        raise ValueError(f"a bucket is a day or a week (got {unit!r})")
    params = span.params(unit=unit)
    with store.conn.transaction():
        store.conn.execute(sql.SQL("SET LOCAL work_mem = {}").format(sql.Literal(_WORK_MEM)))
        fine = store.conn.execute(_FINE, params).fetchall()
        latency = {
            None if whole else bucket: (p50, p95)
            for bucket, whole, p50, p95 in store.conn.execute(_LATENCY, params).fetchall()
        }
    sums: dict[tuple, list[int]] = {}
    languages: dict[str, int] = {}
    for bucket, channel, scope, language, *figures in fine:
        languages[language] = languages.get(language, 0) + figures[0]
        src = EVERY_SOURCE if scope is None else "+".join(scope)
        for key in ((None, None, None), (bucket, None, None), (bucket, channel, None), (bucket, None, src)):
            total = sums.setdefault(key, [0] * len(figures))
            for i, n in enumerate(figures):
                total[i] += n
    found = []
    for (bucket, channel, src), (questions, answers, refused, rated, down, stale) in sums.items():
        p50, p95 = latency.get(bucket, (None, None)) if channel is None and src is None else (None, None)
        found.append(
            Counts(
                bucket,
                channel,
                src,
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
    return found, languages


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
       FROM (SELECT split_part(page, ':', 1) AS source, substr(page, strpos(page, ':') + 1) AS path,
                    answers, citations
             FROM (SELECT p.page, count(*) AS answers, sum(p.n) AS citations
                   FROM answer_log a CROSS JOIN LATERAL unnest(a.cited_pages, a.cited_counts) p(page, n)
                   WHERE {where} AND NOT a.refused AND a.generator <> {search}
                   GROUP BY 1) pages
             ORDER BY answers DESC, citations DESC, 1, 2 LIMIT %(limit)s) c
       LEFT JOIN documents d ON d.source = c.source AND d.path = c.path
       ORDER BY c.answers DESC, c.citations DESC, c.source, c.path"""
).format(where=_WHERE, search=sql.Literal(SEARCH))


def cited_pages(store: Store, span: Span, limit: int) -> list[CitedPage]:
    """The pages whose sections the answers cited most, by answers citing them. Each answer's cited
    pages are columns of their own (migration 22, log_rows.cited_pages), held by the covering index:
    no answer's sections are unpacked."""
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
