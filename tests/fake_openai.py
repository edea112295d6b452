"""A real HTTP server speaking OpenAI's wire protocol, for what cannot run here (a remote model
service). Tests script its answers; vectors are deterministic functions of the text."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def fake_vector(text: str, dimension: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dimension).astype(np.float32).tolist()


@dataclass
class FakeOpenAI:
    dimension: int = 8
    model: str = "fake-embed"
    # Status codes to answer before behaving (e.g. [503, 503] = two failures, then success).
    fail_with: list[int] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: dict) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                fake.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if fake.fail_with:
                    status = fake.fail_with.pop(0)
                    self._send(status, {"error": {"message": f"scripted {status}", "type": "server_error"}})
                    return
                if self.path.rstrip("/") != "/v1/embeddings":
                    self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                    return
                if body.get("model") != fake.model:
                    self._send(404, {"error": {"message": f"model {body.get('model')} not found",
                                               "type": "invalid_request_error"}})
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, fake.dimension)}
                        for i, t in enumerate(inputs)]
                self._send(200, {"object": "list", "data": data, "model": fake.model,
                                 "usage": {"prompt_tokens": 0, "total_tokens": 0}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port() -> int:
    """A loopback port with nothing listening."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
