"""What one command costs from a cold process, next to today's path, in the same run.

Ingests pgcite's own docs into a throw-away embedded database (its server stays up, as it does for a
user), then runs each of these as a new process RUNS times and prints the median wall time and the
largest peak RSS:
  - `pgcite status`: loads no model; the floor every command pays (Python, psycopg, typer, rich);
  - `pgcite search Q -k 3` and `pgcite ask Q` (offline generator), on ONNX Runtime;
  - the same search and ask with the embedder swapped for sentence-transformers, the path pgcite
    took before (`--reference`, bench/reference.py).

    .venv/bin/python bench/startup.py [RUNS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scratch import scratch_settings

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How do I point pgcite at my own PostgreSQL server?"


def reference(command: str) -> None:
    """`search` or `ask` as the CLI does it, embedding with sentence-transformers."""
    import pgcite.cli  # noqa: F401  (the same imports as the command)
    from pgcite.config import load_settings
    from pgcite.core import Pgcite

    from reference import ReferenceEmbedder

    with Pgcite(load_settings(), embedder=ReferenceEmbedder()) as app:
        if command == "search":
            for hit in app.search(QUESTION, k=3):
                print(hit.breadcrumb, f"{hit.score:.3f}")
        else:
            print(app.ask(QUESTION).text)


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {child.stderr.read().decode()[-500:]}")
    child.stderr.close()
    return wall, usage.ru_maxrss / 1024


def main(runs: int) -> None:
    pgcite = [sys.executable, "-m", "pgcite"]
    this = [sys.executable, str(Path(__file__).resolve()), "--reference"]
    cases = {
        "pgcite status (no model)": [*pgcite, "status"],
        "pgcite search": [*pgcite, "search", QUESTION, "-k", "3"],
        "pgcite ask": [*pgcite, "ask", QUESTION],
        "search, sentence-transformers": [*this, "search"],
        "ask, sentence-transformers": [*this, "ask"],
    }
    with scratch_settings("pgcite-bench-startup-") as settings:
        env = {**os.environ, "PGCITE_HOME": str(settings.home)}
        subprocess.run([*pgcite, "ingest", str(ROOT / "docs"), "--source", "pgcite"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for argv in cases.values():  # warm the page cache and the model conversion once
            measure(argv, env)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(runs):  # interleaved, so a noisy moment touches every case alike
            for name, argv in cases.items():
                samples[name].append(measure(argv, env))
    wall = {name: statistics.median(w for w, _ in rows) for name, rows in samples.items()}
    print(f"{runs} runs each, interleaved; median wall, largest peak RSS; {os.cpu_count()} cores")
    for name, rows in samples.items():
        print(f"{name:32s} {wall[name]:6.2f} s  {max(r for _, r in rows):6.0f} MB")
    floor = wall["pgcite status (no model)"]
    for command in ("search", "ask"):
        ours, theirs = wall[f"pgcite {command}"], wall[f"{command}, sentence-transformers"]
        print(f"{command}: {theirs / ours:.1f}x faster than sentence-transformers; "
              f"{ours - floor:.2f} s above the no-model floor (sentence-transformers: {theirs - floor:.2f} s)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--reference"]:
        reference(sys.argv[2])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
