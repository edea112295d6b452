"""What `pgcite review` costs on a real site's history (issue 32): the last COMMITS commits that
changed a docs folder, each reviewed against its parent, with QUESTIONS questions.

A git mirror of the site's repository (Marten's by default: `fetch github:JasperFx/marten`, whose
docs/ is a VitePress site of about 2,000 sections) is cloned without a checkout into a scratch
folder, and only the docs folder is checked out (the review reads revisions with `git archive`).
Into a scratch database, the newest parent is first ingested once, as a CI job's first ingest would
be (cold: every section embedded); then each commit's review is timed, and the seconds beyond a
plain ingest of its BASE are what the review adds. The questions are the tune halves of the
held-out sets and eval/marten.jsonl (no sealed question), the first QUESTIONS of them.

Usage: .venv/bin/python bench/review_history.py [MIRROR] [--folder docs] [--commits 5] [--questions 200]
                                                [--site vitepress]
Prints one line per commit (pages changed, answers changed, links broken, seconds) and the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scratch import scratch_settings

from pgcite.core import Pgcite
from pgcite.evaluation.questions import load_questions
from pgcite.evaluation.review import checkout, review

HERE = Path(__file__).resolve().parent
MIRROR = Path("/work/.mirror/JasperFx+marten/repo")
QUESTION_FILES = [
    HERE.parent / "eval" / "marten.jsonl",
    *sorted((HERE.parent / "eval" / "heldout").glob("*.tune.jsonl")),
]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror", nargs="?", default=str(MIRROR))
    parser.add_argument("--folder", default="docs")
    parser.add_argument("--commits", type=int, default=5)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--site", default="vitepress", help="the site generator (Marten's: vitepress)")
    args = parser.parse_args()
    if not Path(args.mirror).exists():
        print(f"skipped: no git mirror at {args.mirror} (fetch github:JasperFx/marten, or give one)")
        return 0
    questions = load_questions(*QUESTION_FILES)[: args.questions]
    with (
        tempfile.TemporaryDirectory(prefix="pgcite-review-bench-") as tmp,
        scratch_settings("pgcite-review-") as settings,
    ):
        repo = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", args.mirror, str(repo)], check=True)
        git(repo, "checkout", "-q", "HEAD", "--", args.folder)
        folder = repo / args.folder
        commits = git(repo, "log", f"-{args.commits}", "--format=%H", "--", args.folder).split()
        print(f"{len(questions)} questions; {len(commits)} commits of {args.folder}/ in {args.mirror}")
        rows = []
        with Pgcite(settings) as app:
            app.warm_up()
            with checkout(str(folder), [f"{commits[0]}^"]) as (first,):
                started = time.perf_counter()
                report = app.ingest(first, source="first", site=args.site)
                cold = time.perf_counter() - started
                print(f"first ingest (cold): {report.chunks_embedded} sections embedded, {cold:.1f} s")
            for commit in commits:
                changed = git(repo, "diff", "--name-only", f"{commit}^", commit, "--", args.folder).split()
                with checkout(str(folder), [f"{commit}^", commit]) as (before, after):
                    started = time.perf_counter()
                    app.ingest(before, source="plain-base", site=args.site)
                    plain = time.perf_counter() - started
                    app.remove_source("plain-base")
                    started = time.perf_counter()
                    result = review(
                        app,
                        before,
                        after,
                        questions,
                        options={"site": args.site},
                        labels=(f"{commit[:9]}^", commit[:9]),
                    )
                    seconds = time.perf_counter() - started
                rows.append((seconds, seconds - plain))
                print(
                    f"{commit[:9]}: {len(changed)} files changed, {len(result.changes)} answers changed, "
                    f"{len(result.broken_links)} links broken; review {seconds:.1f} s, "
                    f"{seconds - plain:.1f} s beyond an ingest of its base ({plain:.1f} s)"
                )
        print(
            json.dumps(
                {
                    "median_review_seconds": round(statistics.median(r[0] for r in rows), 1),
                    "median_beyond_base_ingest": round(statistics.median(r[1] for r in rows), 1),
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
