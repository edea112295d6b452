"""Split a question set into its tune and sealed halves, once, before anything is measured on it.

    .venv/bin/python eval/split_questions.py ALL.jsonl eval/heldout/SITE

Answerable and unanswerable questions are split apart, each in the order of the SHA-256 of their
id, alternately, so both halves get the same mix and nobody chooses which question is sealed.
Prints the counts only: the sealed half is not to be read while tuning."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path


def main() -> None:
    source, prefix = Path(sys.argv[1]), sys.argv[2]
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    halves: dict[str, list[dict]] = {"tune": [], "sealed": []}
    for answerable in (True, False):
        group = sorted((r for r in rows if r.get("answerable", True) == answerable),
                       key=lambda r: hashlib.sha256(str(r["id"]).encode()).hexdigest())
        for i, row in enumerate(group):
            halves["tune" if i % 2 == 0 else "sealed"].append(row)
    for half, chosen in halves.items():
        path = Path(f"{prefix}.{half}.jsonl")
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen), encoding="utf-8")
        answerable = sum(r.get("answerable", True) for r in chosen)
        print(f"{path}: {answerable} answerable, {len(chosen) - answerable} unanswerable")


if __name__ == "__main__":
    main()
