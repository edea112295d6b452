"""pgcite's chat path measured on a real model, side by side with the offline extractive generator on
the same questions: a fixed sample of the held-out sets' sealed halves (eval/heldout/chat_sample.json,
chosen once by --choose with a seed), each asked as `pgcite ask` asks it.

    make chat-model && .venv/bin/python bench/chat_server.py --port 8090 &
    PGCITE_HOME=... .venv/bin/python bench/chat_path.py --work /tmp/chat-path \
        --chat-url http://127.0.0.1:8090/v1 --chat-model qwen2.5-coder-1.5b-instruct

The sites must be ingested already (eval/heldout.py does it). Each answer is written to
WORK/GENERATOR.jsonl as soon as it is made, so a stopped run goes on where it stopped; the rows are
what a hand audit reads. Printed per generator, pooled (the sample is sealed: totals only):
answerable answered, unanswerable refused, the answer holds the fact; answers citing a source that
was not fed (as the model wrote them, and after pgcite's checks), answers with a sentence the checks
find unsupported or uncited; refusals in the exact sentence, and answers that decline in other
words; time to the first text and to the end, median and p95."""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from pgcite.answer.checks import CITATION, check_answer, with_added_citations  # noqa: E402
from pgcite.answer.extractive import ExtractiveGenerator  # noqa: E402
from pgcite.answer.flow import Answer  # noqa: E402
from pgcite.answer.generation import ChatGenerator  # noqa: E402
from pgcite.answer.verify import verify_claims  # noqa: E402
from pgcite.config import load_settings  # noqa: E402
from pgcite.core import Pgcite  # noqa: E402
from pgcite.evaluation.metrics import AnswerRecord, RankedSection, evaluate, trail_of  # noqa: E402
from pgcite.evaluation.questions import Question, load_questions  # noqa: E402
from pgcite.vocabulary import REFUSAL, Delta, Passage, SearchFilter, SearchHit  # noqa: E402

HELDOUT = ROOT / "eval" / "heldout"
SAMPLE = HELDOUT / "chat_sample.json"
SEED = 42
PER_SITE = {"answerable": 11, "unanswerable": 5}  # six sites: 66 and 30 pooled
# A model declining in its own words rather than pgcite's sentence (counted, not judged).
DECLINES = re.compile(
    r"\b(not (mentioned|covered|provided|specified|included|available)|(do|does) not (say|mention|provide|"
    r"specify|contain|cover)|no information|cannot (find|answer)|isn't (mentioned|covered))\b",
    re.IGNORECASE,
)


def sites() -> list[str]:
    return [s["name"] for s in json.loads((HELDOUT / "sites.json").read_text())]


def choose(half: str = "sealed", seed: int = SEED, besides: dict | None = None) -> dict:
    """Each site's sample of one half, by a fixed seed (the sealed one is committed; the tune one,
    where fixes are looked for answer by answer, is drawn the same way when asked for). besides: a
    sample whose questions are left out (a fresh draw, once the first has been read by hand)."""
    chosen: dict[str, dict[str, list[str]]] = {}
    for site in sites():
        questions = load_questions(HELDOUT / f"{site}.{half}.jsonl")
        taken = {i for ids in (besides or {}).get("sites", {}).get(site, {}).values() for i in ids}
        rng = random.Random(f"{seed}:{site}")
        chosen[site] = {}
        for kind, count in PER_SITE.items():
            ids = sorted(q.id for q in questions if q.answerable == (kind == "answerable") and q.id not in taken)
            chosen[site][kind] = sorted(rng.sample(ids, min(count, len(ids))))
    return {"seed": seed, "half": half, "sites": chosen}


def sample_questions(sample: dict) -> dict[str, list[Question]]:
    out = {}
    for site, kinds in sample["sites"].items():
        wanted = {i for ids in kinds.values() for i in ids}
        out[site] = [q for q in load_questions(HELDOUT / f"{site}.{sample['half']}.jsonl") if q.id in wanted]
    return out


def ask_one(app: Pgcite, generator, site: str, q: Question) -> dict:
    """One question through `ask`, timed, with what the checks found."""
    started = time.perf_counter()
    first = None
    answer = None
    streamed = []  # as the model wrote it: the final text adds the citations pgcite found
    for event in app.ask_stream(
        q.question, filters=SearchFilter(source=site, exclude_flagged=True), generator=generator
    ):
        if isinstance(event, Delta):
            streamed.append(event.text)
            if first is None and event.text.strip():
                first = time.perf_counter() - started
        if isinstance(event, Answer):
            answer = event
    assert answer is not None
    fed = {p.number: p for p in answer.sources}
    left = sorted({int(n) for m in CITATION.finditer(answer.text) for n in re.split(r"\s*,\s*", m.group(1))} - set(fed))
    return {
        "site": site,
        "id": q.id,
        "question": q.question,
        "answerable": q.answerable,
        "text": answer.text,
        "streamed": "".join(streamed),
        "refused": answer.refused,
        "exact_refusal": answer.text.strip() == REFUSAL,
        "declines": not answer.refused and bool(DECLINES.search(answer.text)),
        "citations": answer.citations,
        "written_citations": sorted(
            {int(n) for m in CITATION.finditer("".join(streamed)) for n in re.split(r"\s*,\s*", m.group(1))}
        ),
        "invalid_citations_written": answer.checks.invalid_citations,  # removed from the text as it streamed
        "invalid_citations_left": left,
        "uncited": answer.checks.uncited_sentences,
        "unsupported": [u.sentence for u in answer.checks.unsupported],
        "added_citations": [[a.source, a.sentence] for a in answer.checks.added_citations],
        "passed": answer.checks.passed,
        "fed": [
            {
                "n": n,
                "path": p.hit.path,
                "heading": p.hit.heading,
                "breadcrumb": p.hit.breadcrumb,
                "title": p.hit.title,
                "content": p.hit.content,
            }
            for n, p in fed.items()
        ],
        "note": answer.note,
        "first_text_s": first,
        "seconds": time.perf_counter() - started,
    }


def as_written(row: dict) -> str:
    """The answer as the model wrote it: kept since the rows have "streamed"; before, the final text
    without the ` [n]` pgcite added after each claim it found a source for."""
    if "streamed" in row:
        return row["streamed"]
    text, out, cursor = row["text"], [], 0
    for n, sentence in row["added_citations"]:
        words = r"\s+".join(re.escape(w) for w in sentence.rstrip(".!?;:").split()[-8:])
        mark = re.compile(words + r"( \[" + str(n) + r"\])").search(text, cursor)
        if mark:
            out.append(text[cursor : mark.start(1)])
            cursor = mark.end(1)
    return "".join(out) + text[cursor:]


def recheck(row: dict, embedder, verifier: ChatGenerator | None = None) -> dict:
    """The row with its checks made again by the checks as they are now, on the text as written
    (links are checked against the sources' text only: the rows keep no URLs); with a verifier,
    each claim is read again by that chat model, as pgcite does with chat_verify."""
    if row["refused"]:
        return row
    passages = [
        Passage(
            f["n"],
            SearchHit("", row["site"], f["path"], "", f["title"], f["heading"], f["breadcrumb"], f["content"], 0.0),
        )
        for f in row["fed"]
    ]
    written = as_written(row)
    checks = check_answer(written, passages, embedder, row["invalid_citations_written"], question=row["question"])
    text = with_added_citations(written, checks)
    if verifier is not None:
        verify_claims(text, passages, checks, verifier.complete)
    return dict(
        row,
        text=text,
        citations=sorted({int(n) for m in CITATION.finditer(text) for n in re.split(r"\s*,\s*", m.group(1))}),
        uncited=checks.uncited_sentences,
        unsupported=[u.sentence for u in checks.unsupported],
        added_citations=[[a.source, a.sentence] for a in checks.added_citations],
        passed=checks.passed,
    )


def record(row: dict) -> AnswerRecord:
    by_number = {f["n"]: f["content"] for f in row["fed"]}
    return AnswerRecord(
        row["text"],
        row["refused"],
        tuple(row["citations"]),
        tuple(by_number[n] for n in row["citations"] if n in by_number),
        tuple(row["invalid_citations_left"]),
        tuple(
            RankedSection(f["path"], f["heading"], trail_of(f["breadcrumb"], f["title"], f["heading"]), (f["content"],))
            for f in row["fed"]
        ),
        row["note"],
    )


def report(name: str, rows: list[dict], questions: dict[str, list[Question]]) -> list[str]:
    pooled: dict[str, list[float]] = {}
    for site, qs in questions.items():
        answers = {r["id"]: record(r) for r in rows if r["site"] == site}
        metrics = evaluate([q for q in qs if q.id in answers], {}, answers).metrics
        for m in ("answered_answerable", "refused_unanswerable", "answer_has_fact"):
            if metrics[m].value is not None:
                pooled.setdefault(m, []).extend([metrics[m].value] * metrics[m].count)
    answered = [r for r in rows if not r["refused"]]
    refused = [r for r in rows if r["refused"]]
    first = [r["first_text_s"] for r in rows if r["first_text_s"] is not None]
    total = [r["seconds"] for r in rows]

    def share(values: list[float]) -> str:
        return f"{np.mean(values):.3f} ({round(sum(values))}/{len(values)})" if values else "-"

    def spread(values: list[float]) -> str:
        return f"median {np.median(values):.1f} s, p95 {np.percentile(values, 95):.1f} s" if values else "-"

    return [
        f"{name}: {len(rows)} questions",
        f"  answerable answered {share(pooled.get('answered_answerable', []))}, "
        f"unanswerable refused {share(pooled.get('refused_unanswerable', []))}, "
        f"answer holds the fact {share(pooled.get('answer_has_fact', []))}",
        f"  of {len(answered)} answers: citing a source not fed, as written "
        f"{sum(bool(r['invalid_citations_written']) for r in answered)}, after the checks "
        f"{sum(bool(r['invalid_citations_left']) for r in answered)}; with no citation at all, as written "
        f"{sum(not r.get('written_citations', r['citations']) for r in answered)}, after the checks "
        f"{sum(not r['citations'] for r in answered)}; a sentence the checks find unsupported "
        f"{sum(bool(r['unsupported']) for r in answered)}, uncited {sum(bool(r['uncited']) for r in answered)}; "
        f"declining in other words {sum(r['declines'] for r in answered)}",
        f"  passed the checks {sum(bool(r.get('passed')) for r in answered)} of {len(answered)}; "
        f"with a citation pgcite added {sum(bool(r.get('added_citations')) for r in answered)}",
        f"  of {len(refused)} refusals: in the exact sentence {sum(r['exact_refusal'] for r in refused)}",
        f"  first text {spread(first)}; whole answer {spread(total)}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--choose", action="store_true", help=f"write {SAMPLE.relative_to(ROOT)} (once)")
    parser.add_argument("--work", type=Path, help="where the answers are kept (outside the project)")
    parser.add_argument("--chat-url", default="")
    parser.add_argument("--chat-model", default="")
    parser.add_argument("--only", choices=("extractive", "chat"), help="one generator")
    parser.add_argument(
        "--recheck",
        action="store_true",
        help="ask nothing: make the checks of the answers in WORK again (to WORK/NAME.recheck.jsonl), as the"
        " checks are now; with --chat-url, the chat answers' claims are read again by that model (chat_verify)",
    )
    parser.add_argument(
        "--half",
        choices=("sealed", "tune", "fresh"),
        default="sealed",
        help="tune: the same draw from the tune halves; fresh: another draw from the sealed halves, without"
        " the committed sample's questions (for an audit once that sample's answers have been read)",
    )
    args = parser.parse_args()
    if args.choose:
        if SAMPLE.is_file():
            parser.error(f"{SAMPLE} exists: the sample is chosen once")
        SAMPLE.write_text(json.dumps(choose(), indent=1) + "\n")
        return 0
    if not args.work:
        parser.error("--work is required")
    committed = json.loads(SAMPLE.read_text())
    draws = {"sealed": committed, "tune": choose("tune"), "fresh": choose("sealed", SEED + 1, besides=committed)}
    questions = sample_questions(draws[args.half])
    settings = load_settings()
    with Pgcite(settings) as app:
        if args.recheck:
            lines = []
            for out in sorted(args.work.glob("*.jsonl")):
                if out.stem.endswith(".recheck") or (args.only and out.stem != args.only):
                    continue
                verifier = (
                    ChatGenerator(dataclasses.replace(settings, chat_url=args.chat_url, chat_model=args.chat_model))
                    if args.chat_url and out.stem == "chat"
                    else None
                )
                rows = [recheck(json.loads(line), app.embedder, verifier) for line in out.read_text().splitlines()]
                out.with_suffix(".recheck.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
                lines += report(f"{out.stem}, checked again", rows, questions)
            print("\n".join(lines))
            return 0
        generators = {"extractive": ExtractiveGenerator(app.embedder)}
        if args.chat_url:
            chat = dataclasses.replace(settings, chat_url=args.chat_url, chat_model=args.chat_model)
            generators["chat"] = ChatGenerator(chat)
        if args.only:
            generators = {k: v for k, v in generators.items() if k == args.only}
        lines = []
        for name, generator in generators.items():
            out = args.work / f"{name}.jsonl"
            out.parent.mkdir(parents=True, exist_ok=True)
            rows = [json.loads(line) for line in out.read_text().splitlines()] if out.is_file() else []
            done = {(r["site"], r["id"]) for r in rows}
            for site, qs in questions.items():
                for q in qs:
                    if (site, q.id) in done:
                        continue
                    row = ask_one(app, generator, site, q)
                    with out.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    rows.append(row)
                    print(f"{name} {site} {q.id}: {row['seconds']:.1f} s", file=sys.stderr, flush=True)
            lines += report(f"{name} ({generator.name})", rows, questions)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
