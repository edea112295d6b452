"""Sphinx sources as Sphinx publishes them (pgcite.ingest.sites.sphinx and rst.py): conf.py read
and never run, reStructuredText through docutils with Sphinx's roles and directives, includes
bounded, MyST pages, routes and section ids. tests/sites/sphinx/ is a small project written for
these tests; then an ingest and a search against the real database and model."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_sites import read_site, text

from pgcite.config import Settings
from pgcite.errors import SourceError
from pgcite.ingest.flow import ingest, open_location
from pgcite.ingest.report import IngestReport
from pgcite.ingest.sites import detect, join_url
from pgcite.ingest.sites.sphinx import read_conf
from pgcite.ingest.sources import Document
from pgcite.retrieval.search import search
from pgcite.store.pages_sql import list_pages, read_page
from pgcite.store import Store

PROJECT = Path(__file__).parent / "sites" / "sphinx"
BASE = "https://gearbox.readthedocs.io/en/latest/"


def test_conf_py_is_read_not_run_and_says_the_pages_the_base_url_and_the_language() -> None:
    conf = read_conf((PROJECT / "conf.py").read_text())
    # `release = __import__("gearbox")...` would fail if run: computed values are left out.
    assert conf["project"] == "Gearbox" and "release" not in conf
    site, pages = read_site(PROJECT)
    assert site.name == "sphinx" and site.base_url == BASE and site.languages == ("en",)
    # exclude_patterns leave the includes and drafts out; myst_parser makes .md pages too.
    assert set(pages) == {"index.rst", "guide/install.rst", "guide/tuning.rst", "guide/faq.md"}
    assert pages["guide/tuning.rst"].route == "guide/tuning.html" and pages["guide/faq.md"].route == "guide/faq.html"
    assert join_url(BASE, pages["guide/tuning.rst"].route, "spin-rate") == f"{BASE}guide/tuning.html#spin-rate"


@pytest.mark.parametrize(
    "conf",
    [
        # A widely used project's way: MyST only where the man pages are not being built.
        'project = "x"\nextensions = ["sphinx.ext.autodoc"]\nif "man" not in tags:\n'
        '    extensions.extend(("myst_parser", "sphinx_copybutton"))\n',
        'project = "x"\nextensions = []\ntry:\n    import myst_parser\n    extensions += ["myst_parser"]\n'
        "except ImportError:\n    pass\n",
        'project = "x"\nextensions = base_extensions + ["myst_parser"] if on_rtd else []\n',
        'project = "x"\nextensions = []\nfor name in ("a", "b"):\n    extensions.append("myst_parser.sphinx_")\n',
        'project = "x"\ndef setup(app):\n    app.setup_extension("myst_nb")\n',
        'project = "x"\nextensions = get_extensions()\nmyst_enable_extensions = ["colon_fence"]\n',  # MyST's settings
        'project = "x"\nif True:\n    myst_heading_anchors = 3\n',
    ],
)
def test_myst_is_seen_however_conf_py_enables_it(tmp_path: Path, conf: str) -> None:
    """A project adding myst_parser with `extensions.extend(...)` in a branch lost 40 Markdown pages."""
    (tmp_path / "conf.py").write_text(conf)
    (tmp_path / "index.rst").write_text("Home\n====\n\nText.\n")
    (tmp_path / "guide.md").write_text("# Guide\n\n```{note}\nRead me.\n```\n")
    site, pages = read_site(tmp_path)
    assert site.name == "sphinx" and set(pages) == {"index.rst", "guide.md"}
    assert "> **Note:** Read me." in text(pages["guide.md"])


def test_extensions_are_read_wherever_conf_py_names_them_and_never_run() -> None:
    conf = read_conf(
        'extensions = ["a"]\nextensions += ("b",)\nif x:\n    extensions.append("c")\nelse:\n'
        '    extensions.insert(0, "d")\nextensions.extend(["e"] + more)\nextensions.append(name)\n'
        'extensions.append("a")\nlanguage = "en"\n'
    )
    assert conf["extensions"] == ["a", "b", "c", "d", "e"] and conf["language"] == "en"
    assert read_conf('extensions = ["a"]\nimport os\nos.system("touch /tmp/ran")\n')["extensions"] == ["a"]
    assert read_conf("not python at all (\n") == {}


@pytest.mark.parametrize("nested", ["x = " + "-" * 100_000 + "1\n", "x = 1" + "+1" * 100_000 + "\n"])
def test_a_conf_py_nested_past_pythons_parser_is_one_clear_line(tmp_path: Path, nested: str) -> None:
    """MemoryError and RecursionError from ast.parse were a traceback out of `pgcite ingest`."""
    (tmp_path / "conf.py").write_text(nested)
    (tmp_path / "index.rst").write_text("Home\n====\n\nText.\n")
    with pytest.raises(SourceError, match=r"^conf.py nests deeper than Python's parser reads \((MemoryError|"
                       r"RecursionError)\), so Sphinx could not run it either: simplify it, or name the site "
                       r"generator with --site$"):
        read_site(tmp_path)
    assert read_site(tmp_path, site="plain")[0].name == "plain"


def test_a_conf_py_that_is_not_sphinxs_is_not_taken_for_it(tmp_path: Path) -> None:
    (tmp_path / "conf.py").write_text("import os\nprint(os.getcwd())\n")
    (tmp_path / "guide.md").write_text("# Guide\n\nText.\n")
    site, pages = read_site(tmp_path)
    assert site.name == "plain" and set(pages) == {"guide.md"}


def build_html(out: Path) -> Path:
    """The project built to HTML by Sphinx itself (its conf.py replaced by -D settings: the real one
    is not runnable, by design)."""
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-C", "-D", "project=Gearbox", "-D",
         "extensions=myst_parser", "-D", "exclude_patterns=_includes/*,drafts/*", str(PROJECT), str(out)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_html(tmp_path_factory.mktemp("sphinx") / "html")


def test_every_page_and_section_link_is_one_sphinx_itself_publishes(built: Path) -> None:
    # Each page's route is a file Sphinx wrote, each anchor an id in that file.
    _, pages = read_site(PROJECT)
    checked = 0
    for page in pages.values():
        html = (built / page.route).read_text()
        ids = set(re.findall(r'id="([^"]+)"', html))
        for section in page.parsed.sections:
            if section.anchor:
                assert section.anchor in ids, (page.route, section.anchor)
                checked += 1
    assert checked == 5
    # A repeated title's section is id1, as Sphinx numbers it; a label named as its title's id
    # (`.. _installing-gearbox:`) does not move the id the page links it by.
    assert [s.anchor for s in pages["guide/tuning.rst"].parsed.sections if s.anchor] == ["spin-rate", "options", "id1"]


def test_sphinx_roles_and_directives_read_as_a_reader_sees_them() -> None:
    _, pages = read_site(PROJECT)
    install, tuning = text(pages["guide/install.rst"]), text(pages["guide/tuning.rst"])
    assert "Gearbox needs Python 3.11 and 2 GB of disk." in install  # `.. include::`
    assert "then see tuning and `Box`." in install  # :ref: with a title, :class: with ~
    assert "> **Note:** Gearbox does not run on Python 2." in install
    assert "Changed in version 3.0: The `--force` flag was removed." in install
    assert "Set the spin rate with `gearbox.Box.spin()`." in tuning  # :func: gets its ()
    # :ref: and :doc: without a title show their target's, as Sphinx does; a change to that page
    # re-reads this one.
    assert "finish Installing Gearbox (see Installing Gearbox and Frequently asked questions)." in tuning
    assert {"guide/install.rst", "guide/faq.md"} <= set(pages["guide/tuning.rst"].included)
    assert "Several `Box`es can spin together." in tuning  # an escaped space is no space (nor a NUL)
    assert "> **Warning:** Never exceed 90 turns per second or the gearbox melts." in tuning
    # literalinclude: the chosen lines, its language and caption.
    assert "**Spinning a box**\n\n```python\nbox = gearbox.Box()\nbox.spin(rate=40)\n```" in tuning
    assert "`Box.spin(rate: int = 40) -> None`\n\nSpin the box at *rate* turns per second." in tuning
    assert "| `rate` | 40 | Turns per second. |" in tuning  # a simple table
    assert "The table above lists every option." in tuning  # `only` keeps its content
    # What a reader never sees: the toctree, and autodoc, reported as left out.
    assert "maxdepth" not in text(pages["index.rst"]) and "guide/install" not in text(pages["index.rst"])
    assert pages["guide/install.rst"].problems == (
        "automodule gearbox.core: autodoc pulls docstrings from the code, which pgcite does not import: left out",
    )
    assert "members" not in install


def test_myst_pages_read_their_directives_and_roles() -> None:
    _, pages = read_site(PROJECT)
    faq = pages["guide/faq.md"]
    assert faq.title == "Frequently asked questions"
    assert [s.anchor for s in faq.parsed.sections] == ["cooling"]  # its label, as Sphinx links it
    body = text(faq)
    assert "> **Note:** Only above 60 turns per second." in body
    assert "Use a fan, as the tuning guide says; see `gearbox.Fan` and Tuning." in body
    assert "```python\nbox.cool(fan=True)\n```" in body
    assert "(cooling)=" not in body and "toctree" not in body


def test_angle_brackets_in_rst_text_are_read_as_the_page_shows_them(tmp_path: Path) -> None:
    """Flask's WTForms page says "access `form.<NAME>.data`": reST shows the brackets, where Markdown
    would take `<NAME>` for a tag and drop it."""
    (tmp_path / "conf.py").write_text('project = "x"\n')
    (tmp_path / "forms.rst").write_text(
        "Forms\n=====\n\nTo read a value, access `form.<NAME>.data`. Write <b>x</b> &amp; y.\n"
    )
    _, pages = read_site(tmp_path)
    body = text(pages["forms.rst"])
    assert "access *form.\\<NAME>.data*." in body, body  # Markdown for the literal brackets
    assert "Write \\<b>x\\</b> \\&amp; y." in body  # a tag and an entity in reST are text too


def test_a_myst_code_block_shows_its_caption_and_no_option_lines(tmp_path: Path) -> None:
    """Click's testing page: ```{code-block} python, `:caption: hello.py`, a blank line, then the code.
    The blank line was the code's first line and the caption was lost."""
    (tmp_path / "conf.py").write_text('project = "x"\nextensions = ["myst_parser"]\n')
    (tmp_path / "testing.md").write_text(
        "# Testing\n\n```{code-block} python\n:caption: hello.py\n:linenos:\n\nimport click\n```\n"
    )
    _, pages = read_site(tmp_path)
    assert "**hello.py**\n\n```python\nimport click\n```" in text(pages["testing.md"]), text(pages["testing.md"])


def test_an_include_outside_the_project_is_left_out_and_said(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("password=hunter2\n")
    project = tmp_path / "docs"
    project.mkdir()
    (project / "conf.py").write_text('project = "x"\n')
    (project / "index.rst").write_text(
        "Home\n====\n\n.. include:: ../secret.txt\n\n.. literalinclude:: /etc/passwd\n\nText.\n"
    )
    _, pages = read_site(project)
    page = pages["index.rst"]
    assert "hunter2" not in text(page) and "root:" not in text(page) and "Text." in text(page)
    assert len(page.problems) == 2 and all("left out" in p for p in page.problems)


def test_a_line_over_docutils_limit_is_read_and_what_docutils_cannot_read_whole_says_why(tmp_path: Path) -> None:
    """docutils reads nothing of a page with a line over 10,000 characters: the page was stored empty."""
    (tmp_path / "conf.py").write_text('project = "x"\n')
    table = "| " + " | ".join(f"cell{n}" for n in range(3000)) + " |"  # 27,000 characters
    (tmp_path / "long.rst").write_text(f"Long\n====\n\nBefore.\n\n{table}\n\nAfter.\n")
    _, pages = read_site(tmp_path)
    assert "Before." in text(pages["long.rst"]) and "cell2999 |" in text(pages["long.rst"])
    assert "After." in text(pages["long.rst"])
    # Past what pgcite reads, and a list nested far deeper than a page ever is: the reason, not an empty page.
    (tmp_path / "long.rst").write_text("Long\n====\n\n" + "word " * 200_001 + "\n")
    (tmp_path / "deep.rst").write_text("Deep\n====\n\n" + "- " * 10_000 + "x\n")
    source = open_location(str(tmp_path), Settings())
    site = detect(source)
    source.include = site.include
    documents = {d.path: d for d in source.scan() if isinstance(d, Document)}
    with pytest.raises(ValueError, match=r"^line 4 is over 1,000,000 characters, more than docutils reads in one line"):
        site.render(documents["long.rst"])
    with pytest.raises(ValueError, match=r"^nested deeper than pgcite reads reStructuredText"):
        site.render(documents["deep.rst"])


def test_a_sphinx_project_is_searched_and_cited_with_its_published_links(
    settings: Settings, embedder, tmp_path: Path
) -> None:
    with Store.open(settings) as store:
        report = ingest(open_location(str(PROJECT), settings), source_name="gearbox", base_url="",
                        settings=settings, store=store, embedder=embedder)
    assert report.site == "sphinx" and report.new == 4 and report.base_url == BASE
    assert report.problems == [
        "guide/install.rst: automodule gearbox.core: autodoc pulls docstrings from the code, "
        "which pgcite does not import: left out"
    ]
    with Store.open(settings, read_only=True) as store:
        hits = search(store, embedder, "how fast can the gearbox spin before it melts?", k=3)
        pages = list_pages(store.conn, "gearbox")
    assert hits[0].url == f"{BASE}guide/tuning.html#spin-rate"
    # llms.txt's order is the toctrees', depth first from the root document, not the URLs'.
    assert [p.path for p in pages] == ["index.rst", "guide/install.rst", "guide/tuning.rst", "guide/faq.md"]


def test_a_changed_title_reads_its_referrers_again_and_a_reordered_toctree_reorders_the_pages(
    settings: Settings, embedder, tmp_path: Path
) -> None:
    project = tmp_path / "gearbox"
    shutil.copytree(PROJECT, project)

    def read() -> IngestReport:
        return ingest(open_location(str(project), settings), source_name="g", base_url="", settings=settings,
                      store=store, embedder=embedder)

    with Store.open(settings) as store:
        read()
        install = project / "guide" / "install.rst"
        install.write_text(install.read_text().replace("Installing Gearbox\n", "Installing the Gearbox\n")
                           .replace("==================\n", "======================\n"))
        retitled = read()
        index = project / "index.rst"
        index.write_text(index.read_text().replace("   guide/install\n   guide/tuning\n", "   guide/tuning\n   guide/install\n"))
        reordered = read()
        pages = list_pages(store.conn, "g")
        tuning = read_page(store.conn, source="g", path="guide/tuning.rst")
    assert retitled.paths["changed"] == ["guide/install.rst", "guide/tuning.rst"]  # tuning shows its title
    assert tuning is not None and "finish Installing the Gearbox (see Installing the Gearbox and" in tuning.markdown
    assert reordered.changed == 4  # every page's place comes from index.rst's toctree
    assert [p.path for p in pages] == ["index.rst", "guide/tuning.rst", "guide/install.rst", "guide/faq.md"]


@pytest.mark.parametrize(
    "settings_file",
    [
        "version: 2\nsphinx:\n  configuration: docs/conf.py\n  builder: dirhtml\n",
        "version: 2\nbuild:\n  commands:\n    - uv run sphinx-build -W -b dirhtml docs $READTHEDOCS_OUTPUT/html\n",
    ],
)
def test_read_the_docs_settings_say_when_pages_are_folders(tmp_path: Path, settings_file: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".readthedocs.yaml").write_text(settings_file)
    (tmp_path / ".env").write_text("SECRET=1\n")
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "conf.py").write_text('project = "x"\n')
    (docs / "license.rst").write_text("License\n=======\n\nBSD.\n")  # not the project's root for all that
    (docs / "index.rst").write_text("Home\n====\n\n.. include:: ../.env\n\nText.\n")
    (docs / "guide" / "install.rst").write_text("Install\n=======\n\nText.\n")
    (docs / "guide" / "index.rst").write_text("Guide\n=====\n\nText.\n")
    _, pages = read_site(docs)
    assert {p.route for p in pages.values()} == {"", "license/", "guide/", "guide/install/"}
    assert "SECRET" not in text(pages["index.rst"])  # a hidden file that is not a site's settings


def test_read_the_docs_settings_that_are_not_yaml_are_said_and_read_as_absent(tmp_path: Path) -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    (tmp_path / "conf.py").write_text('project = "x"\n')
    (tmp_path / "index.rst").write_text("Home\n====\n\nText.\n")
    for settings_file, said in (("sphinx: [builder: dirhtml\n", "while parsing"), (laughs, "billion laughs")):
        (tmp_path / ".readthedocs.yaml").write_text(settings_file)
        site, pages = read_site(tmp_path)
        assert pages["index.rst"].route == "index.html"  # the default builder's link
        (problem,) = site.problems
        assert problem.startswith(".readthedocs.yaml left out (") and said in problem, problem
        assert problem.endswith("read as if absent; --sphinx-builder says the builder")


@pytest.mark.parametrize("ingested", ["docs/source", "docs/source/guide"])
def test_read_the_docs_settings_at_the_root_of_an_exported_tree_are_found(tmp_path: Path, ingested: str) -> None:
    """No .git, no licence (an exported tree, a zip): the settings two folders above conf.py were missed."""
    tree = tmp_path / "exports" / "tree"
    source = tree / "docs" / "source"
    (source / "guide").mkdir(parents=True)
    (tree / ".readthedocs.yaml").write_text(
        "version: 2\nsphinx:\n  configuration: docs/source/conf.py\n  builder: dirhtml\n"
    )
    (source / "conf.py").write_text('project = "x"\n')
    (source / "index.rst").write_text("Home\n====\n\nText.\n")
    (source / "guide" / "install.rst").write_text("Install\n=======\n\nText.\n")
    _, pages = read_site(tree / ingested)
    assert {p.route for p in pages.values()} >= {"guide/install/"}
    # Never above the root of what may be read: --include-root at the docs folder leaves them out.
    _, pages = read_site(source, include_root=str(tree / "docs"))
    assert pages["guide/install.rst"].route == "guide/install.html"
    # A tree without them: an unrelated folder's further up (past the project's levels) are not looked for.
    (tmp_path / ".readthedocs.yaml").write_text("version: 2\nsphinx:\n  builder: dirhtml\n")
    (tree / ".readthedocs.yaml").unlink()
    _, pages = read_site(source)
    assert pages["guide/install.rst"].route == "guide/install.html"


def test_without_read_the_docs_settings_pages_are_html_files(tmp_path: Path) -> None:
    (tmp_path / "conf.py").write_text('project = "x"\nhtml_file_suffix = ".htm"\n')
    (tmp_path / "index.rst").write_text("Home\n====\n\nText.\n")
    _, pages = read_site(tmp_path)
    assert pages["index.rst"].route == "index.htm"


def test_the_built_html_reads_as_its_sources(built: Path) -> None:
    """The same site from Sphinx's HTML: the same pages at the same links, the same sections, the
    same words, and nothing of the theme's navigation, search box or footer."""
    _, sources = read_site(PROJECT)
    site, published = read_site(built)
    assert site.name == "html"
    # The home page is linked as the folder it is served from ("" for index.html); the rest alike.
    by_route = {p.route or "index.html": p for p in published.values()}
    assert set(by_route) == {p.route for p in sources.values()}
    for page in sources.values():
        html = by_route[page.route]
        assert html.title == page.title
        assert [s.anchor for s in html.parsed.sections] == [s.anchor for s in page.parsed.sections], page.route
    tuning = text(by_route["guide/tuning.html"])
    shown = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", tuning)  # links as their text
    assert "finish Installing Gearbox (see Installing Gearbox and Frequently asked questions)." in shown
    assert "**Warning**\n\nNever exceed 90 turns per second or the gearbox melts." in tuning  # a note keeps its title
    assert "```python\nbox = gearbox.Box()" in tuning
    chrome = ("Navigation", "Quick search", "Related Topics", "Powered by", "Show Source", "¶")
    assert not [(p.route, w) for p in published.values() for w in chrome if w in text(p)]
