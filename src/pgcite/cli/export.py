"""`pgcite export llms-txt SOURCE DIR`: a source's llms.txt, llms-full.txt and each page's Markdown
copy as files, for a static docs site to publish beside its pages (docs/llms-txt.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from pgcite.cli.common import cli_settings, out
from pgcite.errors import PgciteError

export_app = typer.Typer(help="Write what a docs site can publish: llms.txt and Markdown copies.")


def _inside(root: Path, name: str) -> Path:
    target = (root / name).resolve()
    if not target.is_relative_to(root):  # a page's URL never climbs out of the folder
        raise PgciteError(f"the page copy {name!r} would be written outside {root}")
    return target


@export_app.command("llms-txt")
def llms_txt_files(
    source: Annotated[str, typer.Argument(help="The source to export.")],
    folder: Annotated[Path, typer.Argument(help="Where to write; its contents go at the source's base URL.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Write llms.txt, llms-full.txt and one PATH.md per page of the default version. Links point at
    the source's base URL, so copy the folder there (relative links without a base URL)."""
    from pgcite.core import Pgcite
    from pgcite.publish import llms_txt

    root = folder.expanduser().resolve()
    with Pgcite(cli_settings()) as app:
        info = app.source(source)
        site = llms_txt.Site(info.name, info.base_url, app.pages(info.name))
        base = info.base_url.rstrip("/") + "/" if info.base_url else ""
        root.mkdir(parents=True, exist_ok=True)
        (root / "llms.txt").write_text(
            llms_txt.site_index(site, lambda page: base + llms_txt.copy_name(page, site.base_url)), encoding="utf-8"
        )
        full = llms_txt.FullText(
            site.name, llms_txt.summary(site), app.page_texts(site.name), app.settings.llms_full_max_bytes
        )
        with (root / "llms-full.txt").open("w", encoding="utf-8") as f:
            f.writelines(full)
        for page in app.page_texts(site.name):
            target = _inside(root, llms_txt.copy_name(page, site.base_url))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(llms_txt.page_copy(page), encoding="utf-8")
    capped = full.left_out > 0
    summary = {"folder": str(root), "pages": len(site.pages), "files": len(site.pages) + 2, "left_out": full.left_out}
    if as_json:
        print(json.dumps(summary))
        return
    out.print(
        f"wrote llms.txt, llms-full.txt{' (capped: llms_full_max_bytes)' if capped else ''} and "
        f"{len(site.pages)} page copies to {escape(str(root))}"
    )
