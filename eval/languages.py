"""Answers on a multilingual site never mix languages: each question of a set is asked, and every
section its answer was written from (or, on a refusal, came closest) must be in one language, the
question's own where the site has it, else the site's default (docs/languages.md). A question
that finds no section at all (the model finds nothing close) is counted apart.

    .venv/bin/python eval/languages.py                          # Starlight's docs, 17 languages
    .venv/bin/python eval/languages.py --fail-under right_language=1.0 --fail-under mixed_free=1.0

The site is read from ../shared/corpora (or --corpora), ingested as a new user would into
PGCITE_HOME or the configured database when it is not there yet, and skipped with a message where
its corpus is absent. Prints one line per question and the totals: right_language (of the answers
that read sections, those whose sections are all in the expected language), mixed_free (no answer
mixes languages), hit@3 (the gold page among the first three sections), read_nothing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from pgcite.config import load_settings  # noqa: E402
from pgcite.core import Pgcite  # noqa: E402
from pgcite.vocabulary import SearchFilter  # noqa: E402

SOURCE, CORPUS, QUESTIONS = "starlight", "starlight-docs/docs", HERE / "languages-starlight.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", default=str(HERE.parent.parent / "shared" / "corpora"))
    parser.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE")
    args = parser.parse_args()
    corpus = Path(args.corpora) / CORPUS
    if not corpus.is_dir():
        print(f"languages: skipped, {corpus} is absent")
        return 0
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    right = mixed_free = hits = nothing = 0
    with Pgcite(load_settings()) as app:
        if SOURCE not in {s.name for s in app.sources()}:
            print(app.ingest(str(corpus), source=SOURCE).summary())
        for q in questions:
            answer = app.ask(q["question"], filters=SearchFilter(source=SOURCE))
            hits_used = [p.hit for p in answer.sources] or [d.hit for d in answer.dropped]
            with app.reader() as store:
                rows = store.conn.execute(
                    "SELECT id, language FROM chunks WHERE id = ANY(%s)", ([h.id for h in hits_used],)
                ).fetchall()
            languages = {language for _, language in rows}
            gold = {g["path"] for g in q["gold"]}
            found = app.search(q["question"], k=3, filters=SearchFilter(source=SOURCE))
            right += languages == {q["language"]}
            nothing += not languages
            mixed_free += len(languages) <= 1
            hits += any(h.path in gold for h in found)
            shown = ",".join(sorted(languages)) or "-"
            print(
                f"{q['id']:22} expected {q['language']:6} read {shown:10} {'refused' if answer.refused else 'answered'}"
            )
    totals = {
        "right_language": right / max(len(questions) - nothing, 1),
        "mixed_free": mixed_free / len(questions),
        "hit@3": hits / len(questions),
        "read_nothing": nothing,
    }
    shown = (f"{name} {value:.2f}" if isinstance(value, float) else f"{name} {value}" for name, value in totals.items())
    print("  ".join(shown), f"({len(questions)} questions)")
    failed = False
    for bar in args.fail_under:
        name, _, value = bar.partition("=")
        if totals.get(name, 0.0) < float(value):
            print(f"FAIL: {name} {totals.get(name, 0.0):.2f} < {value}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
