"""`pgcite ingest` (and its --watch loop) and `pgcite sync`: reading sources into the index, with
progress on the terminal and a report of what changed."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Annotated, Any

import psycopg
import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from pgcite.cli.common import calibration_line, cli_settings, default_source_name, err, out
from pgcite.errors import PgciteError, first_line

if TYPE_CHECKING:
    from pgcite.core import Pgcite
    from pgcite.ingest.report import IngestReport

SKIPPED_SHOWN = 3  # pages named on a line of skipped ones with one reason; --json names them all


def _sphinx_builder(value: str | None) -> str | None:
    from pgcite.ingest.sites.sphinx_conf import BUILDERS

    if value is not None and value not in BUILDERS:
        raise typer.BadParameter(f"unknown Sphinx builder {value!r}; use {' or '.join(BUILDERS)}")
    return value


def _site_name(value: str | None) -> str | None:
    from pgcite.ingest.sites import SITES

    if value is not None and value not in SITES:
        raise typer.BadParameter(f"unknown site generator {value!r}; use one of {', '.join(SITES)}")
    return value


class _Progress:
    """A progress bar on a terminal; elsewhere (CI logs, pipes) one line every few seconds, so a
    long ingest is never silent."""

    EVERY = 5.0  # seconds between lines when stderr is not a terminal
    # Said when nothing else is after a moment (the model takes seconds to load); an error sooner
    # stays the one line it is.
    STARTING = "reading the files and loading the embedding model"
    STARTING_AFTER = 2.0
    _now = staticmethod(time.monotonic)

    def __init__(self, name: str) -> None:
        self._name = name
        self._last = self._started = self._now()
        self._bar: Progress | None = None
        self._starting = threading.Timer(
            self.STARTING_AFTER, lambda: err.print(f"ingesting {escape(name)}: {self.STARTING}", soft_wrap=True)
        )
        self._starting.daemon = True
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
            self._task = self._bar.add_task(f"ingesting {name}", total=None, counts=self.STARTING, path="")

    def __enter__(self) -> _Progress:
        if self._bar:
            self._bar.__enter__()
        else:
            self._starting.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._starting.cancel()
        if self._bar:
            self._bar.__exit__(kind, exc, traceback)

    def __call__(self, path: str, report) -> None:
        self._starting.cancel()
        counts = f"{report.scanned} files read, {report.chunks_embedded} chunks embedded, {report.chunks_reused} reused"
        if self._bar:
            self._bar.update(self._task, counts=counts, path=escape(path))
        elif self._now() - self._last >= self.EVERY:
            self._last = self._now()
            err.print(f"ingesting {escape(self._name)}: {counts} ({self._last - self._started:.0f} s)", soft_wrap=True)


def ingest(
    location: Annotated[
        str,
        typer.Argument(
            help="A folder, a .zip file, s3://bucket/prefix, an OpenAPI file, or a site's https:// address."
        ),
    ],
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
            help="The site generator: vitepress, mkdocs, docusaurus, mdbook, hugo, starlight, sphinx, openapi, "
            "redoc (an API description published with Redoc), html or plain (default: detected).",
        ),
    ] = None,
    route_base: Annotated[
        str | None,
        typer.Option("--route-base", help="Docusaurus: the docs' route base path (default docs; / for the site root)."),
    ] = None,
    sphinx_builder: Annotated[
        str | None,
        typer.Option(
            "--sphinx-builder",
            callback=_sphinx_builder,
            help="Sphinx: how the site is built, html (guide/install.html) or dirhtml (guide/install/) "
            "(default: what .readthedocs.yaml says, else html).",
        ),
    ] = None,
    include_root: Annotated[
        str | None,
        typer.Option(
            "--include-root", help="The folder includes may be read from (default: the project holding the folder)."
        ),
    ] = None,
    languages: Annotated[
        str | None,
        typer.Option(
            "--languages",
            help="Only pages in these languages, comma-separated (e.g. en,fr; default: every language the "
            "site publishes).",
        ),
    ] = None,
    pull: Annotated[
        bool,
        typer.Option(
            "--pull",
            help="The folder is a git clone: each later sync (`pgcite sync`, the server's) runs "
            "`git pull --ff-only` in it first.",
        ),
    ] = False,
    deadline: Annotated[
        float | None,
        typer.Option(
            "--deadline",
            help="A site's URL: seconds the whole crawl may take, kept for its syncs; pages not read by then are "
            "named and read by the next sync (default: the setting crawl_deadline, 3600).",
        ),
    ] = None,
    page_deadline: Annotated[
        float | None,
        typer.Option(
            "--page-deadline",
            help="A site's URL: seconds one page's answer may take, headers and body together, kept for its syncs "
            "(default: the setting crawl_page_deadline, 120).",
        ),
    ] = None,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Then keep watching the folder or zip: each burst of changes is ingested within seconds, "
            "until Ctrl-C.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="The report as one JSON object on stdout (one per pass with --watch).")
    ] = False,
) -> None:
    """Read Markdown, chunk it, embed it and store it. Re-running only does what changed."""
    from pgcite.core import Pgcite

    name = source or default_source_name(location)
    options: dict[str, Any] = dict(
        base_url=base_url,
        exclude=exclude or (),
        version=version,
        site=site,
        route_base=route_base,
        sphinx_builder=sphinx_builder,
        include_root=include_root,
        chunk_tokens=chunk_tokens,
        languages=[part for part in (languages or "").split(",") if part.strip()] or None,
        pull=pull,
        crawl_deadline=deadline,
        crawl_page_deadline=page_deadline,
    )
    if watch:
        from pgcite.ingest.sync import check_watchable

        check_watchable(location)
    with Pgcite(cli_settings()) as app:
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
    from pgcite.ingest.report import IngestInterrupted

    try:
        yield
    except IngestInterrupted as stopped:
        _report_ingest(stopped.report, as_json)
        err.print(
            "interrupted; what was stored stays consistent (each file is one transaction), and the next "
            "ingest reads the rest"
        )
        raise typer.Exit(130) from None


def sync(
    names: Annotated[list[str] | None, typer.Argument(help="The sources to sync (default: all).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per source on stdout.")] = False,
) -> None:
    """Read sources again from where they were ingested, the same way: only what changed is read."""
    from pgcite.core import Pgcite

    with Pgcite(cli_settings()) as app:
        for name in names or [s.name for s in app.sources()]:
            with _interrupted_ingest(as_json), _Progress(name) as progress:
                report = app.sync(name, progress=progress)
            _report_ingest(report, as_json)


def _report_ingest(report, as_json: bool) -> None:
    from pgcite import shapes

    # One line per reason: a crawl that ran out of time leaves thousands of pages unread for one reason.
    by_reason: dict[str, list[str]] = {}
    for skipped in report.skipped:
        by_reason.setdefault(skipped.reason, []).append(skipped.path)
    for reason, paths in by_reason.items():
        more = f" and {len(paths) - SKIPPED_SHOWN:,} more" if len(paths) > SKIPPED_SHOWN else ""
        err.print(f"[yellow]skipped[/] {escape(', '.join(paths[:SKIPPED_SHOWN]))}{more}: {escape(reason)}")
    for problem in report.problems:
        err.print(f"[yellow]warning[/] {escape(problem)}")
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
            err.print(f"[dim]{calibration_line(report.calibration.to_json())}[/]", soft_wrap=True)


# A pass starts once the files have been quiet for STEP_MS, or DEBOUNCE_MS after the first change of a
# burst that goes on: an editor's save, a `git checkout` of many files, a copy of a folder are each one pass.
STEP_MS = 300
DEBOUNCE_MS = 2000


def watch_location(
    core: Pgcite,
    location: str,
    *,
    source: str,
    options: dict[str, Any],
    first: IngestReport,
    on_pass: Callable[[IngestReport], None],
    on_error: Callable[[str], None],
    stop: threading.Event | None = None,
) -> None:
    """Run a pass over `location` (a folder or a .zip) each time its files change, or a file its
    pages include from beside the folder, until Ctrl-C or `stop`. `first` is the report of the pass
    before. Each pass is an ingest: only the changed files are read, in their own transactions,
    with the embedding cache. A pass that fails is reported and the watch goes on."""
    from watchfiles import DefaultFilter
    from watchfiles import watch as changes

    from pgcite.ingest.sync import check_watchable

    check_watchable(location)
    location = os.path.abspath(location)
    folder = os.path.isdir(location)
    ignored = DefaultFilter()  # version control, editors' swap and backup files
    report = first
    while True:
        included = _outside(location, report.included) if folder else set()
        # The folder (a zip through its folder: a tool replacing it, write then rename, would end a
        # watch on the file), and the folders of the files included from outside it; a file in a
        # folder above the docs (the project's README) is watched alone, not the whole project.
        paths = sorted(
            {location if folder else os.path.dirname(location)}
            | {
                path if os.path.realpath(location).startswith(os.path.dirname(path) + os.sep) else os.path.dirname(path)
                for path in included
                if os.path.exists(path)
            }
        )

        # `included` bound now: the set of this round of watching (the next round makes its own).
        def wanted(change, path: str, included: set[str] = included) -> bool:
            if not ignored(change, path):
                return False
            if not folder:
                return os.path.abspath(path) == location
            return path.startswith(location + os.sep) or os.path.realpath(path) in included

        for _ in changes(
            *paths, watch_filter=wanted, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=stop, raise_interrupt=False
        ):
            try:
                report = core.ingest(location, source=source, trigger="watch", **options)
            except (PgciteError, psycopg.Error) as exc:  # a folder emptied, the database restarting
                on_error(first_line(exc))
                continue
            on_pass(report)
            if _outside(location, report.included) != included:
                break  # the pages include other files now: watch their folders
        else:
            return  # Ctrl-C or `stop`


def _outside(folder: str, included: list[str]) -> set[str]:
    """The real paths of the included files (paths from `folder`) that are not under it."""
    root = os.path.realpath(folder)
    real = {os.path.realpath(os.path.join(root, path)) for path in included}
    return {path for path in real if not path.startswith(root + os.sep)}
