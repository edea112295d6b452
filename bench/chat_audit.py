"""The hand audit of bench/chat_path.py's answers: the answers pgcite's checks passed, each claim
beside the sections it cites, written as a Markdown sheet for a person to judge claim by claim.

    .venv/bin/python bench/chat_audit.py --work /tmp/chat-path --generator chat --per-site 4 > sheet.md

The answers are taken in the sample's order, the first PER_SITE passed ones of each site (chosen
before any is read). A person writes each claim's verdict (`supported` or `not: why`) on its line;
eval/heldout/chat_audit.md is the sheet so filled in."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from pgcite.answer.claims import CITATION, is_claim, split_claims, without_lead_in  # noqa: E402


def sheet(rows: list[dict], per_site: int, excerpt: int) -> list[str]:
    chosen: dict[str, list[dict]] = {}
    for row in rows:
        if row["refused"] or not row.get("passed"):
            continue
        if len(chosen.setdefault(row["site"], [])) < per_site:
            chosen[row["site"]].append(row)
    lines = [f"{sum(map(len, chosen.values()))} answers the checks passed, the first {per_site} of each site.", ""]
    for site, picked in chosen.items():
        for row in picked:
            fed = {f["n"]: f for f in row["fed"]}
            lines += [
                f"## {site} / {row['id']}",
                "",
                f"Q: {row['question']}",
                "",
                "A: " + " ".join(row["text"].split()),
                "",
            ]
            for claim in (c for c in map(without_lead_in, split_claims(row["text"])) if is_claim(c)):
                cited = sorted({int(n) for m in CITATION.finditer(claim) for n in m.group(1).split(",")})
                lines.append(f"- claim {cited}: {CITATION.sub('', claim).strip()}")
                lines.append("  verdict: ")
            for n in sorted(set(row["citations"])):
                text = " ".join(fed[n]["content"].split())
                lines += ["", f"> [{n}] {fed[n]['breadcrumb']}: {text[:excerpt]}{'...' if len(text) > excerpt else ''}"]
            lines.append("")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--generator", default="chat")
    parser.add_argument("--per-site", type=int, default=4)
    parser.add_argument("--excerpt", type=int, default=1500, help="characters of each cited section shown")
    args = parser.parse_args()
    rows = [json.loads(line) for line in (args.work / f"{args.generator}.jsonl").read_text().splitlines()]
    print("\n".join(sheet(rows, args.per_site, args.excerpt)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
