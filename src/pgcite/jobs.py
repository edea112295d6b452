"""Ingest jobs of the server: run one at a time in a worker thread, on an embedder of their own,
so searches and answers keep the warm model and are never queued behind an ingest."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .core import Pgcite
from .embedding import Embedder, make_embedder
from .errors import PgciteError
from .ingest import IngestReport

KEEP_FINISHED = 100  # finished jobs remembered, newest first


@dataclass
class Job:
    id: str
    source: str
    location: str
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


class Jobs:
    def __init__(self, core: Pgcite) -> None:
        self._core = core
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pgcite-ingest")
        self._embedder: Embedder | None = None

    def ingest(self, source: str, location: str, *, base_url: str = "", upload: Path | None = None) -> Job:
        """Queue an ingest of `location` as `source`; `upload` (a temporary folder holding the
        uploaded file) is deleted when the job ends."""
        job = Job(uuid.uuid4().hex, source, "upload" if upload else location)
        with self._lock:
            self._jobs[job.id] = job
            finished = [j for j in self._jobs.values() if j.finished_at is not None]
            for old in sorted(finished, key=lambda j: j.finished_at or 0)[:-KEEP_FINISHED]:
                del self._jobs[old.id]
        self._worker.submit(self._run, job, location, base_url, upload)
        return job

    def get(self, job_id: str) -> Job:
        with self._lock:
            if job_id not in self._jobs:
                raise PgciteError(f"no job {job_id!r} (finished jobs are kept until the server restarts)",
                                  kind="not_found")
            return self._jobs[job_id]

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)

    def _run(self, job: Job, location: str, base_url: str, upload: Path | None) -> None:
        job.state = "running"

        def progress(path: str, report: IngestReport) -> None:
            job.files_read, job.chunks_embedded, job.chunks_reused = (
                report.files_read, report.chunks_embedded, report.chunks_reused)

        try:
            if self._embedder is None:
                self._embedder = make_embedder(self._core.settings)
            report = self._core.ingest(location, source=job.source, base_url=base_url, embedder=self._embedder,
                                       progress=progress)
            progress("", report)
            job.summary, job.state = report.summary(), "done"
        except PgciteError as exc:
            job.error, job.state = str(exc), "failed"
        except Exception as exc:  # a job never takes the server down; the state says what happened
            job.error, job.state = f"internal error ({exc.__class__.__name__}: {exc})", "failed"
        finally:
            job.finished_at = time.time()
            if upload is not None:
                shutil.rmtree(upload, ignore_errors=True)
