"""A local OpenAI-compatible chat server for measuring pgcite's chat path on a real model: the
instruction model of bench/chat_model.py run on the CPU by xllamacpp, which serves llama.cpp's own
HTTP API (`/v1/chat/completions` with streaming and `logprobs`, `/v1/models`, `/health`). A
development and evaluation tool; pgcite never needs it.

    make chat-model
    .venv/bin/python bench/chat_server.py --port 8090 &
    PGCITE_CHAT_URL=http://127.0.0.1:8090/v1 PGCITE_CHAT_MODEL=qwen2.5-coder-1.5b-instruct pgcite ask "..."

It answers one request at a time (two cores do not serve two faster) with a context of CONTEXT
tokens, enough for pgcite's default source budget (chat_context_tokens 3000), the question and the
answer. Stops on Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from chat_model import TARGET, checked_model  # noqa: E402

NAME = "qwen2.5-coder-1.5b-instruct"
CONTEXT = 4096


def start(port: int, threads: int, model: Path = TARGET):
    """The running server (stopped when the object is dropped)."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(checked_model(model))
    params.model_alias = {NAME}
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = CONTEXT
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    return xllamacpp.Server(params)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, default=TARGET, help="the GGUF file (checked against its SHA-256)")
    args = parser.parse_args()
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        raise SystemExit("xllamacpp is not installed; `make chat-model` installs it") from None
    server = start(args.port, args.threads, args.model)
    url = f"http://127.0.0.1:{args.port}"
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=30) as response:
            response.read()
    except OSError as exc:
        raise SystemExit(f"the chat server did not come up on {url} ({exc}); is the port taken?") from None
    print(f"serving {url}/v1 as model {NAME!r}; Ctrl-C stops it", file=sys.stderr, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
