"""The server under load, next to the command line it replaces.

Ingests pgcite's own docs into a throw-away embedded database, starts `pgcite serve` as its own
process, and runs 1, 4 and 16 concurrent clients against /v1/search, /v1/ask and
/v1/chat/completions (offline generator) for a fixed time each, cycling through the questions of
eval/pgcite-docs.jsonl. Prints requests/s and p50/p95/p99 latency (errors must be 0), and the
median wall time of the same search run as `pgcite search` (3 runs) in the same session: the
ratio is the point, not the absolute figures (2 shared cores). Then /v1/ask against a second
server with the answer log off, rounds interleaved: the log's cost.

    .venv/bin/python bench/serve.py [SECONDS_PER_CELL]
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from scratch import scratch_settings

ROOT = Path(__file__).resolve().parents[1]
PGCITE = [sys.executable, "-m", "pgcite"]
CLIENTS = (1, 4, 16)


def questions() -> list[str]:
    rows = [json.loads(line) for line in (ROOT / "eval" / "pgcite-docs.jsonl").read_text().splitlines() if line.strip()]
    return [r["question"] for r in rows]


def request(base: str, endpoint: str, question: str) -> None:
    if endpoint == "search":
        url, body = f"{base}/v1/search?q={urllib.request.quote(question)}&k=5", None
    elif endpoint == "ask":
        url, body = f"{base}/v1/ask", {"question": question}
    else:
        url, body = f"{base}/v1/chat/completions", {"model": "pgcite", "messages": [{"role": "user", "content": question}]}
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=120) as response:
        response.read()


def load(base: str, endpoint: str, clients: int, seconds: float, asked: list[str]) -> tuple[float, list[float], int]:
    """requests/s, latencies, errors of `clients` threads asking for `seconds`."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(offset: int) -> None:
        n = offset
        while time.monotonic() < stop:
            started = time.perf_counter()
            try:
                request(base, endpoint, asked[n % len(asked)])
                with lock:
                    latencies.append(time.perf_counter() - started)
            except Exception:
                with lock:
                    errors[0] += 1
            n += 1

    began = time.monotonic()
    threads = [threading.Thread(target=client, args=(i * 7,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(latencies) / (time.monotonic() - began), latencies, errors[0]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 15.0
    asked = questions()
    with scratch_settings("pgcite-bench-serve-") as settings:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")}, "PGCITE_HOME": str(settings.home)}
        subprocess.run([*PGCITE, "ingest", str(ROOT / "docs"), "--source", "pgcite"], env=env, check=True,
                       capture_output=True)
        cli = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run([*PGCITE, "search", asked[0], "-k", "5", "--json"], env=env, check=True, capture_output=True)
            cli.append(time.perf_counter() - started)
        servers: list[subprocess.Popen] = []
        try:
            served, base = start_server(env)
            servers.append(served)
            quiet, quiet_base = start_server({**env, "PGCITE_ANSWER_LOG": "false"})
            servers.append(quiet)
            for endpoint in ("search", "ask", "chat"):
                load(base, endpoint, 1, 2.0, asked)  # warm caches and the pool
            cli_median = statistics.median(cli)
            print(f"pgcite search from the command line: median {cli_median:.2f} s wall (3 runs)\n")
            print(f"{'endpoint':<22}{'clients':>8}{'req/s':>9}{'p50 s':>9}{'p95 s':>9}{'p99 s':>9}{'errors':>8}"
                  f"{'CLI/p50':>9}")
            for endpoint, path in (("search", "/v1/search"), ("ask", "/v1/ask"), ("chat", "/v1/chat/completions")):
                for clients in CLIENTS:
                    rate, latencies, errors = load(base, endpoint, clients, seconds, asked)
                    p50 = percentile(latencies, 50) if latencies else float("nan")
                    print(f"{path:<22}{clients:>8}{rate:>9.1f}{p50:>9.3f}{percentile(latencies, 95):>9.3f}"
                          f"{percentile(latencies, 99):>9.3f}{errors:>8}{cli_median / p50:>9.0f}x")
            log_cost(base, quiet_base, seconds, asked)
        finally:
            for server in servers:
                server.terminate()
                server.wait(30)


def start_server(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`pgcite serve` on a free port, once it is ready."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    served = subprocess.Popen([*PGCITE, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=5):
                return served, base
        except OSError:
            if time.monotonic() > deadline or served.poll() is not None:
                served.kill()
                raise SystemExit("the server did not become ready") from None
            time.sleep(0.5)


def log_cost(logged: str, quiet: str, seconds: float, asked: list[str], rounds: int = 3) -> None:
    """/v1/ask with the answer log on and off (PGCITE_ANSWER_LOG=false), rounds interleaved."""
    load(quiet, "ask", 1, 2.0, asked)
    print(f"\nthe answer log's cost on /v1/ask ({rounds} interleaved rounds of {seconds:g} s; medians)")
    print(f"{'clients':>8}{'log on req/s':>14}{'log off req/s':>15}{'on p50 s':>10}{'off p50 s':>11}{'on/off p50':>12}")
    for clients in (1, 4):
        runs: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
        for _ in range(rounds):
            for name, base in (("on", logged), ("off", quiet)):
                rate, latencies, errors = load(base, "ask", clients, seconds, asked)
                assert errors == 0, f"{errors} errors with the log {name}"
                runs[name].append((rate, percentile(latencies, 50)))
        on, off = ([statistics.median(v[i] for v in runs[n]) for i in (0, 1)] for n in ("on", "off"))
        print(f"{clients:>8}{on[0]:>14.1f}{off[0]:>15.1f}{on[1]:>10.3f}{off[1]:>11.3f}{on[1] / off[1]:>12.2f}")
    with urllib.request.urlopen(logged + "/readyz", timeout=5) as response:
        print(f"answers the log dropped: {json.loads(response.read())['answer_log']['dropped']}")


if __name__ == "__main__":
    main()
