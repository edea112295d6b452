"""Does the reader catch a chat answer's unsupported claims? Each claim of the hand-audited sheets
(eval/heldout/chat_audit*.md, written by bench/chat_audit.py and judged claim by claim by a person)
is read with the sections it cites, and its best score is compared with the person's verdict.

    .venv/bin/python bench/claim_reader.py                      # every sheet, one line each
    .venv/bin/python bench/claim_reader.py --sheet eval/heldout/chat_audit_tune.md

Printed per sheet: claims supported and not; the AUC of the reader's score (supported above
unsupported, ties half); and at bars where at most 0, 1 or 2 supported claims would fail, how many
unsupported ones would. A claim is read as the question segment, the cited section as the passage,
as the reader reads a question. chat_audit_tune.md is the tune draw; chat_audit.md and
chat_audit_fresh.md are sealed draws, so only these totals are printed for them."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from pgcite.config import load_settings  # noqa: E402
from pgcite.embedding.models import bundled_model_dir  # noqa: E402
from pgcite.embedding.reader import load_reader  # noqa: E402
from scratch import auc  # noqa: E402

SHEETS = ("chat_audit_tune.md", "chat_audit.md", "chat_audit_fresh.md")
CLAIM = re.compile(r"^- claim ((?:\[\d+\])+): (.*)$")
VERDICT = re.compile(r"^\s+verdict: (ok|not)\b")
SECTION = re.compile(r"^> \[(\d+)\] (.*)$")


def read_sheet(text: str) -> list[dict]:
    """Each judged claim of each answer: its text, the cited sections' texts, supported or not."""
    claims: list[dict] = []
    answer: list[dict] = []
    sections: dict[int, str] = {}

    def close() -> None:
        for claim in answer:
            texts = [sections[n] for n in claim.pop("cites") if n in sections]
            if texts and "supported" in claim:
                claims.append({**claim, "sections": texts})

    for line in text.splitlines():
        if line.startswith("## ") and " / " in line:
            close()
            answer, sections = [], {}
        elif m := CLAIM.match(line):
            answer.append({"claim": m.group(2).strip(), "cites": [int(n) for n in re.findall(r"\d+", m.group(1))]})
        elif (m := VERDICT.match(line)) and answer:
            answer[-1]["supported"] = m.group(1) == "ok"
        elif m := SECTION.match(line):
            sections[int(m.group(1))] = m.group(2)
    close()
    return claims


def report(name: str, claims: list[dict], scores: np.ndarray) -> str:
    supported = np.array([c["supported"] for c in claims])
    pos, neg = scores[supported], scores[~supported]
    line = f"{name}: {len(pos)} supported, {len(neg)} not; AUC {auc(pos, neg):.3f}"
    ordered = np.sort(pos)
    for allowed in (0, 1, 2):
        bar = ordered[allowed] if allowed < len(ordered) else np.inf
        line += f"; failing {allowed} supported: {int((neg < bar).sum())}/{len(neg)} unsupported caught"
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sheet", type=Path, action="append", help="a filled-in sheet (default: all three)")
    parser.add_argument("--precision", choices=("fp32", "int8"), default="fp32")
    args = parser.parse_args()
    settings = load_settings()
    reader = load_reader(bundled_model_dir(), settings.model_cache, args.precision)
    for sheet in args.sheet or [ROOT / "eval" / "heldout" / s for s in SHEETS]:
        claims = read_sheet(sheet.read_text())
        scores = np.array([reader.scores(c["claim"], c["sections"]).max() for c in claims])
        print(report(sheet.name, claims, scores), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
