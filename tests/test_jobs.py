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
from tests.http_server import call, running, served, write_folder
from tests.test_crawl import Site as CrawledSite
from tests.test_crawl import dripping, serving
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


def _state(url: str, key: str, job_id: str) -> str:
    return call(url, f"/v1/jobs/{job_id}", key=key).body["job"]["state"]


def _wait_for(url: str, key: str, job_id: str, state: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while _state(url, key, job_id) != state:
        assert time.monotonic() < deadline, f"job {job_id} never became {state}"
        time.sleep(0.1)


def test_a_sync_held_by_a_dripping_site_never_delays_another_sources_job(settings, embedder, tmp_path: Path):
    """It did: each server ran one job at a time, so a sync held by a site sending a byte now and then
    kept every other source's jobs queued behind it; and another sync of that source, asked for
    meanwhile, was taken by a second server, whose worker then waited on the source's lock too."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text(
        '<html lang="en"><body><main><h1>Stuck site</h1><p>The stuck site has a slow page.</p>'
        '<a href="slow.html">slow</a></main></body></html>')
    (tmp_path / "site" / "slow.html").write_text(
        '<html lang="en"><body><main><h1>Slow</h1><p>This page is served slowly.</p></main></body></html>')
    with serving(CrawledSite(tmp_path / "site")) as site, Pgcite(settings, embedder=embedder) as first:
        first.ingest(write_folder(tmp_path / "widgets", DOCS), source="widgets")
        first.ingest(site.url, source="stuck", crawl_deadline=20.0)  # kept for its syncs
        key = first.create_key("pool-admin", admin=True)
        site.routes["/docs/slow.html"] = dripping(b'<html lang="en"><body><main><h1>Slow</h1><p>', 0.5)
        (tmp_path / "widgets" / "lever.md").write_text("# Levers\n\nPull the green lever to start.\n")
        with running(first) as url:
            stuck = call(url, "/v1/sources/stuck/sync", b"", key=key).body["job"]["id"]
            _wait_for(url, key, stuck, "running")
            other = call(url, "/v1/sources/widgets/sync", b"", key=key).body["job"]["id"]
            job = wait_done(url, key, other, timeout=SYNC_SETTLE + 15)
            assert job["state"] == "done" and "1 new" in job["summary"], job
            assert _state(url, key, stuck) == "running"
            # Another sync of the held source waits for the one running, on this server and on one started now.
            again = call(url, "/v1/sources/stuck/sync", b"", key=key).body["job"]["id"]
            second = Pgcite(settings, embedder=embedder)
            with second, running(second) as other_url:
                time.sleep(SYNC_SETTLE + 2)
                assert _state(other_url, key, again) == "queued" and _state(url, key, stuck) == "running"
                held = wait_done(url, key, stuck, timeout=40)
                assert held["state"] == "done" and "1 skipped" in held["summary"], held
                assert wait_done(other_url, key, again, timeout=40)["state"] == "done"


def test_a_crawl_whose_server_stopped_past_its_deadline_is_not_queued_again(core: Pgcite, admin: str, base: str):
    """A restart queued the sync its stuck server was running again, to be held by the same site as
    long: one that had run past its crawl's deadline is failed with the reason instead. A sync
    stopped within its deadline, or of a folder however long it ran, is queued again as before."""
    with psycopg.connect(core.settings.database_url, autocommit=True) as conn:
        (began,) = conn.execute("SELECT now()").fetchone()
        # Port 9 refuses at once: the syncs queued again end quickly.
        conn.execute("INSERT INTO sources (name, location, options) VALUES "
                     "('hung', 'http://127.0.0.1:9/hung/', '{\"crawl_deadline\": 600}'), "
                     "('slowish', 'http://127.0.0.1:9/slowish/', '{}')")
        stopped = {"hung1": ("hung", "2 hours"), "slowish1": ("slowish", "30 minutes"),
                   "folder1": ("widgets", "5 hours")}
        for job_id, (source, ran) in stopped.items():
            conn.execute("INSERT INTO jobs (id, source, kind, trigger, state, owner, attempts, started_at, "
                         "lease_until) VALUES (%s, %s, 'sync', 'gitlab', 'running', 'gone:3:z', 1, "
                         "now() - %s::interval, now() - interval '1 minute')", (job_id, source, ran))
        deadline = time.monotonic() + 30
        while conn.execute("SELECT count(*) FROM jobs WHERE id = ANY(%s) AND state = 'running'",
                           (list(stopped),)).fetchone()[0]:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        errors = dict(conn.execute("SELECT id, error FROM jobs WHERE id = ANY(%s)", (list(stopped),)))
        queued = [s for (s,) in conn.execute("SELECT source FROM jobs WHERE trigger = 'gitlab' AND created_at > %s "
                                             "AND NOT id = ANY(%s) ORDER BY source", (began, list(stopped)))]
        conn.execute("DELETE FROM sources WHERE name IN ('hung', 'slowish')")
    assert errors["hung1"].startswith("the server running it stopped after the crawl had run past its deadline: "
                                      "not queued again")
    assert errors["slowish1"] == errors["folder1"] == "the server running it stopped; a new sync was queued"
    assert queued == ["slowish", "widgets"]


def test_a_server_that_stops_mid_sync_hands_the_job_over_at_once(settings, embedder, tmp_path: Path):
    """It did not: a stopping server waited for its running jobs to end (a crawl of slow pages, up to
    its deadline), renewing their leases meanwhile, so no other server could take them over."""
    (tmp_path / "site").mkdir()
    slow = [f"slow{n}.html" for n in range(40)]
    (tmp_path / "site" / "index.html").write_text(
        '<html lang="en"><body><main><h1>Slow site</h1><p>Every page of this site is slow.</p>'
        + "".join(f'<a href="{page}">{page}</a>' for page in slow) + "</main></body></html>")
    for page in slow:
        (tmp_path / "site" / page).write_text(
            f'<html lang="en"><body><main><h1>{page}</h1><p>This page is served slowly.</p></main></body></html>')
    with serving(CrawledSite(tmp_path / "site")) as site, Pgcite(settings, embedder=embedder) as first:
        first.ingest(site.url, source="slowsite", crawl_page_deadline=3.0)  # kept for its syncs
        key = first.create_key("handover-admin", admin=True)
        for page in slow:  # each now takes its page deadline, then is skipped: 30 s for the crawl
            site.routes[f"/docs/{page}"] = dripping(b'<html lang="en"><body><main><h1>Slow</h1><p>', 0.5)
        with running(first) as url:
            job = call(url, "/v1/sources/slowsite/sync", b"", key=key).body["job"]["id"]
            _wait_for(url, key, job, "running", timeout=SYNC_SETTLE + 15)
        stopped = time.monotonic()
        with Pgcite(settings, embedder=embedder) as second, running(second) as other:
            while _state(other, key, job) == "running" and time.monotonic() < stopped + 25:
                time.sleep(0.2)
            taken_over = time.monotonic() - stopped
            row = call(other, f"/v1/jobs/{job}", key=key).body["job"]
    assert row["state"] == "failed" and "the server running it stopped; a new sync was queued" in row["error"], row
    assert taken_over < 12, taken_over  # a page deadline, then the next server's look
