"""How a Sphinx site is built decides its links: `dirhtml` publishes `guide/install.rst` at
`guide/install/`. Read the Docs' settings say it in any of the ways they can (`sphinx: builder:`,
a `sphinx-build` in `build: jobs:` or `build: commands:`), found above conf.py without a git
checkout; `--sphinx-builder` says it over them. A change of builder, or of base URL, re-routes the
stored pages on the next ingest or sync, with nothing embedded again (the real database and model)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgcite.cli.main import app as cli
from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.errors import SourceError
from pgcite.ingest.flow import open_location
from pgcite.ingest.sites import detect
from pgcite.ingest.sources import Document
from pgcite.store import Store

BASE = "https://loom.example.org/"
HTML = {"index.html", "guide/index.html", "guide/install.html"}
DIRHTML = {"", "guide/", "guide/install/"}


def write_project(docs: Path) -> Path:
    """A small Sphinx project at `docs` (its conf.py there)."""
    (docs / "guide").mkdir(parents=True)
    (docs / "conf.py").write_text('project = "Loom"\n')
    (docs / "index.rst").write_text("Loom\n====\n\nLoom weaves cloth.\n\n.. toctree::\n\n   guide/index\n")
    (docs / "guide" / "index.rst").write_text("Guide\n=====\n\nHow to use the loom.\n\n.. toctree::\n\n   install\n")
    (docs / "guide" / "install.rst").write_text(
        "Installing Loom\n===============\n\nRun the installer.\n\n"
        "Warping\n-------\n\nThread the warp through the heddles before weaving.\n\n"
        "Tension\n-------\n\nKeep the warp tight so that the cloth stays even.\n"
    )
    return docs


def routes(folder: Path, builder: str | None = None) -> set[str]:
    source = open_location(str(folder), Settings())
    site = detect(source, sphinx_builder=builder)
    source.include, source.exclude = site.include, (*source.exclude, *site.exclude)
    return {site.render(item).route for item in source.scan() if isinstance(item, Document)}


def jobs(command: str) -> str:
    return f"version: 2\nbuild:\n  os: ubuntu-24.04\n  jobs:\n    build:\n      html:\n        - {command}\n"


FORMS = [
    "version: 2\nsphinx:\n  configuration: docs/conf.py\n  builder: dirhtml\n",
    jobs("uv run --group docs sphinx-build -W -b dirhtml docs $READTHEDOCS_OUTPUT/html"),
    jobs("python -m sphinx -M dirhtml docs $READTHEDOCS_OUTPUT"),
    jobs("sphinx-build --builder dirhtml docs $READTHEDOCS_OUTPUT/html"),
    jobs("sphinx-build --builder=dirhtml -W docs $READTHEDOCS_OUTPUT/html"),
    jobs("sphinx-build -bdirhtml docs $READTHEDOCS_OUTPUT/html"),
    "version: 2\nbuild:\n  commands:\n    - pip install sphinx\n"
    "    - cd docs && python -m sphinx -T -b dirhtml . $READTHEDOCS_OUTPUT/html\n",
]


@pytest.mark.parametrize("levels", [1, 2])
@pytest.mark.parametrize("settings_file", FORMS)
def test_each_way_read_the_docs_names_dirhtml_gives_folder_routes(
    tmp_path: Path, settings_file: str, levels: int
) -> None:
    tree = tmp_path / "tree"
    docs = write_project(tree / "docs" / "source" if levels == 2 else tree / "docs")
    (tree / ".readthedocs.yaml").write_text(settings_file)
    # An exported tree: no .git anywhere it could be found from (nor a licence).
    assert not [p for p in (docs, *docs.parents[:4]) if (p / ".git").exists()]
    assert routes(docs) == DIRHTML


@pytest.mark.parametrize(
    "settings_file",
    [
        # The PDF is built by another job: the HTML job's builder is the site's.
        "version: 2\nbuild:\n  jobs:\n    build:\n      pdf:\n        - sphinx-build -M latexpdf docs out\n"
        "      html:\n        - sphinx-build -b html docs $READTHEDOCS_OUTPUT/html\n",
        jobs("mkdocs build --site-dir $READTHEDOCS_OUTPUT/html"),  # no Sphinx run named
        "version: 2\nsphinx:\n  configuration: docs/conf.py\n",
    ],
)
def test_settings_that_name_no_dirhtml_build_leave_html_files(tmp_path: Path, settings_file: str) -> None:
    docs = write_project(tmp_path / "tree" / "docs")
    (tmp_path / "tree" / ".readthedocs.yaml").write_text(settings_file)
    assert routes(docs) == HTML


def test_the_ingest_option_says_the_builder_over_the_settings(tmp_path: Path) -> None:
    docs = write_project(tmp_path / "tree" / "docs")
    assert routes(docs, "dirhtml") == DIRHTML  # no settings at all
    (tmp_path / "tree" / ".readthedocs.yaml").write_text(FORMS[1])
    assert routes(docs) == DIRHTML
    assert routes(docs, "html") == HTML


def test_a_builder_pgcite_does_not_route_or_a_site_that_is_not_sphinx_is_one_line(tmp_path: Path) -> None:
    docs = write_project(tmp_path / "docs")
    with pytest.raises(SourceError, match=r"^unknown Sphinx builder 'singlehtml'; use html or dirhtml$"):
        routes(docs, "singlehtml")
    plain = tmp_path / "notes"
    plain.mkdir()
    (plain / "readme.md").write_text("# Notes\n\nText.\n")
    said = r"^--sphinx-builder is for a Sphinx site; .*notes is read as a plain site: leave it out$"
    with pytest.raises(SourceError, match=said):
        routes(plain, "dirhtml")
    done = CliRunner().invoke(cli, ["ingest", str(docs), "--sphinx-builder", "singlehtml"])
    said = " ".join(re.sub(r"[│╭╮╰╯─]", " ", done.output).split())  # out of rich's box, however it wraps
    assert done.exit_code == 2 and "unknown Sphinx builder 'singlehtml'; use html or dirhtml" in said


def stored(settings: Settings) -> tuple[list[tuple[str, str, bytes]], list[str]]:
    """(id, url, embed hash) of every chunk, and every page's url."""
    with Store.open(settings, read_only=True) as store:
        chunks = store.conn.execute("SELECT id, url, embed_hash FROM chunks ORDER BY id").fetchall()
        pages = [row[0] for row in store.conn.execute("SELECT url FROM documents ORDER BY path")]
    return [(i, u, bytes(h)) for i, u, h in chunks], pages


def test_a_new_builder_re_routes_the_stored_pages_with_nothing_embedded(
    settings: Settings, embedder, tmp_path: Path
) -> None:
    docs = write_project(tmp_path / "tree" / "docs")
    with Pgcite(settings, embedder=embedder) as app:
        first = app.ingest(str(docs), source="loom", base_url=BASE)
        before, _ = stored(settings)
        second = app.ingest(str(docs), source="loom", base_url=BASE, sphinx_builder="dirhtml")
        after, pages = stored(settings)
        hits = app.search("how tight should the warp be?", k=3)
        recorded = app.source("loom").last_sync
        again = app.sync("loom")  # with the options it was last ingested with
        options = app.source("loom").options
    assert first.new == 3 and first.chunks_embedded == len(before) > 3
    assert all(".html" in url for _, url, _ in before)
    assert (second.new, second.changed, second.unchanged, second.rerouted) == (0, 0, 0, 3)
    assert (second.chunks_embedded, second.chunks_reused) == (0, 0)
    assert ", 0 unchanged, 3 re-routed, 0 removed," in second.summary()
    assert (recorded["rerouted"], recorded["changed"]) == (3, 0)  # `pgcite sources` says so
    # The same chunks, vectors and all; only their links moved, each to its page's folder.
    assert [(i, h) for i, _, h in after] == [(i, h) for i, _, h in before]
    assert all(re.fullmatch(rf"{re.escape(BASE)}(guide/(install/)?)?(#[\w-]+)?", url) for _, url, _ in after), after
    assert all(url.endswith("/") or "/#" in url for _, url, _ in after)
    assert pages == [f"{BASE}guide/", f"{BASE}guide/install/", BASE]
    assert hits[0].url == f"{BASE}guide/install/#tension"
    assert (again.unchanged, again.rerouted, again.chunks_embedded) == (3, 0, 0)
    assert options["sphinx_builder"] == "dirhtml"


def test_fixed_settings_or_a_new_base_url_re_route_on_the_next_sync(
    settings: Settings, embedder, tmp_path: Path
) -> None:
    """Fixing .readthedocs.yaml once left every stored link as it was until the source was removed."""
    tree = tmp_path / "tree"
    docs = write_project(tree / "docs")
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(docs), source="loom", base_url=BASE)
        (tree / ".readthedocs.yaml").write_text(FORMS[1])
        install = docs / "guide" / "install.rst"
        install.write_text(install.read_text().replace("Run the installer.", "Run the installer as root."))
        fixed = app.sync("loom")
        _, pages = stored(settings)
        moved = app.ingest(str(docs), source="loom", base_url="https://docs.loom.example/")
        chunks, _ = stored(settings)
        settled = app.sync("loom")
    # The edited page is changed (its one new text embedded); the others are only re-routed.
    assert (fixed.changed, fixed.rerouted, fixed.unchanged, fixed.chunks_embedded) == (1, 2, 0, 1)
    assert pages == [f"{BASE}guide/", f"{BASE}guide/install/", BASE]
    assert (moved.changed, moved.rerouted, moved.chunks_embedded) == (0, 3, 0)
    assert all(url.startswith("https://docs.loom.example/") for _, url, _ in chunks)
    assert (settled.unchanged, settled.rerouted, settled.changed) == (3, 0, 0)
