"""What the benchmarks share: the question set they run on, a throw-away embedded database, a way
to time a command as its own process, and the AUC the reader's benches report."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from pgcite.config import Settings
from pgcite.store import server

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
ANTHROPIC = CORPORA / "anthropic-docs"


def question_set(usage: str) -> tuple[Path, Path]:
    """QUESTIONS.jsonl and CORPUS_DIR from the command line, or else the Anthropic dev set. Exits 0,
    saying so, when they are not here; a wrong command line prints `usage` and exits 2."""
    if len(sys.argv) == 3:
        questions, corpus = Path(sys.argv[1]), Path(sys.argv[2])
    elif len(sys.argv) == 1:
        questions, corpus = ANTHROPIC / "questions-dev.jsonl", ANTHROPIC / "pages"
    else:
        print(usage)
        sys.exit(2)
    if not (questions.is_file() and corpus.is_dir()):
        print(f"skipped: {questions} or {corpus} not found (the corpora live in ../shared/corpora beside the repo)")
        sys.exit(0)
    return questions, corpus


@contextmanager
def scratch_settings(prefix: str) -> Iterator[Settings]:
    """Settings whose home is a new folder, its embedded server stopped and the folder removed after."""
    home = Path(tempfile.mkdtemp(prefix=prefix))
    home.chmod(0o755)  # the embedded server may run as another user that must reach its folder
    try:
        yield Settings(home=home)
    finally:
        server.stop(home)
        shutil.rmtree(home, ignore_errors=True)


# Runs a module or script and reports its peak RSS on stderr. The kernel's ru_maxrss of a child
# counts the image it was forked from (the benchmark, torch and all), so the child reads its own
# VmHWM instead.
_PEAK_REPORTER = """
import atexit, os, re, runpy, sys
def report():
    with open('/proc/self/status') as status:
        sys.stderr.write('\\npeak-rss-kb ' + re.search(r'VmHWM:\\s+(\\d+)', status.read()).group(1) + '\\n')
atexit.register(report)
sys.argv = sys.argv[1:]
if sys.argv[0].endswith('.py'):
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    runpy.run_path(sys.argv[0], run_name='__main__')
else:
    runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)
"""


def run_measured(target: str, args: list[str], env: dict[str, str]) -> tuple[str, float, float]:
    """Run `python -m target ARGS` (or a target.py script): stdout, wall seconds, peak RSS in MB."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _PEAK_REPORTER, target, *args], env=env, capture_output=True,
                          text=True)
    wall = time.perf_counter() - started
    peak = re.search(r"peak-rss-kb (\d+)", done.stderr)
    if done.returncode != 0 or peak is None:
        raise SystemExit(f"{target} {' '.join(args)} failed: {done.stderr[-800:]}")
    return done.stdout, wall, int(peak.group(1)) / 1024


def home_env(home: Path) -> dict[str, str]:
    return {**os.environ, "PGCITE_HOME": str(home)}


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """P(a positive scores above a negative), ties half; nan when either side is empty."""
    p, n = np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64)
    if not len(p) or not len(n):
        return float("nan")
    return float((p[:, None] > n[None, :]).mean() + 0.5 * (p[:, None] == n[None, :]).mean())
