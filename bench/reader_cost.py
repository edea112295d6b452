"""What the reader costs: CPU per candidate it reads, `ask` with and without it, and memory.

    PGCITE_HOME=... .venv/bin/python bench/reader_cost.py                 # a held-out site eval/heldout.py ingested
    PGCITE_HOME=... .venv/bin/python bench/reader_cost.py --site marten --questions 40

Measured in one run, alternating, so both sides see the same machine: each tune question of the
site is asked with the reader off, int8 (the default) and fp32, in turn, after one warm-up ask of
each. Prints the median and 95th percentile of the wall time and the CPU seconds of an ask, the
reader's CPU per candidate (timed around its scoring alone), and each setting's peak memory in a
process of its own (one ask, then ru_maxrss)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from pgcite.config import load_settings  # noqa: E402
from pgcite.core import Pgcite  # noqa: E402
from pgcite.evaluation.questions import load_questions  # noqa: E402
from pgcite.vocabulary import SearchFilter  # noqa: E402

SETTINGS = ("off", "int8", "fp32")
MEMORY_PROBE = """
import resource, sys, dataclasses
from pgcite.config import load_settings
from pgcite.core import Pgcite
from pgcite.vocabulary import SearchFilter
settings = dataclasses.replace(load_settings(), reader=sys.argv[1], answer_log=False)
with Pgcite(settings) as app:
    app.ask(sys.argv[2], filters=SearchFilter(source=sys.argv[3], exclude_flagged=True))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default="marten")
    parser.add_argument("--questions", type=int, default=40)
    args = parser.parse_args()
    questions = [q.question for q in load_questions(HERE.parent / "eval" / "heldout" / f"{args.site}.tune.jsonl")]
    questions = questions[: args.questions]
    base = dataclasses.replace(load_settings(), answer_log=False)
    filters = SearchFilter(source=args.site, exclude_flagged=True)
    apps = {name: Pgcite(dataclasses.replace(base, reader=name)) for name in SETTINGS}
    wall: dict[str, list[float]] = {name: [] for name in SETTINGS}
    cpu: dict[str, list[float]] = {name: [] for name in SETTINGS}
    read_cpu: dict[str, list[float]] = {name: [] for name in SETTINGS[1:]}
    for name, app in apps.items():
        app.ask(questions[0], filters=filters)  # loads the models
        if name != "off":
            scores = app.reranker.scores  # timed alone: CPU per candidate
            app.reranker.scores = lambda q, texts, scores=scores, name=name: _timed(scores, q, texts, read_cpu[name])
    for question in questions:
        for name, app in apps.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            app.ask(question, filters=filters)
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - started_cpu)
    for app in apps.values():
        app.close()
    print(f"{len(questions)} questions of {args.site} (tune), asked in turn with each setting\n")
    print("| reader | ask median | ask p95 | ask CPU median | CPU per candidate | peak memory |")
    print("|---|---|---|---|---|---|")
    for name in SETTINGS:
        per = (
            np.sum([c for c, _ in read_cpu[name]]) / max(1, np.sum([n for _, n in read_cpu[name]]))
            if name in read_cpu
            else None
        )
        memory = subprocess.run(
            [sys.executable, "-c", MEMORY_PROBE, name, questions[0], args.site],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[-1]
        print(
            f"| {name} | {np.median(wall[name]) * 1000:.0f} ms | {np.percentile(wall[name], 95) * 1000:.0f} ms | "
            f"{np.median(cpu[name]) * 1000:.0f} ms | {'-' if per is None else f'{per * 1000:.1f} ms'} | "
            f"{float(memory):.0f} MB |"
        )
    print(
        "\nmedian slower than off: "
        + ", ".join(
            f"{name} {(np.median(wall[name]) - np.median(wall['off'])) * 1000:+.0f} ms" for name in SETTINGS[1:]
        )
    )
    print(
        json.dumps(
            {
                name: {"median_s": float(np.median(wall[name])), "p95_s": float(np.percentile(wall[name], 95))}
                for name in SETTINGS
            }
        )
    )
    return 0


def _timed(scores, question, texts, into: list) -> list[float]:
    started = time.process_time()
    out = scores(question, texts)
    into.append((time.process_time() - started, len(texts)))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
