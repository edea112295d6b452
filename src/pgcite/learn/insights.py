"""What readers ask, at a glance: every figure of the insights page and report, from SQL aggregates
over the answer log (store/insights_sql.py) within a span, a source, a channel, a language and the
caller's scope.

Per bucket (a day, or a week over a long span): questions by channel and by source, the share refused,
the share marked down, latency p50 and p95. Over the span: the most cited pages, the answers to ask
again (a cited section changed since), and the gaps (learn/gaps.py): largest first, each with its
count, the count of the previous span of equal length (trend), examples, the closest sections the
docs have, and a prefilled issue link when the source's repository is known (repository.py).

An answer's language is its pages' (the log's language column, written by log_rows.insert): the
filter keeps the questions answered in one, gaps included; a refusal that found no section at all
has none (''), so it is left out by the filter. The languages asked in are listed, most asked first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from pgcite.errors import PgciteError
from pgcite.learn.gaps import Gap, gap_of
from pgcite.learn.log import parse_since
from pgcite.learn.repository import Repository, repository
from pgcite.retrieval.languages import checked_tag
from pgcite.store import insights_sql
from pgcite.store.insights_sql import CitedPage, Counts, Example, Span
from pgcite.store.log_rows import LogEntry

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pgcite.learn.gaps import Asked
    from pgcite.store import Store


class LogReader(Protocol):
    """What the insights need of the application (learn/ops.py's LogOps, mixed into core.Pgcite)."""

    def reader(self) -> AbstractContextManager[Store]: ...

    def log_entries(
        self,
        *,
        since: datetime | None = None,
        unanswered: bool = False,
        source: str | None = None,
        allowed: Sequence[str] | None = None,
        limit: int | None = 100,
        until: datetime | None = None,
        channel: str | None = None,
        language: str | None = None,
    ) -> list[LogEntry]: ...

    def group_unanswered(self, rows: Sequence[LogEntry]) -> list[tuple[Gap, list[Asked]]]: ...

    def add_closest(self, gap: Gap, scope: dict[str, tuple[str, ...] | None], k: int = 3) -> None: ...


CHANNELS = ("cli", "api", "page", "widget", "chat", "mcp", "slack", "discord")  # every channel the log knows
UNITS = ("day", "week")
WEEKS_AFTER_DAYS = 92  # a span longer than this is counted by week
MAX_DAYS = 3660  # the longest span asked for (ten years)
PAGES = 10  # the most cited pages shown
STALE_EXAMPLES = 5
GAPS = 10
GAP_QUESTIONS = 1000  # the newest unanswered questions grouped per span (this one and the one before)


@dataclass(frozen=True)
class Bucket:
    start: datetime
    counts: Counts  # the bucket's, every channel and source
    channels: dict[str, int]  # channel -> questions
    sources: dict[str, int]  # source asked over -> questions (insights_sql.EVERY_SOURCE: every source)


@dataclass
class InsightGap:
    gap: Gap  # counted over this span
    previous: int  # how many times it was asked in the span before, of equal length
    source: str | None  # the source its docs task belongs to
    task_url: str | None  # a prefilled issue on the source's repository; None when none is known

    @property
    def trend(self) -> str:
        """new, up, down or same: this span's count against the one before."""
        count, before = self.gap.count, self.previous
        if not before:
            return "new"
        return "up" if count > before else "down" if count < before else "same"


@dataclass
class Insights:
    span: Span
    unit: str  # "day" or "week"
    total: Counts
    buckets: list[Bucket]  # every bucket of the span, oldest first, empty ones included
    channels: list[str]  # with a question in the span, most asked first
    sources: list[str]
    cited_pages: list[CitedPage]
    stale: list[Example]  # the newest answers to ask again; total.stale counts them all
    gaps: list[InsightGap] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)  # asked in (not ''), most asked first


def span_of(
    since: str | None = "7d",
    until: str | None = None,
    *,
    source: str | None = None,
    channel: str | None = None,
    language: str | None = None,
    allowed: tuple[str, ...] | None = None,
    now: datetime | None = None,
) -> Span:
    """The span from what a user typed (as `pgcite log --since`), checked: one-line errors."""
    now = now or datetime.now(UTC)
    start = parse_since(since or "7d", now)
    end = parse_since(until, now) if until else now
    assert start is not None and end is not None
    if start >= end:
        raise PgciteError(f"since ({since}) must come before until ({until or 'now'})")
    if end - start > timedelta(days=MAX_DAYS):
        raise PgciteError(f"a span is at most {MAX_DAYS} days (since {since})")
    if channel is not None and channel not in CHANNELS:
        raise PgciteError(f"unknown channel {channel!r}; use one of {', '.join(CHANNELS)}")
    if source is not None and allowed is not None and source not in allowed:
        raise PgciteError(f"no source {source!r} within this key's sources", kind="not_found")
    return Span(start, end, source or None, channel, allowed, checked_tag(language) if language else None)


def unit_of(span: Span, unit: str | None = None) -> str:
    if unit is not None and unit not in UNITS:
        raise PgciteError(f"a bucket is a day or a week (got {unit!r})")
    return unit or ("week" if span.until - span.since > timedelta(days=WEEKS_AFTER_DAYS) else "day")


def _starts(span: Span, unit: str) -> list[datetime]:
    """Every bucket's start, as date_trunc(unit, t, 'UTC') gives it, from the span's first to its last."""
    first = span.since.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    step = timedelta(days=7 if unit == "week" else 1)
    if unit == "week":
        first -= timedelta(days=first.weekday())  # ISO weeks start on Monday
    starts = []
    while first < span.until:
        starts.append(first)
        first += step
    return starts


def _empty(start: datetime | None) -> Counts:
    return Counts(start, None, None, 0, 0, 0, 0, 0, 0, None, None)


def buckets_of(rows: list[Counts], span: Span, unit: str) -> tuple[Counts, list[Bucket], list[str], list[str]]:
    """The whole span's counts, every bucket (empty ones too), and the channels and sources seen."""
    total = next((r for r in rows if r.bucket is None), _empty(None))
    whole = {r.bucket: r for r in rows if r.bucket is not None and r.channel is None and r.source is None}
    by_channel: dict[datetime, dict[str, int]] = {}
    by_source: dict[datetime, dict[str, int]] = {}
    channels: dict[str, int] = {}
    sources: dict[str, int] = {}
    for r in rows:
        if r.bucket is not None and r.channel is not None:
            by_channel.setdefault(r.bucket, {})[r.channel] = r.questions
            channels[r.channel] = channels.get(r.channel, 0) + r.questions
        elif r.bucket is not None and r.source is not None:
            by_source.setdefault(r.bucket, {})[r.source] = r.questions
            sources[r.source] = sources.get(r.source, 0) + r.questions
    seen_channels = sorted(channels, key=lambda c: (-channels[c], c))
    seen_sources = sorted(sources, key=lambda s: (-sources[s], s))
    buckets = [
        Bucket(
            start,
            whole.get(start, _empty(start)),
            {c: by_channel.get(start, {}).get(c, 0) for c in seen_channels},
            {s: by_source.get(start, {}).get(s, 0) for s in seen_sources},
        )
        for start in _starts(span, unit)
    ]
    return total, buckets, seen_channels, seen_sources


def _task(gap: Gap, span: Span, repo: Repository) -> str:
    reasons = ", ".join(f"{n} {r}" for r, n in gap.reasons.items())
    lines = [
        f"Readers asked this {gap.count} times between {span.since:%Y-%m-%d} and {span.until:%Y-%m-%d}, "
        f"and the docs did not answer it ({reasons}).",
        "",
        "Asked as:",
        *(f"- {e}" for e in gap.examples),
        "",
        "The closest sections the docs have:",
        *(f"- [{h.breadcrumb}]({h.url})" if h.url else f"- {h.breadcrumb} (`{h.path}`)" for h in gap.closest),
        "",
        "Found by pgcite insights.",
    ]
    return repo.new_issue(f"Docs: {gap.examples[0]}", "\n".join(lines))


def compute(
    app: LogReader,
    span: Span,
    *,
    unit: str | None = None,
    gaps: int = GAPS,
    pages: int = PAGES,
    stale: int = STALE_EXAMPLES,
) -> Insights:
    """Every figure over `span` (see the module docstring); gaps=0 leaves the gaps out (they embed the
    questions, the one part that is not SQL alone)."""
    unit = unit_of(span, unit)
    with app.reader() as store:
        rows, languages = insights_sql.counts(store, span, unit)
        cited = insights_sql.cited_pages(store, span, pages)
        examples = insights_sql.stale_examples(store, span, stale)
    total, buckets, channels, sources = buckets_of(rows, span, unit)
    found = Insights(span, unit, total, buckets, channels, sources, cited, examples)
    found.languages = sorted((lang for lang in languages if lang), key=lambda lang: (-languages[lang], lang))
    if gaps:
        found.gaps = gaps_of(app, span, gaps)
    return found


def gaps_of(app: LogReader, span: Span, limit: int = GAPS) -> list[InsightGap]:
    """The gaps of `span`, largest first (the module docstring). The page asks for them apart from
    the figures: they embed the span's unanswered questions, which the SQL figures need not wait for."""
    length = span.until - span.since
    with app.reader() as store:
        infos = {s.name: s for s in store.list_sources()}

    def unanswered(since: datetime, until: datetime) -> list[LogEntry]:
        return app.log_entries(
            since=since,
            until=until,
            unanswered=True,
            source=span.source,
            channel=span.channel,
            language=span.language,
            allowed=span.allowed,
            limit=GAP_QUESTIONS,
        )

    now = unanswered(span.since, span.until)
    before = unanswered(span.since - length, span.since)
    scope = {e.id: e.scope for e in now}
    grouped = []
    for _, members in app.group_unanswered(now + before):
        this = [m for m in members if m.id in scope]
        if this:  # a need asked in this span; counted in the one before too
            grouped.append((gap_of(this), len(members) - len(this)))
    grouped.sort(key=lambda g: (g[0].count, g[0].last_asked), reverse=True)
    result = []
    for gap, previous in grouped[:limit]:
        app.add_closest(gap, scope)
        asked_over = scope[gap.ids[0]]
        source = (
            asked_over[0] if asked_over and len(asked_over) == 1 else gap.closest[0].source if gap.closest else None
        )
        info = infos.get(source) if source else None
        repo = repository(info.base_url, info.location, info.options) if info else None
        result.append(InsightGap(gap, previous, source, _task(gap, span, repo) if repo else None))
    return result
