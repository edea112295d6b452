"""The server's writes, behind an admin key: ingest jobs (a zip in the body), syncs (the source read
again from its own location), their progress, and removing a source. A git host's push webhook,
signed with the server's webhook secret instead of a key, asks for a sync too."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from pgcite.access import Caller, check_writes
from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.ingest.flow import check_base_url
from pgcite.ingest.sync import parse_interval
from pgcite.server import webhooks
from pgcite.server.jobs import Jobs, receipt, temporary_folder, to_json
from pgcite.store.jobs_sql import JobRow

ZIP_MAGIC = b"PK\x03\x04"
WEBHOOK_BODIES = 4  # webhook bodies read at once: 100 MB at most in memory


class ScheduleRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    every: str = Field(max_length=20, description="90s, 15m, 2h, 1d, or off")


def add_admin_routes(
    app: FastAPI, core: Pgcite, jobs: Jobs, write_access: Callable[..., Caller], refused: Callable[[Request], None]
) -> None:
    """refused(request): counts a refused request against its address's rate limit."""
    reading = anyio.Semaphore(WEBHOOK_BODIES)

    def accepted(job: JobRow) -> JSONResponse:
        return JSONResponse({"job": to_json(job)}, status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})

    @app.post("/v1/sources/{name}/ingest", status_code=202)
    async def ingest(name: str, request: Request, base_url: str = "", caller: Caller = Depends(write_access)):
        """With a zip file as the body: ingest it as source `name`. With no body: a sync, as POST
        /v1/sources/{name}/sync. Returns the job; GET /v1/jobs/{id} follows it."""
        check_writes(caller, name)
        core.check_new_source(name)  # refused now, not as a failed job after the 202
        if base_url:
            check_base_url(base_url)  # the same: a javascript: base URL would start every citation
        folder = temporary_folder()
        upload = folder / "upload.zip"
        try:
            with upload.open("wb") as out:
                async for piece in request.stream():  # BodyLimit stops an oversize upload here
                    out.write(piece)
            with upload.open("rb") as f:
                head = f.read(4)
            if head and head != ZIP_MAGIC:
                raise PgciteError(
                    "the body is not a zip file; send the docs as a .zip, or no body to read the "
                    "source again from where it was ingested"
                )
            if not head and base_url:
                raise PgciteError("base_url goes with an uploaded zip; a sync reads the source as it was ingested")
            # Stored with the job before the 202, so any server may run it, even after this one dies.
            job = await anyio.to_thread.run_sync(lambda: jobs.ingest(name, upload, base_url=base_url)) if head else None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if job is not None:
            return accepted(job)
        location = core.source(name, caller.sources).location
        return accepted(await anyio.to_thread.run_sync(jobs.sync, name, "api", location))

    @app.post("/v1/sources/{name}/sync", status_code=202)
    def sync(name: str, caller: Caller = Depends(write_access)) -> JSONResponse:
        """Read source `name` again from where it was ingested; only what changed is read. A sync asked
        for while another of the source waits to start is that one (the same job comes back)."""
        check_writes(caller, name)
        return accepted(jobs.sync(name, "api", core.source(name, caller.sources).location))

    @app.put("/v1/sources/{name}/schedule")
    def schedule(name: str, body: ScheduleRequest, caller: Caller = Depends(write_access)) -> dict:
        """Sync source `name` every `every` (as `pgcite sources schedule`)."""
        check_writes(caller, name)
        core.source(name, caller.sources)
        seconds = parse_interval(body.every)
        core.schedule(name, seconds)
        return {"source": name, "sync_interval": seconds}

    @app.post("/v1/sources/{name}/webhook", status_code=202)
    async def webhook(name: str, request: Request) -> JSONResponse:
        """A GitHub or GitLab push webhook, signed with PGCITE_WEBHOOK_SECRET: a push to the default
        branch syncs source `name`; other events are acknowledged and start nothing."""
        secret = core.settings.webhook_secret
        try:
            webhooks.check_headers(request.headers, secret)
            async with reading:  # a few bodies of up to 25 MB in memory at once, not one per request
                body = await request.body()  # BodyLimit allows webhooks.MAX_BYTES here
            host = webhooks.verify(request.headers, body, secret)
        except PgciteError:
            await anyio.to_thread.run_sync(refused, request)  # refusals count against the sender's limit
            raise
        location = core.source(name).location
        push = webhooks.push(host, request.headers, body)
        if push.ignored:
            return JSONResponse({"ignored": push.ignored}, status_code=200)
        job = await anyio.to_thread.run_sync(jobs.sync, name, host, location)
        return JSONResponse({"job": receipt(job)}, status_code=202)

    @app.get("/v1/jobs/{job_id}")
    def job(job_id: str, caller: Caller = Depends(write_access)) -> dict:
        job = jobs.get(job_id)
        check_writes(caller, job.source)
        return {"job": to_json(job)}

    @app.delete("/v1/sources/{name}")
    def remove(name: str, caller: Caller = Depends(write_access)) -> dict:
        check_writes(caller, name)
        core.remove_source(name)
        return {"removed": name}
