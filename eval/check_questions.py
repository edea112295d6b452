"""Check a question set against a source as it is stored, before it measures anything.

    PGCITE_HOME=... .venv/bin/python eval/check_questions.py FILE.jsonl --source NAME
    .venv/bin/python eval/check_questions.py --source NAME --page PATH      # a page's sections
    .venv/bin/python eval/check_questions.py --source NAME --grep TEXT      # sections holding TEXT

For each answerable question: every gold path is a stored page, every gold heading names one of
its sections (as `pgcite eval` matches them), the chunk_fact is in a gold section's text, and the
answer_fact matches a gold section's text. It reads no ranking: it says nothing of how pgcite
would do on the set, so it may be run on a sealed half."""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pgcite.config import load_settings  # noqa: E402
from pgcite.evaluation.metrics import RankedSection, contains_fact, matches, trail_of  # noqa: E402
from pgcite.evaluation.questions import load_questions  # noqa: E402
from pgcite.store import Store  # noqa: E402


def sections(store: Store, source: str, path: str) -> list[tuple[RankedSection, str]]:
    """The page's sections in order, each with its whole text (its chunks joined)."""
    rows = store.conn.execute(
        "SELECT c.heading, c.breadcrumb, d.title, c.content FROM chunks c JOIN documents d ON d.id = c.document_id"
        " WHERE c.source = %s AND c.path = %s ORDER BY c.ord", (source, path)).fetchall()
    texts: dict[tuple, list[str]] = defaultdict(list)
    for heading, breadcrumb, title, content in rows:
        texts[(heading, trail_of(breadcrumb, title, heading))].append(content)
    return [(RankedSection(path, heading, trail), "\n".join(parts)) for (heading, trail), parts in texts.items()]


def problems(store: Store, source: str, question) -> list[str]:
    if not question.answerable:
        return []
    found: list[tuple[RankedSection, str]] = []
    out = []
    for gold in question.gold:
        page = sections(store, source, gold.path)
        if not page:
            out.append(f"gold path {gold.path!r} is not a stored page of {source}")
            continue
        hit = [(s, t) for s, t in page if matches(gold, s)]
        if not hit:
            names = "; ".join(" > ".join(s.trail) for s, _ in page[:12])
            out.append(f"gold heading {gold.heading!r} names no section of {gold.path} (it has: {names})")
        found += hit
    if question.gold and not found:
        return out
    texts = [t for _, t in found]
    if question.chunk_fact and texts and not any(contains_fact(t, question.chunk_fact) for t in texts):
        out.append(f"chunk_fact {question.chunk_fact!r} is in no gold section's stored text")
    if question.answer_fact and texts and not any(re.search(question.answer_fact, t, re.I) for t in texts):
        out.append(f"answer_fact /{question.answer_fact}/ matches no gold section's stored text")
    if not question.gold and not question.chunk_fact:
        out.append("an answerable question needs a gold section (or a chunk_fact)")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--source", required=True)
    parser.add_argument("--page", help="print the stored sections of this page")
    parser.add_argument("--grep", help="print the sections whose text holds this (case ignored)")
    args = parser.parse_args()
    with Store.open(load_settings(), read_only=True) as store:
        if args.page:
            for section, text in sections(store, args.source, args.page):
                print(f"## {' > '.join(section.trail)}\n{text}\n")
        if args.grep:
            rows = store.conn.execute(
                "SELECT DISTINCT path, breadcrumb FROM chunks WHERE source = %s AND content ILIKE %s ORDER BY 1, 2",
                (args.source, f"%{args.grep}%")).fetchall()
            print("\n".join(f"{p}: {b}" for p, b in rows) or f"no section of {args.source} holds {args.grep!r}")
        bad = 0
        for file in args.files:
            questions = load_questions(file)
            for q in questions:
                for line in problems(store, args.source, q):
                    bad += 1
                    print(f"{file} {q.id}: {line}")
            print(f"{file}: {len(questions)} questions ({sum(q.answerable for q in questions)} answerable), "
                  f"{bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
