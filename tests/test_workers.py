"""`pgcite serve --workers N`: N processes on one port, each with its own model, sharing jobs and
limits through PostgreSQL."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

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


def test_two_workers_serve_one_port(core: Pgcite, tmp_path):
    port = _free_port()
    env = {**os.environ, "PGCITE_DATABASE_URL": core.settings.database_url, "PGCITE_HOME": str(tmp_path),
           "PGCITE_SERVE_RATE_LIMIT": "5"}
    server = subprocess.Popen([sys.executable, "-m", "pgcite", "serve", "--port", str(port), "--workers", "2"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if call(url, "/readyz").status == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "the workers did not come up"
            time.sleep(0.5)
        workers = [p for p in psutil.Process(server.pid).children(recursive=True) if "python" in p.name().lower()]
        assert len(workers) >= 2, workers
        key = core.create_key("workers-reader")
        statuses = [call(url, "/v1/search?q=spin+rate", key=key).status for _ in range(7)]
        assert statuses == [200] * 5 + [429] * 2  # one limit, whichever worker answered
    finally:
        server.send_signal(signal.SIGINT)
        try:
            output, _ = server.communicate(timeout=60)
        finally:
            server.kill()
        core.revoke_key("workers-reader")
    assert "Traceback" not in output, output[-3000:]


def test_a_client_cannot_choose_its_address_with_x_forwarded_for(core: Pgcite, tmp_path):
    """Behind no proxy the operator named (PGCITE_SERVE_TRUSTED_PROXIES), X-Forwarded-For is the
    client's own word: rotating it must not buy a browser key's visitor a fresh per-address limit."""
    port = _free_port()
    env = {**os.environ, "PGCITE_DATABASE_URL": core.settings.database_url, "PGCITE_HOME": str(tmp_path),
           "PGCITE_SERVE_RATE_LIMIT": "3"}
    server = subprocess.Popen([sys.executable, "-m", "pgcite", "serve", "--port", str(port)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    origin = "https://docs.widgets.example"
    key = core.create_key("forwarded-site", origins=[origin])
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
        statuses = [call(url, "/v1/search?q=spin+rate", key=key,
                         headers={"Origin": origin, "X-Forwarded-For": f"198.51.100.{n}"}).status for n in range(5)]
        assert statuses == [200] * 3 + [429] * 2
    finally:
        server.send_signal(signal.SIGINT)
        try:
            output, _ = server.communicate(timeout=60)
        finally:
            server.kill()
        core.revoke_key("forwarded-site")
    assert "Traceback" not in output, output[-3000:]
