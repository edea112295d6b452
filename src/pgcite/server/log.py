"""The answer log over HTTP: feedback on an answer (any reader of it), and the log, confirmed
refusals, the gaps report and the insights (an admin key; a scoped one sees only the questions
asked within its sources)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from fastapi import Depends, FastAPI, Query
from pydantic import BaseModel, ConfigDict, Field

from pgcite import shapes
from pgcite.access import Caller
from pgcite.core import Pgcite
from pgcite.learn.insights import GAPS, span_of
from pgcite.learn.log import parse_since
from pgcite.store.insights_sql import Span

MAX_COMMENT_CHARS = 2000


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rating: Literal["up", "down"]
    comment: str | None = Field(default=None, max_length=MAX_COMMENT_CHARS)


def add_log_routes(
    app: FastAPI, core: Pgcite, read_access: Callable[..., Caller], write_access: Callable[..., Caller]
) -> None:
    @app.get("/v1/answers/{answer_id}")
    def reopen(answer_id: str, caller: Caller = Depends(read_access)) -> dict:
        """A logged answer by its full id, as `/v1/ask` gave it, each section as the docs read now
        (`now`), and `stale` when a section it cited has changed since."""
        return shapes.reopened(core.reopen(answer_id, allowed=caller.sources))

    @app.post("/v1/answers/{answer_id}/feedback")
    def feedback(answer_id: str, body: FeedbackRequest, caller: Caller = Depends(read_access)) -> dict:
        """Thumbs up or down, with an optional comment, on a logged answer (its `id`)."""
        full = core.rate(answer_id, body.rating, body.comment, allowed=caller.sources)
        return {"feedback": {"id": full, "rating": body.rating, "comment": body.comment}}

    @app.post("/v1/answers/{answer_id}/confirm")
    def confirm(answer_id: str, caller: Caller = Depends(write_access)) -> dict:
        """Confirm a refusal: the docs do not say. `pgcite log export --eval` makes it an unanswerable row."""
        return {"confirmed": core.confirm_refusal(answer_id, allowed=caller.sources)}

    @app.get("/v1/log")
    def answer_log(
        since: str | None = Query(None, description="7d, 12h, 30m, 2w, or an ISO date"),
        refused: bool = False,
        stale: bool = Query(False, description="only answers that cited a section that has changed since"),
        source: str | None = None,
        limit: int = Query(100, ge=1, le=1000),
        caller: Caller = Depends(write_access),
    ) -> dict:
        """The `pgcite log --json` object: logged answers, newest first."""
        rows = core.log_entries(
            since=parse_since(since),
            refused=refused,
            stale=stale,
            source=source,
            allowed=caller.sources,
            limit=limit,
        )
        return {"answers": [shapes.log_entry(e) for e in rows]}

    @app.get("/v1/gaps")
    def gaps(
        since: str = Query("30d", description="7d, 12h, 30m, 2w, or an ISO date"),
        limit: int = Query(50, ge=1, le=500),
        caller: Caller = Depends(write_access),
    ) -> dict:
        """The `pgcite gaps --json` object: what the docs are missing, most asked first."""
        return shapes.gaps(core.gaps(since=parse_since(since), allowed=caller.sources, limit=limit))

    def insight_span(
        since: str = Query("7d", max_length=40, description="7d, 12h, 30m, 2w, or an ISO date"),
        until: str | None = Query(None, max_length=40, description="the span's end, as since; default: now"),
        source: str | None = Query(None, max_length=200, description="only questions asked of this source"),
        channel: str | None = Query(None, max_length=40, description="cli, api, page, widget, chat, mcp..."),
        language: str | None = Query(None, max_length=40, description="only questions answered in it: en, pt-br..."),
        caller: Caller = Depends(write_access),
    ) -> Span:
        """The insights' filters, the same on both of their routes, within the caller's sources."""
        core.require_source(source, caller.sources)
        return span_of(since, until, source=source, channel=channel, language=language, allowed=caller.sources)

    @app.get("/v1/insights")
    def insights(
        span: Span = Depends(insight_span),
        unit: Literal["day", "week"] | None = Query(None, description="a bucket's length; default: by the span"),
        gaps: int = Query(GAPS, ge=0, le=50, description="at most this many gaps; 0: none (the figures alone)"),
    ) -> dict:
        """The `pgcite insights --json` object: questions per bucket by channel and source, the shares
        refused and marked down, latency, the most cited pages, answers to ask again and the gaps."""
        return shapes.insights(core.insights(span, unit=unit, gaps=gaps))

    @app.get("/v1/insights/gaps")
    def insight_gaps(span: Span = Depends(insight_span), limit: int = Query(GAPS, ge=1, le=50)) -> dict:
        """The gaps of /v1/insights alone: the page draws the figures first, then asks for these (they
        embed the span's unanswered questions)."""
        return shapes.insight_gaps(core.insight_gaps(span, limit))
