"""The answer log's operations on the application object: reading, rating and confirming logged
answers, and grouping the unanswered ones into what the docs are missing."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from pgcite.config import Settings
from pgcite.embedding.models import Embedder
from pgcite.errors import PgciteError
from pgcite.learn.log import AnswerLog
from pgcite.safety import check_text
from pgcite.store import Store, log_rows
from pgcite.store.log_rows import LogEntry, SectionNow
from pgcite.vocabulary import SearchFilter, SearchHit, wording_key

if TYPE_CHECKING:
    from pgcite.learn.gaps import Asked, Gap
    from pgcite.learn.insights import InsightGap, Insights
    from pgcite.store.insights_sql import Span


@dataclass(frozen=True)
class Reopened:
    """A logged answer opened again: what it retrieved (log order), each as the docs have it now."""

    entry: LogEntry
    now: list[SectionNow]

    @property
    def stale(self) -> bool:
        """A section it cited has changed or gone (now, or when an ingest marked it)."""
        pairs = zip(self.entry.retrieved, self.now, strict=True)
        gone = any(s["cited"] and n.state in ("changed", "removed") for s, n in pairs)
        return self.entry.stale_at is not None or gone


class LogOps:
    """Mixed into core.Pgcite, which provides the parts declared here."""

    settings: Settings
    answer_log: AnswerLog | None

    if TYPE_CHECKING:

        @property
        def embedder(self) -> Embedder: ...

        def reader(self) -> AbstractContextManager[Store]: ...

        def writer(self) -> AbstractContextManager[Store]: ...

        def search(self, question: str, *, k: int = 5, filters: SearchFilter = SearchFilter()) -> list[SearchHit]: ...

    def log_entries(
        self,
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
        """Logged answers, newest first."""
        self._flush_log()
        with self.reader() as store:
            return log_rows.entries(
                store,
                since=since,
                refused=refused,
                unanswered=unanswered,
                stale=stale,
                source=source,
                allowed=allowed,
                limit=limit,
                until=until,
                channel=channel,
                language=language,
            )

    def reopen(self, answer_id: str, allowed: Sequence[str] | None = None) -> Reopened:
        """A logged answer by its full id (a link to it, so never a prefix that could be guessed),
        with its sections as they read now."""
        try:
            full = str(uuid.UUID(answer_id.strip()))
        except ValueError:
            raise PgciteError(f"{answer_id[:80]!r} is not an answer id", kind="not_found") from None
        self._flush_log()
        with self.reader() as store:
            entry = log_rows.one(store, full, allowed)
            if entry is None:
                days = self.settings.answer_log_days
                kept = f"; answers are kept {days} days" if days > 0 else ""
                raise PgciteError(f"no logged answer {full}{kept}", kind="not_found")
            return Reopened(entry, log_rows.sections_now(store, entry.retrieved))

    def rate(
        self, answer_id: str, rating: str, comment: str | None = None, allowed: Sequence[str] | None = None
    ) -> str:
        """Record thumbs up or down (and a comment) on a logged answer; returns its full id."""
        if rating not in log_rows.RATINGS:
            raise PgciteError(f"a rating is up or down (got {rating!r})")
        try:
            check_text(comment or "")
        except ValueError as exc:
            raise PgciteError(f"the comment: {exc}") from None
        self._flush_log()
        with self.writer() as store:
            full = log_rows.resolve(store, answer_id, allowed)
            log_rows.rate(store, full, rating, comment, allowed)
        return full

    def confirm_refusal(self, answer_id: str, allowed: Sequence[str] | None = None) -> str:
        """Mark a logged refusal as right (the docs do not say): it exports as an unanswerable question."""
        self._flush_log()
        with self.writer() as store:
            full = log_rows.resolve(store, answer_id, allowed)
            if not log_rows.confirm(store, full, allowed):
                raise PgciteError(f"answer {full} was not a refusal; only refusals are confirmed", kind="conflict")
        return full

    def prune_log(self) -> int:
        """Delete the rows past the retention (answer_log_days); the log's writer also does it hourly."""
        with self.writer() as store:
            return log_rows.prune(store, self.settings.answer_log_days)

    def gaps(
        self,
        *,
        since: datetime | None = None,
        allowed: Sequence[str] | None = None,
        limit: int = 50,
        closest: int = 3,
    ) -> list[Gap]:
        """What the docs are missing: the unanswered questions, grouped by need (gaps.py), each with
        the sections the docs do have that come closest."""
        from pgcite.learn.gaps import MAX_QUESTIONS

        rows = self.log_entries(since=since, unanswered=True, allowed=allowed, limit=MAX_QUESTIONS)
        groups = [gap for gap, _ in self.group_unanswered(rows)][:limit]
        scope = {e.id: e.scope for e in rows}
        for gap in groups:
            self.add_closest(gap, scope, closest)
        return groups

    def group_unanswered(self, rows: Sequence[LogEntry]) -> list[tuple[Gap, list[Asked]]]:
        """Unanswered logged questions grouped by need (gaps.py), most asked first, each with its questions."""
        from pgcite.learn.gaps import Asked, group_questions

        asked = [
            Asked(
                e.id,
                e.question,
                e.asked_at,
                "refused" if e.refused else "down" if e.rating == "down" else "unsupported",
                stale=e.stale_at is not None,
            )
            for e in rows
        ]
        # Each wording embedded once: the grouping keeps one vector per wording (gaps.group_questions).
        wordings = list({wording_key(a.question): a.question for a in asked}.items())
        row = {key: i for i, (key, _) in enumerate(wordings)}
        vectors = (
            self.embedder.embed_documents([q for _, q in wordings])[[row[wording_key(a.question)] for a in asked]]
            if asked
            else np.zeros((0, 1), dtype=np.float32)
        )
        by_id = {a.id: a for a in asked}
        return [(gap, [by_id[i] for i in gap.ids]) for gap in group_questions(asked, vectors)]

    def add_closest(self, gap: Gap, scope: dict[str, tuple[str, ...] | None], k: int = 3) -> None:
        """The sections the docs have that come closest to a gap, searched within the sources its
        newest asking could read (scope: each row's, by id)."""
        gap.closest = self.search(
            gap.examples[0], k=k, filters=SearchFilter(exclude_flagged=True, allowed_sources=scope[gap.ids[0]])
        )

    def insights(self, span: Span, **options: int | str | None) -> Insights:
        """Every figure of the insights over a span (insights.py): counts per bucket, shares, latency,
        the most cited pages, answers to ask again and the gaps."""
        from pgcite.learn.insights import compute

        self._flush_log()
        return compute(self, span, **options)  # type: ignore[arg-type]

    def insight_gaps(self, span: Span, limit: int) -> list[InsightGap]:
        """The gaps of the insights alone (insights.gaps_of)."""
        from pgcite.learn.insights import gaps_of

        self._flush_log()
        return gaps_of(self, span, limit)  # type: ignore[arg-type]

    def _flush_log(self) -> None:
        if self.answer_log is not None:
            self.answer_log.flush()
