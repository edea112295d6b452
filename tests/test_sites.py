"""Site generators (pgcite.ingest.sites): detection, cleaning, includes, routing, anchors and versions,
on the small fixture sites in tests/sites/. No database and no model: pages are read and parsed
exactly as ingest reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pgcite.config import Settings
from pgcite.errors import SourceError
from pgcite.ingest.flow import open_location
from pgcite.ingest.sites import Page, Site, detect, join_url
from pgcite.retrieval.search import is_release_question
from pgcite.ingest.sites.changelog import is_changelog
from pgcite.ingest.sites.leftovers import leftovers
from pgcite.ingest.markdown import parse
from pgcite.ingest.sources import Document

SITES = Path(__file__).parent / "sites"


def read_site(folder: Path | str, site: str | None = None, **kw) -> tuple[Site, dict[str, Page]]:
    source = open_location(str(folder), Settings(), **kw)
    found = detect(source, site)
    source.include, source.exclude = found.include, (*source.exclude, *found.exclude)
    pages = {item.path: found.render(item) for item in source.scan() if isinstance(item, Document)}
    return found, pages


def texts(page: Page) -> list[str]:
    return [block.text for section in page.parsed.sections for block in section.blocks]


def text(page: Page) -> str:
    return "\n\n".join(texts(page))


def anchors(page: Page) -> dict[tuple[str, ...], str | None]:
    """Heading path -> anchor (a repeated heading keeps the last)."""
    return {section.heading_path: section.anchor for section in page.parsed.sections}


def anchor_list(page: Page) -> list[str | None]:
    return [section.anchor for section in page.parsed.sections]


def url(site: Site, page: Page, anchor: str | None = None, base: str = "https://x.dev/") -> str:
    return join_url(base, page.route, anchor)


# --- detection ------------------------------------------------------------------------------


@pytest.mark.parametrize("folder, name", [
    ("mkdocs/site", "mkdocs"), ("docusaurus/website", "docusaurus"), ("vitepress/docs", "vitepress"),
    ("mdbook/book", "mdbook"), ("hugo", "hugo"), ("starlight", "starlight"), ("plain", "plain"),
])
def test_each_generator_is_detected_from_the_folder_holding_its_configuration(folder: str, name: str) -> None:
    site, pages = read_site(SITES / folder)
    assert site.name == name
    assert pages, "every fixture site has pages"


def test_pointing_at_the_docs_folder_finds_the_site_above_it() -> None:
    site, pages = read_site(SITES / "mkdocs" / "site" / "docs")
    assert site.name == "mkdocs" and site.files.prefix == "docs"
    assert set(pages) == {"index.md", "guide/spinning.md", "guide/escape.md"}
    spinning = pages["guide/spinning.md"]
    assert spinning.route == "guide/spinning/"
    assert "app.spin(rate=40)" in text(spinning)  # the include above the docs folder is still read

    site, pages = read_site(SITES / "docusaurus" / "website" / "versioned_docs" / "version-2.0")
    assert site.name == "docusaurus"
    assert {p.version for p in pages.values()} == {"2.0"}
    assert pages["intro.mdx"].route == "docs/"


def test_site_is_named_with_site_and_plain_reads_everything() -> None:
    site, pages = read_site(SITES / "vitepress" / "docs", "plain")
    assert site.name == "plain"
    assert pages["guide/setup.md"].route == "guide/setup.md"
    with pytest.raises(SourceError, match="unknown site generator 'jekyll'"):
        detect(open_location(str(SITES / "plain"), Settings()), "jekyll")


# --- MkDocs ---------------------------------------------------------------------------------


def test_mkdocs_reads_its_configuration_routes_and_anchors() -> None:
    site, pages = read_site(SITES / "mkdocs" / "site")
    assert site.base_url == "https://widgets.example.com/"  # site_url, with !!python and !ENV tags read as nothing
    spinning = pages["docs/guide/spinning.md"]
    assert url(site, spinning, base=site.base_url) == "https://widgets.example.com/guide/spinning/"
    assert pages["docs/index.md"].route == ""
    assert anchors(spinning)[("Spin rate",)] == "spin-rate"  # { #spin-rate } wins, and leaves the heading
    assert anchors(spinning)[("API reference",)] == "api-reference"  # Python-Markdown's slug
    assert anchors(spinning)[("Recycling",)] == "recycling_1"  # the second "Recycling", numbered as toc does
    assert pages["docs/index.md"].title == "Widgets"


def test_mkdocs_nav_is_the_reading_order(tmp_path: Path) -> None:
    shutil.copytree(SITES / "mkdocs", tmp_path / "mkdocs")
    _, pages = read_site(tmp_path / "mkdocs" / "site")
    assert {p.position for p in pages.values()} == {None}  # no nav: no order of its own
    config = tmp_path / "mkdocs" / "site" / "mkdocs.yml"
    config.write_text(config.read_text() + "nav:\n  - Home: index.md\n  - Guide:\n    - guide/spinning.md\n"
                      "    - Escapes: guide/escape.md\n  - GitHub: https://github.com/x/widgets\n")
    _, pages = read_site(tmp_path / "mkdocs" / "site")
    assert sorted(pages, key=lambda p: pages[p].position) == [
        "docs/index.md", "docs/guide/spinning.md", "docs/guide/escape.md"]
    assert "mkdocs.yml" in pages["docs/guide/escape.md"].included  # a new nav reads the pages again


def test_mkdocs_use_directory_urls_false_routes_to_html(tmp_path: Path) -> None:
    shutil.copytree(SITES / "mkdocs", tmp_path / "mkdocs")
    config = tmp_path / "mkdocs" / "site" / "mkdocs.yml"
    config.write_text(config.read_text() + "use_directory_urls: false\n")
    _, pages = read_site(tmp_path / "mkdocs" / "site")
    assert pages["docs/guide/spinning.md"].route == "guide/spinning.html"
    assert pages["docs/index.md"].route == "index.html"


def test_mkdocs_blocks_keep_their_words_and_lose_their_markup() -> None:
    _, pages = read_site(SITES / "mkdocs" / "site")
    blocks = texts(pages["docs/guide/spinning.md"])
    assert "**Units matter**" in blocks  # a /// block's own title
    assert "The spin rate is in turns per second." in blocks
    assert "A generic tip title is not kept." in blocks and "**Tip**" not in blocks
    assert "**Do not exceed 90**\nAbove 90 turns per second the gearbox melts." in blocks  # !!! body dedented
    assert "```python\napp.spin(rate=90)  # the limit\n```" in blocks  # code inside it is code, not text
    assert "A collapsed note with a generic title." in blocks
    assert ["**Linux**", "Run `widget spin` as root.", "**macOS**"] == blocks[blocks.index("**Linux**"):][:3]
    assert "`widgets.Widget`" in blocks and not any("members" in b for b in blocks)  # mkdocstrings options gone
    assert "A button: [Read more](more.md)" in blocks  # { .md-button } gone
    index = text(pages["docs/index.md"])
    assert index == "Welcome to the widget docs, written in HTML.\n\nPress Ctrl+C to stop a spinning widget ."
    for page in pages.values():
        assert leftovers(text(page)) == [], page.path


def test_mkdocs_includes_are_read_where_they_are_included() -> None:
    _, pages = read_site(SITES / "mkdocs" / "site")
    spinning = pages["docs/guide/spinning.md"]
    blocks = texts(spinning)
    # {* file ln[3:4] title[...] *}: the selected lines, as a code block under its title
    assert blocks[1:3] == ["**examples/app.py**", "```python\napp = Widget()\napp.spin(rate=40)\n```"]
    # {!> file !} inside a fence: the whole file
    assert '```python\nfrom widgets import Widget\n\napp = Widget()\napp.spin(rate=40)\nprint("spinning")\n```' in blocks
    # --8<-- snippets: a whole file without its section markers, then one named section
    assert blocks[blocks.index("Shared text: widgets are recycled in the blue bin.") + 1] == "The warranty lasts 24 months."
    assert blocks.count("The warranty lasts 24 months.") == 2 and not any("--8<--" in b for b in blocks)
    # a termynal console: its styling HTML is gone, the text stays
    assert "```console\n$ widget spin\nSpinning & happy\n```" in blocks
    assert set(spinning.included) == {"../examples/app.py", "snippets/note.md"}
    assert spinning.problems == ()


def test_includes_never_leave_the_project() -> None:
    _, pages = read_site(SITES / "mkdocs" / "site")
    escape = pages["docs/guide/escape.md"]
    assert texts(escape) == ["Nothing outside the project is ever read."]
    assert len(escape.problems) == 2 and all("is outside" in p for p in escape.problems)


def test_includes_are_bounded_in_depth(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: loop\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "loop.md").write_text('# Loop\n\nOnce.\n\n--8<-- "docs/loop.md"\n')
    _, pages = read_site(tmp_path)
    loop = pages["docs/loop.md"]
    assert 1 < text(loop).count("Once.") <= 6
    assert any("nested more than" in p for p in loop.problems)


def test_include_root_can_be_narrowed_to_the_ingested_folder() -> None:
    folder = SITES / "mkdocs" / "site"
    _, pages = read_site(folder, include_root=str(folder))
    spinning = pages["docs/guide/spinning.md"]
    assert "app.spin(rate=40)" not in text(spinning)
    assert any("../examples/app.py" in p and "is outside" in p for p in spinning.problems)


# --- Docusaurus and MDX ---------------------------------------------------------------------


def test_docusaurus_versions_come_from_versions_json_and_its_folders() -> None:
    site, pages = read_site(SITES / "docusaurus" / "website")
    assert site.versions == ("2.0", "1.0", "next")  # 1.5 is listed but has no folder
    assert site.default_version == "2.0"
    assert {path: page.version for path, page in pages.items() if path.endswith(("intro.mdx", "intro.md"))} == {
        "docs/intro.mdx": "next", "versioned_docs/version-2.0/intro.mdx": "2.0",
        "versioned_docs/version-1.0/intro.md": "1.0"}
    assert not any("_partial" in path or "_shared" in path for path in pages)  # partials are not pages


@pytest.mark.parametrize("path, route", [
    ("versioned_docs/version-2.0/intro.mdx", "docs/"),  # slug: / in the newest release
    ("docs/intro.mdx", "docs/next/"),  # the version in work
    ("versioned_docs/version-1.0/intro.md", "docs/1.0/intro"),
    ("versioned_docs/version-2.0/guides/README.md", "docs/guides/"),
    ("docs/guides/01-basics/index.md", "docs/next/guides/basics/"),  # number prefix stripped, index -> folder
    ("docs/guides/01-basics/02-first-steps.md", "docs/next/guides/basics/first"),  # id front matter
    ("docs/guides/guides.md", "docs/next/guides/"),  # named like its folder
    ("docs/guides/relative.md", "docs/next/elsewhere/relative"),  # a relative slug climbs
])
def test_docusaurus_routes_follow_the_docs_plugin(path: str, route: str) -> None:
    _, pages = read_site(SITES / "docusaurus" / "website")
    assert pages[path].route == route


def test_docusaurus_route_base_can_be_set() -> None:
    source = open_location(str(SITES / "docusaurus" / "website"), Settings())
    site = detect(source, route_base="/")
    intro = site.render(Document("versioned_docs/version-2.0/intro.mdx", "---\nslug: /\n---\n# Gadgets\n", "x"))
    assert intro.route == ""
    cli = site.render(Document("docs/cli.md", "# CLI\n", "x"))
    assert cli.route == "next/cli"


@pytest.mark.parametrize("written, home, index, page", [
    ("false", "docs/next", "docs/next/guides", "docs/next/cli"),
    ("true", "docs/next/", "docs/next/guides/", "docs/next/cli/"),
    ("process.env.SLASH === '1'", "docs/next/", "docs/next/guides/", "docs/next/cli"),  # computed: the plugin's
])
def test_docusaurus_trailing_slash_as_the_config_writes_it(tmp_path, written, home, index, page) -> None:
    shutil.copytree(SITES / "docusaurus" / "website", tmp_path / "website")
    (tmp_path / "website" / "docusaurus.config.ts").write_text(
        f"export default {{url: 'https://gadgets.example.com', baseUrl: '/', trailingSlash: {written}}};\n")
    site = detect(open_location(str(tmp_path / "website"), Settings()))
    routes = [site.render(Document(path, text, "x")).route for path, text in (
        ("docs/intro.mdx", "---\nslug: /\n---\n# Gadgets\n"), ("docs/guides/README.md", "# Guides\n"),
        ("docs/cli.md", "# CLI\n"))]
    assert routes == [home, index, page]


def test_mdx_is_cleaned_to_what_the_reader_sees() -> None:
    _, pages = read_site(SITES / "docusaurus" / "website")
    intro = pages["docs/intro.mdx"]
    blocks = texts(intro)
    assert blocks[0] == "Gadgets need Node.js 20.0 or above."  # imports in mdx-code-block are gone
    assert blocks[1:5] == ["**npm**", "Run the npm installer.", "**yarn**", "Run the yarn installer."]
    assert "The limit for gadgets is 90 turns per second." in blocks  # the partial, with its props
    assert "**hello.js**" in blocks and "```js\nexport function hello() {\n  return 'hello from a raw import';\n}\n```" in blocks
    assert "Use the `<!-- truncate -->` marker and the `<Tabs>` component in inline code." in blocks
    assert ["**Fast track**", "Read the quick start first."] == blocks[blocks.index("**Fast track**"):][:2]
    assert ["**More options**", "Set `spin` to `true`."] == blocks[blocks.index("**More options**"):][:2]
    assert blocks[-1].startswith("```jsx title=\"example.jsx\"\nimport Tabs from '@theme/Tabs';")  # code untouched
    assert anchors(intro)[("Install",)] == "custom-install"
    assert set(intro.included) == {"docs/_shared/_partial-limits.mdx", "src/snippets/hello.js"}
    for page in pages.values():
        assert leftovers(text(page)) == [], page.path


def test_github_anchors_for_docusaurus_headings() -> None:
    site, _ = read_site(SITES / "docusaurus" / "website")
    page = site.render(Document("docs/x.md", "# X\n\n## `useIsBrowser()`: a hook!\n\n## Héllo, World\n\n## Héllo, World\n", "c"))
    assert anchor_list(page) == ["useisbrowser-a-hook", "héllo-world", "héllo-world-1"]


# --- VitePress, mdBook, Hugo, Starlight, plain ----------------------------------------------


def test_vitepress_reads_code_imports_and_markdown_includes() -> None:
    site, pages = read_site(SITES / "vitepress" / "docs")
    setup = pages["guide/setup.md"]
    assert setup.route == "guide/setup.html" and pages["index.md"].route == ""
    assert texts(setup) == [
        "```ts\nconst client = connect('sprockets://localhost')\n```",  # <<< @/file#region{ts}
        "**Upgrading from 1.x**\nReconnect after upgrading.",
        "Sprockets are shipped in boxes of 12.",  # <!--@include: ../parts/shared.md-->
        "Same heading again.",
    ]
    # The heading's text loses its badge; anchors as VitePress makes them.
    assert [s.heading_path for s in setup.parsed.sections] == [("Connecting client",)] * 2
    assert anchor_list(setup) == ["connecting-client", "connecting-client-1"]


def test_mdbook_includes_anchors_and_routes() -> None:
    _, pages = read_site(SITES / "mdbook" / "book")
    assert set(pages) == {"src/README.md", "src/chapter/turning.md"}  # SUMMARY.md is the table of contents
    assert pages["src/README.md"].route == "index.html"
    turning = pages["src/chapter/turning.md"]
    assert turning.route == "chapter/turning.html"
    assert anchors(turning) == {("Turn it: three times!",): "turn-it-three-times"}
    assert texts(turning) == ["```rust\n    let cog = Cog::new();\n    cog.turn(3);\n```",
                              "The last line of the program:", '```rust\n    println!("done");\n```']


def test_hugo_config_front_matter_shortcodes_and_routes() -> None:
    site, pages = read_site(SITES / "hugo")
    assert site.base_url == "https://gears.example.org/"
    assert {path: page.route for path, page in pages.items()} == {
        "content/_index.md": "", "content/docs/_index.md": "docs/", "content/docs/bundle/index.md": "docs/bundle/",
        "content/docs/renamed.md": "docs/better-name/", "content/docs/Oiling Gears.md": "docs/oiling-gears/"}
    oiling = pages["content/docs/Oiling Gears.md"]
    assert oiling.title == "Oiling"  # TOML front matter
    assert texts(oiling) == ["Use synthetic oil.", "```bash\ngear oil --synthetic\n```", "See [the bundle](docs/bundle).",
                             "To show a shortcode, write `{{< note >}}`."]


def test_starlight_routes_asides_and_components() -> None:
    _, pages = read_site(SITES / "starlight")
    assert {path: page.route for path, page in pages.items()} == {
        "src/content/docs/index.mdx": "", "src/content/docs/guides/Rope Care.md": "guides/rope-care/",
        "src/content/docs/reference/config.md": "reference/configuration/"}
    assert texts(pages["src/content/docs/index.mdx"]) == ["Pulleys lift loads."]
    rope = texts(pages["src/content/docs/guides/Rope Care.md"])
    assert rope == ["**Fraying**\nReplace frayed ropes.", "    indented code in a .md page"]  # .md keeps indented code


def test_plain_links_to_files_and_reads_mdx_as_mdx() -> None:
    site, pages = read_site(SITES / "plain")
    guide = pages["guide.md"]
    assert url(site, guide, anchors(guide)[("What's new?",)]) == "https://x.dev/guide.md#whats-new"
    assert texts(pages["page.mdx"]) == ["Charts are drawn  times."]


def test_a_folder_without_pages_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a page")
    source = open_location(str(tmp_path), Settings())
    site = detect(source)
    source.include = site.include
    assert [item for item in source.scan()] == [] and source.others == 1


# --- release notes --------------------------------------------------------------------------


@pytest.mark.parametrize("path, body, expected", [
    ("release-notes.md", "# Notes\n\n## Fixes\n\nx\n", True),
    ("CHANGELOG.md", "# Changes\n\nx\n", True),
    ("release-notes/api.md", "# API\n\nx\n", True),
    ("guide/history.md", "# History\n\nx\n", True),
    ("news.md", "# Releases\n\n## 0.3.0\n\na\n\n## 0.2.1\n\nb\n\n## v0.1\n\nc\n", True),  # by shape
    ("timeline.md", "# T\n\n## June 20th, 2024\n\na\n\n## May 30th, 2024\n\nb\n\n## 2024-03-01\n\nc\n", True),
    ("guide/install.md", "# Install\n\n## Linux\n\na\n\n## 2.0 upgrade\n\nb\n\n## macOS\n\nc\n", False),
    ("history-design-future.md", "# History, design and future\n\nx\n", False),
])
def test_changelogs_are_recognised_by_path_and_shape(path: str, body: str, expected: bool) -> None:
    assert is_changelog(path, parse(body, "x")) is expected


@pytest.mark.parametrize("question, expected", [
    ("In which version was background tasks support added?", True),
    ("What changed in 0.115?", True),
    ("When did tool use become generally available?", True),
    ("How do I add CORS middleware?", False),
    ("Why does my browser block requests from my dev server?", False),
])
def test_release_questions(question: str, expected: bool) -> None:
    assert is_release_question(question) is expected


# --- what never reaches a chunk ---------------------------------------------------------------


def test_leftovers_finds_markup_in_prose_and_ignores_code() -> None:
    assert leftovers("Text <Tabs> and :::tip\n\n```md\n:::tip\n<Tabs>\n```\n") == ["html or jsx tag"]
    assert leftovers("Use `<Tabs>` and `{* x *}`.") == []
    assert "attribute list" in leftovers("Origin", heading=True) + leftovers("CORS { #cors }", heading=True)
    assert leftovers("/// note\n\nx\n\n///") == ["mkdocs block"]
    assert leftovers("import Tabs from '@theme/Tabs';") == ["mdx import/export"]


def test_lowercase_tags_that_are_not_html_are_text_in_markdown_and_markup_in_mdx() -> None:
    text = "Use <thinking> and <answer> tags, in a <div>box</div> with a <Note>note</Note>.\n"
    assert parse(text, "x").sections[0].blocks[0].text == "Use <thinking> and <answer> tags, in a\nbox\nwith a note."
    site, _ = read_site(SITES / "docusaurus" / "website")
    mdx = site.render(Document("docs/x.mdx", "# X\n\n" + text, "c"))
    assert texts(mdx) == ["Use  and  tags, in a\nbox\nwith a note."]
    assert leftovers("Use <thinking> tags.") == [] and leftovers("A <div> box") == ["html or jsx tag"]


def test_a_site_in_a_zip_is_detected_and_its_includes_stay_inside_it(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "site.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in (SITES / "docusaurus" / "website").rglob("*"):
            if path.is_file():
                zf.write(path, path.relative_to(SITES / "docusaurus" / "website").as_posix())
    site, pages = read_site(archive)
    assert site.name == "docusaurus" and site.default_version == "2.0"
    assert "The limit for gadgets is 90 turns per second." in texts(pages["docs/intro.mdx"])  # a partial, from the zip
    escape = site.render(Document("docs/escape.mdx", "import S from '../../../etc/passwd.md';\n\n# Escape\n\n<S />\n", "c"))
    assert texts(escape) == [] and escape.problems == ("include passwd.md left out: ../../etc/passwd.md is outside "
                                                      f"{archive}",)
