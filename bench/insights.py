"""The insights at a million logged answers (issue 45): how long the figures of GET /v1/insights take
(learn/insights.py's SQL: buckets by channel and source, shares, latency percentiles, the most cited
pages, answers to ask again), against a plain COUNT(*) over the same span measured in the same run.
A benchmark, not a test.

1,000,000 synthetic answer_log rows are written with COPY into a fresh embedded database: 90 days,
busier on weekdays; channels page, widget, api, chat, mcp (a third of them searches), cli, slack;
three sources and questions over every source; 12% refused, 8% rated (a third down), 3% stale;
latency log-normal (searches faster); five sections a row, one to three cited. Then VACUUM ANALYZE
(as autovacuum would after such a load).

Measured, median of ROUNDS after one warm-up: the figures over the last 7, 30 and 90 days (every
source, and one source), and the COUNT(*) baseline; then the 30-day figures again with the plain
asked_at index migration 22 replaced (its EXPLAIN's top lines for each); then the 7 days' gaps,
the first time and again.

Usage: .venv/bin/python bench/insights.py [ROWS]
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scratch import scratch_settings

from pgcite.core import Pgcite
from pgcite.learn.insights import span_of
from pgcite.store import Store, insights_sql, log_rows

ROWS = 1_000_000
DAYS = 90
ROUNDS = 5
CHANNELS = {"page": 35, "widget": 20, "api": 15, "chat": 10, "mcp": 10, "cli": 5, "slack": 5}
SOURCES = {("handbook",): 45, ("api-docs",): 30, ("widgets",): 15, None: 10}
PAGES = {s[0]: [f"{part}/page-{i:03}.md" for part in ("guide", "reference", "howto") for i in range(60)]
         for s in SOURCES if s}
TOPICS = [f"{verb} {thing}" for verb in ("How do I configure", "Can I use", "Why does", "What is the limit of",
                                         "How do I migrate", "Is there a way to disable")
          for thing in ("SSO", "the rate limiter", "webhooks", "the CLI on Windows", "Helm charts", "backups",
                        "custom domains", "the audit log", "API keys", "pagination", "the EU region", "Terraform")]
COLUMNS = ("id", "asked_at", "channel", "key_name", "scope", "question", "source", "path", "version", "retrieved",
           "answer", "refused", "checks", "generator", "note", "latency_ms", "rating", "comment", "rated_at",
           "stale_at", "cited_pages", "cited_counts")


def weighted(rng: random.Random, table: dict):
    return rng.choices(list(table), weights=list(table.values()))[0]


def sections(rng: random.Random, source: str, cited: int) -> str:
    rows = []
    for n in range(5):
        path = rng.choice(PAGES[source])
        rows.append({"number": n + 1, "cited": n < cited, "id": f"{source}:{path}#{n}", "source": source,
                     "path": path, "heading": f"Section {n}", "breadcrumb": f"Guide > Page > Section {n}",
                     "url": f"https://docs.example.com/{source}/{path[:-3]}#section-{n}",
                     "content_md5": uuid.uuid4().hex, "score": round(rng.uniform(0.3, 0.9), 4), "reason": ""})
    return json.dumps(rows)


def generate(store: Store, rows: int, now: datetime) -> float:
    rng = random.Random(45)
    started = time.perf_counter()
    pools = {s: [sections(rng, s, c) for c in (1, 2, 3) for _ in range(200)] for s in PAGES}
    pages = {r: log_rows.cited_pages(json.loads(r)) for pool in pools.values() for r in pool}  # as the log writes them
    pages["[]"] = ([], [])
    answer = "The rate limiter allows 100 requests a minute per key [1]. Raise it in the settings [2]. " * 4
    with store.conn.cursor() as cur, cur.copy(f"COPY answer_log ({', '.join(COLUMNS)}) FROM STDIN") as copy:
        for _ in range(rows):
            day = rng.random() ** 1.15 * DAYS  # a little busier lately
            asked = now - timedelta(days=day)
            if asked.weekday() >= 5 and rng.random() < 0.5:  # quieter weekends
                asked -= timedelta(days=2)
            channel = weighted(rng, CHANNELS)
            scope = weighted(rng, SOURCES)
            source = scope[0] if scope else rng.choice(list(PAGES))
            search = channel == "mcp" and rng.random() < 0.35
            refused = not search and rng.random() < 0.12
            rated = not search and rng.random() < 0.08
            rating = ("down" if rng.random() < 0.33 else "up") if rated else None
            latency = int(rng.lognormvariate(4.0 if search else 6.7, 0.5))
            retrieved = "[]" if refused else rng.choice(pools[source])
            copy.write_row((
                uuid.UUID(int=rng.getrandbits(128), version=4), asked, channel, f"key-{rng.randrange(20)}",
                list(scope) if scope else None, f"{rng.choice(TOPICS)} ({rng.randrange(400)})?", None, None, None,
                retrieved, "" if refused or search else answer, refused,
                '{"unsupported": []}', "search" if search else "extractive", "", latency, rating,
                None, asked if rated else None,
                asked + timedelta(days=1) if not refused and not search and rng.random() < 0.03 else None,
                *pages[retrieved]))
    return time.perf_counter() - started


def median_seconds(run, rounds: int = ROUNDS) -> float:
    run()  # warm-up
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def explain(store: Store, span) -> str:
    from pgcite.store.insights_sql import _FINE  # the counts' query

    plan = store.conn.execute(b"EXPLAIN (ANALYZE, BUFFERS) " + _FINE.as_bytes(store.conn), span.params(unit="day"))
    lines = [r[0] for r in plan.fetchall()]
    scan = next(line.strip() for line in lines if "Scan" in line)
    buffers = next((line.strip() for line in lines if "Buffers" in line), "")
    return f"{scan}\n      {buffers}\n      {lines[-1].strip()}"


def main() -> int:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    now = datetime.now(UTC)
    with scratch_settings("pgcite-insights-") as settings:
        with Store.open(settings) as store:
            seconds = generate(store, rows, now)
            store.conn.execute("VACUUM ANALYZE answer_log")
            size = store.conn.execute("SELECT pg_size_pretty(pg_total_relation_size('answer_log'))").fetchone()
        print(f"{rows:,} logged answers over {DAYS} days written in {seconds:.0f} s ({size[0] if size else '?'})")
        results = []
        with Pgcite(settings) as app:
            for since, source in (("7d", None), ("30d", None), ("90d", None), ("30d", "handbook")):
                span = span_of(since, source=source, now=datetime.now(UTC))
                figures = median_seconds(lambda span=span: app.insights(span, gaps=0))

                def baseline(span=span) -> None:
                    with app.reader() as store:
                        store.conn.execute(
                            "SELECT count(*) FROM answer_log WHERE asked_at >= %s AND asked_at < %s "
                            "AND (%s::text IS NULL OR %s = ANY(scope))",
                            (span.since, span.until, span.source, span.source)).fetchone()

                plain = median_seconds(baseline)
                total = app.insights(span, gaps=0).total.questions
                results.append((since, source or "every source", total, figures, plain))
            print(f"\nThe insights' figures (GET /v1/insights?gaps=0), median of {ROUNDS}, against COUNT(*) "
                  "over the same span in this run:\n")
            print("| span | source | answers in it | figures | COUNT(*) | ratio |\n|---|---|---|---|---|---|")
            for since, source, total, figures, plain in results:
                print(f"| {since} | {source} | {total:,} | {figures:.3f} s | {plain:.3f} s | {figures / plain:.1f} |")

            span = span_of("30d", now=datetime.now(UTC))
            with app.reader() as store:
                covering = explain(store, span)
                parts = {name: median_seconds(lambda run=run, store=store: run(store, span)) for name, run in (
                    ("buckets, shares, latency", lambda store, span: insights_sql.counts(store, span, "day")),
                    ("most cited pages", lambda store, span: insights_sql.cited_pages(store, span, 10)),
                    ("ask again", lambda store, span: insights_sql.stale_examples(store, span, 5)))}
            print("\n30 days' figures, each query alone: "
                  + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in parts.items()))
            with Store.open(settings) as store:  # as before migration 22
                store.conn.execute("DROP INDEX answer_log_span_idx")
                store.conn.execute("CREATE INDEX answer_log_asked_at_idx ON answer_log (asked_at)")
                store.conn.execute("ANALYZE answer_log")
            before = median_seconds(lambda: app.insights(span, gaps=0))
            with app.reader() as store:
                plain_plan = explain(store, span)
            print(f"\n30 days' figures with the plain asked_at index (before migration 22): {before:.3f} s, "
                  f"with migration 22's covering index: {results[1][3]:.3f} s")
            print(f"  covering index: {covering}\n  plain index:    {plain_plan}")

            # The page's second request (GET /v1/insights/gaps): the newest unanswered questions of
            # 7 days and the 7 before, embedded by the bundled model and grouped, each gap's closest
            # sections searched; the first time, and again (the server's embedder keeps the wordings'
            # vectors: embedding/serialised.py).
            # The closest sections need docs: pgcite's own, as the busiest source.
            app.ingest(str(Path(__file__).resolve().parents[1] / "docs"), source="handbook")
            span = span_of("7d", now=datetime.now(UTC))
            started = time.perf_counter()
            found = app.insight_gaps(span, 10)
            first = time.perf_counter() - started
            again = median_seconds(lambda: app.insight_gaps(span, 10))
            print(f"\nThe 7 days' gaps (GET /v1/insights/gaps, {len(found)} gaps): {first:.2f} s the first time, "
                  f"{again:.2f} s again (median of {ROUNDS})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
