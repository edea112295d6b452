"""`pgcite insights`: what readers ask, at a glance: questions per day or week by channel and source,
the shares refused and marked down, latency, the most cited pages, answers to ask again and the gaps.
Tables in the terminal, or `--json` (the object of GET /v1/insights) or `--markdown` for a weekly job."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from pgcite.cli.common import cli_settings, out, print_table


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.1f}%"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _day(iso: str, unit: str) -> str:
    return ("week of " if unit == "week" else "") + iso[:10]


def _rows(data: dict) -> tuple[list[str], list[list[str]]]:
    """The per-bucket table, as header and rows of text (the terminal's and Markdown's)."""
    channels, sources = data["channels"], data["sources"]
    header = ["", "questions", *channels, *(f"of {s}" for s in sources)]
    header += ["refused", "down", "p50 ms", "p95 ms"]
    rows = []
    for b in [*data["buckets"], {**data["total"], "start": "total", "channels": {}, "sources": {}}]:
        total = b["start"] == "total"
        rows.append(
            [
                "total" if total else _day(b["start"], data["span"]["unit"]),
                str(b["questions"]),
                *(str(sum(x["channels"][c] for x in data["buckets"]) if total else b["channels"][c]) for c in channels),
                *(str(sum(x["sources"][s] for x in data["buckets"]) if total else b["sources"][s]) for s in sources),
                _pct(b["refused_share"]),
                _pct(b["down_share"]),
                _ms(b["latency_ms"]["p50"]),
                _ms(b["latency_ms"]["p95"]),
            ]
        )
    return header, rows


def _title(data: dict) -> str:
    span = data["span"]
    where = "".join(f", {k} {span[k]}" for k in ("source", "channel", "language") if span[k])
    return f"Insights from {span['since'][:16].replace('T', ' ')} to {span['until'][:16].replace('T', ' ')} UTC{where}"


def _asked_in(data: dict) -> str:
    """The languages asked in, most first, as the summary line ends ("" when the pages had none)."""
    return f"; asked in {', '.join(data['languages'])}" if data["languages"] else ""


def markdown(data: dict) -> str:
    """The report as Markdown: a weekly job posts it or attaches it to the docs' CI."""
    total = data["total"]
    lines = [
        f"# {_title(data)}",
        "",
        f"{total['questions']} questions; {_pct(total['refused_share'])} refused, {_pct(total['down_share'])} "
        f"marked down; latency p50 {_ms(total['latency_ms']['p50'])} ms, p95 {_ms(total['latency_ms']['p95'])} ms"
        f"{_asked_in(data)}.",
        "",
        f"## Questions per {data['span']['unit']}",
        "",
    ]
    header, rows = _rows(data)
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", "## The most cited pages", ""]
    lines += [
        f"- [{p['title'] or p['path']}]({p['url']}) ({p['source']}): cited by {p['answers']} answers"
        if p["url"]
        else f"- {p['title'] or p['path']} ({p['source']}, `{p['path']}`): cited by {p['answers']} answers"
        for p in data["cited_pages"]
    ] or ["None."]
    again = data["ask_again"]
    lines += ["", f"## Ask again: {again['count']} answers cited sections that have changed since", ""]
    lines += [f"- {e['asked_at'][:10]} {e['question']} (`{e['id'][:8]}`)" for e in again["examples"]]
    lines += ["", "## What the docs are missing", ""]
    for rank, g in enumerate(data["gaps"], start=1):
        link = f" [File a docs task]({g['task_url']})" if g["task_url"] else ""
        lines += [
            f"{rank}. **{g['examples'][0]}**: asked {g['count']} times ({g['trend']}; {g['previous']} the span "
            f"before).{link}"
        ]
        lines += [f"   - also asked as: {e}" for e in g["examples"][1:]]
        lines += [
            f"   - closest section: [{h['breadcrumb']}]({h['url']})" if h["url"] else f"   - closest: {h['breadcrumb']}"
            for h in g["closest"]
        ]
    if not data["gaps"]:
        lines.append("No unanswered questions.")
    return "\n".join(lines) + "\n"


def _print(data: dict) -> None:
    total = data["total"]
    out.print(f"[bold]{escape(_title(data))}[/]")
    out.print(
        f"{total['questions']} questions; {_pct(total['refused_share'])} refused, "
        f"{_pct(total['down_share'])} marked down; latency p50 {_ms(total['latency_ms']['p50'])} ms, "
        f"p95 {_ms(total['latency_ms']['p95'])} ms{escape(_asked_in(data))}"
    )
    header, rows = _rows(data)
    table = Table(*header, title=f"Questions per {data['span']['unit']}", title_justify="left")
    for row in rows:
        table.add_row(*map(escape, row))
    print_table(table)
    pages = Table("answers", "page", "source", title="The most cited pages", title_justify="left")
    for p in data["cited_pages"]:
        pages.add_row(str(p["answers"]), escape(p["title"] or p["path"]), escape(p["source"]))
    print_table(pages)
    again = data["ask_again"]
    out.print(f"[bold]Ask again:[/] {again['count']} answers cited sections that have changed since")
    for e in again["examples"]:
        out.print(f"   [dim]{e['asked_at'][:10]} {e['id'][:8]}[/] {escape(e['question'])}")
    gaps = Table("asked", "trend", "question", "closest section", "docs task", title="What the docs are missing",
                 title_justify="left")  # fmt: skip
    for g in data["gaps"]:
        closest = g["closest"][0]["breadcrumb"] if g["closest"] else ""
        gaps.add_row(
            str(g["count"]),
            f"{g['trend']} ({g['previous']})",
            escape(g["examples"][0]),
            escape(closest),
            "link in --markdown" if g["task_url"] else "",
        )
    print_table(gaps)


def insights(
    since: Annotated[str, typer.Option("--since", help="The span: the last 7d, 12h, 2w..., or since a date.")] = "7d",
    until: Annotated[str | None, typer.Option("--until", help="The span's end, as --since (default: now).")] = None,
    source: Annotated[str | None, typer.Option("--source", help="Only questions asked of this source.")] = None,
    channel: Annotated[
        str | None, typer.Option("--channel", help="Only questions asked there: cli, api, page, widget, chat, mcp...")
    ] = None,
    language: Annotated[
        str | None, typer.Option("--language", help="Only questions answered in this language: en, fr, pt-br...")
    ] = None,
    unit: Annotated[str | None, typer.Option("--unit", help="day or week (default: week past 92 days).")] = None,
    gaps: Annotated[int, typer.Option("--gaps", min=0, max=50, help="At most this many gaps; 0: none.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout (GET /v1/insights).")] = False,
    as_markdown: Annotated[bool, typer.Option("--markdown", help="A Markdown report on stdout.")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write the charts to this file: one page that opens offline.")
    ] = None,
) -> None:
    """What readers ask, at a glance: questions per day by channel and source, the shares refused and
    marked down, latency, the most cited pages, answers to ask again and what the docs are missing."""
    from pgcite import shapes
    from pgcite.core import Pgcite
    from pgcite.learn.insights import span_of

    if as_json and as_markdown:
        raise typer.BadParameter("choose one of --json and --markdown", param_hint="--markdown")
    span = span_of(since, until, source=source, channel=channel, language=language)
    with Pgcite(cli_settings()) as app:
        app.require_source(source)
        data = shapes.insights(app.insights(span, unit=unit, gaps=gaps))
    if as_json:
        print(json.dumps(data, ensure_ascii=False))
    elif as_markdown:
        print(markdown(data), end="")
    elif not html:
        _print(data)
    if html:
        _write_html(html, data, said=as_json or as_markdown)


def _write_html(path: Path, data: dict, said: bool) -> None:
    """The report, written whole or not at all (a job may attach it the moment it exists)."""
    from pgcite.errors import PgciteError
    from pgcite.server.insights_report import render

    if path.is_dir():
        raise PgciteError(f"--html {path} is a folder; give the report's file name, e.g. {path / 'insights.html'}")
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(render(data), encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise PgciteError(f"cannot write the report to {path}: {exc.strerror or exc}") from exc
    # On stderr when stdout carries the JSON or the Markdown.
    print(
        f"Wrote {path}: {data['total']['questions']} questions, {len(data['gaps'])} gaps.",
        file=sys.stderr if said else sys.stdout,
    )
