"""Hugo as it publishes (pgcite.ingest.sites.hugo and its modules): the configuration and its config
folder, module mounts and languages, routes, the pages Hugo does not publish, `include` and the other
shortcodes reduced to what a reader sees. Small sites written to tmp_path; then gohugo.io's own docs
from ../shared/corpora/hugo-docs (skipped where absent). No database and no model."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import corpus

from pgcite.config import Settings
from pgcite.ingest.flow import open_location
from pgcite.ingest.sites import Page, Site, detect, join_url
from pgcite.ingest.sites.shortcodes import expand
from pgcite.ingest.sources import Document


def write(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def read(folder: Path) -> tuple[Site, dict[str, Page]]:
    source = open_location(str(folder), Settings())
    site = detect(source)
    source.include, source.exclude = site.include, (*source.exclude, *site.exclude)
    return site, {d.path: site.render(d) for d in source.scan() if isinstance(d, Document)}


def text(page: Page) -> str:
    return "\n\n".join(b.text for s in page.parsed.sections for b in s.blocks)


def routes(pages: dict[str, Page]) -> dict[str, str]:
    return {path: page.route for path, page in pages.items()}


def page(title: str, body: str = "Text.", **front: str) -> str:
    extra = "".join(f"{k}: {v}\n" for k, v in front.items())
    return f"---\ntitle: {title}\n{extra}---\n\n{body}\n"


def reduced(markup: str) -> str:
    return expand(markup, lambda call: None)


# --- configuration --------------------------------------------------------------------------


def test_the_config_folder_is_merged_over_the_root_file_keys_in_any_case(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "config/_default/hugo.toml": "BaseURL = 'https://dev.example.org/'\nDefaultContentLanguage = 'de'\n",
            "config/_default/languages.toml": "[en]\nweight = 2\n[de]\nweight = 1\n",
            "config/_default/module.toml": "[[mounts]]\nsource = 'docs'\ntarget = 'content'\n",  # root key unwrapped
            "config/production/hugo.toml": "baseurl = 'https://example.org/'\n",  # `hugo build` is production
            "docs/guide.md": page("Guide"),
            "content/ignored.md": page("Not content: a mount replaced the default"),
        },
    )
    site, pages = read(tmp_path)
    assert site.name == "hugo" and site.base_url == "https://example.org/"
    assert site.languages == ("de", "en") and site.default_language == "de"
    assert routes(pages) == {"docs/guide.md": "guide/"}


def test_mounts_decide_what_is_content_and_in_which_language(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": (
                "baseURL = 'https://example.org/'\ndefaultContentLanguage = 'en'\n"
                "[languages.en]\nweight = 1\n[languages.fr]\nweight = 2\n"
                "[[module.mounts]]\nsource = 'content/en'\ntarget = 'content'\n"
                "[module.mounts.sites.matrix]\nlanguages = ['en']\n"
                "[[module.mounts]]\nsource = 'content/fr'\ntarget = 'content'\nlang = 'fr'\n"
                "[[module.mounts]]\nsource = 'notes'\ntarget = 'content/notes'\nfiles = ['! drafts/**']\n"
            ),
            "content/LICENSE.md": "Not a page: the mounts name content/en and content/fr.",
            "content/en/docs/setup.md": page("Setup"),
            "content/fr/docs/setup.md": page("Installation"),
            "notes/a.md": page("A note"),
            "notes/drafts/b.md": page("Left out by the mount"),
        },
    )
    site, pages = read(tmp_path)
    assert routes(pages) == {
        "content/en/docs/setup.md": "docs/setup/",
        "content/fr/docs/setup.md": "fr/docs/setup/",
        "notes/a.md": "notes/a/",
    }
    assert site.languages == ("en", "fr")
    assert {path: p.language for path, p in pages.items()} == {
        "content/en/docs/setup.md": "en",
        "content/fr/docs/setup.md": "fr",
        "notes/a.md": "en",
    }
    # The mounted folder ingested by itself is routed the same: the configuration is found above it.
    site, pages = read(tmp_path / "content" / "en")
    assert site.name == "hugo" and routes(pages) == {"docs/setup.md": "docs/setup/"}


def test_content_dir_per_language_and_the_default_language_in_a_folder(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": (
                "defaultContentLanguage = 'en'\ndefaultContentLanguageInSubdir = true\n"
                "[languages.en]\ncontentDir = 'content/en'\n[languages.fr]\ncontentDir = 'content/fr'\n"
            ),
            "content/en/_index.md": page("Home"),
            "content/fr/a.md": page("A"),
        },
    )
    site, pages = read(tmp_path)
    assert routes(pages) == {"content/en/_index.md": "en/", "content/fr/a.md": "fr/a/"}
    assert site.language_of("content/fr/a.md") == "fr"


def test_translations_by_file_name(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": "defaultContentLanguage = 'en'\n[languages.en]\n[languages.pt-BR]\n[languages.hugolang]\n",
            "content/guide/_index.md": page("Guide"),
            "content/guide/_index.pt-BR.md": page("Guia"),
            "content/guide/start.md": page("Start"),
            "content/guide/start.pt-br.md": page("Início"),
            "content/guide/start.hugolang.md": page("Start, private-use language"),
            "content/guide/v1.2.md": page("Not a language suffix"),
        },
    )
    site, pages = read(tmp_path)
    assert site.languages == ("en", "hugolang", "pt-br")  # languages by key, the default first
    assert routes(pages) == {
        "content/guide/_index.md": "guide/",
        "content/guide/_index.pt-BR.md": "pt-br/guide/",
        "content/guide/start.md": "guide/start/",
        "content/guide/start.pt-br.md": "pt-br/guide/start/",
        "content/guide/start.hugolang.md": "hugolang/guide/start/",
        "content/guide/v1.2.md": "guide/v1.2/",
    }
    assert site.language_of("content/guide/start.pt-br.md") == "pt-br"
    assert site.language_of("content/guide/v1.2.md") == "en"


# --- routes ---------------------------------------------------------------------------------


def test_routes_slug_url_case_and_bundles(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": "baseURL = 'https://example.org/'\n",
            "content/_index.md": page("Home"),
            "content/Docs/_index.md": page("Docs", slug="ignored-for-a-section"),
            "content/Docs/Oiling  Gears!.md": page("Oiling"),
            "content/Docs/renamed.md": page("Renamed", slug="Better Name"),
            "content/Docs/bundle/index.md": page("Bundle", slug="bundle-slug"),  # a leaf bundle is a page
            "content/Docs/moved.md": page("Moved", url="/Elsewhere/Moved"),
            "content/Docs/file.md": page("File", url="/feeds/atom.xml"),
        },
    )
    site, pages = read(tmp_path)
    assert site.languages == () and site.default_language == ""  # the configuration names none
    assert routes(pages) == {
        "content/_index.md": "",
        "content/Docs/_index.md": "docs/",
        "content/Docs/Oiling  Gears!.md": "docs/oiling-gears/",
        "content/Docs/renamed.md": "docs/better-name/",
        "content/Docs/bundle/index.md": "docs/bundle-slug/",
        "content/Docs/moved.md": "elsewhere/moved/",
        "content/Docs/file.md": "feeds/atom.xml",
    }


def test_ugly_urls_and_disable_path_to_lower(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": "disablePathToLower = true\n[uglyURLs]\nbooks = true\nfilms = false\n",
            "content/books/_index.md": page("Books"),  # sections stay pretty
            "content/books/Dune.md": page("Dune"),
            "content/books/bundle/index.md": page("Bundle"),
            "content/films/Alien.md": page("Alien"),
        },
    )
    _, pages = read(tmp_path)
    assert routes(pages) == {
        "content/books/_index.md": "books/",
        "content/books/Dune.md": "books/Dune.html",
        "content/books/bundle/index.md": "books/bundle.html",
        "content/films/Alien.md": "films/Alien/",
    }


def test_relative_url_front_matter_stays_in_its_language_folder(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": "defaultContentLanguage = 'en'\n[languages.en]\n[languages.de]\n",
            "content/a.de.md": page("A", url="ueber"),
            "content/b.de.md": page("B", url="/about"),
        },
    )
    _, pages = read(tmp_path)
    assert routes(pages) == {"content/a.de.md": "de/ueber/", "content/b.de.md": "about/"}


def test_aliases_are_routes_that_redirect_to_the_page(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"hugo.toml": "", "content/guide/intro.md": page("Intro", aliases="[/old/intro/, older, ../legacy.html]")},
    )
    site, _ = read(tmp_path)
    assert site.aliases("content/guide/intro.md", {"aliases": ["/old/intro/", "older", "../legacy.html"]}) == (
        "old/intro/",
        "guide/older/",
        "legacy.html",
    )
    assert site.redirects == {
        "old/intro/": "guide/intro/",
        "guide/older/": "guide/intro/",
        "legacy.html": "guide/intro/",
    }


# --- what Hugo does not publish -------------------------------------------------------------


def test_headless_bundles_build_options_drafts_and_bundle_resources_are_not_pages(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": (
                "[[cascade]]\n[cascade.build]\nrender = 'never'\n[cascade.target]\npath = '{/private,/private/**}'\n"
            ),
            "content/_common/_index.md": "---\ncascade:\n  build:\n    render: never\n    list: never\n---\n",
            "content/_common/snippet.md": page("Snippet"),
            "content/glossary/_index.md": (
                "---\ntitle: Glossary\nbuild:\n  render: always\n"
                "cascade:\n  _build:\n    render: never\n    list: local\n---\n"
            ),
            "content/glossary/term.md": page("term"),
            "content/headless/index.md": page("Headless", headless="true"),
            "content/headless/part.md": page("A resource of a headless bundle"),
            "content/bundle/index.md": page("Bundle"),
            "content/bundle/notes.md": page("A resource of its bundle, not a page"),
            "content/bundle/deeper/more.md": page("Also a resource"),
            "content/draft.md": page("Draft", draft="true"),
            "content/linked.md": "---\ntitle: Linked\nbuild:\n  render: link\n---\n",
            "content/private/secret.md": page("Secret"),
            "content/_others/published.md": page("A folder starting with _ is content all the same"),
            "content/kept.md": page("Kept"),
        },
    )
    _, pages = read(tmp_path)
    assert set(pages) == {
        "content/glossary/_index.md",
        "content/bundle/index.md",
        "content/_others/published.md",
        "content/kept.md",
    }


# --- shortcodes -----------------------------------------------------------------------------


def test_include_reads_a_page_of_the_content_as_get_page_finds_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": "",
            "content/_common/_index.md": "---\nheadless: true\ncascade:\n  build:\n    render: never\n---\n",
            "content/_common/steps.md": '---\n_comment: keep\n---\n\n1. Open the valve.\n\n{{% include "nested" %}}\n',
            "content/_common/nested.md": "Nested {{< new-in 1.2.0 />}} text.",
            "content/docs/_common/local.md": "Local to the section.",
            "content/docs/guide.md": page(
                "Guide",
                (
                    'Steps:\n\n{{% include "/_common/steps.md" %}}\n\n'
                    '- Item\n\n  {{% include "_common/local" %}}\n\n'
                    '{{% include "/missing.md" %}}\n\n{{% include "/../hugo.toml" %}}\n'
                ),
            ),
            "content/loop.md": page("Loop", '{{% include "/loop.md" %}}'),
        },
    )
    _, pages = read(tmp_path)
    guide = pages["content/docs/guide.md"]
    assert text(guide) == (
        "Steps:\n\n1. Open the valve.\n\nNested New in v1.2.0 text.\n\n- Item\n\n  Local to the section."
    )
    assert guide.problems == (
        "include /missing.md left out: no such page in the content",
        "include /../hugo.toml left out: no such page in the content",
    )
    assert "content/_common/steps.md" in guide.included and "content/_common/nested.md" in guide.included
    assert pages["content/loop.md"].problems == ("include /loop.md nested more than 5 deep: left out",)


def test_shortcodes_become_what_a_reader_sees() -> None:
    assert reduced("Since {{< new-in 0.144.0 />}}, or {{<deprecated-in v0.1.0 />}}.") == (
        "Since New in v0.144.0, or Deprecated in v0.1.0."
    )
    assert reduced("{{< new-in 0.164.0 >}}\nThe argument now takes a path.\n{{< /new-in >}}").strip() == (
        "New in v0.164.0\n\nThe argument now takes a path."
    )
    assert reduced("{{< code-toggle file=hugo >}}\n[module]\nproxy = 'direct'\n{{< /code-toggle >}}").strip() == (
        "**hugo.toml**\n```toml\n[module]\nproxy = 'direct'\n```"
    )
    assert reduced("{{< code-toggle file=content/a.md fm=true >}}\ntitle: A\n{{< /code-toggle >}}").strip() == (
        "**content/a.md**\n```yaml\ntitle: A\n```"
    )
    assert reduced("{{< code-toggle config=module />}}") == ""  # read from data files, not content
    assert reduced("{{< highlight go >}}\nfmt.Println(1)\n{{< /highlight >}}").strip() == "```go\nfmt.Println(1)\n```"
    assert reduced("Use {{< hl python >}}print(1){{< /hl >}} here.") == "Use `print(1)` here."
    assert (
        reduced('{{< details summary="More" >}}\nHidden **text**.\n{{< /details >}}').strip()
        == "**More**\n\nHidden **text**."
    )
    assert reduced('A {{< figure src="a.jpg" alt="x" caption="kitten" >}}.') == "A kitten."
    assert reduced('See {{< ref "docs/a" >}} and {{< qr text="x" />}}{{< youtube abc >}}.') == "See docs/a and ."
    assert reduced("{{% note %}}\nKeep **this**.\n{{% /note %}}").strip() == "Keep **this**."  # unknown, paired
    assert reduced("A {{< badge >}} B {{< since-version v2.1 >}}") == "A  B Since version v2.1"
    assert reduced("x {{< outer >}}a {{< inner >}}b{{< /inner >}} c{{< /outer >}}") == "x a b c"
    # Escaped shortcodes stay literal, in code or not.
    assert (
        reduced('Write `{{</* note */>}}` or {{%/* include "x" */%}}.')
        == 'Write `{{< note >}}` or {{% include "x" %}}.'
    )
    assert reduced('{{</* qr text="https://gohugo.io" /*/>}}') == '{{< qr text="https://gohugo.io" />}}'


def test_a_block_shortcode_inside_a_list_item_keeps_its_indentation() -> None:
    assert reduced("- Item\n\n  {{< code-toggle file=hugo >}}\n  a = 1\n  {{< /code-toggle >}}\n") == (
        "- Item\n\n  \n  **hugo.toml**\n  ```toml\n  a = 1\n  ```\n\n"
    )


def test_glossary_listings_params_and_plain_templates(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": "[params]\nsiteVersion = '9.9'\n",
            "layouts/_shortcodes/mounts-note.html": "{{/* A note. */}}\nSee [mounts](/mounts/).\n",
            "layouts/_shortcodes/dynamic.html": "{{ .Get 0 }}",
            "content/quick-reference/glossary/_index.md": (
                "---\ntitle: Glossary\nbuild:\n  render: always\n"
                "cascade:\n  build:\n    render: never\n    list: local\n---\n\n{{% glossary %}}\n"
            ),
            "content/quick-reference/glossary/ugly-url.md": (
                "---\ntitle: ugly URL\nreference: /docs/urls\n---\n\nAn _ugly URL_ ends in .html.\n"
            ),
            "content/quick-reference/glossary/page.md": "---\ntitle: page\n---\n\nA page.\n",
            "content/docs/_index.md": page("Docs"),
            "content/docs/urls.md": page("URLs", description="How URLs are made."),
            "content/docs/b.md": page("Another", description="Another page."),
            "content/docs/use.md": page(
                "Use",
                minVersion="v1.0",
                body=(
                    '{{% glossary-term "ugly url" %}} Needs {{% param "minVersion" %}} or {{% param siteVersion %}}.'
                    "\n\n"
                    '{{% get-page-desc "/docs/urls" %}} Many [pages](g), one [ugly URL](g), no [thing](g).\n\n'
                    "{{% mounts-note %}}\n\n{{< dynamic x >}}\n\n{{% render-list-of-pages-in-section path=/docs %}}\n"
                ),
            ),
        },
    )
    _, pages = read(tmp_path)
    assert text(pages["content/docs/use.md"]) == (
        "An _ugly URL_ ends in .html. Needs v1.0 or 9.9.\n\n"
        "How URLs are made. Many [pages](/quick-reference/glossary/#page), "
        "one [ugly URL](/quick-reference/glossary/#ugly-url), no [thing](g).\n\nSee [mounts](/mounts/).\n\n"
        "[Another](/docs/b/)\n: Another page.\n\n[URLs](/docs/urls/)\n: How URLs are made.\n\n[Use](/docs/use/)\n:"
    )
    glossary = pages["content/quick-reference/glossary/_index.md"]
    assert [(s.heading_path, s.anchor) for s in glossary.parsed.sections] == [
        (("page",), "page"),
        (("ugly URL",), "ugly-url"),
    ]
    assert "See [details](/docs/urls/)." in text(glossary)


def test_goldmark_block_attributes_and_passthrough_math(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "hugo.toml": (
                "[markup.goldmark.extensions.passthrough]\nenable = true\n"
                "[markup.goldmark.extensions.passthrough.delimiters]\nblock = [['\\[', '\\]'], ['$$', '$$']]\n"
            ),
            "content/a.md": page(
                "A", "| x |\n|---|\n| 1 |\n{.wide}\n\n\\[ a^2 + b^2 \\]\n\n$$\nc^2\n$$\n\n```go\nopen {\n"
            ),
        },
    )
    _, pages = read(tmp_path)
    assert (
        text(pages["content/a.md"])
        == "| x |\n|---|\n| 1 |\n\n```math\na^2 + b^2\n```\n\n```math\nc^2\n```\n\n```go\nopen {\n```"
    )


# --- gohugo.io's own docs -------------------------------------------------------------------

GOHUGO_URLS = [  # 30 pages and the URL of their first section, as gohugo.io serves them
    ("host-and-deploy/host-on-netlify/index.md", "https://gohugo.io/host-and-deploy/host-on-netlify/#prerequisites"),
    (
        "host-and-deploy/host-on-github-pages/index.md",
        "https://gohugo.io/host-and-deploy/host-on-github-pages/#types-of-sites",
    ),
    (
        "content-management/image-processing/index.md",
        "https://gohugo.io/content-management/image-processing/#resources",
    ),
    ("content-management/organization/index.md", "https://gohugo.io/content-management/organization/#page-bundles"),
    ("troubleshooting/audit/index.md", "https://gohugo.io/troubleshooting/audit/#example-output"),
    ("contribute/documentation/index.md", "https://gohugo.io/contribute/documentation/#introduction"),
    ("methods/page/GitInfo.md", "https://gohugo.io/methods/page/gitinfo/#prerequisites"),
    ("methods/site/GetPage.md", "https://gohugo.io/methods/site/getpage/#multilingual-projects"),
    ("commands/hugo_mod_tidy.md", "https://gohugo.io/commands/hugo_mod_tidy/#hugo-mod-tidy"),
    ("commands/hugo.md", "https://gohugo.io/commands/hugo/#hugo"),
    ("content-management/urls.md", "https://gohugo.io/content-management/urls/#overview"),
    ("content-management/multilingual.md", "https://gohugo.io/content-management/multilingual/#configuration"),
    ("content-management/shortcodes.md", "https://gohugo.io/content-management/shortcodes/#introduction"),
    ("getting-started/quick-start.md", "https://gohugo.io/getting-started/quick-start/#prerequisites"),
    ("installation/linux.md", "https://gohugo.io/installation/linux/#editions"),  # a heading of an included file
    ("installation/macos.md", "https://gohugo.io/installation/macos/#editions"),
    ("configuration/module.md", "https://gohugo.io/configuration/module/#top-level-settings"),
    ("configuration/languages.md", "https://gohugo.io/configuration/languages/#base-settings"),
    ("configuration/all.md", "https://gohugo.io/configuration/all/#settings"),
    ("functions/collections/Where.md", "https://gohugo.io/functions/collections/where/#arguments"),
    ("functions/images/QR.md", "https://gohugo.io/functions/images/qr/#options"),
    ("functions/images/Filter.md", "https://gohugo.io/functions/images/filter/#usage"),
    ("render-hooks/links.md", "https://gohugo.io/render-hooks/links/#markdown"),
    ("templates/lookup-order.md", "https://gohugo.io/templates/lookup-order/#lookup-rules"),
    ("shortcodes/details.md", "https://gohugo.io/shortcodes/details/#example"),
    (
        "quick-reference/glossary/_index.md",
        "https://gohugo.io/quick-reference/glossary/#action",
    ),  # the glossary shortcode
    ("quick-reference/functions.md", "https://gohugo.io/quick-reference/functions/#cast"),  # the quick-reference one
    ("tools/search.md", "https://gohugo.io/tools/search/#open-source"),
    ("templates/shortcode.md", "https://gohugo.io/templates/shortcode/#introduction"),
    ("content-management/mathematics.md", "https://gohugo.io/content-management/mathematics/#overview"),
]

# Included file -> (a page including it, a sentence of the file the page must now hold).
GOHUGO_INCLUDES = {
    "_common/installation/01-editions.md": ("installation/linux.md", "Hugo is available in several editions."),
    "_common/ref-and-relref-options.md": (
        "shortcodes/ref.md",
        "Paths without a leading slash (`/`) are resolved first",
    ),
    "_common/configuration/locale.md": ("configuration/languages.md", "This is the primary value used by the"),
    "_common/glob-patterns.md": ("functions/resources/Match.md", "`images/foo/a.jpg`|`images/foo/*.jpg`|`true`"),
}


def _first_section_url(page: Page, base_url: str) -> str:
    anchor = next((s.anchor for s in page.parsed.sections if s.anchor and s.blocks), None)
    return join_url(base_url, page.route, anchor)


def _prose(block: str) -> str:
    return re.sub(r"`[^`\n]*`", "", block)


def test_gohugo_docs_as_gohugo_io_publishes_them() -> None:
    root = corpus("hugo-docs")
    site, pages = read(root)
    assert site.name == "hugo" and site.base_url == "https://gohugo.io/"
    assert site.languages == ("en",) and site.default_language == "en"
    en = "content/en/"
    on_disk = {p.relative_to(root).as_posix() for p in (root / "content").rglob("*.md")}
    hidden = {
        p
        for p in on_disk
        if p.startswith(en + "_common/")
        or (p.startswith(en + "quick-reference/glossary/") and not p.endswith("/_index.md"))
    }
    assert set(pages) == on_disk - hidden - {"content/LICENSE.md"}  # every page, no snippet, no licence
    assert not [p.route for p in pages.values() if p.route.startswith("en/") or "/en/" in p.route]
    assert {p.language for p in pages.values()} == {"en"}
    assert [p.problems for p in pages.values() if p.problems] == []  # every include found
    left = [
        path
        for path, p in pages.items()
        for s in p.parsed.sections
        for b in s.blocks
        if b.kind != "code" and re.search(r"\{\{[<%]", _prose(b.text))
    ]
    assert left == []  # no shortcode outside code
    for included, (path, sentence) in GOHUGO_INCLUDES.items():
        page = pages[en + path]
        assert sentence in text(page), path
        assert en + included in page.included
    for path, url in GOHUGO_URLS:
        assert _first_section_url(pages[en + path], site.base_url) == url, path
    # The same site read from its mounted content folder: the same routes.
    site, inner = read(root / "content" / "en")
    assert {path: p.route for path, p in inner.items()} == {path[len(en) :]: p.route for path, p in pages.items()}
