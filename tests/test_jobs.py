"""Jobs kept in PostgreSQL: a push or an upload answered 202 is run even when the server that
accepted it dies first; a job whose server died mid-run is taken over; GET /v1/jobs/{id} answers on
any server and after a restart; a dead server's temporary folders are removed."""

from __future__ import annotations

import dataclasses
import io
import logging
import tempfile
import time
import zipfile
from pathlib import Path

import psycopg
import pytest

from pgcite.core import Pgcite
from pgcite.server.jobs import SYNC_SETTLE
from tests.http_server import call, running, served
from tests.test_sync_server import SECRET, github, push_payload, wait_done

pytestmark = pytest.mark.slow

DOCS = {"spin.md": "# Spinning\n\n## Spin rate\n\nThe default spin rate is 40 turns per second.\n"}
core, base = served({"widgets": (DOCS, "https://widgets.example/")}, webhook_secret=SECRET)


@pytest.fixture(scope="module")
def admin(core: Pgcite) -> str:
    key = core.create_key("jobs-admin", admin=True)
    yield key
    core.revoke_key("jobs-admin")


def _zip(text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("lever.md", text)
    return buffer.getvalue()


def test_a_push_answered_202_is_synced_though_its_server_died_first(core: Pgcite, embedder, admin: str, caplog):
    """It was lost: a signed push, the server killed within 0.5 s, a restart, and no sync ever ran."""
    caplog.set_level(logging.INFO, logger="pgcite.server.jobs")
    settings = core.settings
    first = Pgcite(settings, embedder=embedder)
    with first, running(first) as url:
        accepted = github(url, "widgets", push_payload())
        assert accepted.status == 202
    # That server is gone before its sync's settle time ended; another one, on the same database:
    second = Pgcite(settings, embedder=embedder)
    with second, running(second) as url:
        job = wait_done(url, admin, accepted.body["job"]["id"], timeout=60)
    assert job["state"] == "done" and job["kind"] == "sync" and job["trigger"] == "github", job
    lines = [r.getMessage() for r in caplog.records if r.name == "pgcite.server.jobs"]
    what = f"id={job['id']} kind=sync source='widgets' trigger=github"
    assert f"job started: {what}" in lines and any(m.startswith(f"job done: {what} seconds=") for m in lines)


def test_an_upload_outlives_its_server_and_a_dead_servers_job_is_taken_over(core: Pgcite, embedder, admin: str):
    settings = core.settings
    first = Pgcite(settings, embedder=embedder)
    with first, running(first) as url:
        started = call(url, "/v1/sources/levers/ingest", _zip("# Levers\n\nPull the red lever to stop.\n"),
                       key=admin, headers={"Content-Type": "application/zip"})
        assert started.status == 202
    job_id = started.body["job"]["id"]
    # Make it a job a dead server was running: its lease ran out a minute ago.
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute("UPDATE jobs SET state = 'running', owner = 'gone:1:x', attempts = 1, "
                     "lease_until = now() - interval '1 minute' WHERE id = %s AND state = 'queued'", (job_id,))
    second = Pgcite(settings, embedder=embedder)
    with second, running(second) as url:
        job = wait_done(url, admin, job_id, timeout=60)
        assert job["state"] == "done" and "1 new" in job["summary"], job
        found = call(url, "/v1/search?q=red+lever&source=levers&k=1", key=admin).body["results"]
    assert found[0]["path"] == "lever.md"


def test_a_sync_whose_server_died_is_failed_with_the_reason_and_asked_for_again(core: Pgcite, admin: str,
                                                                               base: str):
    with psycopg.connect(core.settings.database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO jobs (id, source, kind, trigger, state, owner, attempts, lease_until) "
                     "VALUES ('deadbeef', 'widgets', 'sync', 'schedule', 'running', 'gone:2:y', 1, "
                     "now() - interval '1 minute')")
    deadline = time.monotonic() + 30
    while (job := call(base, "/v1/jobs/deadbeef", key=admin).body["job"])["state"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert job["state"] == "failed" and "the server running it stopped; a new sync was queued" in job["error"]
    time.sleep(SYNC_SETTLE + 3)
    assert core.source("widgets").last_sync["trigger"] == "schedule"  # the new sync ran


def test_a_dead_servers_temporary_folder_is_removed(core: Pgcite, embedder):
    orphan = Path(tempfile.mkdtemp(prefix="pgcite-job-999999999-"))
    (orphan / "upload.zip").write_bytes(b"PK")
    with Pgcite(dataclasses.replace(core.settings), embedder=embedder) as app, running(app):
        assert not orphan.exists()
