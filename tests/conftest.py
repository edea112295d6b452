"""Shared fixtures: one real embedded PostgreSQL + pgvector for the test session, a fresh
database per test, and the real bundled embedding model."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgcite.config import Settings
from pgcite.store import server

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPORA = SHARED / "corpora"


def corpus(name: str) -> Path:
    """A corpus from ../shared/corpora, or skip the test saying where it was looked for."""
    path = CORPORA / name
    if not path.is_dir():
        pytest.skip(f"corpus {name!r} not found at {path} (it lives in ../shared/corpora beside the repo)")
    return path


@pytest.fixture
def server_tmp():
    """A folder the embedded server's system user can reach. pytest's own tmp root is kept at
    mode 0700 (and reset so by every pytest run), which the server, running as another user,
    cannot enter."""
    path = Path(tempfile.mkdtemp(prefix="pgcite-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_home():
    home = Path(tempfile.mkdtemp(prefix="pgcite-test-home-"))
    server.start(home)
    yield home
    server.stop(home)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def admin_dsn(pg_home: Path) -> str:
    return make_conninfo(server.start(pg_home), dbname="postgres")


def _fresh_database(admin_dsn: str):
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name


def _drop_database(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def database_url(admin_dsn: str):
    """A DSN for an empty database of its own on the session's embedded server."""
    name = _fresh_database(admin_dsn)
    yield make_conninfo(admin_dsn, dbname=name)
    _drop_database(admin_dsn, name)


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", database_url=database_url)


@pytest.fixture(scope="session")
def embedder():
    from pgcite.embedding.models import LocalEmbedder

    return LocalEmbedder()
