"""The real pgcite HTTP server (uvicorn) on a free loopback port, in a thread of the test process."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Iterator

import pytest
import uvicorn

from psycopg.conninfo import make_conninfo

from pgcite.server.app import create_app
from pgcite.config import Settings
from pgcite.core import Pgcite
from tests.conftest import _drop_database, _fresh_database


def write_folder(root: Path, docs: dict[str, str]) -> str:
    root.mkdir()
    for name, text in docs.items():
        (root / name).write_text(text)
    return str(root)


@contextlib.contextmanager
def warm_app(admin_dsn: str, embedder, root: Path, sources: dict[str, tuple[dict[str, str], str]],
             **settings) -> Iterator[Pgcite]:
    """A Pgcite on a database of its own with `sources` (name -> (docs, base URL)) ingested and
    the model loaded; the database is dropped afterwards."""
    name = _fresh_database(admin_dsn)
    try:
        with Pgcite(Settings(home=root / "home", database_url=make_conninfo(admin_dsn, dbname=name), **settings),
                    embedder=embedder) as app:
            for source, (docs, base_url) in sources.items():
                app.ingest(write_folder(root / source, docs), source=source, base_url=base_url)
            app.warm_up()
            yield app
    finally:
        _drop_database(admin_dsn, name)


def served(sources: dict[str, tuple[dict[str, str], str]], **settings):
    """Module fixtures `core` (a warm_app of `sources`) and `base` (its server's URL):
    `core, base = served({...})` in a test module."""

    @pytest.fixture(scope="module")
    def core(admin_dsn: str, embedder, tmp_path_factory) -> Iterator[Pgcite]:
        with warm_app(admin_dsn, embedder, tmp_path_factory.mktemp("app"), sources, **settings) as app:
            yield app

    @pytest.fixture(scope="module")
    def base(core: Pgcite) -> Iterator[str]:
        with running(core) as url:
            yield url

    return core, base


@contextlib.contextmanager
def running(core: Pgcite) -> Iterator[str]:
    """Serve `core` until the block ends; yields the base URL (http://127.0.0.1:PORT)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(core), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the pgcite server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict  # the JSON body ({} when it is not JSON)
    text: str
    headers: Message


def call(base: str, path: str, body: dict | bytes | None = None, *, key: str | None = None,
         method: str | None = None, headers: dict | None = None) -> Reply:
    """One request: a dict body is sent as JSON, bytes as they are; `key` as a bearer token."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    sent = {**({"Content-Type": "application/json"} if isinstance(body, dict) else {}),
            **({"Authorization": f"Bearer {key}"} if key else {}), **(headers or {})}
    request = urllib.request.Request(base + path, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, text, got = response.status, response.read().decode(), response.headers
    except urllib.error.HTTPError as exc:
        status, text, got = exc.code, exc.read().decode(), exc.headers
    return Reply(status, json.loads(text) if "json" in (got["Content-Type"] or "") else {}, text, got)
