"""`pgcite log` and `pgcite gaps`: the answer log, feedback on it, its export to a regression set,
and the report of what the docs are missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from pgcite.cli.common import cli_settings, out

log_app = typer.Typer(
    help="The answer log: list it, rate or confirm answers, export it as eval rows.", invoke_without_command=True
)

Since = Annotated[str | None, typer.Option("--since", help="Only the last span (7d, 12h, 30m, 2w) or since a date.")]
Json = Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")]


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@log_app.callback()
def log_list(
    ctx: typer.Context,
    since: Since = "7d",
    refused: Annotated[bool, typer.Option("--refused", help="Only refusals.")] = False,
    stale: Annotated[
        bool, typer.Option("--stale", help="Only answers that cited a section that has changed since.")
    ] = False,
    source: Annotated[str | None, typer.Option("--source", help="Only questions asked of this source.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first.")] = 50,
    as_json: Json = False,
) -> None:
    """List logged answers, newest first (default: the last 7 days)."""
    if ctx.invoked_subcommand is not None:
        return
    from pgcite import shapes
    from pgcite.core import Pgcite
    from pgcite.learn.log import parse_since

    with Pgcite(cli_settings()) as app:
        rows = app.log_entries(since=parse_since(since), refused=refused, stale=stale, source=source, limit=limit)
    if as_json:
        print(json.dumps({"answers": [shapes.log_entry(e) for e in rows]}, ensure_ascii=False))
        return
    if not rows:
        out.print("No answers logged" + (f" since {escape(since)}" if since else "") + ".")
        return
    for e in rows:
        verdict = "[red]refused[/]" if e.refused else f"{sum(s['cited'] for s in e.retrieved)} cited"
        rating = {"up": "  [green]👍[/]", "down": "  [red]👎[/]"}.get(e.rating or "", "")
        warnings = (
            len(e.checks.get("unsupported", []))
            + len(e.checks.get("foreign_links", []))
            + len(e.checks.get("offsite_links", []))
        )
        out.print(
            f"[dim]{e.asked_at:%Y-%m-%d %H:%M}[/] [bold]{e.id[:8]}[/] {e.channel}"
            f"{' key ' + escape(e.key_name) if e.key_name else ''}  {verdict}{rating}"
            f"{f'  [yellow]{warnings} warnings[/]' if warnings else ''}"
            f"{'  [yellow]stale: a cited section has changed[/]' if e.stale_at else ''}  [dim]{e.latency_ms} ms[/]"
        )
        out.print(f"   {escape(_one_line(e.question, 110))}")
        if not e.refused:
            out.print(f"   [dim]→ {escape(_one_line(e.answer, 106))}[/]")
        if e.comment:
            out.print(f"   [dim]comment: {escape(_one_line(e.comment, 100))}[/]")


@log_app.command("rate")
def log_rate(
    answer_id: Annotated[str, typer.Argument(help="The answer's id (or its first 8 characters).")],
    rating: Annotated[str, typer.Argument(help="up or down.")],
    comment: Annotated[str | None, typer.Option("--comment", help='Why ("not in the docs" marks a gap).')] = None,
) -> None:
    """Thumbs up or down on a logged answer."""
    from pgcite.core import Pgcite

    with Pgcite(cli_settings()) as app:
        full = app.rate(answer_id, rating, comment)
    out.print(f"rated {full} {escape(rating)}")


@log_app.command("confirm")
def log_confirm(
    answer_id: Annotated[str, typer.Argument(help="The refusal's id (or its first 8 characters).")],
) -> None:
    """Confirm a refusal was right (the docs do not say): it exports as an unanswerable question."""
    from pgcite.core import Pgcite

    with Pgcite(cli_settings()) as app:
        full = app.confirm_refusal(answer_id)
    out.print(f"confirmed refusal {full}")


@log_app.command("export")
def log_export(
    eval_file: Annotated[Path, typer.Option("--eval", help="The JSONL question set to write or add to.")],
    since: Since = None,
) -> None:
    """Write rated answers and confirmed refusals as `pgcite eval` rows. An existing file keeps its
    rows; only questions it does not hold yet are added."""
    from pgcite.core import Pgcite
    from pgcite.evaluation.questions import load_questions
    from pgcite.learn.log import eval_rows, parse_since
    from pgcite.vocabulary import wording_key

    with Pgcite(cli_settings()) as app:
        entries = app.log_entries(since=parse_since(since), limit=None)
    rows = eval_rows(entries)
    stale = sum(1 for e in entries if e.stale_at and e.rating == "up")
    held = set()
    if eval_file.exists():
        held = {wording_key(q.question) for q in load_questions(eval_file)}
    new = [r for r in rows if wording_key(r["question"]) not in held]
    with eval_file.open("a", encoding="utf-8") as f:
        for row in new:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    unanswerable = sum(1 for r in new if r.get("answerable") is False)
    out.print(
        f"added {len(new)} rows to {escape(str(eval_file))} ({len(new) - unanswerable} answered, "
        f"{unanswerable} not in the docs; {len(rows) - len(new)} already there)"
        + (f"; {stale} rated answers left out: a section they cited has changed since" if stale else "")
    )


@log_app.command("prune")
def log_prune() -> None:
    """Delete the rows older than the retention (answer_log_days) now."""
    from pgcite.core import Pgcite

    settings = cli_settings()
    with Pgcite(settings) as app:
        deleted = app.prune_log()
    out.print(
        f"deleted {deleted} answers older than {settings.answer_log_days} days"
        if settings.answer_log_days > 0
        else "answer_log_days is 0: every answer is kept"
    )


def gaps(
    since: Since = "30d",
    limit: Annotated[int, typer.Option("--limit", help="At most this many groups, most asked first.")] = 50,
    as_json: Json = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="A Markdown report on stdout, for an issue or a doc.")
    ] = False,
) -> None:
    """What the docs are missing: unanswered questions grouped by need, most asked first.

    Questions refused, answered with unsupported claims or marked down, grouped so one need asked
    many ways counts once, each with the closest sections the docs do have."""
    from pgcite import shapes
    from pgcite.core import Pgcite
    from pgcite.learn.log import parse_since

    if as_json and markdown:
        raise typer.BadParameter("choose one of --json and --markdown", param_hint="--markdown")
    with Pgcite(cli_settings()) as app:
        groups = app.gaps(since=parse_since(since), limit=limit)
    if as_json:
        print(json.dumps(shapes.gaps(groups), ensure_ascii=False))
        return
    if markdown:
        print(gaps_markdown(groups, since))
        return
    if not groups:
        out.print(f"No unanswered questions since {escape(since or 'the start')}.")
        return
    for rank, g in enumerate(groups, start=1):
        reasons = ", ".join(f"{n} {r}" for r, n in g.reasons.items())
        out.print(
            f"[bold]{rank}. {escape(_one_line(g.examples[0], 100))}[/]  asked {g.count}×, "  # noqa: RUF001  (the multiplication sign: "asked 3 times")
            f"last {g.last_asked:%Y-%m-%d}  [dim]({escape(reasons)})[/]"
        )
        for example in g.examples[1:]:
            out.print(f"   [dim]also:[/] {escape(_one_line(example, 100))}")
        if g.stale:
            out.print(f"   [yellow]{_changed_since(g)}[/]")
        for h in g.closest:
            out.print(
                f"   [dim]closest:[/] {escape(h.breadcrumb)}  [cyan]{escape(h.url or h.path)}[/]  "
                f"[dim]({h.score:.2f})[/]"
            )


def _changed_since(g) -> str:
    return (
        f"{g.stale} of these answers cited sections that have changed since: "
        "ask again to see whether the change answers them"
    )


def gaps_markdown(groups, since: str | None) -> str:
    lines = [f"# What the docs are missing{f' (since {since})' if since else ''}", ""]
    if not groups:
        return "\n".join([*lines, "No unanswered questions."])
    for rank, g in enumerate(groups, start=1):
        lines += [
            f"## {rank}. {_one_line(g.examples[0], 120)}",
            "",
            f"Asked {g.count} times, last on {g.last_asked:%Y-%m-%d} "
            f"({', '.join(f'{n} {r}' for r, n in g.reasons.items())}).",
        ]
        lines += [f"- also asked as: {_one_line(e, 120)}" for e in g.examples[1:]]
        lines += [f"- {_changed_since(g)}"] if g.stale else []
        lines += [
            f"- closest section: [{h.breadcrumb}]({h.url})"
            if h.url
            else f"- closest section: {h.breadcrumb} (`{h.path}`)"
            for h in g.closest
        ]
        lines.append("")
    return "\n".join(lines)
