"""`pgcite sources`: the ingested sources with their last sync; scheduling or removing one."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from pgcite.cli.common import calibration_line, cli_settings, out

sources_app = typer.Typer(help="List the ingested sources; schedule or remove one.", invoke_without_command=True)


@sources_app.callback()
def sources_list(
    ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False
) -> None:
    """List the ingested sources (default) with their last sync; schedule or remove one."""
    if ctx.invoked_subcommand is not None:
        return
    from pgcite import shapes
    from pgcite.core import Pgcite

    with Pgcite(cli_settings()) as app:
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
        if r.languages:
            pages = ", ".join(f"{escape(lang)} {count}" for lang, count in r.languages.items())
            out.print(f"  languages (pages): {pages}; default {escape(r.default_language or '-')}")
        out.print(f"  {_last_sync(r)}")
        out.print(f"  {calibration_line(r.calibration)}")


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
    counts = {"new": "new", "changed": "changed", "rerouted": "re-routed", "removed": "removed"}
    changed = [f"{last[kind]} {said}" for kind, said in counts.items() if last.get(kind)]  # "rerouted" is new
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
    with Pgcite(cli_settings()) as app:
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

    with Pgcite(cli_settings()) as app:
        app.remove_source(name)
    out.print(f"removed source {escape(repr(name))}")
