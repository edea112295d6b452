"""`pgcite serve --workers N`: N processes on one port, each with its own model, sharing jobs and
limits through PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from pgcite.core import Pgcite
from tests.http_server import call, served

pytestmark = pytest.mark.slow

DOCS = {"spin.md": "# Spinning\n\n## Spin rate\n\nThe default spin rate is 40 turns per second.\n"}
core, base = served({"widgets": (DOCS, "https://widgets.example/")})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(core: Pgcite, tmp_path, *args: str, **env: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """`pgcite serve ARGS` on a free port with `env` added, until the block ends: its URL and process. The
    server must stop cleanly, with no traceback in its output."""
    port = _free_port()
    environ = {**os.environ, "PGCITE_DATABASE_URL": core.settings.database_url, "PGCITE_HOME": str(tmp_path), **env}
    server = subprocess.Popen([sys.executable, "-m", "pgcite", "serve", "--port", str(port), *args],
                              env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if call(url, "/readyz").status == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.5)
        yield url, server
    finally:
        server.send_signal(signal.SIGINT)
        try:
            output, _ = server.communicate(timeout=60)
        finally:
            server.kill()
    assert "Traceback" not in output, output[-3000:]


def test_two_workers_serve_one_port(core: Pgcite, tmp_path):
    key = core.create_key("workers-reader")
    try:
        with serving(core, tmp_path, "--workers", "2", PGCITE_SERVE_RATE_LIMIT="5") as (url, server):
            workers = [p for p in psutil.Process(server.pid).children(recursive=True) if "python" in p.name().lower()]
            assert len(workers) >= 2, workers
            statuses = [call(url, "/v1/search?q=spin+rate", key=key).status for _ in range(7)]
            assert statuses == [200] * 5 + [429] * 2  # one limit, whichever worker answered
    finally:
        core.revoke_key("workers-reader")


def test_a_client_cannot_choose_its_address_with_x_forwarded_for(core: Pgcite, tmp_path):
    """Behind no proxy the operator named (PGCITE_SERVE_TRUSTED_PROXIES), X-Forwarded-For is the
    client's own word: rotating it must not buy a browser key's visitor a fresh per-address limit."""
    origin = "https://docs.widgets.example"
    key = core.create_key("forwarded-site", origins=[origin])
    try:
        with serving(core, tmp_path, PGCITE_SERVE_RATE_LIMIT="3") as (url, _):
            statuses = [call(url, "/v1/search?q=spin+rate", key=key,
                             headers={"Origin": origin, "X-Forwarded-For": f"198.51.100.{n}"}).status
                        for n in range(5)]
            assert statuses == [200] * 3 + [429] * 2
    finally:
        core.revoke_key("forwarded-site")
