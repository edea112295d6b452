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
from typing import Iterator

import uvicorn

from pgcite.api import create_app
from pgcite.core import Pgcite


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
