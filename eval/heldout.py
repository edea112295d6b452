"""Held-out evaluation: every site's tune and sealed halves, side by side, pooled and worst site.

    .venv/bin/python eval/heldout.py                    # ingest what is missing, measure, print the table
    .venv/bin/python eval/heldout.py --half tune --sites fastapi,hugo --show-missed
    .venv/bin/python eval/heldout.py --fail-under refused_unanswerable=0.5 --fail-under-worst hit@3=0.5
    .venv/bin/python eval/heldout.py --half tune --set pgcite.store.search_sql.PAGE_WEIGHT=0.3   # try a value
    .venv/bin/python eval/heldout.py --across        # every site in one home, asked of all its sources
    .venv/bin/python eval/heldout.py --sites marten --published marten=/tmp/marten-html   # sources vs built HTML

Sites are listed in eval/heldout/sites.json and read from ../shared/corpora (or --corpora); a site
whose corpus is absent is skipped with a message. Each is ingested as a new user would (the options
in sites.json only say where the pages are or what the site publishes), into PGCITE_HOME or the
configured database; an unchanged corpus is not read again. Then each half's questions are searched
and asked with every default. The sealed half is reported as totals only, whatever is asked: while
a change is being tuned, nobody reads which sealed question it wins or loses.
--fail-under bars apply to the pooled value of each half, --fail-under-worst to the worst site.

--published SITE=FOLDER also reads SITE as its readers get it: FOLDER (the site built to HTML by its
generator) is served on loopback and crawled by URL into the source SITE-html, the sources are read
with that same base URL, and each gold page is moved to the crawled page at the sources' URL for it;
both are measured, side by side, with the same questions."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from pgcite.config import load_settings  # noqa: E402
from pgcite.core import Pgcite  # noqa: E402
from pgcite.evaluation.metrics import Report, evaluate, parse_bar  # noqa: E402
from pgcite.evaluation.questions import Gold, Question, load_questions  # noqa: E402
from pgcite.evaluation.runs import run_answers, run_searches  # noqa: E402

HALVES = ("tune", "sealed")
# What the table shows, in order: the section in the top 3, among the fed ones, the answer holds
# the fact, answerable questions answered, unanswerable ones refused.
SHOWN = ("hit@1", "hit@3", "fed_gold", "answer_has_fact", "answered_answerable", "refused_unanswerable")


def pooled(reports: list[Report], metric: str) -> tuple[float | None, int]:
    """The mean over every question of every site (not the mean of the sites' means)."""
    counted = [(r.metrics[metric].value, r.metrics[metric].count) for r in reports
               if metric in r.metrics and r.metrics[metric].value is not None]
    total = sum(n for _, n in counted)
    return (sum(v * n for v, n in counted) / total if total else None), total


def worst(reports: dict[str, Report], metric: str) -> tuple[float | None, str]:
    values = [(r.metrics[metric].value, site) for site, r in reports.items()
              if metric in r.metrics and r.metrics[metric].value is not None]
    return min(values) if values else (None, "")


def measure(app: Pgcite, questions_file: Path, source: str, sealed: bool,
            moved: dict[str, str] | None = None, across: bool = False) -> Report:
    """`moved`: gold pages read under other paths (a source page's path -> the crawled page's);
    `across`: asked of every source in the home, the gold pages still `source`'s."""
    questions = load_questions(questions_file)
    if moved is not None:
        questions = [moved_gold(q, moved) for q in questions]
    scope = {"source": None, "gold_source": source} if across else {"source": source}
    # Searched as `ask` orders its sections: by the reader too, when it is on.
    report = evaluate(questions, run_searches(questions, app, k=3, rerank=True, **scope),
                      run_answers(questions, app, **scope))
    return report.totals_only() if sealed else report


def moved_gold(question: Question, moved: dict[str, str]) -> Question:
    gold = tuple(Gold(moved.get(g.path, f"(not crawled) {g.path}"), g.heading) for g in question.gold)
    return dataclasses.replace(question, gold=gold)


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """`folder` on a loopback HTTP server, as a host serves a built site; its address."""
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def page_key(url: str, base: str) -> str:
    """A page's URL as both readings name it: `guide/install` for guide/install.html, guide/install/
    and guide/install/index.html alike."""
    path = url.split("#")[0].removeprefix(base).removesuffix(".html").removesuffix("index")
    return path.strip("/")


def crawled_paths(app: Pgcite, source: str, crawled: str, base: str) -> dict[str, str]:
    """Each page of `source`'s path -> the path of the page of `crawled` at the same URL."""
    with app.reader() as store:
        rows = store.conn.execute("SELECT source, path, url FROM documents WHERE source IN (%s, %s)",
                                  (source, crawled)).fetchall()
    at = {page_key(url, base): path for name, path, url in rows if name == crawled}
    return {path: at[page_key(url, base)] for name, path, url in rows
            if name == source and page_key(url, base) in at}


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(results: dict[str, dict[str, Report]], halves: list[str]) -> str:
    head = "| site | " + " | ".join(f"{m} {h}" for m in SHOWN for h in halves) + " |"
    lines = [head, "|" + "---|" * (1 + len(SHOWN) * len(halves))]
    sites = sorted({site for by_site in results.values() for site in by_site})
    for site in sites:
        cells = [fmt(results[h][site].metrics[m].value) if site in results[h] and m in results[h][site].metrics
                 else "-" for m in SHOWN for h in halves]
        lines.append(f"| {site} | " + " | ".join(cells) + " |")
    lines.append("| **pooled** | " + " | ".join(fmt(pooled(list(results[h].values()), m)[0])
                                               for m in SHOWN for h in halves) + " |")
    lines.append("| **worst site** | " + " | ".join(
        "{} {}".format(fmt(worst(results[h], m)[0]), worst(results[h], m)[1]) for m in SHOWN for h in halves) + " |")
    counts = ", ".join(f"{h}: " + "; ".join(
        f"{site} {r.metrics['answered_answerable'].count}+{r.metrics['refused_unanswerable'].count}"
        for site, r in sorted(results[h].items())) for h in halves)
    return "\n".join(lines) + f"\n\nquestions (answerable+unanswerable): {counts}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", default=str(HERE.parent.parent / "shared" / "corpora"))
    parser.add_argument("--sites", help="comma-separated subset of sites.json")
    parser.add_argument("--half", choices=(*HALVES, "both"), default="both")
    parser.add_argument("--show-missed", action="store_true", help="list the tune half's missed questions")
    parser.add_argument("--json", action="store_true", help="one JSON object: every site's metrics per half")
    parser.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="try another value of a module constant (a number) for this run")
    parser.add_argument("--published", action="append", default=[], metavar="SITE=FOLDER",
                        help="also crawl SITE built to HTML in FOLDER, served on loopback, and measure both")
    parser.add_argument("--across", action="store_true",
                        help="ask with every site in one home, of all sources at once (the CLI's default)")
    parser.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE")
    parser.add_argument("--fail-under-worst", action="append", default=[], metavar="METRIC=VALUE")
    args = parser.parse_args()
    for text in args.set:
        name, _, value = text.partition("=")
        module, _, constant = name.rpartition(".")
        target = importlib.import_module(module)
        if not hasattr(target, constant):
            parser.error(f"{module} has no {constant}")
        setattr(target, constant, type(getattr(target, constant))(value))
    sites = json.loads((HERE / "heldout" / "sites.json").read_text())
    if args.sites:
        wanted = args.sites.split(",")
        sites = [s for s in sites if s["name"] in wanted]
    halves = list(HALVES) if args.half == "both" else [args.half]
    corpora = Path(args.corpora)
    published = dict(text.partition("=")[::2] for text in args.published)
    results: dict[str, dict[str, Report]] = {h: {} for h in halves}
    for site in sites:
        if not (corpora / site["corpus"]).is_dir():
            print(f"skipped {site['name']}: {corpora / site['corpus']} is absent", file=sys.stderr)
    sites = [s for s in sites if (corpora / s["corpus"]).is_dir()]
    if args.across and published:
        parser.error("--across asks the sources as they are: leave out --published")
    with Pgcite(load_settings()) as app:
        if args.across:  # every site in the home before the first is asked
            for site in sites:
                ingested = app.ingest(str(corpora / site["corpus"]), source=site["name"], **site.get("options", {}))
                print(f"{site['name']}: {ingested.summary()}", file=sys.stderr)
        for site in sites:
            folder, name = corpora / site["corpus"], site["name"]
            questions = {half: HERE / "heldout" / f"{name}.{half}.jsonl" for half in halves}
            with served(Path(published[name])) if name in published else nullcontext("") as base:
                options = {**site.get("options", {}), **({"base_url": base} if base else {})}
                if not args.across:
                    print(f"{name}: {app.ingest(str(folder), source=name, **options).summary()}", file=sys.stderr)
                for half in halves:
                    results[half][name] = measure(app, questions[half], name, sealed=half == "sealed",
                                                  across=args.across)
                if not base:
                    continue
                print(f"{name}-html: {app.ingest(base, source=f'{name}-html').summary()}", file=sys.stderr)
                moved = crawled_paths(app, name, f"{name}-html", base)
                for half in halves:
                    results[half][f"{name}-html"] = measure(app, questions[half], f"{name}-html",
                                                            sealed=half == "sealed", moved=moved)
    if not any(results.values()):
        print("no held-out site was measured: no corpus found in " + str(corpora))
        return 0
    if args.json:
        print(json.dumps({h: {s: r.to_json() for s, r in by_site.items()} for h, by_site in results.items()}))
    else:
        print(table(results, halves))
        if args.show_missed and "tune" in results:
            for site, report in sorted(results["tune"].items()):
                for name in SHOWN:
                    if name in report.metrics and report.metrics[name].failing:
                        print(f"tune {site} {name} missed: {', '.join(report.metrics[name].failing)}")
    failures = []
    for text in args.fail_under:
        metric, bar = parse_bar(text)
        for half in halves:
            value, _ = pooled(list(results[half].values()), metric)
            if value is not None and round(value, 4) < bar:
                failures.append(f"{half} pooled {metric} = {value:.4f} is below the bar {bar:g}")
    for text in args.fail_under_worst:
        metric, bar = parse_bar(text)
        for half in halves:
            value, site = worst(results[half], metric)
            if value is not None and round(value, 4) < bar:
                failures.append(f"{half} {site} {metric} = {value:.4f} is below the bar {bar:g} for every site")
    for line in failures:
        print(f"fail: {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
