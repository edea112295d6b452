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
import sys
from pathlib import Path

from scratch import home_env, run_measured, scratch_settings

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How do I point pgcite at my own PostgreSQL server?"


def reference(command: str) -> None:
    """`search` or `ask` as the CLI does it, embedding with sentence-transformers."""
    import pgcite.cli.main  # noqa: F401  (the same imports as the command)
    from pgcite.config import load_settings
    from pgcite.core import Pgcite

    from reference import ReferenceEmbedder

    with Pgcite(load_settings(), embedder=ReferenceEmbedder()) as app:
        if command == "search":
            for hit in app.search(QUESTION, k=3):
                print(hit.breadcrumb, f"{hit.score:.3f}")
        else:
            print(app.ask(QUESTION).text)


def main(runs: int) -> None:
    this = str(Path(__file__).resolve())
    cases = {
        "pgcite status (no model)": ("pgcite", ["status"]),
        "pgcite search": ("pgcite", ["search", QUESTION, "-k", "3"]),
        "pgcite ask": ("pgcite", ["ask", QUESTION]),
        "search, sentence-transformers": (this, ["--reference", "search"]),
        "ask, sentence-transformers": (this, ["--reference", "ask"]),
    }
    with scratch_settings("pgcite-bench-startup-") as settings:
        env = home_env(settings.home)
        run_measured("pgcite", ["ingest", str(ROOT / "docs"), "--source", "pgcite"], env)
        for target, args in cases.values():  # warm the page cache and the model conversion once
            run_measured(target, args, env)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(runs):  # interleaved, so a noisy moment touches every case alike
            for name, (target, args) in cases.items():
                samples[name].append(run_measured(target, args, env)[1:])
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
