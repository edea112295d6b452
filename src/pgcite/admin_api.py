"""The server's writes, behind an admin key: ingest jobs (a zip in the body, or the source's own
location again), their progress, and removing a source."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from .access import Caller, check_writes
from .core import Pgcite
from .errors import PgciteError
from .jobs import Jobs

ZIP_MAGIC = b"PK\x03\x04"


def add_admin_routes(app: FastAPI, core: Pgcite, jobs: Jobs, write_access: Callable[..., Caller]) -> None:
    @app.post("/v1/sources/{name}/ingest", status_code=202)
    async def ingest(name: str, request: Request, base_url: str = "", caller: Caller = Depends(write_access)):
        """With a zip file as the body: ingest it as source `name`. With no body: read the source
        again from the location it was ingested from. Returns the job; GET /v1/jobs/{id} follows it."""
        check_writes(caller, name)
        folder = Path(tempfile.mkdtemp(prefix="pgcite-upload-"))
        upload = folder / "upload.zip"
        try:
            with upload.open("wb") as out:
                async for piece in request.stream():  # BodyLimit stops an oversize upload here
                    out.write(piece)
            with upload.open("rb") as f:
                head = f.read(4)
            if head and head != ZIP_MAGIC:
                raise PgciteError("the body is not a zip file; send the docs as a .zip, or no body to read the "
                                  "source again from where it was ingested")
            known = None if head else core.source(name, caller.sources)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        if known is None:  # the job deletes the upload when it ends
            job = jobs.ingest(name, str(upload), base_url=base_url, upload=folder)
        else:
            shutil.rmtree(folder, ignore_errors=True)
            job = jobs.ingest(name, known.location, base_url=base_url or known.base_url)
        return JSONResponse({"job": job.to_json()}, status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})

    @app.get("/v1/jobs/{job_id}")
    def job(job_id: str, caller: Caller = Depends(write_access)) -> dict:
        job = jobs.get(job_id)
        check_writes(caller, job.source)
        return {"job": job.to_json()}

    @app.delete("/v1/sources/{name}")
    def remove(name: str, caller: Caller = Depends(write_access)) -> dict:
        check_writes(caller, name)
        core.remove_source(name)
        return {"removed": name}
