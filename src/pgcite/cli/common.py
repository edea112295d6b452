"""What every `pgcite` command shares: the two consoles, the settings, the --mode option, a source's
default name and the relevance bar as people read it."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from pgcite.config import Settings, load_settings

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)  # one line per message, also in a log


def print_table(table: Table) -> None:
    """A table at the terminal's width; piped, at its own, so a file or a pager gets every cell
    whole rather than wrapped at 80 columns."""
    if out.is_terminal:
        out.print(table)
        return
    natural = Measurement.get(out, out.options.update(width=10_000), table).maximum
    width = out.width
    out.width = max(natural, width)  # print's own width= is capped at the console's
    try:
        out.print(table)
    finally:
        out.width = width


def cli_settings() -> Settings:
    return load_settings()


def search_mode(value: str | None) -> str | None:
    from pgcite.store import SEARCH_MODES

    if value is not None and value not in SEARCH_MODES:
        raise typer.BadParameter(f"unknown search mode {value!r}; use one of {', '.join(SEARCH_MODES)}")
    return value


ModeOption = Annotated[
    str | None,
    typer.Option("--mode", callback=search_mode, help="vector, text or hybrid (default: the search_mode setting)."),
]


def default_source_name(location: str) -> str:
    """`docs/` -> docs, `site.zip` -> site, `s3://bucket/team/docs` -> docs, `api/openapi.yaml` -> openapi."""
    trimmed = location.rstrip("/")
    name = PurePosixPath(trimmed.split("://", 1)[-1]).name
    name = PurePosixPath(name).stem if name.endswith((".zip", ".yaml", ".yml", ".json")) else name
    # What a source name may hold (vocabulary.check_name): `My Docs` -> My-Docs.
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._")[:64] or "docs"


def calibration_line(c: dict | None) -> str:
    """The relevance bar measured for the source and its model (calibration.py)."""
    if not c:
        return "[dim]relevance bar not measured yet (the default 0.58 applies); the next ingest or sync measures it[/]"
    return (
        f"relevance bar {c['bar']:.3f} (cosine distance; off-topic questions score up to {c['offtopic_high']:.2f}, "
        f"its own headings' questions {c['answered_median']:.2f}), vector scale {c['vector_scale']:.2f}; "
        + (
            f"reader bar {c['reader_bar']:+.2f} (its headings' questions score {c['reader_answered_low']:+.2f} "
            f"and up, {c['reader_unanswered_high']:+.2f} and down with their section taken out); "
            if c.get("reader_bar") is not None
            else ""
        )
        + f"measured {c['measured_at']} UTC with {escape(c['model'])}"
    )
