"""Follow-up questions in the chat endpoint: hit@3 when a follow-up is asked together with the
question before it (what /v1/chat/completions does) against asked alone.

Reads eval/followups.jsonl (rows: id, turns = the user's messages in order, gold sections of the
last one), ingests pgcite's own docs into a throw-away embedded database and searches each.

    .venv/bin/python bench/followups.py
"""

from __future__ import annotations

import json
from pathlib import Path

from scratch import scratch_settings

from pgcite.server.chat import Message, question_of
from pgcite.core import Pgcite
from pgcite.evaluation.metrics import distinct_sections, matches
from pgcite.evaluation.questions import Gold
from pgcite.vocabulary import SearchFilter

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    rows = [json.loads(line) for line in (ROOT / "eval" / "followups.jsonl").read_text().splitlines() if line.strip()]
    with scratch_settings("pgcite-bench-followups-") as settings, Pgcite(settings) as app:
        app.ingest(str(ROOT / "docs"), source="pgcite")
        hits = {"with the previous question": 0, "the last message alone": 0}
        print(f"{'case':<26}{'asked as':<90}{'hit@3':>6}")
        for row in rows:
            golds = [Gold(g["path"], g.get("heading")) for g in row["gold"]]
            messages = [Message(role="user", content=t) for t in row["turns"]]
            for label, question in (("with the previous question", question_of(messages)),
                                    ("the last message alone", row["turns"][-1])):
                found = app.search(question, k=15, filters=SearchFilter(source="pgcite"))
                hit = any(matches(g, s) for s in distinct_sections(found, 3) for g in golds)
                hits[label] += hit
                if label.startswith("with"):
                    print(f"{row['id']:<26}{question[:88]:<90}{'yes' if hit else 'no':>6}")
        print()
        for label, count in hits.items():
            print(f"hit@3, {label}: {count / len(rows):.2f} ({count} of {len(rows)})")


if __name__ == "__main__":
    main()
