"""When the database goes away under a running server (the embedded PostgreSQL killed with -9): one
log line, /readyz and every request answer 503 with Retry-After at once instead of after the pool's
10 s, the server starts the embedded PostgreSQL again, and service resumes within seconds."""

from __future__ import annotations

import logging
import os
import signal
import time

import pytest

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.store import server
from tests.http_server import call, running

pytestmark = pytest.mark.slow

DOCS = "# Spinning\n\n## Spin rate\n\nThe default spin rate is 40 turns per second.\n"


def test_the_server_rides_out_its_embedded_database_dying(embedder, tmp_path, caplog):
    home = tmp_path / "home"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "spin.md").write_text(DOCS)
    caplog.set_level(logging.WARNING)
    try:
        with Pgcite(Settings(home=home), embedder=embedder) as app, running(app) as base:
            app.ingest(str(tmp_path / "docs"), source="widgets")
            app.warm_up()
            assert call(base, "/readyz").status == 200
            os.kill(server.running_pid(home), signal.SIGKILL)
            time.sleep(0.5)
            first = call(base, "/v1/search?q=spin+rate")  # meets the dead connection: the outage starts
            assert first.status == 503 and first.headers["Retry-After"]
            timings = []
            for path in ("/readyz", "/v1/search?q=spin+rate", "/v1/sources"):
                started = time.monotonic()
                reply = call(base, path)
                timings.append(time.monotonic() - started)
                if reply.status == 200:
                    break  # already back (the watcher was quick)
                assert reply.status == 503 and reply.headers["Retry-After"] == "2", reply.text
                assert "database unavailable" in reply.body["error"]["message"]
            assert max(timings) < 1.0, timings
            deadline = time.monotonic() + 30
            while call(base, "/readyz").status != 200:
                assert time.monotonic() < deadline, "the server did not come back within 30 s"
                time.sleep(0.2)
            assert time.monotonic() - deadline + 30 < 15  # back within seconds of the restart
            assert call(base, "/v1/search?q=spin+rate").body["results"][0]["path"] == "spin.md"
    finally:
        server.stop(home)
    outage = [r.getMessage() for r in caplog.records if r.name == "pgcite.store.health"]
    assert len([m for m in outage if m.startswith("database unavailable")]) == 1, outage
    assert any(m.startswith("database available again") for m in outage), outage
    assert not [r for r in caplog.records if r.exc_info], "no traceback in the log"
    assert not [r for r in caplog.records if r.name.startswith("psycopg")], "nor the pool's reconnect attempts"


def test_a_query_cancelled_by_a_timeout_is_not_an_outage(settings, embedder):
    import psycopg

    with Pgcite(settings, embedder=embedder) as app:
        with pytest.raises(psycopg.errors.QueryCanceled), app.reader() as store, store.conn.transaction():
            store.conn.execute("SET LOCAL statement_timeout = 1")
            store.conn.execute("SELECT pg_sleep(1)")
        assert app.health.down_since is None
        assert app.status().schema_current  # served at once, no 503
