"""What the benchmarks share: the question set they run on, and a throw-away embedded database."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
