"""The SQL of the server's ingest and sync jobs (table jobs, migration 17): every server on the
database queues, takes and reports jobs here, so a job outlives the server that accepted it.

A server takes a queued job with FOR UPDATE SKIP LOCKED and holds a lease it renews while the job
runs; a job whose lease ran out (its server died) is queued again, once, then failed with the reason.
One sync per source waits at a time: a sync asked for meanwhile is that one (a unique index). No
job of a source is taken while another of it runs, on any server: one stuck on a slow site holds
its own source's jobs back, and no server's workers."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import psycopg
from psycopg.rows import kwargs_row

MAX_ATTEMPTS = 2  # a job whose server died is run once more, then failed
# A job's error when its server stopped renewing its lease, by what happens next.
_STOPPED = {
    "upload": "the server running it stopped; upload it again",
    "again": "the server running it stopped; a new sync was queued",
    "past": "the server running it stopped after the crawl had run past its deadline: not queued again, so a site "
    "that hangs cannot hold sync after sync; the next push, schedule or POST /v1/sources/NAME/sync reads it",
}
UPLOAD_PART = 8 << 20  # bytes of an uploaded zip per row


@dataclass
class JobRow:
    id: str
    source: str
    location: str
    kind: str  # ingest (of an upload), sync (from the source's own location)
    trigger: str  # what asked for it: api, upload, github, gitlab, schedule
    requests: int  # the asks this one job answers
    state: str  # queued, running, done, failed
    files_read: int
    chunks_embedded: int
    chunks_reused: int
    summary: str
    error: str
    created_at: float  # epoch seconds
    finished_at: float | None
    base_url: str = ""


_COLUMNS = """id, source, location, kind, trigger, requests, state, files_read, chunks_embedded, chunks_reused,
    summary, error, extract(epoch FROM created_at)::float8 AS created_at,
    extract(epoch FROM finished_at)::float8 AS finished_at, base_url"""


def _row(**values) -> JobRow:
    return JobRow(**values)


def _one(conn: psycopg.Connection, query: str, args: dict) -> JobRow | None:
    with conn.cursor(row_factory=kwargs_row(_row)) as cursor:
        return cursor.execute(query, args).fetchone()


def add_ingest(conn: psycopg.Connection, job_id: str, source: str, base_url: str, parts: Iterable[bytes]) -> JobRow:
    """Queue an ingest of an uploaded zip, stored with it (any server may run it)."""
    with conn.transaction():
        job = _one(
            conn,
            f"""INSERT INTO jobs (id, source, location, kind, trigger, base_url)
                VALUES (%(id)s, %(source)s, 'upload', 'ingest', 'upload', %(base_url)s) RETURNING {_COLUMNS}""",
            {"id": job_id, "source": source, "base_url": base_url},
        )
        with conn.cursor() as cursor:
            for number, part in enumerate(parts):
                cursor.execute(
                    "INSERT INTO job_uploads (job_id, part, data) VALUES (%s, %s, %s)", (job_id, number, part)
                )
    assert job is not None
    return job


def add_sync(conn: psycopg.Connection, job_id: str, source: str, trigger: str, location: str, settle: float) -> JobRow:
    """Queue a sync `settle` seconds from now, or count this ask on the one already waiting."""
    job = _one(
        conn,
        f"""INSERT INTO jobs (id, source, location, kind, trigger, run_after)
            VALUES (%(id)s, %(source)s, %(location)s, 'sync', %(trigger)s, now() + make_interval(secs => %(settle)s))
            ON CONFLICT (source) WHERE kind = 'sync' AND state = 'queued'
            DO UPDATE SET requests = jobs.requests + 1
            RETURNING {_COLUMNS}""",
        {"id": job_id, "source": source, "location": location, "trigger": trigger, "settle": settle},
    )
    assert job is not None
    return job


def take(conn: psycopg.Connection, owner: str, lease: float, crawl_deadline: float) -> JobRow | None:
    """The oldest job due whose source has none running, now this owner's. First, the jobs whose
    server stopped renewing their lease: an upload runs again (once), a sync is failed and asked
    for anew (the new one, coalesced with any waiting, reads the source whole), unless it was a
    crawl that had run past its deadline (the source's own, else `crawl_deadline`): the site that
    held it would hold the next one as long, so it waits for the next push or schedule."""
    with conn.transaction():
        # One taker at a time across servers: each statement below then sees (READ COMMITTED) the
        # jobs every earlier taker started, so no two jobs of one source ever run at once.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('pgcite:jobs:take', 0))")
        conn.execute(
            """UPDATE jobs SET state = 'queued', owner = NULL
               WHERE state = 'running' AND lease_until < now() AND kind = 'ingest' AND attempts < %s""",
            (MAX_ATTEMPTS,),
        )
        # A crawl past its deadline: its server's last renewal (lease_until less a lease) came over
        # the deadline after it started.
        stopped = conn.execute(
            """UPDATE jobs SET state = 'failed', finished_at = now(), owner = NULL,
                   error = CASE WHEN jobs.kind = 'ingest' THEN %(upload)s WHEN stopped.past THEN %(past)s
                                ELSE %(again)s END
               FROM (SELECT j.id, coalesce(j.kind = 'sync' AND s.location ~* '^https?://'
                                           AND j.lease_until - j.started_at > make_interval(secs => %(lease)s
                                               + coalesce((s.options ->> 'crawl_deadline')::float8, %(deadline)s)),
                                           false) AS past
                     FROM jobs j LEFT JOIN sources s ON s.name = j.source
                     WHERE j.state = 'running' AND j.lease_until < now()) AS stopped
               WHERE jobs.id = stopped.id
               RETURNING jobs.source, jobs.location, jobs.trigger, jobs.kind = 'sync' AND NOT stopped.past""",
            {"deadline": crawl_deadline, "lease": lease, **_STOPPED},
        ).fetchall()
        for source, location, trigger, again in stopped:
            if again:
                add_sync(conn, uuid.uuid4().hex, source, trigger, location, 0)
        return _one(
            conn,
            f"""UPDATE jobs SET state = 'running', owner = %(owner)s, attempts = attempts + 1, started_at = now(),
                    lease_until = now() + make_interval(secs => %(lease)s)
                WHERE id = (SELECT id FROM jobs q WHERE state = 'queued' AND run_after <= now()
                            AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.source = q.source AND r.state = 'running')
                            ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1)
                RETURNING {_COLUMNS}""",
            {"owner": owner, "lease": lease},
        )


def renew(conn: psycopg.Connection, job: JobRow, owner: str, lease: float) -> None:
    """Extend the lease and record progress."""
    conn.execute(
        """UPDATE jobs SET lease_until = now() + make_interval(secs => %s), files_read = %s,
               chunks_embedded = %s, chunks_reused = %s
           WHERE id = %s AND owner = %s AND state = 'running'""",
        (lease, job.files_read, job.chunks_embedded, job.chunks_reused, job.id, owner),
    )


def finish(conn: psycopg.Connection, job: JobRow, owner: str) -> None:
    with conn.transaction():
        conn.execute(
            """UPDATE jobs SET state = %s, summary = %s, error = %s, files_read = %s, chunks_embedded = %s,
                   chunks_reused = %s, finished_at = now(), owner = NULL, lease_until = NULL
               WHERE id = %s AND owner = %s""",
            (
                job.state,
                job.summary,
                job.error,
                job.files_read,
                job.chunks_embedded,
                job.chunks_reused,
                job.id,
                owner,
            ),
        )
        conn.execute("DELETE FROM job_uploads WHERE job_id = %s", (job.id,))
        # Finished jobs are kept a week, for GET /v1/jobs/{id}.
        conn.execute("DELETE FROM jobs WHERE finished_at < now() - interval '7 days'")


def get(conn: psycopg.Connection, job_id: str) -> JobRow | None:
    return _one(conn, f"SELECT {_COLUMNS} FROM jobs WHERE id = %(id)s", {"id": job_id})


def upload(conn: psycopg.Connection, job_id: str) -> Iterator[bytes]:
    """The uploaded zip's parts, in order."""
    for (data,) in conn.execute("SELECT data FROM job_uploads WHERE job_id = %s ORDER BY part", (job_id,)):
        yield data
