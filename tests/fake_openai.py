"""A real HTTP server speaking OpenAI's wire protocol, for what cannot run here (a remote model
service). Vectors are deterministic functions of the text; chat answers are scripted.

Chat scripting: queue replies with `fake.script(...)`; each chat request takes the next one.

    with FakeOpenAI() as fake:
        fake.script(
            "Run `pgcite ingest` [1].",            # a reply, streamed in 4-character deltas
            Reply("<think>hm</think>Yes [2].", split=3, usage=False),  # no usage chunk
            500,                                    # HTTP 500 (the client retries it)
            Delay(5),                               # no answer for 5 s (longer than a timeout)
            Reply("Half an ans", drop_after=2),     # connection dropped after 2 deltas
        )
        settings = Settings(chat_url=fake.url, chat_model=fake.chat_model)
        ...
        fake.chat_requests[-1]["messages"]          # what was sent

Streaming follows OpenAI (and vLLM): chunked HTTP/1.1, `data: {json}\\n\\n` events of
`chat.completion.chunk` objects (role first, then content deltas, then finish_reason), a
last chunk with empty `choices` and `usage` when `stream_options.include_usage` is set, then
`data: [DONE]\\n\\n`. Without `stream` the reply is one `chat.completion` object.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Sequence, Union

import numpy as np


def fake_vector(text: str, dimension: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dimension).astype(np.float32).tolist()


def split_every(text: str, size: int) -> list[str]:
    """`text` in pieces of `size` characters (mid-word, mid-[n], mid-<think> as it falls)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass
class Reply:
    """One scripted chat answer.

    text: the answer's `content`. split: characters per streamed delta, or the deltas
    themselves (they must join to `text`). reasoning: streamed first as `reasoning_content`
    deltas (what vLLM's reasoning parsers send; a client should ignore it). usage: send the
    usage chunk when asked for it (False mimics a server that ignores `stream_options`);
    prompt_tokens / completion_tokens: the counts reported (default: words sent / deltas).
    pause: seconds between deltas. drop_after: close the connection after that many content
    deltas, mid-stream, without finishing the response. error_after: after that many content
    deltas, send an error event (`data: {"error": {...}}`, as vLLM does) and end the stream.
    finish_reason: as sent at the end."""

    text: str
    split: int | Sequence[str] = 4
    reasoning: str = ""
    usage: bool = True
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    pause: float = 0.0
    drop_after: int | None = None
    error_after: int | None = None
    finish_reason: str = "stop"

    def deltas(self) -> list[str]:
        if isinstance(self.split, int):
            return split_every(self.text, self.split)
        pieces = list(self.split)
        assert "".join(pieces) == self.text, "Reply.split pieces must join to Reply.text"
        return pieces


@dataclass
class Status:
    """Fail the request with this HTTP status and an OpenAI-style error body.
    retry_after: seconds, sent as `retry-after-ms` (which the openai client honours)."""

    code: int
    message: str = ""
    retry_after: float | None = None


@dataclass
class Delay:
    """Send nothing for `seconds` (longer than the client's timeout to test it), then `then`."""

    seconds: float
    then: Union[str, Reply, int, Status, None] = None


Scripted = Union[str, Reply, int, Status, Delay]


def _word_count(messages: list[dict]) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in messages)


@dataclass
class FakeOpenAI:
    dimension: int = 8
    model: str = "fake-embed"
    chat_model: str = "fake-chat"
    rerank_model: str = "fake-rerank"
    # How /v1/rerank answers: "cohere" ({"results": [{"index", "relevance_score"}]}, as vLLM, Jina
    # and Cohere do) or "tei" ([{"index", "score"}], text-embeddings-inference's).
    rerank_shape: str = "cohere"
    # Status codes to answer before behaving, on any route (e.g. [503, 503] = two failures).
    fail_with: list[int] = field(default_factory=list)
    # Every request: {"path", "body", "auth"}, in arrival order (failed ones included).
    requests: list[dict] = field(default_factory=list)
    # Chat replies still to give; `script()` appends. Plain str = Reply(str), int = Status(int).
    replies: deque = field(default_factory=deque)
    # Given when the script is empty; None answers HTTP 400 "no scripted reply left".
    default_reply: str | Reply | None = None
    # When set, requests without "Authorization: Bearer <api_key>" get HTTP 401.
    api_key: str | None = None
    # How each streamed chat reply ended: "finished", or "aborted" when the client hung up.
    outcomes: list[str] = field(default_factory=list)
    # The vector of a text, as (text, dimension) -> list; default fake_vector. A lying server's.
    vector: Callable[[str, int], list[float]] = fake_vector
    # The inputs of an embeddings request that get a vector, default all; a lying server's drop some.
    answered: Callable[[list[str]], list[str]] = lambda inputs: inputs

    def __post_init__(self) -> None:
        fake = self
        self._lock = threading.Lock()
        self._closing = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, chunked streaming, as real servers

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def handle(self) -> None:
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):  # the client closed a kept-alive connection
                    pass

            def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def _error(self, status: int, message: str, retry_after: float | None = None) -> None:
                kind = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError"}.get(
                    status, "server_error" if status >= 500 else "invalid_request_error")
                headers = {"retry-after-ms": str(int(retry_after * 1000))} if retry_after is not None else None
                self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": status}},
                           headers)

            def do_POST(self) -> None:
                try:
                    self._post()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    self.close_connection = True

            def _post(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                auth = self.headers.get("Authorization")
                with fake._lock:
                    fake.requests.append({"path": self.path, "body": body, "auth": auth})
                    failure = fake.fail_with.pop(0) if fake.fail_with else None
                if failure is not None:
                    self._error(failure, f"scripted {failure}")
                    return
                if fake.api_key is not None and auth != f"Bearer {fake.api_key}":
                    self._error(401, "Incorrect API key provided.")
                    return
                route = self.path.rstrip("/")
                if route == "/v1/embeddings":
                    self._embeddings(body)
                elif route == "/v1/chat/completions":
                    self._chat(body)
                elif route == "/v1/rerank":
                    self._rerank(body)
                else:
                    self._error(404, "not found")

            def _embeddings(self, body: dict) -> None:
                if body.get("model") != fake.model:
                    self._error(404, f"model {body.get('model')} not found")
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i, "embedding": fake.vector(t, fake.dimension)}
                        for i, t in enumerate(fake.answered(inputs))]
                self._send(200, {"object": "list", "data": data, "model": fake.model,
                                 "usage": {"prompt_tokens": 0, "total_tokens": 0}})

            def _rerank(self, body: dict) -> None:
                # A stand-in cross-encoder: the share of the query's words in each text.
                if body.get("model") != fake.rerank_model:
                    self._error(404, f"model {body.get('model')} not found")
                    return
                words = set(re.findall(r"\w+", body["query"].lower()))
                texts = body["documents"] if fake.rerank_shape == "cohere" else body["texts"]
                scores = [len(words & set(re.findall(r"\w+", t.lower()))) / max(len(words), 1) for t in texts]
                ranked = sorted(range(len(texts)), key=lambda i: -scores[i])[: body.get("top_n") or len(texts)]
                if fake.rerank_shape == "tei":
                    self._send(200, [{"index": i, "score": scores[i]} for i in ranked])  # type: ignore[arg-type]
                else:
                    self._send(200, {"model": fake.rerank_model,
                                     "results": [{"index": i, "relevance_score": scores[i]} for i in ranked]})

            def _chat(self, body: dict) -> None:
                if body.get("model") != fake.chat_model:  # vLLM's wording
                    self._error(404, f"The model `{body.get('model')}` does not exist.")
                    return
                with fake._lock:
                    item: Scripted | None = fake.replies.popleft() if fake.replies else fake.default_reply
                if item is None:
                    self._error(400, "fake server: no scripted chat reply left; call fake.script(...)")
                    return
                while isinstance(item, Delay):
                    fake._closing.wait(item.seconds)
                    item = item.then if item.then is not None else ""
                if isinstance(item, int):
                    item = Status(item)
                if isinstance(item, Status):
                    self._error(item.code, item.message or f"scripted {item.code}", item.retry_after)
                    return
                reply = Reply(item) if isinstance(item, str) else item
                if body.get("stream"):
                    self._stream(body, reply)
                else:
                    self._complete(body, reply)

            def _usage(self, body: dict, reply: Reply, deltas: int) -> dict:
                prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _word_count(body["messages"])
                completion = reply.completion_tokens if reply.completion_tokens is not None else deltas
                return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

            def _complete(self, body: dict, reply: Reply) -> None:
                message = {"role": "assistant", "content": reply.text}
                if reply.reasoning:
                    message["reasoning_content"] = reply.reasoning
                self._send(200, {
                    "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                    "model": fake.chat_model,
                    "choices": [{"index": 0, "message": message, "logprobs": None,
                                 "finish_reason": reply.finish_reason}],
                    "usage": self._usage(body, reply, len(reply.deltas())),
                })

            def _chunk(self, payload: bytes) -> None:
                self.wfile.write(b"%X\r\n%s\r\n" % (len(payload), payload))

            def _event(self, data: dict | str) -> None:
                text = data if isinstance(data, str) else json.dumps(data)
                self._chunk(f"data: {text}\n\n".encode())

            def _stream(self, body: dict, reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": fake.chat_model}

                def choice(delta: dict, finish: str | None = None) -> dict:
                    return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                 "finish_reason": finish}]}

                self._event(choice({"role": "assistant", "content": ""}))
                reasoning = split_every(reply.reasoning, 4) if reply.reasoning else []
                for piece in reasoning:
                    self._event(choice({"reasoning_content": piece}))
                deltas = reply.deltas()
                for sent, piece in enumerate(deltas):
                    if reply.drop_after is not None and sent >= reply.drop_after:
                        self.close_connection = True  # no final chunk: the body is cut short
                        return
                    if reply.error_after is not None and sent >= reply.error_after:
                        self._event({"error": {"message": "scripted mid-stream error", "type": "InternalServerError",
                                               "code": 500}})
                        self._event("[DONE]")
                        self._chunk(b"")
                        return
                    if reply.pause and fake._closing.wait(reply.pause):
                        return
                    try:
                        self._event(choice({"content": piece}))
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        fake.outcomes.append("aborted")
                        self.close_connection = True
                        return
                fake.outcomes.append("finished")
                self._event(choice({}, reply.finish_reason))
                if reply.usage and (body.get("stream_options") or {}).get("include_usage"):
                    self._event({**base, "choices": [], "usage": self._usage(body, reply, len(deltas) + len(reasoning))})
                self._event("[DONE]")
                self._chunk(b"")  # the terminating zero-length chunk

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def script(self, *items: Scripted) -> "FakeOpenAI":
        """Queue chat replies, answered in order: str (a reply), Reply, int/Status (an HTTP
        failure) or Delay."""
        with self._lock:
            self.replies.extend(items)
        return self

    @property
    def chat_requests(self) -> list[dict]:
        """The bodies of the chat requests received, in order."""
        return [r["body"] for r in self.requests if r["path"].rstrip("/") == "/v1/chat/completions"]

    @property
    def last_chat(self) -> dict:
        """The body of the last chat request (messages, model, temperature, stream, ...)."""
        return self.chat_requests[-1]

    def chat_settings(self, **overrides: object):
        """pgcite Settings pointing the chat generator at this server (retries off, 10 s
        timeout, and no second reading of the claims, whose requests a test scripts when it is
        about them: chat_verify=True), unless overridden."""
        from pgcite.config import Settings

        values: dict[str, object] = {"chat_url": self.url, "chat_model": self.chat_model, "chat_retries": 0,
                                     "chat_timeout": 10.0, "chat_verify": False}
        return Settings(**{**values, **overrides})  # type: ignore[arg-type]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()  # wake handlers sleeping in a Delay or pause
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port() -> int:
    """A loopback port with nothing listening."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
