"""`pgcite search` and `pgcite ask`: the query path on the terminal, sections found or an answer with
its sources."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from pgcite.cli.common import ModeOption, cli_settings, out

LanguageOption = Annotated[
    str | None,
    typer.Option(
        "--language",
        help="Read pages in this language (e.g. fr); default: the question's own where a source has it, else "
        "the source's default.",
    ),
]


def search(
    question: Annotated[str, typer.Argument(help="What you want to find.")],
    k: Annotated[int, typer.Option("-k", help="How many sections to return.")] = 5,
    source: Annotated[str | None, typer.Option("--source", help="Only this source.")] = None,
    path: Annotated[str | None, typer.Option("--path", help="Only documents whose path starts with this.")] = None,
    version: Annotated[str | None, typer.Option("--version", help="Only documents ingested with this label.")] = None,
    language: LanguageOption = None,
    mode: ModeOption = None,
    rerank: Annotated[
        bool, typer.Option("--rerank", help="Let pgcite's reader order the results too, as `ask` does (slower).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Find the sections that best answer a question."""
    from pgcite import shapes
    from pgcite.core import Pgcite
    from pgcite.vocabulary import SearchFilter

    with Pgcite(cli_settings()) as app:
        app.require_source(source)  # a typo: one line naming the sources, exit 2
        hits = app.search(
            question,
            k=k,
            mode=mode,
            filters=SearchFilter(source=source, path_prefix=path, version=version, language=language),
            rerank=rerank,
        )
    if as_json:
        print(json.dumps(shapes.search(question, hits), ensure_ascii=False))
        return
    if not hits:
        with Pgcite(cli_settings()) as app:
            why = app.why_nothing(SearchFilter(source=source, version=version, language=language))
        out.print("No sections found." + (f" {escape(why)}." if why else ""))
        return
    for rank, hit in enumerate(hits, start=1):
        # Document text is data: escape it so "[link](url)" is not read as console markup.
        out.print(f"[bold]{rank}. {escape(hit.breadcrumb)}[/]  [dim](score {hit.score:.3f})[/]")
        out.print(f"   [cyan]{escape(hit.url or hit.source + ':' + hit.path)}[/]")
        preview = " ".join(hit.content.split())
        out.print(f"   {escape(preview[:300])}{'…' if len(preview) > 300 else ''}\n")


def _hit_line(hit) -> str:
    return f"{escape(hit.breadcrumb)}  [cyan]{escape(hit.url or hit.path)}[/]  [dim]({hit.score:.2f})[/]"


def ask(
    question: Annotated[str, typer.Argument(help="Your question.")],
    source: Annotated[str | None, typer.Option("--source", help="Only this source.")] = None,
    path: Annotated[str | None, typer.Option("--path", help="Only documents whose path starts with this.")] = None,
    version: Annotated[str | None, typer.Option("--version", help="Only documents ingested with this label.")] = None,
    language: LanguageOption = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help="Relevance bar: the largest cosine distance a section may have (0.17 more for one holding most "
            "of the question's words).",
        ),
    ] = None,
    context: Annotated[int, typer.Option("--context", help="How many sections the generator is given at most.")] = 5,
    include_flagged: Annotated[
        bool,
        typer.Option(
            "--include-flagged",
            help="Also use sections flagged at ingest (instructions to an AI, a stranger's site for credentials).",
        ),
    ] = False,
    mode: ModeOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Answer from the documents only, citing \\[n] after each claim; or say "Not in the documents." """
    from pgcite import shapes
    from pgcite.answer.flow import Answer
    from pgcite.core import Pgcite
    from pgcite.learn.log import Origin
    from pgcite.vocabulary import Delta, SearchFilter

    # A terminal sees the answer as it is written; a pipe gets the checked answer alone.
    live = out.is_terminal and not as_json
    streamed: list[str] = []
    with Pgcite(cli_settings()) as app:
        app.require_source(source)  # a typo: one line naming the sources, exit 2, nothing logged
        answer = None
        for event in app.ask_stream(
            question,
            threshold=threshold,
            context=context,
            mode=mode,
            filters=SearchFilter(
                source=source,
                path_prefix=path,
                version=version,
                language=language,
                exclude_flagged=not include_flagged,
            ),
            origin=Origin("cli"),
        ):
            if isinstance(event, Answer):
                answer = event
            elif isinstance(event, Delta) and live:
                streamed.append(event.text)
                out.print(escape(event.text), end="")
    assert answer is not None
    if as_json:
        print(json.dumps(shapes.answer(answer), ensure_ascii=False))
        return
    if not live:
        out.print(escape(answer.text), end="")
    elif "".join(streamed).strip() != answer.text.strip():  # the checks cited an uncited claim
        out.print("\n\n[dim]As checked, with the citations pgcite added:[/]")
        out.print(escape(answer.text), end="")
    out.print()
    if answer.note:
        out.print(f"[dim]({escape(answer.note)})[/]")
    if cited := answer.cited_sections():
        # Each section once, in the order the answer uses it; `--json` has every section fed.
        out.print("\n[bold]Sources[/]")
        for numbers, hit in cited:
            out.print(escape("".join(f"[{n}]" for n in numbers)) + f" {_hit_line(hit)}")
    if answer.refused and answer.dropped:
        out.print("\n[bold]Closest matches[/]")
        for d in answer.dropped:
            out.print(f"- {_hit_line(d.hit)}")
    elif answer.dropped and not answer.checks.passed:
        # Only where the answer may fall short is it worth saying that more matched.
        out.print(f"[dim]{len(answer.dropped)} more sections matched; `pgcite search` lists them.[/]")
    for warning in answer.checks.warnings():
        out.print(f"[yellow]check:[/] {escape(warning)}")
    if not answer.refused:
        out.print(
            "[green]checks passed:[/] every claim cites a source that supports it"
            if answer.checks.passed
            else "[yellow]checks not passed:[/] read the sources before you rely on this answer"
        )
    out.print(f"[dim]answered by {escape(answer.generator)}[/]")
