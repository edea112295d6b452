"""Shared cleaning (markup every generator shares): GitHub alerts, reference-style links, HTML
entities and emoji shortcodes, never inside code; the leftovers check that finds each of them; and
a count on Hugo's docs (../shared/corpora/hugo-docs) that none reaches a chunk."""

from __future__ import annotations

import collections
import re
from textwrap import dedent

import pytest
from markdown_it import MarkdownIt
from markdown_it.common.utils import normalizeReference
from tests.conftest import corpus

from pgcite.config import Settings
from pgcite.embedding.models import bundled_model_dir
from pgcite.embedding.tokenizer import load_tokenizer
from pgcite.ingest.chunking import chunk_by_headings
from pgcite.ingest.flow import open_location
from pgcite.ingest.markdown import clean, parse
from pgcite.ingest.sites import detect
from pgcite.ingest.sites.leftovers import leftovers
from pgcite.ingest.sources import Document


def md(text: str) -> str:
    return dedent(text).lstrip("\n")


def cleaned(text: str) -> str:
    return clean(md(text))[0]


# --- GitHub alerts ---------------------------------------------------------------------------


def test_an_alert_marker_leaves_its_blockquote_with_the_text_only() -> None:
    body = cleaned(
        """
        > [!NOTE]
        > Useful information that users should know.

        > [!caution]
        > Advises about risks.
        """
    )
    assert "[!" not in body
    assert "> Useful information that users should know." in body
    assert "> Advises about risks." in body  # the type is case-insensitive
    doc = parse(md("> [!TIP]\n> Helpful advice.\n"), "t")
    assert [(b.kind, b.text) for s in doc.sections for b in s.blocks] == [("blockquote", "> Helpful advice.")]


def test_an_alert_title_is_kept_as_a_bold_line_like_a_containers() -> None:
    body = cleaned(
        """
        > [!WARNING]+ Radiation hazard
        > Do not approach.

        > [!NOTE] Note
        > A title that only repeats the type is dropped.
        """
    )
    assert "> **Radiation hazard**\n> Do not approach." in body
    assert "**Note**" not in body and "[!NOTE]" not in body


def test_an_alert_marker_is_one_only_on_the_first_line_of_its_blockquote_and_outside_code() -> None:
    text = """
        > A quote that goes on.
        > [!NOTE] is how an alert starts.

        ```md
        > [!NOTE]
        > Example.
        ```
        """
    body = cleaned(text)
    assert "> [!NOTE] is how an alert starts." in body  # not the first line: text
    assert "```md\n> [!NOTE]\n> Example.\n```" in body


def test_a_nested_alert_keeps_the_outer_quote() -> None:
    body = cleaned(
        """
        > Outer.
        >
        > > [!IMPORTANT]
        > > Inner.
        """
    )
    assert "[!IMPORTANT]" not in body and "> > Inner." in body
    assert body.count("\n>") >= 2  # the outer blockquote is not cut in two by a blank line


# --- reference-style links --------------------------------------------------------------------


def test_reference_links_become_inline_links_and_their_definitions_go() -> None:
    body = cleaned(
        """
        Described in [RFC 5646][], by the [tag][language   TAG], and see [Go].

        ![Logo][logo]

        Some more text.

        [rfc 5646]: https://datatracker.ietf.org/doc/html/rfc5646 "RFC"
        [Language Tag]: /configuration/languages/#language-keys
        [go]: <https://go.dev/doc/install>
        [logo]: /images/logo.png
        """
    )
    assert "[RFC 5646](https://datatracker.ietf.org/doc/html/rfc5646)" in body  # labels: case-folded
    assert "[tag](/configuration/languages/#language-keys)" in body  # and whitespace collapsed
    assert "[Go](https://go.dev/doc/install)" in body  # a shortcut reference
    assert "![Logo](/images/logo.png)" in body
    assert "]:" not in body and body.rstrip().endswith("Some more text.")


def test_a_link_keeps_its_target_in_its_chunk_when_the_definitions_are_far_below() -> None:
    text = "## Install\n\nGet [Go][] first.\n\n## Other\n\nText.\n\n[Go]: https://go.dev/\n"
    doc = parse(text, "t")
    install = next(s for s in doc.sections if s.heading_path == ("Install",))
    assert install.blocks[0].text == "Get [Go](https://go.dev/) first."
    assert all("go.dev" not in b.text for s in doc.sections if s is not install for b in s.blocks)


def test_reference_links_in_code_stay_as_written() -> None:
    body = cleaned(
        """
        Write `[text][ref]` or [`--flag`][].

        ```md
        [text][ref]

        [ref]: https://example.com/in-code
        ```

        [ref]: https://example.com/
        [`--flag`]: /flags/#flag
        """
    )
    assert "Write `[text][ref]` or [`--flag`](/flags/#flag)." in body  # a code span in a label is read
    assert "```md\n[text][ref]\n\n[ref]: https://example.com/in-code\n```" in body


def test_a_reference_without_definition_is_left_as_the_page_shows_it() -> None:
    body = cleaned(
        """
        See [`publishDate`][] and [a][b], a footnote[^1], matrix[i][] and [x] in brackets.

        [^1]: The footnote's text.
        """
    )
    # `[x][]` is only ever a link: its brackets go. `[a][b]` may be text ([1][2]), an index stays.
    assert "See `publishDate` and [a][b], a footnote[^1], matrix[i][] and [x] in brackets." in body
    assert "[^1]: The footnote's text." in body


def test_an_empty_destination_leaves_the_text_alone() -> None:
    assert cleaned("The [embedded template][].\n\n[embedded template]: <>\n") == "The embedded template.\n"


# --- entities -----------------------------------------------------------------------------------


def test_entities_that_cannot_form_markup_are_decoded_outside_code() -> None:
    body = cleaned(
        """
        A&nbsp;B &mdash; it&#39;s &copy; &#x21a9; Bildschirm&shy;leser z.&#8203;B.

        Tags stay escaped: &lt;div&gt; &amp;nbsp; and a&#124;b and &#42;not emphasis&#42;.

        `&nbsp;` stays in code.
        """
    )
    assert "A B — it's © ↩ Bildschirmleser z.B." in body  # invisible characters read as nothing
    assert "Tags stay escaped: &lt;div&gt; &amp;nbsp; and a&#124;b and &#42;not emphasis&#42;." in body
    assert "`&nbsp;` stays in code." in body


def test_a_no_break_space_at_a_line_start_indents_nothing() -> None:
    text = "Intro.\n\n&nbsp;&nbsp;&nbsp;&nbsp;Not code.\n\n&nbsp;|A|B\n:-:|:-:|:-:\nx|y|z\n"
    doc = parse(text, "t")
    kinds = [b.kind for s in doc.sections for b in s.blocks]
    assert kinds == ["paragraph", "paragraph", "table"]  # four would make indented code, or lose a cell
    assert "&nbsp;" not in doc.markdown and "\xa0" not in doc.markdown
    assert "| |A|B" in doc.markdown


def test_headings_keep_their_entities_so_their_anchors_do_not_change() -> None:
    doc = parse("## Komponenten&shy;eigenschaften\n\nText&shy;teil.\n", "t")
    assert doc.sections[0].anchor == parse("## Komponenten\xadeigenschaften\n\nx\n", "t").sections[0].anchor
    assert doc.sections[0].blocks[0].text == "Textteil."


# --- emoji shortcodes ---------------------------------------------------------------------------


def test_known_emoji_shortcodes_are_decoded_outside_code() -> None:
    body = cleaned(
        """
        I :heart: Hugo :+1:

        Feature|Standard
        :--|:-:
        Core|:heavy_check_mark:
        Deploy|:x:

        Write `:smile:` to get one.
        """
    )
    assert "I ❤️ Hugo 👍" in body
    assert "Core|✔️" in body and "Deploy|❌" in body
    assert ":--|:-:" in body  # alignment is no shortcode
    assert "Write `:smile:` to get one." in body


def test_colons_that_are_no_emoji_stay() -> None:
    assert cleaned("Two: :+1::heart:.") == "Two: 👍❤️.\n"
    text = "At 12:30:45 use :ref: and a:b:c, std::x: or :not_an_emoji_name:.\n"
    assert cleaned(text) == text


# --- the leftovers check --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("> [!NOTE]\n> Text.", "alert marker"),
        ("See [RFC 5646][] here.", "reference link"),
        ("See [the guide][guide] here.", "reference link"),
        ("A&nbsp;B", "html entity"),
        ("Done :heavy_check_mark:", "emoji shortcode"),
    ],
)
def test_leftovers_finds_each_kind(text: str, kind: str) -> None:
    assert kind in leftovers(text)


def test_leftovers_has_no_false_positive_on_look_alikes() -> None:
    text = (
        "At 12:30:45 use :ref:, matrix[i][j], [x] and [a](b), &lt;div&gt; and a&#124;b.\n\n"
        "|A|B|\n|:-:|:--|\n|1|2|\n\n`:smile:` and `> [!NOTE]` and `&nbsp;` in code."
    )
    assert leftovers(text) == []


# --- Hugo's docs ------------------------------------------------------------------------------------

_MD = MarkdownIt("commonmark").enable("table")
_FULL_REFERENCE = re.compile(r"(?<![A-Za-z0-9_\\\]])\[([^\[\]\n]+)\]\[([^\[\]\n]*)\]")


def test_hugo_docs_chunks_hold_none_of_this_markup() -> None:
    location = corpus("hugo-docs")
    source = open_location(str(location), Settings())
    site = detect(source)
    source.include, source.exclude = site.include, (*source.exclude, *site.exclude)
    count = load_tokenizer(bundled_model_dir() / "tokenizer.json").count
    found: collections.Counter[str] = collections.Counter()
    unresolved = []
    for document in source.scan():
        if not isinstance(document, Document):
            continue
        env: dict = {}
        _MD.parse(document.text, env)
        defined = set(env.get("references", {}))
        for chunk in chunk_by_headings(site.render(document).parsed, count):
            kinds = leftovers(chunk.content)
            found.update(k for k in kinds if k in ("alert marker", "html entity", "emoji shortcode"))
            if "reference link" in kinds:
                unresolved += [
                    f"{document.path}: {m.group(0)}"
                    for m in _FULL_REFERENCE.finditer(chunk.content)
                    if normalizeReference(m.group(2) or m.group(1)) in defined
                ]
    assert found == {} and unresolved == []
