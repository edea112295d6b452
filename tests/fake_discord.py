"""A real HTTP server speaking Discord's REST API wire format on loopback, for pgcite's DiscordApi
(`discord_api_url=fake.url`): an interaction's original message edited and read back
(`PATCH`/`GET /webhooks/{application}/{token}/messages/@original`), a follow-up created
(`POST /webhooks/{application}/{token}`), and application commands put, globally or in a guild
(`PUT /applications/{application}[/guilds/{guild}]/commands`, with `Authorization: Bot <token>`).
Errors are Discord's JSON (`{"message", "code"}`); a 429 carries `retry_after` in its body and
`Retry-After` in its headers, as Discord's do.

    with FakeDiscord() as fake:
        fake.fail("edit", 429, times=2, retry_after=0.5)    # the next two edits: 429
        fake.fail("edit", 500, times=1)                     # then one 500
        fake.original("token")                              # the message as it stands
        fake.calls                                          # [(route, method, path, body)] in order

And `Signer`: an Ed25519 key pair; `signer.headers(body)` is what Discord sends with an interaction.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

APPLICATION = "1111111111111111111"
BOT_TOKEN = "bot-token-for-tests"

_ORIGINAL = re.compile(rf"^/api/v10/webhooks/{APPLICATION}/([^/]+)/messages/@original$")
_FOLLOW_UP = re.compile(rf"^/api/v10/webhooks/{APPLICATION}/([^/]+)$")
_COMMANDS = re.compile(rf"^/api/v10/applications/{APPLICATION}(?:/guilds/(\d+))?/commands$")


class Signer:
    def __init__(self) -> None:
        self.key = Ed25519PrivateKey.generate()
        self.public_hex = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    def headers(self, body: bytes, timestamp: int | None = None) -> dict[str, str]:
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signature = self.key.sign(stamp.encode() + body).hex()
        return {"X-Signature-Ed25519": signature, "X-Signature-Timestamp": stamp}


class FakeDiscord:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, object]] = []
        self.originals: dict[str, dict] = {}  # token -> the interaction's message
        self.follow_ups: dict[str, list[dict]] = defaultdict(list)
        self.commands: dict[str, list[dict]] = {}  # "" (global) or a guild id -> commands
        self.deleted: set[str] = set()
        self._failures: dict[str, deque[tuple[int, float | None]]] = defaultdict(deque)
        self._lock = threading.Condition()
        self._ids = 1_200_000_000_000_000_000
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _handle(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else None
                status, answer, headers = fake._call(self.command, self.path, body, self.headers.get("Authorization"))
                data = json.dumps(answer).encode() if answer is not None else b""
                self.send_response(status)
                if data:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/api/v10"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeDiscord:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- what a test tells it ----------------------------------------------------------------

    def fail(self, route: str, status: int, *, times: int = 1, retry_after: float | None = None) -> None:
        """The next `times` calls of `route` ("edit", "follow_up", "commands") fail with `status`."""
        for _ in range(times):
            self._failures[route].append((status, retry_after))

    def delete_original(self, token: str) -> None:
        """Someone deleted the interaction's message: editing it is 404 Unknown Message."""
        with self._lock:
            self.deleted.add(token)

    def original(self, token: str) -> dict | None:
        with self._lock:
            return self.originals.get(token)

    def calls_of(self, route: str, token: str | None = None) -> list[tuple[str, str, object]]:
        with self._lock:
            return [(m, p, b) for r, m, p, b in self.calls if r == route and (token is None or f"/{token}" in p)]

    def wait_for(self, predicate, timeout: float = 30.0):
        """Wait until predicate() is truthy (checked after each call); its value."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not (value := predicate()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"the fake Discord did not see it within {timeout} s; calls: {self.calls}")
                self._lock.wait(remaining)
            return value

    # --- the REST API ------------------------------------------------------------------------

    def _message(self, body: dict) -> dict:
        self._ids += 1
        return {"id": str(self._ids), "type": 20, "channel_id": "1", "application_id": APPLICATION,
                "author": {"id": APPLICATION, "username": "pgcite", "bot": True},
                **{k: body.get(k) for k in ("content", "components", "allowed_mentions", "flags")}}

    def _call(self, method: str, path: str, body: object, auth: str | None) -> tuple[int, object, dict]:
        with self._lock:
            try:
                route, token, guild = "unknown", "", None
                if m := _ORIGINAL.match(path):
                    route, token = "edit" if method == "PATCH" else "get", m.group(1)
                elif (m := _FOLLOW_UP.match(path)) and method == "POST":
                    route, token = "follow_up", m.group(1)
                elif (m := _COMMANDS.match(path)) and method == "PUT":
                    route, guild = "commands", m.group(1) or ""
                self.calls.append((route, method, path, body))
                if self._failures[route]:
                    status, retry_after = self._failures[route].popleft()
                    if status == 429:
                        wait = 1.0 if retry_after is None else retry_after
                        return 429, {"message": "You are being rate limited.", "retry_after": wait, "global": False,
                                     "code": 0}, {"Retry-After": str(int(wait + 0.999)), "X-RateLimit-Scope": "user"}
                    return status, {"message": f"{status}: Internal Server Error", "code": 0}, {}
                return self._ok(route, token, guild, body, auth)
            finally:
                self._lock.notify_all()

    def _ok(self, route: str, token: str, guild: str | None, body, auth: str | None) -> tuple[int, object, dict]:
        if route in ("edit", "get"):
            if token in self.deleted:
                return 404, {"message": "Unknown Message", "code": 10008}, {}
            if route == "get":
                found = self.originals.get(token)
                return (200, found, {}) if found else (404, {"message": "Unknown Message", "code": 10008}, {})
            # The deferred response made the message; an edit sets what it says.
            message = self.originals.setdefault(token, self._message({}))
            message.update({k: v for k, v in body.items() if k in ("content", "components", "allowed_mentions",
                                                                   "flags")})
            return 200, message, {}
        if route == "follow_up":
            message = self._message(body)
            self.follow_ups[token].append(message)
            return 200, message, {}
        if route == "commands":
            if auth != f"Bot {BOT_TOKEN}":
                return 401, {"message": "401: Unauthorized", "code": 0}, {}
            made = []
            for command in body:
                self._ids += 1
                made.append({"id": str(self._ids), "application_id": APPLICATION, "version": str(self._ids),
                             **({"guild_id": guild} if guild else {}), "description": "", **command})
            self.commands[guild or ""] = made
            return 200, made, {}
        return 404, {"message": "404: Not Found", "code": 0}, {}
