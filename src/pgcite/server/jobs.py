"""Ingest and sync jobs of the server, kept in PostgreSQL (store/jobs_sql.py) so that every server on
the database shares them: a job accepted by one is run by whichever takes it first, a few at once per
server (`job_workers` threads), on an embedder of their own (searches keep the warm model). No two
jobs of one source run at once on any server, so a sync stuck on a slow site holds one worker and
its own source's jobs, never another source's. A job outlives a server that dies: its lease runs out
and another server takes it over; a server that stops hands its running jobs over at once.

A sync asked for while one of the same source waits to start is that one: a burst of pushes makes
one sync, and one asked for during a sync runs once after it. A scheduler thread asks for the
syncs of the sources whose interval has passed (store/sync_rows.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import psycopg

from pgcite.core import Pgcite
from pgcite.embedding.models import Embedder, make_embedder
from pgcite.errors import PgciteError, first_line
from pgcite.ingest.report import IngestInterrupted, IngestReport
from pgcite.store import Store, jobs_sql, sync_rows
from pgcite.store.health import DatabaseDown
from pgcite.store.jobs_sql import JobRow

log = logging.getLogger("pgcite.server.jobs")

SCHEDULE_TICK = 1.0  # seconds between looks for sources due a scheduled sync
POLL = 0.5  # seconds between looks for a job to take, when there was none
# Seconds a sync waits before it starts, taking in the asks that come meanwhile: the webhooks of a
# burst of pushes (a merge train, a push of several branches) make one sync.
SYNC_SETTLE = 2.0
_FOLDER = "pgcite-job-"  # temporary folders: pgcite-job-<pid>-..., removed when their process is gone


def to_json(job: JobRow) -> dict:
    shown = dataclasses.asdict(job)
    del shown["base_url"]
    return shown


def receipt(job: JobRow) -> dict:
    """What a git host's webhook is answered with: no path of this server's."""
    return {"id": job.id, "source": job.source, "kind": job.kind, "trigger": job.trigger, "state": job.state}


def temporary_folder() -> Path:
    return Path(tempfile.mkdtemp(prefix=f"{_FOLDER}{os.getpid()}-"))


def _remove_orphans() -> None:
    """The folders of servers killed mid-job (their uploads are kept in the database)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_FOLDER}*"):
        pid = folder.name.removeprefix(_FOLDER).split("-", 1)[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


class Jobs:
    def __init__(self, core: Pgcite) -> None:
        self._core = core
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._store: Store | None = None
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._embedder_lock = threading.Lock()
        self._closing = threading.Event()
        _remove_orphans()
        self._workers = [
            threading.Thread(target=self._work, name=f"pgcite-jobs-{n}", daemon=True)
            for n in range(max(1, core.settings.job_workers))
        ]
        for worker in self._workers:
            worker.start()
        threading.Thread(target=self._schedule, name="pgcite-schedule", daemon=True).start()

    @contextlib.contextmanager
    def _db(self) -> Iterator[psycopg.Connection]:
        """The jobs' own connection (it writes), opened again after a failure."""
        with self._lock:
            if self._store is None or self._store.conn.closed or self._store.conn.broken:
                self._store = Store.open(self._core.settings)
            try:
                yield self._store.conn
            except psycopg.OperationalError:
                self._store.close()
                self._store = None
                raise

    def ingest(self, source: str, upload: Path, *, base_url: str = "") -> JobRow:
        """Queue an ingest of the zip `upload`, stored with the job before this returns."""

        def parts() -> Iterator[bytes]:
            with upload.open("rb") as f:
                while part := f.read(jobs_sql.UPLOAD_PART):
                    yield part

        with self._db() as conn:
            return jobs_sql.add_ingest(conn, uuid.uuid4().hex, source, base_url, parts())

    def sync(self, source: str, trigger: str, location: str = "") -> JobRow:
        """Queue a sync of `source` (Pgcite.sync), or count this ask on the one already waiting."""
        with self._db() as conn:
            return jobs_sql.add_sync(conn, uuid.uuid4().hex, source, trigger, location, SYNC_SETTLE)

    def get(self, job_id: str) -> JobRow:
        with self._db() as conn:
            job = jobs_sql.get(conn, job_id)
        if job is None:
            raise PgciteError(f"no job {job_id!r} (finished jobs are kept a week)", kind="not_found")
        return job

    def close(self) -> None:
        """Stop taking jobs. A running one stops after the page it is reading (a crawl's within its page
        deadline) and is handed over, its lease ended; queued ones stay for the next server to take."""
        self._closing.set()
        for worker in self._workers:
            worker.join()
        if self._store is not None:
            self._store.close()

    def _schedule(self) -> None:
        while not self._closing.wait(SCHEDULE_TICK):
            try:
                with self._core.reader() as store:
                    due = sync_rows.due(store)
                for source in due:
                    self.sync(source, "schedule")
            except DatabaseDown:  # the outage is logged once (store/health.py); the next tick tries again
                continue
            except (PgciteError, psycopg.Error) as exc:
                log.warning("could not look for scheduled syncs: %s", first_line(exc))

    def _work(self) -> None:
        while not self._closing.is_set():
            try:
                with self._db() as conn:
                    settings = self._core.settings
                    job = jobs_sql.take(conn, self.owner, settings.job_lease, settings.crawl_deadline)
            except (PgciteError, psycopg.Error):  # the database is down: its outage is logged elsewhere
                job = None
            if job is None:
                self._closing.wait(POLL)
            else:
                self._run(job)

    def _run(self, job: JobRow) -> None:
        what = f"id={job.id} kind={job.kind} source={job.source!r} trigger={job.trigger or 'api'}"
        log.info("job started: %s", what)
        done = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(job, done), name="pgcite-job-lease", daemon=True)
        renewer.start()
        folder = temporary_folder()

        def counted(report: IngestReport) -> None:
            job.files_read, job.chunks_embedded, job.chunks_reused = (
                report.files_read,
                report.chunks_embedded,
                report.chunks_reused,
            )

        def progress(path: str, report: IngestReport) -> None:
            counted(report)
            if self._closing.is_set():  # the ingest ends as Ctrl-C ends it: each file stored whole or not at all
                raise KeyboardInterrupt

        handed_over = False
        try:
            report = self._work_of(job, folder)(progress)
            counted(report)
            job.summary, job.state = report.summary(), "done"
        except IngestInterrupted:  # this server is stopping: the next server to look takes the job over
            handed_over = True
        except PgciteError as exc:
            job.error, job.state = str(exc), "failed"
        except Exception as exc:  # a job never takes the server down; the state says what happened
            job.error, job.state = f"internal error ({exc.__class__.__name__}: {exc})", "failed"
            log.exception("job %s: internal error", job.id)
        finally:
            done.set()
            renewer.join()
            shutil.rmtree(folder, ignore_errors=True)
            if handed_over:
                self._hand_over(job)
            else:
                self._finish(job)
        seconds = time.time() - job.created_at
        if handed_over:
            log.info("job handed over: %s (this server is stopping)", what)
        elif job.state == "done":
            log.info("job done: %s seconds=%.1f summary=%r", what, seconds, job.summary)
        else:
            log.warning("job failed: %s seconds=%.1f error=%r", what, seconds, job.error)

    def _jobs_embedder(self) -> Embedder:
        """The embedder the workers share, made by the first job that needs it."""
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = make_embedder(self._core.settings)
            return self._embedder

    def _work_of(self, job: JobRow, folder: Path) -> Callable[..., IngestReport]:
        embedder = self._jobs_embedder()
        if job.kind == "sync":
            return lambda progress: self._core.sync(
                job.source, trigger=job.trigger, embedder=embedder, progress=progress
            )
        upload = folder / "upload.zip"
        with self._db() as conn, upload.open("wb") as out:
            for part in jobs_sql.upload(conn, job.id):
                out.write(part)
        return lambda progress: self._core.ingest(
            str(upload),
            source=job.source,
            base_url=job.base_url,
            embedder=embedder,
            progress=progress,
            trigger="upload",
            uploaded=True,
        )

    def _renew(self, job: JobRow, done: threading.Event) -> None:
        lease = self._core.settings.job_lease
        while not done.wait(lease / 6):
            # A missed renewal: the next one makes up for it, or the lease runs out and says why.
            with contextlib.suppress(PgciteError, psycopg.Error), self._db() as conn:
                jobs_sql.renew(conn, job, self.owner, lease)

    def _hand_over(self, job: JobRow) -> None:
        """End the job's lease now: whichever server looks next takes it over as it would a dead
        server's (an upload runs again, a sync is asked for anew), without waiting out the lease."""
        with contextlib.suppress(PgciteError, psycopg.Error), self._db() as conn:  # else the lease runs out
            jobs_sql.renew(conn, job, self.owner, 0)

    def _finish(self, job: JobRow) -> None:
        job.finished_at = time.time()
        for _ in range(10):  # the database may be back in a moment; else the lease runs out and says so
            try:
                with self._db() as conn:
                    jobs_sql.finish(conn, job, self.owner)
                return
            except (PgciteError, psycopg.Error) as exc:
                log.warning("job %s: could not record its end: %s", job.id, first_line(exc))
                time.sleep(1)
