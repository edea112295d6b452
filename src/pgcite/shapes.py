"""The JSON shapes of a hit, a search, an answer, a source, the status, an ingest report, a logged answer,
the gaps report and the insights: one definition for `--json`, the
HTTP API and the chat endpoint's `pgcite` object. Documented in docs/commands.md; fields are only
ever added."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pgcite.answer.flow import Answer
from pgcite.store import SourceInfo
from pgcite.store.keys import ApiKey
from pgcite.vocabulary import Dropped, Passage, SearchHit

if TYPE_CHECKING:
    from pgcite.ingest.report import IngestReport
    from pgcite.learn.gaps import Gap
    from pgcite.learn.insights import InsightGap, Insights
    from pgcite.learn.ops import Reopened
    from pgcite.store.insights_sql import Counts
    from pgcite.store.log_rows import LogEntry
    from pgcite.store.status import Status


def hit(h: SearchHit) -> dict:
    return dict(dataclasses.asdict(h), flags=list(h.flags), score=round(h.score, 6))


def search(question: str, hits: list[SearchHit]) -> dict:
    return {"query": question, "results": [hit(h) for h in hits]}


def passage(p: Passage) -> dict:
    return dict(number=p.number, **hit(p.hit))


def dropped(d: Dropped) -> dict:
    return dict(hit(d.hit), reason=d.reason)


def answer(a: Answer) -> dict:
    return {
        "id": a.id,
        "question": a.question,
        "answer": a.text,
        "refused": a.refused,
        "generator": a.generator,
        "citations": a.citations,
        "sources": [passage(p) for p in a.sources],
        "dropped": [dropped(d) for d in a.dropped],
        "checks": a.checks.as_json(),
        "usage": dataclasses.asdict(a.usage),
        "note": a.note,
    }


def status(st: Status, answer_log: bool) -> dict:
    return dict(
        dataclasses.asdict(st),
        model=({"name": st.model[0], "dimension": st.model[1]} if st.model else None),
        sources=[source(s) for s in st.sources],
        answer_log=answer_log,
    )


# What only an admin sees of a source: where it lives on the server and how it is read.
_ADMIN_ONLY = ("location", "options", "last_sync")


def source(s: SourceInfo, *, admin: bool = True) -> dict:
    """A source; for a reader (admin False) without this server's paths and ingest options."""
    shown = dict(dataclasses.asdict(s), versions=list(s.versions))
    return shown if admin else {k: v for k, v in shown.items() if k not in _ADMIN_ONLY}


def key(k: ApiKey) -> dict:
    return dict(
        dataclasses.asdict(k),
        sources=list(k.sources) if k.sources is not None else None,
        origins=list(k.origins) if k.origins is not None else None,
    )


def ingest_report(r: IngestReport) -> dict:
    fields = dataclasses.asdict(r)
    del fields["scanned"]  # progress while it runs; files_read is the count at the end
    return dict(
        fields,
        versions=list(r.versions),
        files_read=r.files_read,
        seconds=round(r.seconds, 3),
        calibration=r.calibration.to_json() if r.calibration else None,
    )


def log_entry(e: LogEntry) -> dict:
    return dict(
        dataclasses.asdict(e),
        asked_at=e.asked_at.isoformat(),
        rated_at=e.rated_at.isoformat() if e.rated_at else None,
        stale_at=e.stale_at.isoformat() if e.stale_at else None,
        scope=list(e.scope) if e.scope is not None else None,
    )


def reopened(r: Reopened) -> dict:
    """A logged answer in the shape of `answer`, its sections as they read now: each has `now` ("same",
    "changed", "removed" or "unknown"), and `stale` says a cited one changed. Who asked is left out."""
    e = r.entry
    sections = [
        dict(
            {k: s.get(k) for k in ("number", "id", "source", "path", "heading", "breadcrumb", "url", "score")},
            title=n.title,
            content=n.content,
            url=n.url or s.get("url"),
            flags=list(n.flags),
            now=n.state,
            **({"reason": s.get("reason", "")} if s.get("number") is None else {}),
        )
        for s, n in zip(e.retrieved, r.now, strict=True)
    ]
    return {
        "id": e.id,
        "question": e.question,
        "source": e.source,  # the source it was asked of, if one
        "answer": e.answer,
        "refused": e.refused,
        "generator": e.generator,
        "citations": sorted(s["number"] for s in e.retrieved if s.get("cited")),
        "sources": [s for s in sections if s["number"] is not None],
        "dropped": [s for s in sections if s["number"] is None],
        "checks": e.checks,
        "note": e.note,
        "asked_at": e.asked_at.isoformat(),
        "stale": r.stale,
        "stale_at": e.stale_at.isoformat() if e.stale_at else None,
    }


def _gap(g: Gap) -> dict:
    return {
        "count": g.count,
        "last_asked": g.last_asked.isoformat(),
        "examples": g.examples,
        "reasons": g.reasons,
        "ids": g.ids,
        "stale": g.stale,
        "closest": [hit(h) for h in g.closest],
    }


def gaps(groups: list[Gap]) -> dict:
    return {"gaps": [_gap(g) for g in groups]}


def _counts(c: Counts) -> dict:
    def share(part: int) -> float | None:
        return round(part / c.answers, 4) if c.answers else None

    def ms(value: float | None) -> float | None:
        return round(value, 1) if value is not None else None

    return {
        "questions": c.questions,  # searches included
        "answers": c.answers,  # answered or refused
        "refused": c.refused,
        "refused_share": share(c.refused),
        "rated": c.rated,
        "down": c.down,
        "down_share": share(c.down),
        "stale": c.stale,
        "latency_ms": {"p50": ms(c.latency_p50), "p95": ms(c.latency_p95)},
    }


def insights(i: Insights) -> dict:
    """Every figure of the insights, shaped for charts: `buckets` oldest first (empty ones included),
    each with the counts of the span's `channels` and `sources` in the same order; `languages`: the
    languages asked in over the span, most asked first."""
    span = i.span
    return {
        "span": {
            "since": span.since.isoformat(),
            "until": span.until.isoformat(),
            "unit": i.unit,
            "source": span.source,
            "channel": span.channel,
            "language": span.language,
        },
        "total": _counts(i.total),
        "channels": i.channels,
        "sources": i.sources,
        "languages": i.languages,
        "buckets": [
            {"start": b.start.isoformat(), **_counts(b.counts), "channels": b.channels, "sources": b.sources}
            for b in i.buckets
        ],
        "cited_pages": [dataclasses.asdict(p) for p in i.cited_pages],
        "ask_again": {
            "count": i.total.stale,
            "examples": [
                dict(
                    dataclasses.asdict(e),
                    asked_at=e.asked_at.isoformat(),
                    stale_at=e.stale_at.isoformat() if e.stale_at else None,
                )
                for e in i.stale
            ],
        },
        "gaps": insight_gaps(i.gaps)["gaps"],
    }


def insight_gaps(found: list[InsightGap]) -> dict:
    """The insights' gaps (GET /v1/insights/gaps): a gap, its count the span before, trend and docs task."""
    return {
        "gaps": [
            dict(_gap(g.gap), previous=g.previous, trend=g.trend, source=g.source, task_url=g.task_url) for g in found
        ]
    }
