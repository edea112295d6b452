"""The `pgcite` command: a thin shell over ingest() and search()."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import PurePosixPath
from typing import Annotated, Optional

import psycopg
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .config import Settings, load_settings
from .errors import PgciteError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Cited answers from your documentation.")
sources_app = typer.Typer(help="List or remove ingested sources.", invoke_without_command=True)
app.add_typer(sources_app, name="sources")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)


def _settings() -> Settings:
    return load_settings()


def _default_source_name(location: str) -> str:
    """`docs/` -> docs, `site.zip` -> site, `s3://bucket/team/docs` -> docs."""
    trimmed = location.rstrip("/")
    name = PurePosixPath(trimmed.split("://", 1)[-1]).name
    return PurePosixPath(name).stem if name.endswith(".zip") else name or "docs"


@app.command()
def ingest(
    location: Annotated[str, typer.Argument(help="A folder, a .zip file, or s3://bucket/prefix.")],
    source: Annotated[Optional[str], typer.Option("--source", help="Name of the source (default: from the location).")] = None,
    base_url: Annotated[str, typer.Option("--base-url", help="Where the docs are published, for links.")] = "",
    exclude: Annotated[Optional[list[str]], typer.Option("--exclude", help="Extra glob of paths to skip (repeatable).")] = None,
    chunk_tokens: Annotated[Optional[int], typer.Option("--chunk-tokens", help="Token budget per chunk.")] = None,
) -> None:
    """Read Markdown, chunk it, embed it and store it. Re-running only does what changed."""
    from .embedding import make_embedder
    from .ingest import ingest as run_ingest
    from .ingest import open_location
    from .store import Store

    settings = _settings()
    if chunk_tokens is not None:
        settings = dataclasses.replace(settings, chunk_tokens=chunk_tokens)
    name = source or _default_source_name(location)
    reader = open_location(location, settings, exclude or ())
    embedder = make_embedder(settings)
    with Store.open(settings) as store, Progress(
        SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[path]}"), TimeElapsedColumn(), console=err, transient=True,
    ) as progress:
        task = progress.add_task(f"ingesting {name}", total=None, path="")

        def advance(path: str) -> None:
            progress.update(task, advance=1, path=path)

        report = run_ingest(reader, source_name=name, base_url=base_url, settings=settings, store=store,
                            embedder=embedder, progress=advance)
    for skipped in report.skipped:
        err.print(f"[yellow]skipped[/] {escape(skipped.path)}: {escape(skipped.reason)}")
    for flagged in report.flagged:
        err.print(f"[yellow]flagged[/] {escape(flagged)} (reads like instructions to an AI; left out of answers)")
    out.print(escape(report.summary()))


@app.command()
def search(
    question: Annotated[str, typer.Argument(help="What you want to find.")],
    k: Annotated[int, typer.Option("-k", help="How many sections to return.")] = 5,
    source: Annotated[Optional[str], typer.Option("--source", help="Only this source.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Find the sections that best answer a question."""
    from .embedding import make_embedder
    from .retrieval import search as run_search
    from .store import Store

    settings = _settings()
    with Store.open(settings, read_only=True) as store:
        hits = run_search(store, make_embedder(settings), question, k=k, source=source)
    if as_json:
        results = [dict(dataclasses.asdict(h), score=round(h.score, 6)) for h in hits]
        print(json.dumps({"query": question, "results": results}, ensure_ascii=False))
        return
    if not hits:
        out.print("No sections found." + (f" Is {source!r} an ingested source? See `pgcite sources`." if source else ""))
        return
    for rank, hit in enumerate(hits, start=1):
        # Document text is data: escape it so "[link](url)" is not read as console markup.
        out.print(f"[bold]{rank}. {escape(hit.breadcrumb)}[/]  [dim](score {hit.score:.3f})[/]")
        out.print(f"   [cyan]{escape(hit.url or hit.source + ':' + hit.path)}[/]")
        preview = " ".join(hit.content.split())
        out.print(f"   {escape(preview[:300])}{'…' if len(preview) > 300 else ''}\n")


def _hit_fields(hit) -> dict:
    return dict(dataclasses.asdict(hit), flags=list(hit.flags), score=round(hit.score, 6))


def _answer_json(answer) -> dict:
    return {
        "question": answer.question,
        "answer": answer.text,
        "refused": answer.refused,
        "generator": answer.generator,
        "citations": answer.citations,
        "sources": [dict(number=p.number, **_hit_fields(p.hit)) for p in answer.sources],
        "dropped": [dict(_hit_fields(d.hit), reason=d.reason) for d in answer.dropped],
        "checks": dataclasses.asdict(answer.checks),
        "usage": dataclasses.asdict(answer.usage),
        "note": answer.note,
    }


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="Your question.")],
    source: Annotated[Optional[str], typer.Option("--source", help="Only this source.")] = None,
    threshold: Annotated[Optional[float], typer.Option("--threshold", help="Relevance bar: the largest cosine distance a section may have.")] = None,
    context: Annotated[int, typer.Option("--context", help="How many sections the generator is given at most.")] = 5,
    include_flagged: Annotated[bool, typer.Option("--include-flagged", help="Also use sections flagged as instructions to an AI.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Answer from the documents only, citing [n] after each claim; or say "Not in the documents." """
    from .answer import Answer, ask_stream
    from .embedding import make_embedder
    from .generation import make_generator
    from .retrieval import DEFAULT_MAX_DISTANCE
    from .store import Store

    settings = _settings()
    embedder = make_embedder(settings)
    generator = make_generator(settings, embedder)
    with Store.open(settings, read_only=True) as store:
        events = ask_stream(question, store=store, embedder=embedder, generator=generator,
                            max_distance=DEFAULT_MAX_DISTANCE if threshold is None else threshold,
                            context=context, token_budget=settings.chat_context_tokens, source=source,
                            exclude_flagged=not include_flagged)
        answer = None
        for event in events:
            if isinstance(event, Answer):
                answer = event
            elif not as_json:
                out.print(escape(event), end="")
    assert answer is not None
    if as_json:
        print(json.dumps(_answer_json(answer), ensure_ascii=False))
        return
    out.print()
    if answer.note:
        out.print(f"[dim]({escape(answer.note)})[/]")
    if answer.sources:
        out.print("\n[bold]Sources[/]")
        for p in answer.sources:
            out.print(f"[{p.number}] {escape(p.hit.breadcrumb)}  [cyan]{escape(p.hit.url or p.hit.path)}[/]  "
                      f"[dim]({p.hit.score:.2f})[/]")
    if answer.dropped:
        reasons: dict[str, int] = {}
        for d in answer.dropped:
            reasons[d.reason] = reasons.get(d.reason, 0) + 1
        out.print(f"[dim]{len(answer.dropped)} more sections passed the bar but were left out: "
                  + "; ".join(f"{n} {escape(r)}" for r, n in reasons.items()) + "[/]")
    for warning in answer.checks.warnings():
        out.print(f"[yellow]check:[/] {escape(warning)}")
    out.print(f"[dim]answered by {escape(answer.generator)}[/]")


@app.command()
def status() -> None:
    """Where the data lives, which model it was embedded with, and what is stored."""
    from .store import Store

    settings = _settings()
    with Store.open(settings, read_only=True) as store:
        pg, vector = store.server_versions()
        model = store.stored_model()
        rows = store.list_sources()
        index = store.has_vector_index()
        chunks = store.chunk_count()
    out.print(f"database: {escape(store.where)} (PostgreSQL {pg}, pgvector {vector})")
    out.print("model:    " + (f"{model[0]} ({model[1]} dims)" if model else "none yet (nothing ingested)"))
    out.print(f"stored:   {len(rows)} sources, {sum(r.documents for r in rows)} documents, {chunks} chunks; "
              f"vector index {'built' if index else 'not built'}")


@sources_app.callback()
def sources_list(ctx: typer.Context) -> None:
    """List the ingested sources (default), or remove one."""
    if ctx.invoked_subcommand is not None:
        return
    from .store import Store

    with Store.open(_settings(), read_only=True) as store:
        rows = store.list_sources()
    if not rows:
        out.print("No sources yet. Add one with `pgcite ingest FOLDER --source NAME`.")
        return
    for r in rows:
        out.print(f"[bold]{escape(r.name)}[/]  {r.documents} documents, {r.chunks} chunks  "
                  f"from {escape(r.location)}  links {escape(r.base_url or '-')}  updated {r.updated_at}")


@sources_app.command("remove")
def sources_remove(name: Annotated[str, typer.Argument(help="The source to remove, with its documents.")]) -> None:
    """Remove a source and everything ingested from it."""
    from .store import Store

    with Store.open(_settings()) as store:
        if not store.remove_source(name):
            raise PgciteError(f"no source named {name!r}; `pgcite sources` lists them")
    out.print(f"removed source {escape(repr(name))}")


@app.command()
def stop() -> None:
    """Stop the embedded PostgreSQL server (the next command starts it again)."""
    from .store import server

    settings = _settings()
    if settings.database_url:
        raise PgciteError("PGCITE_DATABASE_URL is set: pgcite does not manage that server")
    stopped = server.stop(settings.home)
    out.print("stopped the embedded PostgreSQL" if stopped else "the embedded PostgreSQL was not running")


def main() -> None:
    # Standalone mode: click prints usage errors itself and sets the exit code.
    try:
        app()
    except PgciteError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        sys.exit(1)
    except psycopg.Error as exc:  # a server that went away mid-command, a statement timeout...
        first = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
        err.print(f"[red]error:[/] database: {escape(first)}; check the server (`pgcite status`) and run again",
                  soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted; what was stored stays consistent (each file is one transaction)")
        sys.exit(130)
