"""mdBook as it publishes (pgcite.ingest.sites.mdbook): SUMMARY.md decides the pages and their names,
the `links` preprocessor's escapes and includes, hidden HTML and preprocessor placeholders dropped,
the book's language. Small fixtures in tests/sites/mdbook-rules/ (or tmp_path), then mdBook's own
guide from ../shared/corpora/mdbook-guide, read through `detect()` and `site.render`."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt
from tests.conftest import corpus
from tests.test_sites import SITES, read_site, text, texts

from pgcite.ingest.sites import Page, join_url
from pgcite.ingest.sites.mdbook_summary import Chapter, chapters

RULES = SITES / "mdbook-rules"
GUIDE_URL = "https://rust-lang.github.io/mdBook/"


def write_book(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    return root


# --- SUMMARY.md decides what is a page, and names it ----------------------------------------


def test_summary_chapters_are_read_as_mdbook_reads_them() -> None:
    summary = (
        "# Summary\n\n[Preface](README.md)\n\n# Part [one](part.md)\n\n"
        "- [First](a/first.md)\n    - [Draft]()\n    - [Second `x`](a/second.md) see [also](also.md)\n"
        "- [Away](https://example.com/x.md)\n\n<!-- - [Hidden](hidden.md) -->\n\n---\n\n"
        "[Spaced](my%20page.md) [Back](./b/../back.md)\n"
    )
    assert chapters(summary) == [
        Chapter("Preface", "README.md"),
        Chapter("First", "a/first.md"),
        Chapter("Second x", "a/second.md"),  # a list item's first link only
        Chapter("Spaced", "my page.md"),  # suffix chapters: every link of the paragraph
        Chapter("Back", "back.md"),
    ]


def test_only_the_files_summary_links_are_pages() -> None:
    site, pages = read_site(RULES)
    # Not pages: unlisted.md (a second link in a list item), drafts/README.md (commented out),
    # odd/x notes.md (a glob "[x]" would have matched it), SUMMARY.md itself.
    assert set(pages) == {
        "src/README.md",
        "src/escapes.md",
        "src/hidden.md",
        "src/odd/[x] notes.md",
        "src/placeholders.md",
        "src/thanks.md",
    }
    assert pages["src/odd/[x] notes.md"].route == "odd/[x] notes.html"
    # Their reading order is SUMMARY.md's (llms.txt lists them in it).
    in_order = sorted(pages, key=lambda p: pages[p].position)
    assert in_order == ["src/README.md", "src/escapes.md", "src/hidden.md", "src/odd/[x] notes.md",
                        "src/placeholders.md", "src/thanks.md"], in_order
    # Pointing at the source folder: the same pages, "README.md" matching that file alone.
    site, pages = read_site(RULES / "src")
    assert site.name == "mdbook" and site.files.prefix == "src"
    assert set(pages) == {"README.md", "escapes.md", "hidden.md", "odd/[x] notes.md", "placeholders.md", "thanks.md"}


def test_without_a_summary_every_markdown_file_is_a_page(tmp_path: Path) -> None:
    write_book(tmp_path, {"book.toml": "[book]\n", "src/README.md": "# Hi\n\nText.\n", "src/b/c.md": "# C\n\nText.\n"})
    _, pages = read_site(tmp_path)
    assert set(pages) == {"src/README.md", "src/b/c.md"}
    assert pages["src/b/c.md"].title == "C" and pages["src/b/c.md"].included == ()


def test_a_page_is_named_by_its_heading_else_its_title_helper_else_its_summary_entry() -> None:
    # The H1 is what a reader sees atop the page (and words a question matches); mdBook's <title>
    # and sidebar name only stand in for a page without one.
    _, pages = read_site(RULES)
    assert pages["src/escapes.md"].title == "Escapes"  # SUMMARY says "Backslash escapes"
    assert pages["src/hidden.md"].title == "Hidden"  # no H1 at all: SUMMARY's name
    assert pages["src/odd/[x] notes.md"].parsed.title == "Notes"
    assert pages["src/thanks.md"].title == "Thanks"  # beside {{#title Thank you all}}
    assert "{{#title" not in pages["src/thanks.md"].parsed.markdown


def test_a_changed_summary_reads_the_pages_again(tmp_path: Path) -> None:
    write_book(tmp_path, {"book.toml": "[book]\n", "src/SUMMARY.md": "- [One](one.md)\n", "src/one.md": "Text.\n"})
    site, pages = read_site(tmp_path)
    assert pages["src/one.md"].included == ("src/SUMMARY.md",)
    before = site.digest(pages["src/one.md"].included)
    (tmp_path / "src/SUMMARY.md").write_text("- [The one](one.md)\n")
    site, pages = read_site(tmp_path)
    assert site.digest(pages["src/one.md"].included) != before and pages["src/one.md"].title == "The one"


# --- the links preprocessor: escapes and includes -------------------------------------------


def test_escaped_helpers_are_their_text_everywhere() -> None:
    _, pages = read_site(RULES)
    sections = {s.heading_path: [b.text for b in s.blocks] for s in pages["src/escapes.md"].parsed.sections}
    assert sections[("Prose",)] == [
        "Write {{#include ../listings/gear.rs}} to include a file.\nLine three is `    let teeth = 12;`."
    ]  # unescaped: read, in code too
    assert sections[("Inline code",)] == ["Write `{{#playground ../listings/gear.rs editable}}` to run it."]
    # An escape runs to the last }} of its line (mdBook's regex): the second helper is text too.
    assert sections[("Block",)] == [
        "```hbs\n{{#include ../listings/gear.rs:body}} and {{#include ../listings/gear.rs:body}}\n```"
    ]
    assert list(sections) == [("Prose",), ("Inline code",), ("Block",)]  # no block spliced in


def test_included_lines_continue_the_line_the_helper_is_on(tmp_path: Path) -> None:
    write_book(
        tmp_path,
        {
            "book.toml": "[book]\n",
            "src/SUMMARY.md": "- [Steps](steps.md)\n",
            "src/steps.md": "1. Prepare:\n\n   {{#include parts/oil.md}}\n\n2. Done.\n",
            "src/parts/oil.md": "Oil it.\n\n{{#include more.md}}\n",
            "src/parts/more.md": "Then turn it.\n",  # relative to the file including it
        },
    )
    _, pages = read_site(tmp_path)
    assert texts(pages["src/steps.md"]) == ["1. Prepare:\n\n   Oil it.\n   \n   Then turn it.\n\n2. Done."]


def test_line_ranges_and_anchors_as_mdbook_takes_them(tmp_path: Path) -> None:
    code = "a\n// ANCHOR: mid\nb\n// ANCHOR: inner\nc\n// ANCHOR_END: inner\n// ANCHOR_END: mid\nd\n"
    helpers = ["x.rs:3", "x.rs::2", "x.rs:7:", "x.rs:3:5", "x.rs:mid", "x.rs:mid-2", "x.rs"]
    body = "\n\n".join(f"```\n{{{{#include {h}}}}}\n```" for h in helpers) + "\n\n{{#playground x.rs:1 editable}}\n"
    write_book(
        tmp_path, {"book.toml": "[book]\n", "src/SUMMARY.md": "- [P](p.md)\n", "src/p.md": body, "src/x.rs": code}
    )
    _, pages = read_site(tmp_path)
    assert [t.strip("`\n") for t in texts(pages["src/p.md"])] == [
        "b",
        "a\n// ANCHOR: mid",
        "// ANCHOR_END: mid\nd",
        "b\n// ANCHOR: inner\nc",
        "b\nc",  # the anchor's lines, without anchor lines
        "",  # an anchor named only by prefix is not that anchor
        code.rstrip("\n"),  # the whole file keeps its anchor comments, as mdBook shows it
        "rust\n" + code.rstrip("\n"),  # a playground is the whole file as a Rust block
    ]


# --- what the reader never sees ---------------------------------------------------------------


def test_hidden_html_is_dropped_with_its_content_outside_code() -> None:
    _, pages = read_site(RULES)
    assert texts(pages["src/hidden.md"]) == [
        "Gears mesh.",
        "Visible text: press  to print.",  # a Font Awesome icon is no text
        '```html\n<div class="hidden">Shown as code.</div>\n```',
        'Inline `<div class="hidden">code too</div>` stays.',
    ]


def test_placeholders_of_the_books_own_preprocessor_are_dropped_from_prose(tmp_path: Path) -> None:
    _, pages = read_site(RULES)  # book.toml runs [preprocessor.gear-version]
    assert texts(pages["src/placeholders.md"]) == [
        "Version  is current.",
        "Write `{{ gear-version }}` in a page.",
        "```sh\ngear install --version {{ gear-version }}\n```",
    ]
    # Without a preprocessor of its own, a book shows {{ name }} as written.
    write_book(
        tmp_path,
        {
            "book.toml": "[book]\n",
            "src/SUMMARY.md": "- [P](p.md)\n",
            "src/p.md": "Version {{ gear-version }} is current.\n",
        },
    )
    _, pages = read_site(tmp_path)
    assert texts(pages["src/p.md"]) == ["Version {{ gear-version }} is current."]


# --- languages --------------------------------------------------------------------------------


def test_the_books_language_is_its_only_language(tmp_path: Path) -> None:
    site, pages = read_site(RULES)  # language = "pt_BR"
    assert site.languages == ("pt-br",) and site.default_language == "pt-br"
    assert {page.language for page in pages.values()} == {"pt-br"}
    write_book(tmp_path, {"book.toml": "[book]\ntitle = 'x'\n", "src/SUMMARY.md": "- [P](p.md)\n", "src/p.md": "T.\n"})
    site, pages = read_site(tmp_path)
    assert site.languages == () and site.default_language == "" and pages["src/p.md"].language == ""


# --- mdBook's own guide -----------------------------------------------------------------------

GUIDE_SAMPLE = [  # (page, the URL of its first section), by mdBook's routing and its heading ids
    ("src/README.md", "index.html#contributing"),
    ("src/guide/installation.md", "guide/installation.html#pre-compiled-binaries"),
    ("src/guide/reading.md", "guide/reading.html#navigation"),
    ("src/guide/creating.md", "guide/creating.html#initializing-a-book"),
    ("src/cli/README.md", "cli/index.html"),
    ("src/cli/init.md", "cli/init.html#tip-generate-chapters-from-summarymd"),
    ("src/cli/build.md", "cli/build.html#specify-a-directory"),
    ("src/cli/watch.md", "cli/watch.html#specify-a-directory"),
    ("src/cli/serve.md", "cli/serve.html#specify-a-directory"),
    ("src/cli/test.md", "cli/test.html#disable-tests-on-a-code-block"),
    ("src/cli/clean.md", "cli/clean.html#specify-a-directory"),
    ("src/cli/completions.md", "cli/completions.html"),  # `# bash` is in a code block
    ("src/format/README.md", "format/index.html"),
    ("src/format/summary.md", "format/summary.html#structure"),
    ("src/format/configuration/README.md", "format/configuration/index.html"),
    ("src/format/configuration/general.md", "format/configuration/general.html#supported-configuration-options"),
    (
        "src/format/configuration/preprocessors.md",
        "format/configuration/preprocessors.html#custom-preprocessor-configuration",
    ),
    ("src/format/configuration/renderers.md", "format/configuration/renderers.html#output-tables"),
    ("src/format/theme/README.md", "format/theme/index.html"),
    ("src/format/theme/index-hbs.md", "format/theme/index-hbs.html#data"),
    ("src/format/theme/syntax-highlighting.md", "format/theme/syntax-highlighting.html#supported-languages"),
    ("src/format/theme/editor.md", "format/theme/editor.html#customizing-the-editor"),
    ("src/format/mathjax.md", "format/mathjax.html#inline-equations"),
    ("src/format/mdbook.md", "format/mdbook.html#hiding-code-lines"),
    ("src/format/markdown.md", "format/markdown.html#text-and-paragraphs"),
    ("src/continuous-integration.md", "continuous-integration.html#installing-mdbook"),
    ("src/for_developers/README.md", "for_developers/index.html#the-build-process"),
    ("src/for_developers/preprocessors.md", "for_developers/preprocessors.html#hooking-into-mdbook"),
    ("src/for_developers/backends.md", "for_developers/backends.html#setting-up"),
    ("src/misc/contributors.md", "misc/contributors.html"),
]


def first_section_url(page: Page) -> str:
    """The page's first section with text and an anchor; the page itself when it has none."""
    anchor = next((s.anchor for s in page.parsed.sections if s.anchor and s.blocks), None)
    return join_url(GUIDE_URL, page.route, anchor)


def prose(markdown: str) -> str:
    """The text of `markdown` that is not code, as a Markdown parser finds it."""
    parts: list[str] = []
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        if token.type == "inline":
            parts += [c.content for c in token.children or [] if c.type in ("text", "html_inline")]
        elif token.type == "html_block":
            parts.append(token.content)
    return "\n".join(parts)


def test_mdbooks_own_guide() -> None:
    root = corpus("mdbook-guide") / "guide"
    site, pages = read_site(root)
    assert site.name == "mdbook" and site.languages == ("en",) and site.default_language == "en"
    summary = (root / "src" / "SUMMARY.md").read_text()
    listed = {"src/" + path for path in re.findall(r"\]\(([^)]+)\)", summary)}
    assert set(pages) == listed and len(pages) == 31  # not 404.md, cli/arg-watcher.md, guide/README.md
    for path, url in GUIDE_SAMPLE:
        assert first_section_url(pages[path]) == GUIDE_URL + url, path
    assert pages["src/cli/build.md"].title == "The build command"  # its H1 (SUMMARY says "build")

    markdown = {path: page.parsed.markdown for path, page in pages.items()}
    assert [p for p, md in markdown.items() if any(line.strip() == "\\" for line in md.split("\n"))] == []
    assert all("\\{{#" not in md for md in markdown.values())
    mdbook = pages["src/format/mdbook.md"]
    assert [s.heading_path[-1] for s in mdbook.parsed.sections][-6:] == [
        "Inserting runnable Rust files",
        "Controlling page <title>",
        "HTML classes provided by mdBook",
        'class="left" and "right"',
        'class="hidden"',
        "Font-Awesome icons",
    ]  # no heading spliced in
    for shown in (
        "```hbs\n{{#include file.rs}}\n```",
        "{{#include file.rs:2:10}}",
        "{{#include file.rs:component}}",
        "{{#rustdoc_include file.rs:2}}",
        "```hbs\n{{#playground file.rs}}\n```",
        "`{{#playground example.rs editable}}`",
        "`{{#title ...}}`",
        "{{#title My Title}}",
    ):
        assert shown in text(mdbook), shown
    assert '```rust\nfn main() {\n    println!("Hello World!");' in text(mdbook)  # {{#playground example.rs}}
    assert "icon () which" in text(mdbook) and "looks like this: **" not in text(mdbook)  # <i class="fa ...">
    assert "`{{#include /path/to/file.md}}`" in text(pages["src/for_developers/preprocessors.md"])
    assert (
        "arg-watcher" not in text(pages["src/cli/watch.md"])
        and "#### `--watcher`" in pages["src/cli/watch.md"].parsed.markdown
    )  # {{#include arg-watcher.md}} read in

    seen = {path: prose(md) for path, md in markdown.items()}
    assert [p for p, t in seen.items() if 'class="hidden"' in t or "This will not be seen" in t] == []
    assert {p: re.findall(r"\{\{ [^}]*\}\}", t) for p, t in seen.items() if "{{ " in t} == {}
    assert text(pages["src/README.md"]).startswith("Version:\n\n**mdBook** is")  # {{ mdbook-version }} dropped
    problems = {problem for page in pages.values() for problem in page.problems}
    assert problems and all("examples/" in p and "not found" in p for p in problems)  # outside the corpus
