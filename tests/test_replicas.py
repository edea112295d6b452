"""Three `pgcite serve` processes on one PostgreSQL over TCP (the production path: `pgcite db roles`,
password logins), as they run behind a load balancer: a burst of push webhooks spread over them makes
exactly one sync; the replica running an ingest killed with -9 has its job finished by another;
a key's limit holds across all three."""

from __future__ import annotations

import concurrent.futures
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.http_server import call
from tests.test_production_db import _free_port, cli, tcp_postgres
from tests.test_sync import PAGES, clone_pair, push_change
from tests.test_sync_server import SECRET, github, push_payload

pytestmark = pytest.mark.slow

LEASE = 3  # PGCITE_JOB_LEASE: a dead replica's job is taken over within seconds


@pytest.fixture(scope="module")
def database(pg_home) -> Iterator[dict[str, str]]:
    root = Path(tempfile.mkdtemp(prefix="pgcite-replicas-"))
    root.chmod(0o755)  # the server's own user enters it
    try:
        with tcp_postgres(root) as url:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE DATABASE docs")
            made = cli("db", "roles", "--apply", PGCITE_DATABASE_URL=make_conninfo(url, dbname="docs"))
            assert made.returncode == 0, made.stderr
            yield dict(line.split("=", 1) for line in made.stdout.splitlines())
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def replicas(database: dict, tmp_path_factory) -> Iterator[list[str]]:
    root = tmp_path_factory.mktemp("replicas")
    author, served = clone_pair(root)
    env = {**database, "PGCITE_HOME": str(root / "home")}
    made = cli("ingest", str(served), "--source", "docs", "--pull", **env)
    assert made.returncode == 0, made.stderr
    env |= {"PGCITE_WEBHOOK_SECRET": SECRET, "PGCITE_JOB_LEASE": str(LEASE), "PGCITE_SERVE_RATE_LIMIT": "30"}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")}
    ports = [_free_port() for _ in range(3)]
    processes = [subprocess.Popen([sys.executable, "-m", "pgcite", "serve", "--port", str(port)],
                                  env={**clean, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for port in ports]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        deadline = time.monotonic() + 120
        for url, process in zip(urls, processes, strict=True):
            while not _ready(url):
                assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()[-2000:]
                time.sleep(0.3)
        yield urls, processes, author, database
    finally:
        for process in processes:
            process.send_signal(signal.SIGINT)
        for process in processes:
            try:
                process.wait(timeout=60)
            finally:
                process.kill()


def _ready(url: str) -> bool:
    try:
        return call(url, "/readyz").status == 200
    except OSError:
        return False


def _admin_key(database: dict) -> str:
    made = cli("keys", "create", f"replica-admin-{time.monotonic_ns()}", "--admin", **database)
    assert made.returncode == 0, made.stderr
    return made.stdout.splitlines()[-1]


def _wait_job(url: str, key: str, job_id: str, database: dict, timeout: float = 120) -> dict:
    """The job once it ended, as the replica at `url` reports it (watched in the table meanwhile, so
    the polls do not count against the key's limit)."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(database["PGCITE_DATABASE_URL"], autocommit=True) as conn:
        while conn.execute("SELECT state FROM jobs WHERE id = %s", (job_id,)).fetchone()[0] in ("queued", "running"):
            assert time.monotonic() < deadline, "the job did not end"
            time.sleep(0.2)
    return call(url, f"/v1/jobs/{job_id}", key=key).body["job"]


def test_a_burst_of_pushes_over_three_replicas_makes_one_sync(replicas):
    urls, _, author, database = replicas
    push_change(author, "tuning.md", PAGES["tuning.md"].replace("40", "77"))
    with concurrent.futures.ThreadPoolExecutor(9) as pool:
        replies = list(pool.map(lambda i: github(urls[i % 3], "docs", push_payload()), range(9)))
    assert [r.status for r in replies] == [202] * 9
    ids = {r.body["job"]["id"] for r in replies}
    assert len(ids) == 1, ids  # one waiting sync, whichever replica was asked
    key = _admin_key(database)
    job = _wait_job(urls[2], key, ids.pop(), database)
    assert job["state"] == "done" and job["requests"] == 9 and "1 changed" in job["summary"], job
    found = call(urls[1], "/v1/search?q=default+speed+turns&source=docs&k=1", key=key).body["results"]
    assert "77 turns" in found[0]["content"]


def test_the_replica_running_an_ingest_dies_and_another_finishes_it(replicas):
    urls, processes, _, database = replicas
    key = _admin_key(database)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for n in range(150):
            z.writestr(f"page{n}.md", f"# Page {n}\n\n## Marmalade {n}\n\nThe marmalade setting {n} is {n * 7} grams.\n")
    started = call(urls[0], "/v1/sources/jam/ingest", buffer.getvalue(), key=key,
                   headers={"Content-Type": "application/zip"})
    assert started.status == 202
    job_id = started.body["job"]["id"]
    with psycopg.connect(database["PGCITE_DATABASE_URL"], autocommit=True) as conn:
        deadline = time.monotonic() + 60
        while not (owner := conn.execute("SELECT owner FROM jobs WHERE id = %s AND state = 'running'",
                                         (job_id,)).fetchone()):
            assert time.monotonic() < deadline, "the ingest never started"
            time.sleep(0.1)
    pid = int(owner[0].split(":")[1])
    victim = next(p for p in processes if p.pid == pid)
    os.kill(pid, signal.SIGKILL)
    victim.wait(timeout=30)
    survivor = next(url for url, p in zip(urls, processes, strict=True) if p.pid != pid)
    job = _wait_job(survivor, key, job_id, database)
    assert job["state"] == "done" and "150 new" in job["summary"], job
    found = call(survivor, "/v1/search?q=marmalade+setting+42&source=jam&k=1", key=key).body["results"]
    assert found[0]["path"] == "page42.md"


def test_a_keys_limit_holds_across_the_replicas(replicas):
    urls, processes, _, database = replicas
    alive = [url for url, p in zip(urls, processes, strict=True) if p.poll() is None]
    made = cli("keys", "create", "replica-reader", **database)
    key = made.stdout.splitlines()[-1]
    statuses = [call(alive[i % len(alive)], "/v1/sources", key=key).status for i in range(32)]
    assert statuses == [200] * 30 + [429] * 2


def test_a_schedule_kept_by_three_replicas_syncs_once_per_interval(replicas):
    urls, processes, _, database = replicas
    alive = [url for url, p in zip(urls, processes, strict=True) if p.poll() is None]
    key = _admin_key(database)
    count = "SELECT count(*), count(*) FILTER (WHERE state = 'failed') FROM jobs WHERE trigger = 'schedule'"
    with psycopg.connect(database["PGCITE_DATABASE_URL"], autocommit=True) as conn:
        assert call(alive[0], "/v1/sources/docs/schedule", {"every": "20s"}, key=key, method="PUT").status == 200
        try:
            deadline = time.monotonic() + 30
            while conn.execute(count).fetchone()[0] == 0:  # every replica's scheduler looks each second
                assert time.monotonic() < deadline, "no scheduled sync"
                time.sleep(0.2)
            time.sleep(8)  # well inside the interval: every replica has looked several times since
            assert conn.execute(count).fetchone() == (1, 0)
        finally:
            call(alive[0], "/v1/sources/docs/schedule", {"every": "off"}, key=key, method="PUT")
