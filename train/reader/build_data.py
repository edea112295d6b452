"""Builds the reader's training data from the public docs in manifest.json: question-section pairs
labelled by construction, with the first stage's best wrong candidates as hard negatives.

    .venv/bin/python train/reader/build_data.py --mirrors /work/.mirror --work /work/reader-work

Steps, each resumable (a finished step's output is kept and not built again):
1. extract: each site's folders at the manifest's commit, from its git mirror (`owner+name/repo`
   under --mirrors), into WORK/sites/NAME; a mirror at another commit is refused.
2. ingest: each site into a pgcite database of its own (PGCITE_HOME=WORK/pghome), as a user would,
   so that sections are cut and searched exactly as pgcite does at run time.
3. pairs: questions written from the docs by rules (questions.py: the docs' own questions, headings
   turned into questions) and, where write_questions.py has run, by a local model, each paired
   with the section it comes from (label 1) and with pgcite's best hybrid candidates outside that
   section (label 0: the same page's other sections and other pages that talk about the topic). A
   question whose section is taken out is an on-topic question the rest of the docs do not answer:
   its negatives teach exactly that. Written to WORK/pairs/SITE.jsonl (train.py holds some sites
   out as its dev set), and the cost to WORK/cost.json.
Nothing here reads ../shared/corpora or pgcite's own docs."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "src"))


SEED = 41
NEGATIVES = 6  # hard negatives per question: what the first stage ranks best without answering
CANDIDATES = 30  # how deep the first stage is read for them (the reader re-ranks about this many)
MAX_QUESTIONS_PER_SITE = 150  # so that no one site's style dominates
MAX_PAGES_PER_SITE = 60


def manifest() -> list[dict]:
    return json.loads((HERE / "manifest.json").read_text())["sites"]


def extract(site: dict, mirrors: Path, target: Path) -> None:
    if (target / ".done").is_file():
        return
    git_dir = mirrors / site["repo"].replace("/", "+") / "repo"
    if not git_dir.is_dir():
        raise SystemExit(f"no mirror of {site['repo']} at {git_dir}; fetch it first (see the model card)")
    present = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "-e", site["commit"]], check=False)
    if present.returncode != 0:
        raise SystemExit(f"the mirror of {site['repo']} lacks commit {site['commit']}; fetch it again")
    target.mkdir(parents=True, exist_ok=True)
    # Only the pages: a snapshot may lack big binaries (images), which `git archive` cannot read.
    git = ["git", "--git-dir", str(git_dir)]
    listing = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", site["commit"], "--", *site["paths"]],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    pages = [p for p in listing if p.endswith((".md", ".mdx"))]
    # A sample of a big site's pages: questions are capped per site anyway, and embedding is the cost.
    if len(pages) > MAX_PAGES_PER_SITE:
        pages = sorted(random.Random(f"{SEED}:{site['name']}").sample(pages, MAX_PAGES_PER_SITE))
    for start in range(0, len(pages), 500):
        archive = subprocess.run(
            [*git, "archive", "--format=tar", site["commit"], "--", *pages[start : start + 500]],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    (target / ".done").write_text(site["commit"])


def ingest(app, site: dict, folder: Path) -> None:
    report = app.ingest(str(folder), source=site["name"], exclude=site.get("exclude", []))
    print(f"{site['name']}: {report.summary()}", file=sys.stderr)


# Release notes list changes, not how to do things: questions written from them teach nothing a
# user asks (a page named so, or a section headed by a version number or a date).
RELEASE_NOTES = re.compile(r"change-?log|release[-_ ]?notes|(^|/)(changes|history|news|releases?)[./]", re.IGNORECASE)
VERSION_HEADING = re.compile(r"(^|> )\[?v?\d+\.\d+(\.\d+)?|\b(19|20)\d\d-\d\d-\d\d\b")


def is_release_notes(path: str, breadcrumb: str) -> bool:
    return bool(RELEASE_NOTES.search(path) or VERSION_HEADING.search(breadcrumb))


def sections(store, source: str) -> list[dict]:
    """Every stored section of a source that is not release notes: its page, heading path,
    breadcrumb and text (chunks joined)."""
    rows = store.conn.execute(
        """SELECT path, heading_path, breadcrumb, string_agg(content, E'\n' ORDER BY ord)
             FROM chunks WHERE source = %s GROUP BY path, heading_path, breadcrumb""",
        (source,),
    ).fetchall()
    return [
        {"path": p, "heading_path": list(h or []), "breadcrumb": b or "", "text": x}
        for p, h, b, x in rows
        if not is_release_notes(p, b or "")
    ]


def written(work: Path, site: str, found: list[dict]) -> list[tuple[dict, dict]]:
    """write_questions.py's rows for the sections still found, each with its section."""
    by_key = {f"{s['path']}#{s['breadcrumb']}": s for s in found}
    file = work / "written" / f"{site}.jsonl"
    rows = [json.loads(line) for line in file.read_text().splitlines()] if file.is_file() else []
    return [(r, by_key[r["key"]]) for r in rows if r["key"] in by_key]


def as_user_asks(question: str, site: str) -> str:
    """The model tends to end with "... in SITE?"; users asking a site's own docs rarely name it."""
    named = rf"\s+(in|with|using|for|on)\s+(the\s+)?{re.escape(site)}(\s+(project|docs|documentation))?(?![\w-])"
    return re.sub(named, "", question, flags=re.IGNORECASE)


def pairs_for_site(app, work: Path, site: dict, rng: random.Random) -> list[dict]:
    from questions import questions_for

    from pgcite.vocabulary import SearchFilter

    with app.reader() as store:
        found = sections(store, site["name"])
    asked = [(q, s) for s in found for q in questions_for(s)]
    rng.shuffle(asked)
    by_model = written(work, site["name"], found)
    # Questions a model wrote, where there are any, come first: they are worded as users ask; the
    # rules' questions fill the rest.
    asked = [((as_user_asks(q, site["name"]), "written"), s) for r, s in by_model for q in r["answered"]] + asked
    asked = asked[:MAX_QUESTIONS_PER_SITE]
    out = []
    for (question, kind), section in asked:
        hits = app.search(question, k=CANDIDATES, filters=SearchFilter(source=site["name"]))
        gold = (section["path"], section["breadcrumb"])
        negatives = [h for h in hits if (h.path, h.breadcrumb) != gold][:NEGATIVES]
        positive = next((h for h in hits if (h.path, h.breadcrumb) == gold), None)
        rank = next((i for i, h in enumerate(hits) if (h.path, h.breadcrumb) == gold), None)
        if kind == "written" and rank is None:
            # Round-trip check: a written question whose section the first stage cannot find in its
            # best CANDIDATES is more often one the section does not answer (the model's slip).
            continue
        group = {"site": site["name"], "question": question, "kind": kind, "gold_rank": rank}
        # The positive is the best-ranked chunk of the section (what the reader will see), else its start.
        text = f"{positive.breadcrumb}\n{positive.content}" if positive else section_text(section)
        out.append({**group, "text": text, "label": 1})
        out += [{**group, "text": f"{h.breadcrumb}\n{h.content}", "label": 0} for h in negatives]
    # The model's on-topic question that its section does not answer: a negative on that section
    # alone (whether another section answers it is unknown, so nothing else is labelled).
    for r, section in by_model:
        for question in r["unanswered"]:
            row = {"site": site["name"], "question": as_user_asks(question, site["name"]), "kind": "written-unanswered"}
            out.append({**row, "gold_rank": None, "text": section_text(section), "label": 0})
    return out


def section_text(section: dict, limit: int = 1500) -> str:
    return f"{section['breadcrumb']}\n{section['text'][:limit]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of git mirrors (owner+name/repo)")
    parser.add_argument("--work", type=Path, required=True, help="where the data is built (outside the project)")
    parser.add_argument("--sites", help="comma-separated subset of the manifest")
    parser.add_argument("--steps", default="extract,ingest,pairs")
    args = parser.parse_args()
    work = args.work.resolve()
    if Path(__file__).resolve().parents[2] in work.parents:
        parser.error("--work must be outside the project: the data is built, not committed")
    os.environ.setdefault("PGCITE_HOME", str(work / "pghome"))
    os.environ.setdefault("PGCITE_ANSWER_LOG", "off")
    sites = manifest()
    if args.sites:
        sites = [s for s in sites if s["name"] in args.sites.split(",")]
    steps = args.steps.split(",")
    cost_file = work / "cost.json"
    cost = json.loads(cost_file.read_text())["cpu_hours"] if cost_file.is_file() else {}
    if "extract" in steps:
        for site in sites:
            extract(site, args.mirrors, work / "sites" / site["name"])
    from pgcite.config import load_settings
    from pgcite.core import Pgcite

    with Pgcite(load_settings()) as app:
        for step in ("ingest", "pairs"):
            if step not in steps:
                continue
            started = time.process_time()
            for site in sites:
                if step == "ingest":
                    ingest(app, site, work / "sites" / site["name"])
                    continue
                target = work / "pairs" / f"{site['name']}.jsonl"
                if target.is_file():
                    continue
                rows = pairs_for_site(app, work, site, random.Random(f"{SEED}:{site['name']}"))
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_suffix(".tmp")
                tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
                tmp.replace(target)
                print(f"{site['name']}: {sum(r['label'] for r in rows)} questions, {len(rows)} pairs", file=sys.stderr)
            cost[step] = cost.get(step, 0.0) + (time.process_time() - started) / 3600
    cost_file.parent.mkdir(parents=True, exist_ok=True)
    # The embedded PostgreSQL's own CPU is not counted: it serves every step.
    cost_file.write_text(json.dumps({"cpu_hours": {k: round(v, 3) for k, v in cost.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
