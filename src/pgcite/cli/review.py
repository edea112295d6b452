"""`pgcite review BASE HEAD`: what a docs change does to the answers, as a pull-request comment,
JSON, and an exit status for CI."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from pgcite.cli.common import cli_settings, err
from pgcite.errors import PgciteError


def _fail_on(value: str | None) -> str | None:
    from pgcite.evaluation.review import KINDS, LINK_KINDS

    known = [*KINDS, *LINK_KINDS]
    unknown = [k for k in (value or "").split(",") if k.strip() and k.strip() not in known]
    if unknown:
        raise typer.BadParameter(f"unknown change {unknown[0]!r}; use some of {', '.join(known)}")
    return value


def review(
    base: Annotated[str, typer.Argument(help="The docs before: a folder, or a git revision with --git.")],
    head: Annotated[str, typer.Argument(help="The docs after: a folder, or a git revision with --git.")],
    git: Annotated[
        str | None,
        typer.Option("--git", help="BASE and HEAD are revisions of the git repository holding this docs folder."),
    ] = None,
    questions: Annotated[
        list[str] | None, typer.Option("--questions", help="A question set (pgcite eval's JSONL); repeatable.")
    ] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", help="The source these docs are: its ingest options, and its logged questions."),
    ] = None,
    from_log: Annotated[
        str | None, typer.Option("--from-log", help="Also the questions logged for --source since: 30d, 12h.")
    ] = None,
    top: Annotated[int, typer.Option("--top", help="With --from-log: the most asked, at most this many.")] = 200,
    site: Annotated[str | None, typer.Option("--site", help="The site generator (default: detected).")] = None,
    base_url: Annotated[str, typer.Option("--base-url", help="Where the docs are published, for links.")] = "",
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            callback=_fail_on,
            help="Exit 1 when one of these shows: refused, lost-fact, moved, new-warning, answered, gained-fact "
            "(answers), broken-link, broken-anchor, lost-url (links) (comma-separated).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Ask the same questions of two versions of the docs and report the answers that changed (Markdown,
    for a pull-request comment)."""
    from pgcite.core import Pgcite
    from pgcite.evaluation.questions import load_questions
    from pgcite.evaluation.review import checkout, logged_questions
    from pgcite.evaluation.review import review as run_review
    from pgcite.evaluation.review_report import to_json, to_markdown
    from pgcite.learn.log import parse_since

    if from_log and not source:
        raise PgciteError("--from-log reads the questions logged for a source: name it with --source")
    with Pgcite(cli_settings()) as app:
        options: dict = {}
        if source:
            recorded = app.source(source).options or {}
            kept = ("site", "route_base", "sphinx_builder", "languages", "exclude")
            options = {k: recorded[k] for k in kept if recorded.get(k)}
            options["base_url"] = recorded.get("base_url") or app.source(source).base_url
        options |= {k: v for k, v in (("site", site), ("base_url", base_url)) if v}
        asked = load_questions(*questions) if questions else []
        cited: list[str] = []
        if from_log:
            logged, cited = logged_questions(app, source or "", parse_since(from_log), top)
            asked += logged

        def progress(line: str) -> None:
            err.print(f"[dim]{escape(line)}[/]")

        if git:
            with checkout(git, [base, head], options.get("site")) as (before, after):
                result = run_review(
                    app, before, after, asked, options=options, labels=(base, head), cited_urls=cited, progress=progress
                )
        else:
            result = run_review(app, base, head, asked, options=options, cited_urls=cited, progress=progress)
    print(
        json.dumps(to_json(result), ensure_ascii=False) if as_json else to_markdown(result), end="\n" if as_json else ""
    )
    failed = result.failed([k.strip() for k in (fail_on or "").split(",") if k.strip()])
    if failed:
        err.print(f"review: answers changed in ways --fail-on names: {', '.join(failed)}")
        raise typer.Exit(1)
