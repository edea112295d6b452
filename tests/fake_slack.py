"""A real HTTP server speaking Slack's Web API wire format on loopback, for slack_sdk's WebClient
(`base_url=fake.url`): `POST /api/<method>` with a form or JSON body (GET with a query for
conversations.replies), `Authorization: Bearer <token>`, answered `{"ok": true, ...}` with HTTP 200, or
`{"ok": false, "error": ...}`. It keeps the messages posted and updated, per channel, so
conversations.replies reads back a thread as Slack would.

    with FakeSlack() as fake:
        fake.fail("chat.update", 429, times=2, retry_after=1)   # the next two chat.update: 429
        fake.fail("chat.update", 500, times=1)                  # then one 500
        ts = fake.user_message("C1", "U1", "<@UBOT> hello")     # a person's message, as Slack stores it
        fake.calls                                              # [(method, args)] in order

And `sign(secret, body)`: the headers Slack sends with a request to an app, signed as Slack signs them.

`FakeSocketMode`: Slack's Socket Mode end, a WebSocket server (RFC 6455, on the standard library) on
loopback; `FakeSlack(socket=...)` answers `apps.connections.open` (with the app-level token APP_TOKEN)
with its `ws://` URL.

    with FakeSocketMode() as socket, FakeSlack(socket=socket) as fake:
        envelope_id = socket.deliver("events_api", payload)     # then socket.acked(envelope_id)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket as sockets
import struct
import threading
import time
import urllib.parse
import uuid
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "xoxb-test-token"
APP_TOKEN = "xapp-1-A1-test-token"
BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM = "T1"


def sign(secret: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """X-Slack-Request-Timestamp and X-Slack-Signature: v0= HMAC-SHA256 of v0:{timestamp}:{body}."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


class FakeSlack:
    def __init__(self, socket: FakeSocketMode | None = None) -> None:
        self.socket = socket
        self.calls: list[tuple[str, dict]] = []
        self.messages: dict[str, list[dict]] = defaultdict(list)  # channel -> messages, oldest first
        self._failures: dict[str, deque[tuple[int, int | None, str | None]]] = defaultdict(deque)
        self._lock = threading.Condition()
        self._clock = 1_700_000_000.0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                self._answer(parts.path, dict(urllib.parse.parse_qsl(parts.query)))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                kind = self.headers.get("Content-Type") or ""
                args = json.loads(raw or "{}") if "json" in kind else dict(urllib.parse.parse_qsl(raw))
                parts = urllib.parse.urlsplit(self.path)
                self._answer(parts.path, {**dict(urllib.parse.parse_qsl(parts.query)), **args})

            def _answer(self, path: str, args: dict) -> None:
                method = path.removeprefix("/api/")
                token = APP_TOKEN if method == "apps.connections.open" else TOKEN
                if self.headers.get("Authorization") != f"Bearer {token}":
                    status, body, headers = 200, {"ok": False, "error": "invalid_auth"}, {}
                else:
                    status, body, headers = fake._call(method, args)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/api/"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeSlack:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- what a test tells it ----------------------------------------------------------------

    def fail(self, method: str, status: int, *, times: int = 1, retry_after: int | None = None,
             error: str | None = None) -> None:
        """The next `times` calls of `method` fail: HTTP `status` (200: Slack's own refusal, `error`)."""
        for _ in range(times):
            self._failures[method].append((status, retry_after, error))

    def next_ts(self) -> str:
        with self._lock:
            self._clock += 1
            return f"{self._clock:.6f}"

    def user_message(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> str:
        """A person's message, stored as Slack stores it; its ts."""
        ts = self.next_ts()
        with self._lock:
            self.messages[channel].append(
                {"type": "message", "user": user, "text": text, "ts": ts, **({"thread_ts": thread_ts} if thread_ts else {})}
            )
        return ts

    def calls_of(self, method: str) -> list[dict]:
        with self._lock:
            return [args for name, args in self.calls if name == method]

    def message(self, channel: str, ts: str) -> dict | None:
        with self._lock:
            return next((m for m in self.messages[channel] if m["ts"] == ts), None)

    def wait_for(self, predicate, timeout: float = 30.0):
        """Wait until predicate() is truthy (checked after each call); its value."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not (value := predicate()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"the fake Slack did not see it within {timeout} s; calls: {self.calls}")
                self._lock.wait(remaining)
            return value

    # --- the Web API -------------------------------------------------------------------------

    def _call(self, method: str, args: dict) -> tuple[int, dict, dict]:
        with self._lock:
            try:
                self.calls.append((method, args))
                if self._failures[method]:
                    status, retry_after, error = self._failures[method].popleft()
                    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
                    error = error or ("ratelimited" if status == 429 else "internal_error")
                    return status, {"ok": False, "error": error}, headers
                return 200, self._ok(method, args), {}
            finally:
                self._lock.notify_all()

    def _ok(self, method: str, args: dict) -> dict:
        if method == "apps.connections.open":
            if self.socket is None:
                return {"ok": False, "error": "socket_mode_not_enabled"}
            return {"ok": True, "url": self.socket.url}
        if method == "auth.test":
            return {"ok": True, "url": "https://t1.slack.com/", "team": "Team", "user": "pgcite",
                    "team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID, "is_enterprise_install": False}
        channel = args.get("channel", "")
        if method == "chat.postMessage":
            self._clock += 1
            message = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "ts": f"{self._clock:.6f}",
                       "text": args.get("text", ""), "blocks": args.get("blocks", [])}
            if args.get("thread_ts"):
                message["thread_ts"] = args["thread_ts"]
            self.messages[channel].append(message)
            return {"ok": True, "channel": channel, "ts": message["ts"], "message": message}
        if method == "chat.update":
            message = next((m for m in self.messages[channel] if m["ts"] == args.get("ts")), None)
            if message is None:
                return {"ok": False, "error": "message_not_found"}
            message.update(text=args.get("text", ""), blocks=args.get("blocks", []))
            return {"ok": True, "channel": channel, "ts": message["ts"], "text": message["text"]}
        if method == "chat.delete":
            message = next((m for m in self.messages[channel] if m["ts"] == args.get("ts")), None)
            if message is None:
                return {"ok": False, "error": "message_not_found"}
            self.messages[channel].remove(message)
            return {"ok": True, "channel": channel, "ts": message["ts"]}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"{self._clock:.6f}"}
        if method == "conversations.replies":
            thread = args.get("ts")
            replies = [m for m in self.messages[channel] if m["ts"] == thread or m.get("thread_ts") == thread]
            return {"ok": True, "messages": replies, "has_more": False}
        if method == "views.open":
            return {"ok": True, "view": {"id": "V1", **(args.get("view") or {})}}
        return {"ok": False, "error": "unknown_method"}


class FakeSocketMode:
    """A WebSocket server speaking Slack's Socket Mode: `hello` on connecting, then the envelopes a
    test delivers; it records the acks (`{"envelope_id": ...}`) and answers pings."""

    _GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    def __init__(self) -> None:
        self._listener = sockets.create_server(("127.0.0.1", 0))
        self.url = f"ws://127.0.0.1:{self._listener.getsockname()[1]}/link/?ticket=t-1&app_id=A1"
        self.acks: list[dict] = []
        self._clients: list[sockets.socket] = []
        self._lock = threading.Condition()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> FakeSocketMode:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()
        with self._lock:
            for client in self._clients:
                client.close()

    def connected(self, timeout: float = 30.0) -> None:
        self._wait(lambda: self._clients, timeout, "no client connected")

    def deliver(self, kind: str, payload: dict) -> str:
        """An envelope (`events_api`, `interactive` ...) to the newest connection; its envelope id."""
        envelope_id = str(uuid.uuid4())
        envelope = {"envelope_id": envelope_id, "type": kind, "payload": payload,
                    "accepts_response_payload": kind != "events_api", "retry_attempt": 0, "retry_reason": ""}
        with self._lock:
            self._send(self._clients[-1], 0x1, json.dumps(envelope).encode())
        return envelope_id

    def acked(self, envelope_id: str, timeout: float = 10.0) -> dict:
        return self._wait(lambda: next((a for a in self.acks if a.get("envelope_id") == envelope_id), None),
                          timeout, f"no ack of {envelope_id}")

    def _wait(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        with self._lock:
            while not (value := predicate()):
                if time.monotonic() > deadline:
                    raise AssertionError(f"the fake Socket Mode: {what} within {timeout} s")
                self._lock.wait(0.1)
            return value

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: sockets.socket) -> None:
        reader = client.makefile("rb")
        headers = {}
        for line in iter(reader.readline, b"\r\n"):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + self._GUID).encode()).digest())
        client.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        with self._lock:
            self._send(client, 0x1, json.dumps({"type": "hello", "num_connections": 1,
                                                "connection_info": {"app_id": "A1"}}).encode())
            self._clients.append(client)
            self._lock.notify_all()
        try:
            while (frame := self._read(reader)) is not None:
                opcode, data = frame
                with self._lock:
                    if opcode == 0x1:
                        self.acks.append(json.loads(data))
                        self._lock.notify_all()
                    elif opcode == 0x9:
                        self._send(client, 0xA, data)
                    elif opcode == 0x8:
                        self._send(client, 0x8, data[:2])
                        return
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                if client in self._clients:
                    self._clients.remove(client)

    @staticmethod
    def _read(reader) -> tuple[int, bytes] | None:
        head = reader.read(2)
        if len(head) < 2:
            return None
        opcode, length = head[0] & 0x0F, head[1] & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", reader.read(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", reader.read(8))
        mask = reader.read(4) if head[1] & 0x80 else b"\0\0\0\0"
        data = reader.read(length)
        return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data))

    @staticmethod
    def _send(client: sockets.socket, opcode: int, data: bytes) -> None:
        n = len(data)
        size = bytes([n]) if n < 126 else bytes([126]) + struct.pack("!H", n) if n < 65536 else \
            bytes([127]) + struct.pack("!Q", n)
        client.sendall(bytes([0x80 | opcode]) + size + data)
