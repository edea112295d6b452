"""A folder of published HTML (pgcite.ingest.sites.html): the main content without the chrome
around it, headings anchored by the ids the page gives them, code kept as code, the page's
language. A page written here in the shape static-site themes give them; Sphinx's own HTML is in
test_site_sphinx.py."""

from __future__ import annotations

from pathlib import Path

from tests.test_sites import read_site, text

PAGE = """<!doctype html>
<html lang="fr-FR"><head><title>Réglages | Gearbox</title>
<script>window.dataLayer = [];</script><style>body { color: red }</style></head>
<body>
<div class="cookie-banner">We use cookies. <button>Accept</button></div>
<header><a href="/">Gearbox</a> <nav><a href="/docs/">Docs</a> <a href="/blog/">Blog</a></nav></header>
<aside class="sidebar"><ul><li><a href="/docs/intro/">Intro</a></li><li>Sidebar entry</li></ul></aside>
<main>
  <nav class="breadcrumbs"><a href="/">Home</a> › Réglages</nav>
  <article>
    <h1>Réglages</h1>
    <p>Gearbox se règle par <code>spin_rate</code>.</p>
    <h2 id="vitesse">Vitesse<a class="hash-link" href="#vitesse">#</a></h2>
    <p>La vitesse par défaut est de 40 tours par seconde.</p>
    <pre><code class="language-js">box.spin({ rate: 40 });</code></pre>
    <section id="limites"><h2>Limites</h2><p>Jamais plus de 90 tours.</p></section>
    <a href="https://github.com/x/gearbox/edit/main/docs/settings.md">Edit this page</a>
  </article>
</main>
<footer>© 2026 Gearbox. Powered by a generator.</footer>
</body></html>
"""


def test_a_page_is_its_main_content_with_its_own_anchors(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<html><body><main><h1>Home</h1><p>Welcome.</p></main></body></html>")
    (tmp_path / "docs" / "settings").mkdir(parents=True)
    (tmp_path / "docs" / "settings" / "index.html").write_text(PAGE)
    (tmp_path / "search.html").write_text("<html><body><h1>Search</h1></body></html>")
    site, pages = read_site(tmp_path)
    assert site.name == "html" and set(pages) == {"index.html", "docs/settings/index.html"}
    page = pages["docs/settings/index.html"]
    assert page.route == "docs/settings/" and pages["index.html"].route == ""
    assert page.title == "Réglages" and page.language == "fr-fr"
    assert [s.anchor for s in page.parsed.sections] == [None, "vitesse", "limites"]
    body = text(page)
    assert "Gearbox se règle par `spin_rate`." in body
    assert "```js\nbox.spin({ rate: 40 });\n```" in body
    assert "Jamais plus de 90 tours." in body
    for chrome in ("cookies", "Blog", "Sidebar entry", "Home", "Edit this page", "Powered by", "dataLayer", "color: red", "#"):
        assert chrome not in body, chrome


def test_a_markdown_folder_with_an_html_file_stays_markdown(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Docs\n\nText.\n")
    (tmp_path / "index.html").write_text("<html><body><p>A demo page.</p></body></html>")
    site, pages = read_site(tmp_path)
    assert site.name == "plain" and set(pages) == {"README.md"}


# VitePress's output for `## Rebuilds <Badge type="tip" text="7.30" />` and a fenced C# block with
# an mdsnippets source link: the badge, the language label and the links' tooltips are not text.
VITEPRESS_PAGE = """<!doctype html><html lang="en-US"><head><title>Rebuilds | Gearbox</title></head><body>
<div id="app"><main class="main"><div class="vp-doc"><div>
<h1 id="rebuilds" tabindex="-1">Rebuilds <span class="VPBadge warning"><!--[-->8.x<!--]--></span>
<a class="header-anchor" href="#rebuilds" aria-label="Permalink to &quot;Rebuilds&quot;">&#8203;</a></h1>
<h2 id="optimized-rebuilds" tabindex="-1">Optimized Rebuilds <span class="VPBadge tip"><!--[-->7.30<!--]--></span>
<a class="header-anchor" href="#optimized-rebuilds">&#8203;</a></h2>
<p>Turn on <code>UseOptimizedRebuilds</code> for single stream projections.</p>
<div class="language-cs vp-adaptive-theme"><button title="Copy Code" class="copy"></button><span class="lang">cs</span>
<pre class="shiki vp-code"><code><span class="line"><span>opts.UseOptimizedRebuilds = true;</span></span></code></pre></div>
<p><sup><a href="https://github.com/x/gearbox/blob/main/Rebuilds.cs#L1-L2" title="Snippet source file">snippet source</a>
| <a href="#snippet-rebuilds" title="Start of snippet">anchor</a></sup></p>
</div></div></main></div></body></html>
"""


def test_a_heading_badge_and_a_code_label_are_not_text(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(VITEPRESS_PAGE)
    _, pages = read_site(tmp_path)
    page = pages["index.html"]
    assert page.title == "Rebuilds"
    sections = [(s.heading_path, s.anchor) for s in page.parsed.sections]
    assert sections == [(("Optimized Rebuilds",), "optimized-rebuilds")]  # the h1 is the title
    body = text(page)
    assert "Turn on `UseOptimizedRebuilds`" in body and "```cs\nopts.UseOptimizedRebuilds = true;\n```" in body
    assert "[snippet source](https://github.com/x/gearbox/blob/main/Rebuilds.cs#L1-L2)" in body
    for shown_only in ("7.30", "8.x", "\ncs\n", "Snippet source file", "Start of snippet", "Copy Code"):
        assert shown_only not in body, shown_only
