"""Ingest and sync jobs of the server: run one at a time in a worker thread, on an embedder of their
own, so searches and answers keep the warm model and are never queued behind an ingest.

A sync asked for while one of the same source waits to start is that one: a burst of pushes makes
one sync, and one asked for during a sync runs once after it. A scheduler thread asks for the
syncs of the sources whose interval has passed (store/sync_rows.py)."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pgcite.core import Pgcite
from pgcite.embedding.models import Embedder, make_embedder
from pgcite.errors import PgciteError, first_line
from pgcite.ingest.report import IngestReport, Progress
from pgcite.store import sync_rows
from pgcite.store.health import DatabaseDown

log = logging.getLogger("pgcite.server.jobs")

KEEP_FINISHED = 100  # finished jobs remembered, newest first
SCHEDULE_TICK = 1.0  # seconds between looks for sources due a scheduled sync
# Seconds a sync waits before it starts, taking in the asks that come meanwhile: the webhooks of a
# burst of pushes (a merge train, a push of several branches) make one sync.
SYNC_SETTLE = 2.0


@dataclass
class Job:
    id: str
    source: str
    location: str
    kind: str = "ingest"  # ingest (of an upload), sync (from the source's own location)
    trigger: str = ""  # what asked for it: api, github, gitlab, schedule
    requests: int = 1  # the asks this one job answers
    state: str = "queued"  # queued, running, done, failed
    files_read: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    summary: str = ""
    error: str = ""
    created_at: float = field(default_factory=time.time)
    finished_at: float | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def receipt(self) -> dict:
        """What a git host's webhook is answered with: no path of this server's."""
        return {"id": self.id, "source": self.source, "kind": self.kind, "trigger": self.trigger, "state": self.state}


class Jobs:
    def __init__(self, core: Pgcite) -> None:
        self._core = core
        self._jobs: dict[str, Job] = {}
        self._waiting: dict[str, Job] = {}  # source -> its sync not yet started
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pgcite-ingest")
        self._embedder: Embedder | None = None
        self._closing = threading.Event()
        threading.Thread(target=self._schedule, name="pgcite-schedule", daemon=True).start()

    def ingest(self, source: str, upload: Path, *, base_url: str = "") -> Job:
        """Queue an ingest of the zip in the temporary folder `upload` as `source`; the folder is
        deleted when the job ends."""
        job = Job(uuid.uuid4().hex, source, "upload")
        with self._lock:
            self._remember(job)
        self._worker.submit(
            self._run,
            job,
            lambda progress: self._core.ingest(
                str(upload / "upload.zip"),
                source=source,
                base_url=base_url,
                embedder=self._embedder,
                progress=progress,
                trigger="upload",
                uploaded=True,
            ),
            upload,
        )
        return job

    def sync(self, source: str, trigger: str, location: str = "") -> Job:
        """Queue a sync of `source` (Pgcite.sync), or return the one already waiting to start."""
        with self._lock:
            if (waiting := self._waiting.get(source)) is not None:
                waiting.requests += 1
                return waiting
            job = self._waiting[source] = Job(uuid.uuid4().hex, source, location, kind="sync", trigger=trigger)
            self._remember(job)
        self._worker.submit(
            self._run,
            job,
            lambda progress: self._core.sync(source, trigger=trigger, embedder=self._embedder, progress=progress),
        )
        return job

    def _remember(self, job: Job) -> None:  # with the lock held
        self._jobs[job.id] = job
        finished = [j for j in self._jobs.values() if j.finished_at is not None]
        for old in sorted(finished, key=lambda j: j.finished_at or 0)[:-KEEP_FINISHED]:
            del self._jobs[old.id]

    def get(self, job_id: str) -> Job:
        with self._lock:
            if job_id not in self._jobs:
                raise PgciteError(
                    f"no job {job_id!r} (finished jobs are kept until the server restarts)", kind="not_found"
                )
            return self._jobs[job_id]

    def close(self) -> None:
        self._closing.set()
        self._worker.shutdown(wait=True, cancel_futures=True)

    def _schedule(self) -> None:
        while not self._closing.wait(SCHEDULE_TICK):
            try:
                with self._core.reader() as store:
                    due = sync_rows.due(store)
            except DatabaseDown:  # the outage is logged once (store/health.py); the next tick tries again
                continue
            except (PgciteError, psycopg.Error) as exc:
                log.warning("could not look for scheduled syncs: %s", first_line(exc))
                continue
            with self._lock:
                busy = {j.source for j in self._jobs.values() if j.finished_at is None}
            for source in due:
                if source not in busy:  # due until its running sync records itself
                    self.sync(source, "schedule")

    def _run(self, job: Job, work: Callable[[Progress], IngestReport], upload: Path | None = None) -> None:
        if job.kind == "sync":
            self._closing.wait(max(0.0, job.created_at + SYNC_SETTLE - time.time()))
        with self._lock:
            if self._waiting.get(job.source) is job:  # a sync asked for from now on runs after this one
                del self._waiting[job.source]
        job.state = "running"

        def progress(path: str, report: IngestReport) -> None:
            job.files_read, job.chunks_embedded, job.chunks_reused = (
                report.files_read,
                report.chunks_embedded,
                report.chunks_reused,
            )

        what = f"id={job.id} kind={job.kind} source={job.source!r} trigger={job.trigger or 'api'}"
        log.info("job started: %s", what)
        try:
            if self._embedder is None:
                self._embedder = make_embedder(self._core.settings)
            report = work(progress)
            progress("", report)
            job.summary, job.state = report.summary(), "done"
        except PgciteError as exc:
            job.error, job.state = str(exc), "failed"
        except Exception as exc:  # a job never takes the server down; the state says what happened
            job.error, job.state = f"internal error ({exc.__class__.__name__}: {exc})", "failed"
            log.exception("job %s: internal error", job.id)
        finally:
            job.finished_at = time.time()
            seconds = job.finished_at - job.created_at
            if job.state == "done":
                log.info("job done: %s seconds=%.1f summary=%r", what, seconds, job.summary)
            else:
                log.warning("job failed: %s seconds=%.1f error=%r", what, seconds, job.error)
            if upload is not None:
                shutil.rmtree(upload, ignore_errors=True)
