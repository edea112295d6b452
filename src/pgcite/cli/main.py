"""The `pgcite` command: a thin shell over ingest() and search()."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Annotated

import psycopg
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from pgcite.config import Settings, load_settings
from pgcite.errors import PgciteError, first_line

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Cited answers from your documentation.",
)
sources_app = typer.Typer(help="List the ingested sources; schedule or remove one.", invoke_without_command=True)
app.add_typer(sources_app, name="sources")
db_app = typer.Typer(help="The database: roles for least privilege.", no_args_is_help=True)
app.add_typer(db_app, name="db")
keys_app = typer.Typer(help="API keys for `pgcite serve`: create, list, revoke.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)  # one line per message, also in a log


def _settings() -> Settings:
    return load_settings()


def _search_mode(value: str | None) -> str | None:
    from pgcite.store import SEARCH_MODES

    if value is not None and value not in SEARCH_MODES:
        raise typer.BadParameter(f"unknown search mode {value!r}; use one of {', '.join(SEARCH_MODES)}")
    return value


ModeOption = Annotated[
    str | None,
    typer.Option("--mode", callback=_search_mode, help="vector, text or hybrid (default: the search_mode setting)."),
]


def _default_source_name(location: str) -> str:
    """`docs/` -> docs, `site.zip` -> site, `s3://bucket/team/docs` -> docs."""
    trimmed = location.rstrip("/")
    name = PurePosixPath(trimmed.split("://", 1)[-1]).name
    return PurePosixPath(name).stem if name.endswith(".zip") else name or "docs"


def _site_name(value: str | None) -> str | None:
    from pgcite.ingest.sites import SITES

    if value is not None and value not in SITES:
        raise typer.BadParameter(f"unknown site generator {value!r}; use one of {', '.join(SITES)}")
    return value


class _Progress:
    """A progress bar on a terminal; elsewhere (CI logs, pipes) one line every few seconds, so a
    long ingest is never silent."""

    EVERY = 5.0  # seconds between lines when stderr is not a terminal
    _now = staticmethod(time.monotonic)

    def __init__(self, name: str) -> None:
        self._name = name
        self._last = self._started = self._now()
        self._bar: Progress | None = None
        if err.is_terminal:
            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[counts]}"),
                TextColumn("{task.fields[path]}"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            )
            self._task = self._bar.add_task(f"ingesting {name}", total=None, counts="", path="")

    def __enter__(self) -> _Progress:
        if self._bar:
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar:
            self._bar.__exit__(*exc)

    def __call__(self, path: str, report) -> None:
        counts = f"{report.files_read} files, {report.chunks_embedded} chunks embedded, {report.chunks_reused} reused"
        if self._bar:
            self._bar.update(self._task, counts=counts, path=escape(path))
        elif self._now() - self._last >= self.EVERY:
            self._last = self._now()
            err.print(f"ingesting {escape(self._name)}: {counts} ({self._last - self._started:.0f} s)", soft_wrap=True)


@app.command()
def ingest(
    location: Annotated[str, typer.Argument(help="A folder, a .zip file, or s3://bucket/prefix.")],
    source: Annotated[
        str | None, typer.Option("--source", help="Name of the source (default: from the location).")
    ] = None,
    base_url: Annotated[
        str,
        typer.Option(
            "--base-url",
            help="Where the docs are published, for links (default: the site's configuration, when it says).",
        ),
    ] = "",
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help="Extra glob of paths to skip (repeatable).")
    ] = None,
    chunk_tokens: Annotated[int | None, typer.Option("--chunk-tokens", help="Token budget per chunk.")] = None,
    version: Annotated[
        str,
        typer.Option(
            "--version",
            help="A label for this ingest (e.g. v2), to filter on; a versioned site labels its pages itself.",
        ),
    ] = "",
    site: Annotated[
        str | None,
        typer.Option(
            "--site",
            callback=_site_name,
            help="The site generator: vitepress, mkdocs, docusaurus, mdbook, hugo, starlight or plain (default: detected).",
        ),
    ] = None,
    route_base: Annotated[
        str | None,
        typer.Option("--route-base", help="Docusaurus: the docs' route base path (default docs; / for the site root)."),
    ] = None,
    include_root: Annotated[
        str | None,
        typer.Option(
            "--include-root", help="The folder includes may be read from (default: the project holding the folder)."
        ),
    ] = None,
    pull: Annotated[
        bool,
        typer.Option(
            "--pull",
            help="The folder is a git clone: each later sync (`pgcite sync`, the server's) runs `git pull --ff-only` in it first.",
        ),
    ] = False,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Then keep watching the folder or zip: each burst of changes is ingested within seconds, until Ctrl-C.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="The report as one JSON object on stdout (one per pass with --watch).")
    ] = False,
) -> None:
    """Read Markdown, chunk it, embed it and store it. Re-running only does what changed."""
    from pgcite.core import Pgcite

    name = source or _default_source_name(location)
    options = dict(
        base_url=base_url,
        exclude=exclude or (),
        version=version,
        site=site,
        route_base=route_base,
        include_root=include_root,
        chunk_tokens=chunk_tokens,
        pull=pull,
    )
    if watch:
        from pgcite.ingest.sync import check_watchable
        from pgcite.ingest.sync import watch as watch_location

        check_watchable(location)
    with Pgcite(_settings()) as app:
        with _interrupted_ingest(as_json), _Progress(name) as progress:
            report = app.ingest(location, source=name, progress=progress, **options)
        _report_ingest(report, as_json)
        if watch:
            err.print(f"watching {escape(location)} for changes; Ctrl-C stops")
            with _interrupted_ingest(as_json):
                watch_location(
                    app,
                    location,
                    source=name,
                    options=options,
                    first=report,
                    on_pass=lambda report: _report_ingest(report, as_json),
                    on_error=lambda message: err.print(f"[red]error:[/] {escape(message)}; still watching"),
                )


@contextlib.contextmanager
def _interrupted_ingest(as_json: bool) -> Iterator[None]:
    """Ctrl-C during an ingest: what was read so far is said all the same."""
    from pgcite.ingest.flow import IngestInterrupted

    try:
        yield
    except IngestInterrupted as stopped:
        _report_ingest(stopped.report, as_json)
        err.print(
            "interrupted; what was stored stays consistent (each file is one transaction), and the next "
            "ingest reads the rest"
        )
        raise typer.Exit(130) from None


@app.command()
def sync(
    names: Annotated[list[str] | None, typer.Argument(help="The sources to sync (default: all).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per source on stdout.")] = False,
) -> None:
    """Read sources again from where they were ingested, the same way: only what changed is read."""
    from pgcite.core import Pgcite

    with Pgcite(_settings()) as app:
        for name in names or [s.name for s in app.sources()]:
            with _interrupted_ingest(as_json), _Progress(name) as progress:
                report = app.sync(name, progress=progress)
            _report_ingest(report, as_json)


def _report_ingest(report, as_json: bool) -> None:
    from pgcite import shapes

    for skipped in report.skipped:
        err.print(f"[yellow]skipped[/] {escape(skipped.path)}: {escape(skipped.reason)}")
    for problem in report.problems:
        err.print(f"[yellow]include[/] {escape(problem)}")
    for flagged in report.flagged:
        err.print(f"[yellow]flagged[/] {escape(flagged)} (left out of answers)")
    if not report.base_url:
        err.print(
            "[dim]no --base-url and none in the site's configuration: answers cite paths, not links[/]", soft_wrap=True
        )
    if as_json:
        print(json.dumps(shapes.ingest_report(report), ensure_ascii=False), flush=True)
    else:
        out.print(escape(report.summary()))
        if report.calibration is not None:
            err.print(f"[dim]{_calibration(report.calibration.to_json())}[/]", soft_wrap=True)


@app.command()
def search(
    question: Annotated[str, typer.Argument(help="What you want to find.")],
    k: Annotated[int, typer.Option("-k", help="How many sections to return.")] = 5,
    source: Annotated[str | None, typer.Option("--source", help="Only this source.")] = None,
    path: Annotated[str | None, typer.Option("--path", help="Only documents whose path starts with this.")] = None,
    version: Annotated[
        str | None, typer.Option("--version", help="Only documents ingested with this label.")
    ] = None,
    mode: ModeOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Find the sections that best answer a question."""
    from pgcite import shapes
    from pgcite.core import Pgcite
    from pgcite.vocabulary import SearchFilter

    with Pgcite(_settings()) as app:
        hits = app.search(
            question, k=k, mode=mode, filters=SearchFilter(source=source, path_prefix=path, version=version)
        )
    if as_json:
        print(json.dumps(shapes.search(question, hits), ensure_ascii=False))
        return
    if not hits:
        out.print(
            "No sections found." + (f" Is {source!r} an ingested source? See `pgcite sources`." if source else "")
        )
        return
    for rank, hit in enumerate(hits, start=1):
        # Document text is data: escape it so "[link](url)" is not read as console markup.
        out.print(f"[bold]{rank}. {escape(hit.breadcrumb)}[/]  [dim](score {hit.score:.3f})[/]")
        out.print(f"   [cyan]{escape(hit.url or hit.source + ':' + hit.path)}[/]")
        preview = " ".join(hit.content.split())
        out.print(f"   {escape(preview[:300])}{'…' if len(preview) > 300 else ''}\n")


def _hit_line(hit) -> str:
    return f"{escape(hit.breadcrumb)}  [cyan]{escape(hit.url or hit.path)}[/]  [dim]({hit.score:.2f})[/]"


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="Your question.")],
    source: Annotated[str | None, typer.Option("--source", help="Only this source.")] = None,
    path: Annotated[str | None, typer.Option("--path", help="Only documents whose path starts with this.")] = None,
    version: Annotated[
        str | None, typer.Option("--version", help="Only documents ingested with this label.")
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help="Relevance bar: the largest cosine distance a section may have (0.17 more for one holding most of the question's words).",
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
    from pgcite.learn.log import Origin
    from pgcite.core import Pgcite
    from pgcite.vocabulary import Delta, SearchFilter

    with Pgcite(_settings()) as app:
        answer = None
        for event in app.ask_stream(
            question,
            threshold=threshold,
            context=context,
            mode=mode,
            filters=SearchFilter(source=source, path_prefix=path, version=version, exclude_flagged=not include_flagged),
            origin=Origin("cli"),
        ):
            if isinstance(event, Answer):
                answer = event
            elif isinstance(event, Delta) and not as_json:
                out.print(escape(event.text), end="")
    assert answer is not None
    if as_json:
        print(json.dumps(shapes.answer(answer), ensure_ascii=False))
        return
    out.print()
    if answer.note:
        out.print(f"[dim]({escape(answer.note)})[/]")
    if answer.sources:
        out.print("\n[bold]Sources[/]")
        for p in answer.sources:
            out.print(f"[{p.number}] {_hit_line(p.hit)}")
    if answer.refused and answer.dropped:
        out.print("\n[bold]Closest matches[/]")
        for d in answer.dropped:
            out.print(f"- {_hit_line(d.hit)}")
    elif answer.dropped:
        reasons: dict[str, int] = {}
        for d in answer.dropped:
            reasons[d.reason] = reasons.get(d.reason, 0) + 1
        out.print(
            f"[dim]{len(answer.dropped)} more sections passed the bar but were left out: "
            + "; ".join(f"{n} {escape(r)}" for r, n in reasons.items())
            + "[/]"
        )
    for warning in answer.checks.warnings():
        out.print(f"[yellow]check:[/] {escape(warning)}")
    out.print(f"[dim]answered by {escape(answer.generator)}[/]")


@app.command()
def status(as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False) -> None:
    """Where the data lives, which model it was embedded with, and what is stored."""
    from pgcite import shapes
    from pgcite.core import Pgcite

    with Pgcite(_settings()) as app:
        st = app.status()
    if as_json:
        print(json.dumps(shapes.status(st, app.settings.answer_log), ensure_ascii=False))
        return
    out.print(f"database: {escape(st.database)} (PostgreSQL {st.postgres}, pgvector {st.pgvector})")
    out.print("model:    " + (f"{st.model[0]} ({st.model[1]} dims)" if st.model else "none yet (nothing ingested)"))
    out.print(
        f"stored:   {len(st.sources)} sources, {sum(r.documents for r in st.sources)} documents, {st.chunks} chunks; "
        f"vector index {'built' if st.vector_index else 'not built'}"
    )
    for r in st.sources:
        out.print(f"  {escape(r.name)}: {_calibration(r.calibration)}")
    settings = app.settings
    kept = f"kept {settings.answer_log_days} days" if settings.answer_log_days > 0 else "kept for good"
    out.print(
        f"log:      {st.answers_logged} answers, {kept}"
        if settings.answer_log
        else f"log:      off (PGCITE_ANSWER_LOG); {st.answers_logged} answers from before"
    )


@sources_app.callback()
def sources_list(
    ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False
) -> None:
    """List the ingested sources (default) with their last sync; schedule or remove one."""
    if ctx.invoked_subcommand is not None:
        return
    from pgcite import shapes
    from pgcite.core import Pgcite

    with Pgcite(_settings()) as app:
        rows = app.sources()
    if as_json:
        print(json.dumps({"sources": [shapes.source(r) for r in rows]}, ensure_ascii=False))
        return
    if not rows:
        out.print("No sources yet. Add one with `pgcite ingest FOLDER --source NAME`.")
        return
    for r in rows:
        versions = [v for v in r.versions if v]
        shown = (
            f"  versions {escape(', '.join(versions))} (default {escape(r.default_version)})"
            if len(versions) > 1
            else (f"  version {escape(versions[0])}" if versions else "")
        )
        out.print(
            f"[bold]{escape(r.name)}[/]  {escape(r.site or 'plain')}, {r.documents} documents, {r.chunks} chunks"
            f"{shown}  from {escape(r.location)}  links {escape(r.base_url or '-')}"
        )
        out.print(f"  {_last_sync(r)}")
        out.print(f"  {_calibration(r.calibration)}")


def _calibration(c: dict | None) -> str:
    """The relevance bar measured for the source and its model (calibration.py)."""
    if not c:
        return "[dim]relevance bar not measured yet (the default 0.58 applies); the next ingest or sync measures it[/]"
    return (
        f"relevance bar {c['bar']:.3f} (cosine distance; off-topic questions score up to {c['offtopic_high']:.2f}, "
        f"its own headings' questions {c['answered_median']:.2f}), vector scale {c['vector_scale']:.2f}; "
        f"measured {c['measured_at']} UTC with {escape(c['model'])}"
    )


def _last_sync(r) -> str:
    """When the source was last synced, by what, how long it took and what changed (or why it failed)."""
    from pgcite.ingest.sync import format_interval

    every = f"; synced every {format_interval(r.sync_interval)}" if r.sync_interval else ""
    last = r.last_sync
    if not last:
        return f"[dim]not synced since it was ingested{every}[/]"
    when = f"last synced {r.synced_at} UTC ({escape(last['trigger'])}, {last['seconds']:.1f} s)"
    if last.get("error"):
        return f"{when}: [red]failed[/]: {escape(last['error'])}{every}"
    changed = [f"{last[kind]} {kind}" for kind in ("new", "changed", "removed") if last[kind]]
    paths = [p for kind in ("new", "changed", "removed") for p in last["paths"][kind]]
    shown = f" ({escape(', '.join(paths[:5]))}{', ...' if len(paths) > 5 else ''})" if paths else ""
    return f"{when}: {', '.join(changed) or 'nothing changed'}{shown}{every}"


@sources_app.command("schedule")
def sources_schedule(
    name: Annotated[str, typer.Argument(help="The source.")],
    every: Annotated[str, typer.Argument(help="How often `pgcite serve` syncs it: 90s, 15m, 2h, 1d; or off.")],
) -> None:
    """Have the server sync a source on a schedule (or not)."""
    from pgcite.core import Pgcite
    from pgcite.ingest.sync import format_interval, parse_interval

    seconds = parse_interval(every)
    with Pgcite(_settings()) as app:
        app.schedule(name, seconds)
    out.print(
        f"the server syncs {escape(repr(name))} every {format_interval(seconds)}"
        if seconds
        else f"the server no longer syncs {escape(repr(name))} on a schedule"
    )


@sources_app.command("remove")
def sources_remove(name: Annotated[str, typer.Argument(help="The source to remove, with its documents.")]) -> None:
    """Remove a source and everything ingested from it."""
    from pgcite.core import Pgcite

    with Pgcite(_settings()) as app:
        app.remove_source(name)
    out.print(f"removed source {escape(repr(name))}")


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
) -> None:
    """Serve the HTTP API (search, ask with streaming, OpenAI-compatible chat) until stopped."""
    from pgcite.server.app import serve as run_server
    from pgcite.core import Pgcite

    with Pgcite(_settings()) as app:
        err.print("loading the embedding model...")
        app.warm_up()
        run_server(app, host, port)


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Argument(help="A name for the key (who or what uses it).")],
    sources: Annotated[
        str | None, typer.Option("--sources", help="Comma-separated sources it may read (default: all).")
    ] = None,
    admin: Annotated[bool, typer.Option("--admin", help="It may also ingest and remove sources.")] = False,
) -> None:
    """Create a key and print it once, alone on the last line (only its hash is kept)."""
    from pgcite.core import Pgcite

    scope = [s.strip() for s in sources.split(",") if s.strip()] if sources is not None else None
    if scope is not None and not scope:
        raise typer.BadParameter("name at least one source", param_hint="--sources")
    with Pgcite(_settings()) as app:
        known = {s.name for s in app.sources()}
        key = app.create_key(name, sources=scope, admin=admin)
    for missing in sorted(set(scope or ()) - known):
        err.print(f"[yellow]note:[/] no source {escape(missing)!r} yet; the key will read it once it is ingested")
    err.print(
        f"created key {escape(repr(name))} ({'admin, ' if admin else ''}reads "
        f"{escape(', '.join(scope)) if scope else 'every source'}); it is shown this once:"
    )
    print(key)


@keys_app.command("list")
def keys_list(as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False) -> None:
    """The keys, without their secrets."""
    from pgcite import shapes
    from pgcite.core import Pgcite

    with Pgcite(_settings()) as app:
        rows = app.keys()
    if as_json:
        print(json.dumps({"keys": [shapes.key(k) for k in rows]}, ensure_ascii=False))
        return
    if not rows:
        out.print("No keys: reads are open and writes are off. Create one with `pgcite keys create NAME`.")
    for k in rows:
        scope = ", ".join(k.sources) if k.sources is not None else "every source"
        out.print(
            f"[bold]{escape(k.name)}[/]  {'admin' if k.admin else 'read'}  {escape(scope)}  created {k.created_at}"
            + ("  [red]revoked[/]" if k.revoked else "")
        )


@keys_app.command("revoke")
def keys_revoke(name: Annotated[str, typer.Argument(help="The key to revoke.")]) -> None:
    """Revoke a key: requests with it are refused from now on."""
    from pgcite.core import Pgcite

    with Pgcite(_settings()) as app:
        app.revoke_key(name)
    out.print(f"revoked key {escape(repr(name))}")


@db_app.command("roles")
def db_roles(
    apply: Annotated[
        bool, typer.Option("--apply", help="Run the SQL (as PGCITE_DATABASE_URL's role) instead of printing it.")
    ] = False,
    writer: Annotated[str, typer.Option("--writer", help="Name of the login role that ingests.")] = "pgcite_writer",
    query: Annotated[
        str, typer.Option("--query", help="Name of the read-only login role of the query path.")
    ] = "pgcite_query",
) -> None:
    """Make a writing login role and a read-only one on your PostgreSQL (run before the first ingest)."""
    from pgcite.store.roles import apply_roles, plan_roles

    settings = _settings()
    if not settings.database_url:
        raise PgciteError(
            "set PGCITE_DATABASE_URL to your server (as a superuser or a role with CREATEROLE); "
            "the embedded server needs no roles"
        )
    plan = plan_roles(settings.database_url, writer, query)
    if not apply:
        print("\n".join(f"{s.as_string()};" for s in plan.statements))
        print(f"-- then: PGCITE_DATABASE_URL={plan.writer_url}\n-- and:  PGCITE_QUERY_DATABASE_URL={plan.query_url}")
        return
    apply_roles(settings.database_url, plan)
    err.print(f"made roles {escape(writer)} (writes) and {escape(query)} (reads only); connect with:")
    print(f"PGCITE_DATABASE_URL={plan.writer_url}")
    print(f"PGCITE_QUERY_DATABASE_URL={plan.query_url}")


@app.command()
def stop() -> None:
    """Stop the embedded PostgreSQL server (the next command starts it again)."""
    from pgcite.store import server

    settings = _settings()
    if settings.database_url:
        raise PgciteError("PGCITE_DATABASE_URL is set: pgcite does not manage that server")
    stopped = server.stop(settings.home)
    out.print("stopped the embedded PostgreSQL" if stopped else "the embedded PostgreSQL was not running")


from pgcite.cli.log import register  # noqa: E402  (its commands use the consoles above)

register(app)


def main() -> None:
    # Standalone mode: click prints usage errors itself and sets the exit code.
    try:
        app()
    except PgciteError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        sys.exit(1)
    except psycopg.Error as exc:  # a server that went away mid-command, a statement timeout...
        first = first_line(exc)
        err.print(
            f"[red]error:[/] database: {escape(first)}; check the server (`pgcite status`) and run again",
            soft_wrap=True,
        )
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted; what was stored stays consistent (each file is one transaction)")
        sys.exit(130)


def _eval_table(report, title: str):
    from rich.table import Table

    from pgcite.evaluation.harness import ANSWER_METRICS

    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("n", justify="right")
    table.add_column("missed by")
    for name, metric in report.metrics.items():
        if metric.value is None:
            value = "-"
        elif name == "top3_tokens":
            value = f"{metric.value:.1f}"
        else:
            value = f"{metric.value:.3f}"
        label = f"{name}@{report.k}" if name in ("mrr", "recall") else name
        if name == ANSWER_METRICS[0]:
            table.add_section()
        table.add_row(label, value, str(metric.count), escape(", ".join(metric.failing)))
    return table


def _compare_table(results, title: str):
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False)
    table.add_column("strategy", no_wrap=True, min_width=max(len(r.name) for r in results) if results else 8)
    for column in ("chunks", "hit@1", "hit@3", "MRR", "fact@3", "top-3\ntokens", "seconds"):
        table.add_column(column, justify="right")

    def rate(result, name: str) -> str:
        value = result.report.metrics[name].value
        return "-" if value is None else f"{value:.3f}"

    for r in results:
        tokens = r.report.metrics["top3_tokens"].value
        table.add_row(
            r.name,
            str(r.chunks),
            rate(r, "hit@1"),
            rate(r, "hit@3"),
            rate(r, "mrr"),
            rate(r, "fact@3"),
            "-" if tokens is None else f"{tokens:.0f}",
            f"{r.seconds:.1f}",
        )
    return table


@app.command("eval")
def eval_questions(
    questions: Annotated[
        list[str],
        typer.Argument(
            help="JSONL files, one question per line (see `pgcite.evaluation.harness`); in a later file a row with only an "
            "id and fields (answer_fact, forbidden...) adds them to that question."
        ),
    ],
    source: Annotated[str | None, typer.Option("--source", help="Only this source.")] = None,
    version: Annotated[
        str | None, typer.Option("--version", help="Only this version (default: each source's default).")
    ] = None,
    k: Annotated[int, typer.Option("-k", help="Distinct sections that count as retrieved (MRR@k, recall@k).")] = 3,
    answers: Annotated[bool, typer.Option("--answers", help="Also ask every question and check the answers.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object on stdout: metrics and per-question rows.")
    ] = False,
    sealed: Annotated[
        bool,
        typer.Option(
            "--sealed", help="Totals only, never which questions missed: for a sealed half measured while tuning."
        ),
    ] = False,
    fail_under: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-under",
            metavar="METRIC=VALUE",
            help="Exit 1 when METRIC is below VALUE (repeatable), e.g. hit@3=0.9.",
        ),
    ] = None,
    compare_corpus: Annotated[
        str | None,
        typer.Option(
            "--compare",
            metavar="CORPUS_DIR",
            help="Re-chunk this corpus with each strategy into throw-away databases and compare retrieval.",
        ),
    ] = None,
    strategies: Annotated[
        str | None,
        typer.Option("--strategies", help="With --compare: a comma-separated subset, e.g. heading-256,fixed-256."),
    ] = None,
    mode: ModeOption = None,
) -> None:
    """Measure retrieval (and with --answers, answers) against questions with known answers."""
    from pgcite.embedding.models import make_embedder
    from pgcite.evaluation.harness import ANSWER_METRICS, EvalError, failed_bars, load_questions, parse_bar, parse_strategies

    try:
        bars = [parse_bar(text) for text in fail_under or ()]
    except EvalError as exc:
        raise typer.BadParameter(str(exc), param_hint="--fail-under") from None
    if k < 1:
        raise typer.BadParameter(f"must be at least 1 (got {k})", param_hint="-k")
    if not answers and (needs := [name for name, _ in bars if name in ANSWER_METRICS]):
        raise typer.BadParameter(f"{needs[0]} is measured on answers: add --answers", param_hint="--fail-under")
    if compare_corpus is None and strategies is not None:
        raise typer.BadParameter("only applies with --compare", param_hint="--strategies")
    if compare_corpus is not None and (answers or bars):
        raise typer.BadParameter(
            "--compare measures retrieval of each strategy; run --answers and --fail-under without it",
            param_hint="--compare",
        )
    try:
        chosen = parse_strategies(strategies) if compare_corpus is not None else []
    except EvalError as exc:
        raise typer.BadParameter(str(exc), param_hint="--strategies") from None
    settings = _settings()
    if mode is not None:
        settings = dataclasses.replace(settings, search_mode=mode)
    qs = load_questions(*questions)
    if compare_corpus is not None:
        _eval_compare(
            qs,
            compare_corpus,
            chosen,
            settings=settings,
            embedder=make_embedder(settings),
            k=k,
            source=source,
            as_json=as_json,
        )
        return

    from pgcite.core import Pgcite
    from pgcite.evaluation.harness import evaluate, run_answers, run_searches

    with (
        Pgcite(settings) as app,
        Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[item]}"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as progress,
    ):
        app.require_source(source)
        generator = app.generator if answers else None
        task = progress.add_task("searching", total=len(qs), item="")

        def advance(item: str) -> None:
            progress.update(task, advance=1, item=item)

        retrievals = run_searches(qs, app, k=k, source=source, progress=advance, version=version)
        records = None
        if generator is not None:
            progress.reset(task, total=len(qs), description=f"asking ({generator.name})", item="")
            records = run_answers(qs, app, source=source, progress=advance, version=version)
    report = evaluate(qs, retrievals, records, k=k)
    report.info = {
        "questions": len(qs),
        "source": source,
        "version": version,
        "search_mode": settings.search_mode,
        "generator": generator.name if generator else None,
    }
    if sealed:
        report = report.totals_only()
    if as_json:
        print(report.dumps())
    else:
        title = (
            f"{len(qs)} questions from {' + '.join(questions)}, k={k}, {settings.search_mode} search"
            + (f", source {source}" if source else "")
            + (f", answers by {generator.name}" if generator else "")
        )
        out.print(_eval_table(report, escape(title)))
    if failures := failed_bars(report, bars):
        for line in failures:
            err.print(f"[red]fail:[/] {escape(line)}", soft_wrap=True)
        raise typer.Exit(1)


def _eval_compare(qs, corpus: str, chosen, *, settings, embedder, k: int, source, as_json: bool) -> None:
    from pathlib import Path

    from pgcite.evaluation.harness import compare, scratch_server

    if not Path(corpus).is_dir() and not corpus.endswith(".zip") and not corpus.startswith("s3://"):
        raise PgciteError(f"no such folder, .zip file or s3:// location: {corpus}")
    name = source or _default_source_name(corpus)
    _, where = scratch_server(settings)
    err.print(
        f"comparing {len(chosen)} chunking strategies on {escape(corpus)}: each is ingested into a throw-away "
        f"database pgcite_cmp_N on {escape(where)}, dropped afterwards; each embeds the whole corpus"
    )
    finished = []
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err, transient=True
    ) as progress:
        task = progress.add_task("starting", total=None)

        def note(text: str) -> None:
            progress.update(task, description=escape(text))

        def done(result) -> None:
            finished.append(result)
            progress.console.print(f"{escape(result.name)}: {result.chunks} chunks, {result.seconds:.1f} s")

        results = compare(
            qs,
            corpus,
            settings=settings,
            embedder=embedder,
            strategies=chosen,
            k=k,
            source_name=name,
            progress=note,
            done=done,
        )
    if as_json:
        print(
            json.dumps(
                {
                    "corpus": corpus,
                    "k": k,
                    "questions": len(qs),
                    "search_mode": settings.search_mode,
                    "strategies": [r.to_json() for r in results],
                },
                ensure_ascii=False,
                sort_keys=True,
            )
        )
        return
    out.print(_compare_table(results, escape(f"{len(qs)} questions on {corpus}, k={k}, {settings.search_mode} search")))
