"""How far better fusion could take retrieval with the bundled model: hit@3 of each search mode,
and of a per-question oracle that takes whichever of the vector, text and hybrid rankings puts
a gold section highest. A fusion of these signals can do no better than the oracle.

    .venv/bin/python bench/ranking_ceiling.py QUESTIONS.jsonl [MORE.jsonl ...] --source NAME

Uses the same settings as pgcite (PGCITE_HOME or PGCITE_DATABASE_URL), on a source already
ingested. Only questions with gold sections count.
"""

from __future__ import annotations

import argparse

from pgcite.config import load_settings
from pgcite.core import Pgcite
from pgcite.evaluation.metrics import distinct_sections, matches
from pgcite.evaluation.questions import load_questions
from pgcite.evaluation.runs import fetch_size
from pgcite.vocabulary import SearchFilter

MODES = ("vector", "text", "hybrid")
DEEP = 50  # distinct sections looked at per ranking


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", nargs="+")
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    questions = [q for q in load_questions(*args.questions) if q.answerable and q.gold]
    hits = {mode: 0 for mode in (*MODES, "oracle")}
    with Pgcite(load_settings()) as app:
        for q in questions:
            ranks = {}
            for mode in MODES:
                found = app.search(q.question, k=fetch_size(DEEP), mode=mode, filters=SearchFilter(source=args.source))
                sections = distinct_sections(found, DEEP)
                ranks[mode] = next((i for i, s in enumerate(sections) if any(matches(g, s) for g in q.gold)), None)
                hits[mode] += ranks[mode] is not None and ranks[mode] < 3
            best = min((r for r in ranks.values() if r is not None), default=None)
            hits["oracle"] += best is not None and best < 3
            print(f"{q.id:<36}" + "".join(f"{mode} {'-' if r is None else r + 1:>3}  " for mode, r in ranks.items()))
    print()
    for name, count in hits.items():
        print(f"hit@3 {name:<7} {count / len(questions):.3f} ({count} of {len(questions)})")


if __name__ == "__main__":
    main()
