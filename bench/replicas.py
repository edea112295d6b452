"""One `pgcite serve` against three on the same database, under load while an admin re-ingests a site.

Ingests pgcite's own docs into a throw-away embedded database, then, for 1 and for 3 server
processes: 32 clients ask /v1/search and /v1/ask (half each, spread over the servers in turn) for
SECONDS, while an admin key uploads Marten's docs (../shared/corpora, when present) as a new source,
a job any server may take. Prints requests/s, p50 and p95 of each endpoint, the count of 5xx (must
be 0) and of other failures, and whether the ingest job finished. On 2 shared cores three servers
share the same CPU: the point is that they serve with no error and no lost job, not speed.

    .venv/bin/python bench/replicas.py [SECONDS]
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from scratch import CORPORA, scratch_settings
from serve import PGCITE, ROOT, percentile, questions, start_server

CLIENTS = 32


def _call(url: str, body: bytes | None = None, key: str = "", content: str = "application/json") -> int:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if body is not None:
        headers["Content-Type"] = content
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=120) as reply:
            reply.read()
            return reply.status
    except urllib.error.HTTPError as exc:
        return exc.code


def run(bases: list[str], seconds: float, asked: list[str], upload: bytes, key: str) -> dict:
    latencies: dict[str, list[float]] = {"search": [], "ask": []}
    failures = {"5xx": 0, "other": 0}
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(number: int) -> None:
        endpoint, n = ("search", "ask")[number % 2], number
        while time.monotonic() < stop:
            base, question = bases[n % len(bases)], asked[n % len(asked)]
            started = time.perf_counter()
            if endpoint == "search":
                status = _call(f"{base}/v1/search?q={urllib.request.quote(question)}&k=5")
            else:
                status = _call(f"{base}/v1/ask", json.dumps({"question": question}).encode())
            with lock:
                if status == 200:
                    latencies[endpoint].append(time.perf_counter() - started)
                else:
                    failures["5xx" if status >= 500 else "other"] += 1
            n += 1

    job = None
    if upload:
        reply = urllib.request.Request(f"{bases[0]}/v1/sources/marten/ingest", data=upload,
                                       headers={"Authorization": f"Bearer {key}", "Content-Type": "application/zip"})
        with urllib.request.urlopen(reply, timeout=600) as answered:
            job = json.loads(answered.read())["job"]["id"]
    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    state = "none"
    if job:
        deadline = time.monotonic() + 600
        while state in ("none", "queued", "running") and time.monotonic() < deadline:
            with urllib.request.urlopen(urllib.request.Request(
                    f"{bases[-1]}/v1/jobs/{job}", headers={"Authorization": f"Bearer {key}"}), timeout=30) as r:
                state = json.loads(r.read())["job"]["state"]
            time.sleep(1)
    return {"latencies": latencies, "failures": failures, "elapsed": elapsed, "job": state}


def marten_zip() -> bytes:
    marten = CORPORA / "marten-docs"
    if not marten.is_dir():
        print(f"no {marten}: the load runs without an ingest")
        return b""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for path in marten.rglob("*.md"):
            z.write(path, path.relative_to(marten).as_posix())
    return buffer.getvalue()


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    asked, upload = questions(), marten_zip()
    print(f"{CLIENTS} clients for {seconds:g} s, half /v1/search and half /v1/ask, with an upload of Marten "
          f"({len(upload) // 1024} KB) as a job\n")
    print(f"{'servers':>8}{'endpoint':>10}{'req/s':>8}{'p50 s':>8}{'p95 s':>8}{'5xx':>6}{'other':>7}{'job':>7}")
    for count in (1, 3):
        with scratch_settings("pgcite-bench-replicas-") as settings:
            env = {**{k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")},
                   "PGCITE_HOME": str(settings.home)}
            subprocess.run([*PGCITE, "ingest", str(ROOT / "docs"), "--source", "pgcite"], env=env, check=True,
                           capture_output=True)
            made = subprocess.run([*PGCITE, "keys", "create", "bench-admin", "--admin"], env=env, check=True,
                                  capture_output=True, text=True)
            key = made.stdout.splitlines()[-1]
            servers = [start_server(env) for _ in range(count)]
            try:
                result = run([base for _, base in servers], seconds, asked, upload, key)
            finally:
                for process, _ in servers:
                    process.terminate()
                    process.wait(60)
        for endpoint, values in result["latencies"].items():
            print(f"{count:>8}{endpoint:>10}{len(values) / result['elapsed']:>8.1f}{percentile(values, 50):>8.3f}"
                  f"{percentile(values, 95):>8.3f}{result['failures']['5xx']:>6}{result['failures']['other']:>7}"
                  f"{result['job']:>7}")


if __name__ == "__main__":
    main()
