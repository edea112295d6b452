"""Reliability at run time (issue 15): processes killed mid-ingest, two ingests at once, ingests
under searches, an embedding server that is down, slow or lying, and hostile values over HTTP.
Each case ends with what a user would check: the content equals that of a clean run, the command
said one clear line, the server answered JSON with the right status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
from pathlib import Path
from typing import Callable, Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.errors import EmbeddingError
from pgcite.ingest.flow import WRITE_BATCH
from pgcite.store import server
from tests.conftest import _drop_database, _fresh_database
from tests.fake_openai import FakeOpenAI, closed_port, fake_vector
from tests.http_server import call, running, write_folder
from tests.test_cli import REPO, pgcite
from tests.test_reliability import _own_env

PAGES = 200  # three chunks each: several write batches, so a kill lands between two of them
DIMENSION = 16


def _page(n: int, edition: str = "") -> str:
    return (f"# Page {n}\n\nPage {n} covers the widget number {n}{edition}.\n\n"
            f"## Setup\n\nSet widget_{n} to {n * 7} units{edition} with 100% care.\n\n"
            f"## Usage\n\nRun widget {n} every {n + 3} minutes{edition}.\n")


def _slow(seconds: float) -> Callable[[str, int], list[float]]:
    """fake_vector, `seconds` late per text: an ingest then takes long enough to be killed."""

    def vector(text: str, dimension: int) -> list[float]:
        time.sleep(seconds)
        return fake_vector(text, dimension)

    return vector


def _remote(fake: FakeOpenAI) -> dict[str, str]:
    return {"PGCITE_EMBEDDING_URL": fake.url, "PGCITE_EMBEDDING_MODEL": fake.model}


def _start_ingest(folder: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pgcite", "ingest", folder, "--source", "docs"], env=env,
                            cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


OTHER_SESSIONS = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
                  "AND backend_type = 'client backend'")


def _count(dsn: str, query: str = "SELECT count(*) FROM documents") -> int:
    """The answer to `query`, 0 while pgcite's tables do not exist yet."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("SELECT to_regclass('documents') IS NOT NULL").fetchone()[0]:
            return 0
        return conn.execute(query).fetchone()[0]


def _wait_until(check: Callable[[], bool], timeout: float, what: str, process: subprocess.Popen | None = None):
    deadline = time.monotonic() + timeout
    while not check():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the ingest ended before {what}: {process.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.02)


def _content(dsn: str) -> dict[str, list[tuple]]:
    """Everything an ingest stores, by table, in a stable order (ids and times left out)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {
            "sources": conn.execute("SELECT name, location, base_url, version, site, default_version FROM sources "
                                    "ORDER BY name").fetchall(),
            "documents": conn.execute("SELECT source, path, title, url, checksum, version, kind, includes "
                                      "FROM documents ORDER BY source, path").fetchall(),
            "chunks": conn.execute(
                "SELECT c.id, d.path, c.ord, c.heading, c.heading_path, c.breadcrumb, c.anchor, c.url, c.content, "
                "c.tokens, c.embed_hash, c.embedding::text, c.flags FROM chunks c JOIN documents d "
                "ON d.id = c.document_id ORDER BY c.id").fetchall(),
            "settings": conn.execute("SELECT key, value FROM pgcite_settings ORDER BY key").fetchall(),
            "bm25": conn.execute("SELECT source, lexeme, ndoc, idf FROM lexeme_idf ORDER BY source, lexeme").fetchall(),
            "stats": conn.execute("SELECT * FROM source_stats ORDER BY source").fetchall(),
            "index": conn.execute("SELECT to_regclass('chunks_embedding_hnsw') IS NOT NULL").fetchall(),
        }


def _chunks_by_path(content: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    by_path: dict[str, list[tuple]] = {}
    for row in content["chunks"]:
        by_path.setdefault(row[1], []).append(row)
    return by_path


def _assert_whole_documents(dsn: str, clean: dict[str, list[tuple]]) -> int:
    """Every document stored is stored whole, as a clean run stores it; returns how many there are."""
    stored = _content(dsn)
    expected_docs = {row[1]: row for row in clean["documents"]}
    expected_chunks = _chunks_by_path(clean)
    chunks = _chunks_by_path(stored)
    for row in stored["documents"]:
        assert row == expected_docs[row[1]], row
        assert chunks.get(row[1]) == expected_chunks[row[1]], f"{row[1]} is stored with other chunks"
    return len(stored["documents"])


def _error_lines(stderr: str) -> list[str]:
    """stderr without the progress lines an ingest prints every few seconds."""
    return [line for line in stderr.splitlines() if not line.startswith("ingesting ")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> str:
    pages = {f"page{n:03}.md": _page(n) for n in range(PAGES)}
    return write_folder(tmp_path_factory.mktemp("corpus") / "docs", pages)


def _clean_content(folder: str, admin_dsn: str, home: Path) -> dict[str, list[tuple]]:
    """What an ingest of `folder` as "docs" stores in a fresh database, left alone."""
    name = _fresh_database(admin_dsn)
    try:
        dsn = make_conninfo(admin_dsn, dbname=name)
        with FakeOpenAI(dimension=DIMENSION) as fake:
            with Pgcite(Settings(home=home, database_url=dsn, embedding_url=fake.url, embedding_model=fake.model)) as app:
                app.ingest(folder, source="docs")
        return _content(dsn)
    finally:
        _drop_database(admin_dsn, name)


@pytest.fixture(scope="module")
def clean(folder: str, admin_dsn: str, tmp_path_factory) -> dict[str, list[tuple]]:
    content = _clean_content(folder, admin_dsn, tmp_path_factory.mktemp("home"))
    assert len(content["documents"]) == PAGES and len(content["chunks"]) == 3 * PAGES
    assert content["index"] == [(True,)]
    return content


# --- kill -9 -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_an_ingest_killed_mid_ingest_leaves_whole_documents_and_the_rerun_equals_a_clean_run(
        folder: str, clean: dict, database_url: str, tmp_path: Path):
    env = _own_env(PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"))
    with FakeOpenAI(dimension=DIMENSION, vector=_slow(0.004)) as slow:
        running_ingest = _start_ingest(folder, {**env, **_remote(slow)})
        try:
            _wait_until(lambda: _count(database_url) > 0, 60, "document stored", running_ingest)
            running_ingest.send_signal(signal.SIGKILL)
            running_ingest.wait(30)
            # Its session ends once PostgreSQL sees the socket closed: a COMMIT already sent lands first.
            _wait_until(lambda: _count(database_url, OTHER_SESSIONS) == 0, 30, "end of the killed ingest's session")
        finally:
            running_ingest.kill()
    stored = _assert_whole_documents(database_url, clean)
    assert 0 < stored < PAGES, stored
    with FakeOpenAI(dimension=DIMENSION) as fake:
        again = pgcite("ingest", folder, "--source", "docs", env={**env, **_remote(fake)})
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert f"docs: {PAGES - stored} new, 0 changed, {stored} unchanged" in again.stdout, again.stdout
    assert _content(database_url) == clean


@pytest.mark.slow
def test_postgres_killed_mid_ingest_is_one_line_and_the_rerun_equals_a_clean_run(
        folder: str, clean: dict, server_tmp: Path):
    home = server_tmp / "home"
    env = _own_env(PGCITE_HOME=str(home))
    try:
        dsn = server.start(home)
        with FakeOpenAI(dimension=DIMENSION, vector=_slow(0.004)) as slow:
            running_ingest = _start_ingest(folder, {**env, **_remote(slow)})
            try:
                _wait_until(lambda: _count(dsn) > 0, 60, "document stored", running_ingest)
                postmaster = server.running_pid(home)
                os.kill(postmaster, signal.SIGKILL)
                out, err = running_ingest.communicate(timeout=60)
            finally:
                running_ingest.kill()
        assert running_ingest.returncode == 1 and "Traceback" not in err, err
        lines = _error_lines(err)
        assert len(lines) == 1 and lines[0].startswith("error: database: ") and "check the server" in lines[0], err
        _wait_until(lambda: server.running_pid(home) is None, 10, "postmaster gone")
        time.sleep(1)  # let the orphaned backends notice their postmaster died
        with FakeOpenAI(dimension=DIMENSION) as fake:  # the rerun starts a new postmaster itself
            again = pgcite("ingest", folder, "--source", "docs", env={**env, **_remote(fake)})
        assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
        kept = int(again.stdout.split(" unchanged")[0].rsplit(" ", 1)[1])
        assert 0 < kept < PAGES, again.stdout  # what was committed before the crash survived it
        assert _content(server.start(home)) == clean
    finally:
        server.stop(home)


# --- at once -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_ingests_of_one_source_at_once_wait_for_each_other_and_equal_a_clean_run(
        folder: str, clean: dict, database_url: str, tmp_path: Path):
    env = _own_env(PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"))
    waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    with FakeOpenAI(dimension=DIMENSION, vector=_slow(0.002)) as slow:
        both = [_start_ingest(folder, {**env, **_remote(slow)}) for _ in range(2)]
        try:
            # One holds the source's lock while the other waits for it (source_lock).
            _wait_until(lambda: _count(database_url, waiting) > 0, 60, "ingest waiting for the other")
            outputs = [p.communicate(timeout=120) for p in both]
        finally:
            for p in both:
                p.kill()
    assert [p.returncode for p in both] == [0, 0], outputs
    assert all("Traceback" not in err and "error" not in err for _, err in outputs), outputs
    summaries = sorted(out.split(";")[0] for out, _ in outputs)
    assert summaries == [f"docs: 0 new, 0 changed, {PAGES} unchanged, 0 removed, 0 skipped files, 0 other files",
                         f"docs: {PAGES} new, 0 changed, 0 unchanged, 0 removed, 0 skipped files, 0 other files"]
    assert _content(database_url) == clean


def test_a_connection_lost_mid_ingest_is_reported_with_its_cause(folder: str, database_url: str, tmp_path: Path):
    """What `pgcite ingest` printed when PostgreSQL was killed: `error: database: the connection is
    closed; check the server`, where docs/troubleshooting.md shows `server closed the connection
    unexpectedly`. Here an admin ends the ingest's session (pg_terminate_backend)."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            app.ingest(folder, source="docs")
        except BaseException as exc:  # what the CLI would print
            failed.append(exc)

    with FakeOpenAI(dimension=DIMENSION, vector=_slow(0.004)) as slow, \
            Pgcite(Settings(home=tmp_path / "home", database_url=database_url, embedding_url=slow.url,
                            embedding_model=slow.model)) as app:
        ingesting = threading.Thread(target=run)
        ingesting.start()
        try:
            _wait_until(lambda: _count(database_url) > 0, 60, "document stored")
            with psycopg.connect(database_url, autocommit=True) as conn:
                conn.execute(OTHER_SESSIONS.replace("count(*)", "pg_terminate_backend(pid)"))
        finally:
            ingesting.join(60)
    assert len(failed) == 1 and isinstance(failed[0], psycopg.OperationalError), failed
    # Which of the two the client reads first depends on timing; both say why.
    cause = str(failed[0])
    assert ("terminating connection due to administrator command" in cause
            or "server closed the connection unexpectedly" in cause), cause


# --- ingest during searches ----------------------------------------------------------------------


@pytest.mark.slow
def test_searches_during_a_reingest_never_fail_and_always_find(database_url: str, tmp_path: Path):
    docs = Path(write_folder(tmp_path / "docs", {f"page{n:03}.md": _page(n) for n in range(120)}))
    env = _own_env(PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"))
    with FakeOpenAI(dimension=DIMENSION) as fast, \
            Pgcite(Settings(home=tmp_path / "home", database_url=database_url, embedding_url=fast.url,
                            embedding_model=fast.model)) as app:
        app.ingest(str(docs), source="docs")
        before = {row[8] for row in _content(database_url)["chunks"]}
        for n in range(40):  # a third changed, some removed, some added
            (docs / f"page{n:03}.md").write_text(_page(n, " (second edition)"))
        for n in range(115, 120):
            (docs / f"page{n:03}.md").unlink()
        for n in range(120, 125):
            (docs / f"page{n:03}.md").write_text(_page(n))
        seen: list[tuple[float, str, list[str]]] = []
        errors: list[str] = []
        stop, new_text_found, cli_done = threading.Event(), threading.Event(), threading.Event()
        embedded = iter(range(1_000_000))

        # The last page changed (page124) is embedded after the first batch is stored.
        assert 44 * 3 >= WRITE_BATCH

        def gated(text: str, dimension: int) -> list[float]:
            """The ingest's embedding waits for the searches, so the run shows the same on any
            machine: 12 searches before the first write, and one that found new text (and the
            CLI's search) before the last page is embedded."""
            if next(embedded) == 0:
                _wait_until(lambda: len(seen) >= 12, 60, "12 searches")
            if "Page 124" in text:
                assert new_text_found.wait(60) and cli_done.wait(120)
            return fake_vector(text, dimension)

        def searches() -> None:
            for n in range(1_000_000):
                if stop.is_set():
                    return
                question, mode = f"widget number {n % 50} second edition", ("hybrid", "vector", "text")[n % 3]
                try:
                    seen.append((time.monotonic(), mode, [h.content for h in app.search(question, k=5, mode=mode)]))
                    if any("(second edition)" in c for c in seen[-1][2]):
                        new_text_found.set()
                except Exception as exc:  # any failure is the finding
                    errors.append(f"{question!r} ({mode}): {exc!r}")
                stop.wait(0.05)

        loop = threading.Thread(target=searches)
        with FakeOpenAI(dimension=DIMENSION, vector=gated) as slow:
            started = time.monotonic()
            ingest = _start_ingest(str(docs), {**env, **_remote(slow)})
            loop.start()
            try:
                cli = pgcite("search", "widget number 7 second edition", "--json", env={**env, **_remote(fast)})
                cli_during = ingest.poll() is None
                cli_done.set()
                out, err = ingest.communicate(timeout=180)
                ended = time.monotonic()
            finally:
                stop.set()
                loop.join(30)
                ingest.kill()
        after = {row[8] for row in _content(database_url)["chunks"]}
    assert ingest.returncode == 0 and "Traceback" not in err, err
    assert "docs: 5 new, 40 changed, 75 unchanged, 5 removed" in out, out
    assert errors == []
    during = [(mode, contents) for at, mode, contents in seen if started < at < ended]
    assert len(during) >= 12 and {mode for mode, _ in during} == {"hybrid", "vector", "text"}, len(during)
    assert all(len(contents) == 5 for _, _, contents in seen)
    assert all(set(contents) <= before | after for _, _, contents in seen)  # old or new text, nothing else
    assert any("(second edition)" in c for _, contents in during for c in contents)  # some ran after writes
    assert cli.returncode == 0 and cli_during, cli.stderr
    assert len(json.loads(cli.stdout)["results"]) == 5


# --- the embedding server ------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> str:
    return write_folder(tmp_path / "small", {f"page{n}.md": _page(n) for n in range(5)})


def _stored(dsn: str) -> tuple[int, int, int]:
    return (_count(dsn, "SELECT count(*) FROM sources"), _count(dsn), _count(dsn, "SELECT count(*) FROM chunks"))


def test_an_embedding_server_that_is_down_is_named_and_nothing_is_stored(small: str, database_url: str,
                                                                         tmp_path: Path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = _own_env(PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"), PGCITE_EMBEDDING_URL=url,
                   PGCITE_EMBEDDING_MODEL="fake-embed", PGCITE_EMBEDDING_RETRIES="1")
    done = pgcite("ingest", small, "--source", "docs", env=env)
    assert done.returncode == 1 and _error_lines(done.stderr) == [
        f"error: cannot reach the embedding server at {url} (APIConnectionError); start it or fix "
        "PGCITE_EMBEDDING_URL"], done.stderr
    assert _stored(database_url) == (0, 0, 0)


def test_a_slow_embedding_server_is_a_timeout_after_the_retries(small: str, database_url: str, tmp_path: Path):
    """It read `cannot reach the embedding server ... (APITimeoutError); start it or fix
    PGCITE_EMBEDDING_URL`, of a server that was up."""
    with FakeOpenAI(dimension=DIMENSION, vector=_slow(3)) as slow:
        env = _own_env(PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"), **_remote(slow),
                       PGCITE_EMBEDDING_TIMEOUT="0.5", PGCITE_EMBEDDING_RETRIES="1")
        done = pgcite("ingest", small, "--source", "docs", env=env)
        tries = len(slow.requests)
    assert done.returncode == 1 and _error_lines(done.stderr) == [
        f"error: the embedding server at {slow.url} did not answer within 0.5 s (2 tries); raise "
        "PGCITE_EMBEDDING_TIMEOUT or lower PGCITE_EMBEDDING_BATCH_SIZE, or check the server"], done.stderr
    assert tries == 2 and _stored(database_url) == (0, 0, 0)


def test_a_server_returning_too_few_vectors_is_refused_and_nothing_is_stored(small: str, database_url: str,
                                                                             tmp_path: Path):
    # Honest for the dimension probe and the fingerprint (1 and 3 texts); one short for the pages.
    with FakeOpenAI(dimension=DIMENSION, answered=lambda inputs: inputs[:-1] if len(inputs) > 3 else inputs) as liar:
        env = _own_env(PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"), **_remote(liar))
        done = pgcite("ingest", small, "--source", "docs", env=env)
    assert done.returncode == 1 and _error_lines(done.stderr) == [
        f"error: embedding server {liar.url} returned 14 vectors for 15 texts; check that it serves an embedding "
        "model"], done.stderr
    assert _stored(database_url)[1:] == (0, 0)


def test_a_first_ingest_that_fails_leaves_no_empty_source(small: str, database_url: str, tmp_path: Path):
    with FakeOpenAI(dimension=DIMENSION, answered=lambda inputs: inputs[:-1] if len(inputs) > 3 else inputs) as liar, \
            Pgcite(Settings(home=tmp_path / "home", database_url=database_url, embedding_url=liar.url,
                            embedding_model=liar.model)) as app:
        with pytest.raises(EmbeddingError, match="returned 14 vectors for 15 texts"):
            app.ingest(small, source="docs")
        assert app.sources() == []


def test_http_500s_are_retried_and_the_ingest_equals_a_clean_one(small: str, database_url: str, admin_dsn: str,
                                                                tmp_path: Path):
    with FakeOpenAI(dimension=DIMENSION, fail_with=[500, 503]) as flaky:
        env = _own_env(PGCITE_DATABASE_URL=database_url, PGCITE_HOME=str(tmp_path / "home"), **_remote(flaky))
        done = pgcite("ingest", small, "--source", "docs", env=env)
    assert done.returncode == 0 and "error" not in done.stderr, done.stderr
    assert "docs: 5 new" in done.stdout
    assert flaky.requests[0]["body"] == flaky.requests[1]["body"] == flaky.requests[2]["body"]  # the same, retried
    assert _content(database_url) == _clean_content(small, admin_dsn, tmp_path / "clean-home")



# --- hostile values over HTTP --------------------------------------------------------------------

HOSTILE_DOCS = {
    "guide.md": "# Guide\n\n## Rates\n\nThe spin rate is 40% of max_speed; it's set in C:\\widgets\\spin.cfg.\n",
    "under_score/a.md": "# A\n\nThe spin rate of folder A.\n",
    "underXscore/b.md": "# B\n\nThe spin rate of folder B.\n",  # what `_` would match as a LIKE pattern
}
ODD = "100% of max_speed: it's C:\\widgets ! & | :* '' \\"  # LIKE, quote, backslash and tsquery syntax
DEEP = 100_000


@pytest.fixture(scope="module")
def base(admin_dsn: str, tmp_path_factory) -> Iterator[str]:
    """The real server (uvicorn on loopback) over a database of its own, embedding with FakeOpenAI."""
    root = tmp_path_factory.mktemp("hostile")
    for name, text in HOSTILE_DOCS.items():
        (root / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / name).write_text(text)
    name = _fresh_database(admin_dsn)
    try:
        with FakeOpenAI(dimension=DIMENSION) as fake, \
                Pgcite(Settings(home=root / "home", database_url=make_conninfo(admin_dsn, dbname=name),
                                embedding_url=fake.url, embedding_model=fake.model)) as app:
            app.ingest(str(root / "docs"), source="w")
            app.warm_up()
            with running(app) as url:
                yield url
    finally:
        _drop_database(admin_dsn, name)


def _q(text: str) -> str:
    return urllib.parse.quote(text, safe="")


JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize("path, body, headers, status, kind", [
    ("/v1/search?q=spin&k=-1", None, {}, 422, "invalid_request"),
    ("/v1/search?q=spin&k=abc", None, {}, 422, "invalid_request"),
    ("/v1/search?q=spin&k=101", None, {}, 422, "invalid_request"),
    # NUL read `database: PostgreSQL text fields cannot contain NUL (0x00) bytes; check the server` (503)
    ("/v1/search?q=spin%00rate", None, {}, 400, "bad_request"),
    ("/v1/search?q=spin&path=guide%00", None, {}, 400, "bad_request"),
    ("/v1/search?q=spin&version=%00", None, {}, 400, "bad_request"),
    ("/v1/ask", {"question": "spin\x00rate"}, {}, 400, "bad_request"),
    ("/v1/ask", {"question": "spin?", "path": "a\x00", "stream": True}, {}, 400, "bad_request"),
    ("/v1/chat/completions", {"model": "pgcite", "messages": [{"role": "user", "content": "spin\x00"}]}, {}, 400,
     "bad_request"),
    ("/v1/ask", b'{"question": "spin\x00rate"}', JSON, 422, "invalid_request"),  # a raw NUL: not JSON
    # A lone surrogate is valid JSON but not Unicode: refused as a field's value (a 500 in a filter once).
    ("/v1/ask", b'{"question": "ok", "path": "\\ud800"}', JSON, 422, "invalid_request"),
    ("/v1/ask", b'{"question": "spin \\udfff rate"}', JSON, 422, "invalid_request"),
    ("/v1/chat/completions", b'{"model": "pgcite", "messages": [{"role": "user", "content": "ok \\ud800"}]}', JSON,
     400, "bad_request"),
    # Chat's question had no limit: 990,000 characters took 8 s of CPU and went into the log whole.
    ("/v1/chat/completions", {"model": "pgcite", "messages": [{"role": "user", "content": "x " * 300_000}]}, {},
     400, "bad_request"),
    ("/v1/ask", {"question": "spin?", "source": "s" * 201}, {}, 422, "invalid_request"),
    # Not UTF-8, or nested too deep for any parser: refused before any field is read (they read "http_error").
    ("/v1/ask", b'{"question": "spin \xff\xfe rate"}', JSON, 400, "bad_request"),
    ("/v1/ask", b'{"question": ' + b"[" * DEEP + b"]" * DEEP + b"}", JSON, 400, "bad_request"),
    ("/v1/ask", b'{"question": "spin", "source": ' + b'{"a": ' * DEEP + b"1" + b"}" * DEEP + b"}", JSON, 400,
     "bad_request"),
    ("/v1/ask", {"question": "x" * (1 << 20)}, {}, 413, "too_large"),  # a 1 MB question
    # Sent whole before the answer is read: the server closed with it unread, a connection reset (20 of 20).
    ("/v1/ask", {"question": "x" * 8_000_000}, {}, 413, "too_large"),
    ("/v1/ask", {"question": "x" * 900_000}, {}, 422, "invalid_request"),
    ("/v1/ask", b'{"question": "spin?"}', {"Content-Type": "text/plain"}, 422, "invalid_request"),
    ("/v1/ask", b"question=spin", {"Content-Type": "application/x-www-form-urlencoded"}, 422, "invalid_request"),
    ("/v1/ask", {"question": "spin?", "context": 0}, {}, 422, "invalid_request"),
    ("/v1/ask", {"question": "spin?", "context": "abc"}, {}, 422, "invalid_request"),
    # Source names are compared whole: no LIKE, no quoting to escape.
    ("/v1/search?q=spin&source=%25", None, {}, 404, "not_found"),
    ("/v1/search?q=spin&source=_", None, {}, 404, "not_found"),
    ("/v1/search?q=spin&source=" + _q("w'"), None, {}, 404, "not_found"),
    ("/v1/search?q=spin&source=" + _q("\\"), None, {}, 404, "not_found"),
    ("/v1/search?q=spin&source=w%00", None, {}, 400, "bad_request"),  # a NUL in a query: refused before a lookup
    ("/v1/ask", {"question": "spin?", "source": "_"}, {}, 404, "not_found"),
    ("/v1/ask", {"question": "spin?", "source": "nope"}, {}, 404, "not_found"),
    ("/v1/chat/completions", {"model": "pgcite:%", "messages": [{"role": "user", "content": "spin"}]}, {}, 404,
     "not_found"),
])
def test_hostile_values_get_a_json_error_with_the_right_status(base: str, path: str, body, headers: dict,
                                                               status: int, kind: str):
    reply = call(base, path, body, headers=headers)
    assert (reply.status, reply.body.get("error", {}).get("type")) == (status, kind), reply.text[:300]
    message = reply.body["error"]["message"]
    assert message and "\n" not in message and "Traceback" not in reply.text and "database" not in message


def _search(base: str, query: str) -> list[dict]:
    reply = call(base, "/v1/search?" + query)
    assert reply.status == 200, reply.text[:300]
    return reply.body["results"]


def test_odd_but_valid_values_get_a_correct_200(base: str):
    assert len(_search(base, "q=spin&k=100")) == 3  # every chunk there is
    found = _search(base, f"q={_q(ODD)}&mode=text")  # the operators are words, or nothing
    assert found and found[0]["path"] == "guide.md", found
    for question in ("!", "':*", "&&|!(", "%", "_", "\\"):
        assert len(_search(base, "q=" + _q(question))) == 3, question
    assert len(_search(base, "q=%FF%FE")) == 3  # not UTF-8: read as U+FFFD
    # A path prefix is a prefix: `%` and `_` match only themselves.
    assert _search(base, "q=spin&path=%25") == [] and _search(base, "q=spin&path=_") == []
    assert {h["path"] for h in _search(base, "q=spin&path=under_score/")} == {"under_score/a.md"}
    assert _search(base, "q=spin&version=" + _q("' OR '1'='1")) == []
    asked = call(base, "/v1/ask", {"question": ODD})
    assert asked.status == 200 and asked.body["question"] == ODD and isinstance(asked.body["refused"], bool)
    scoped = call(base, "/v1/ask", {"question": "What is the spin rate?", "path": "%"})
    assert scoped.status == 200 and scoped.body["refused"] and scoped.body["sources"] == []


def test_a_megabyte_url_is_refused_and_the_server_keeps_serving(base: str):
    """Over h11's limit the request never reaches pgcite: uvicorn drops the connection (or answers a
    plain-text 400), and the next request is served as usual."""
    try:
        reply = call(base, "/v1/search?q=" + "x" * (1 << 20))
    except (ConnectionError, urllib.error.URLError):
        pass
    else:
        assert reply.status == 400, reply.text[:300]
    assert len(_search(base, "q=spin")) == 3
