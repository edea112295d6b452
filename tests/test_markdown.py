"""Cleaning of VitePress markup and parsing into sections/blocks (pgcite.ingest.markdown)."""

from __future__ import annotations

from textwrap import dedent

import pytest

from pgcite.ingest.anchors import vitepress as slugify
from pgcite.ingest.markdown import Block, ParsedDocument, clean, parse


def md(text: str) -> str:
    return dedent(text).lstrip("\n")


def all_blocks(doc: ParsedDocument) -> list[Block]:
    return [block for section in doc.sections for block in section.blocks]


# --- clean ---------------------------------------------------------------------------------


def test_front_matter_is_dropped_and_gives_the_title_when_there_is_no_h1() -> None:
    text = md(
        """
        ---
        title: Marten
        layout: home
        ---

        Some text.
        """
    )
    body, front_matter = clean(text)
    assert front_matter == {"title": "Marten", "layout": "home"}
    assert body == "Some text.\n"
    doc = parse(text, fallback_title="index")
    assert doc.title == "Marten"
    assert doc.front_matter["layout"] == "home"


def test_h1_wins_over_front_matter_title_and_fallback_is_last() -> None:
    assert parse("---\ntitle: FM\n---\n# Real Title\n\nx\n", "fb").title == "Real Title"
    assert parse("Just text.\n", "fallback").title == "fallback"


def test_invalid_front_matter_is_dropped_anyway() -> None:
    body, front_matter = clean("---\ntitle: [unclosed\n---\nBody\n")
    assert front_matter == {}
    assert body == "Body\n"


def test_non_mapping_front_matter_gives_empty_dict() -> None:
    assert clean("---\n- a\n- b\n---\nBody\n") == ("Body\n", {})


def test_container_fences_are_dropped_and_inner_text_kept() -> None:
    body, _ = clean(
        md(
            """
            ::: tip
            Inner tip.
            :::

            :::tip
            No space tip.
            :::

            ::: warning Upgrading from 9.3
            Read this first.
            :::

            ::: tip INFO
            Generic title.
            :::

            :::: code-group
            ::: details Click me
            Nested.
            :::
            ::::
            """
        )
    )
    assert ":::" not in body
    for inner in ("Inner tip.", "No space tip.", "Read this first.", "Generic title.", "Nested."):
        assert inner in body
    # A real title stays, bold, glued to the text it introduces; a generic label is dropped.
    assert "**Upgrading from 9.3**\nRead this first." in body
    assert "**Click me**\nNested." in body
    assert "INFO" not in body


def test_container_inner_text_is_its_own_paragraph() -> None:
    doc = parse("# T\n\nBefore.\n::: tip\nInside.\n:::\nAfter.\n", "t")
    assert [b.text for b in all_blocks(doc)] == ["Before.", "Inside.", "After."]


SNIPPET = md(
    """
    # Page

    Configure the store:

    <!-- snippet: sample_autocreateschemaobjects -->
    <a id='snippet-sample_autocreateschemaobjects'></a>
    ```cs
    var store = DocumentStore.For(opts => { });
    ```
    <sup><a href='https://github.com/JasperFx/marten/blob/master/src/CoreTests/StoreOptionsTests.cs#L56-L82' title='Snippet source file'>snippet source</a> | <a href='#snippet-sample_autocreateschemaobjects' title='Start of snippet'>anchor</a></sup>
    <!-- endSnippet -->

    Done.
    """
)


def test_snippet_markers_and_footers_are_dropped() -> None:
    body, _ = clean(SNIPPET)
    assert "snippet" not in body.lower()
    assert "<sup>" not in body and "<a id=" not in body and "<!--" not in body
    assert "```cs\nvar store = DocumentStore.For(opts => { });\n```" in body
    kinds = [(b.kind, b.text.split("\n")[0]) for b in all_blocks(parse(SNIPPET, "p"))]
    assert kinds == [("paragraph", "Configure the store:"), ("code", "```cs"), ("paragraph", "Done.")]


def test_includes_toc_and_comments_are_dropped() -> None:
    body, _ = clean(
        md(
            """
            [[toc]]

            Intro.

            <<< @/src/samples/FreightShipping/GettingStarted.cs#models

            <!--@include: ./freight-shipping-tutorial-info.md-snippet-->
            <!-- a comment
            on two lines -->
            Text with <!-- inline --> comment.
            """
        )
    )
    assert "[[toc]]" not in body and "<<<" not in body and "<!--" not in body
    assert "include" not in body and "two lines" not in body
    assert "Intro." in body and "Text with  comment." in body


def test_code_fences_are_never_touched() -> None:
    fence = md(
        """
        ```md
        ::: tip
        <!-- snippet: keep -->
        <!-- keep me -->
        <a id='snippet-keep'></a>
        [[toc]]
        <<< @/keep.cs
        :::
        ```
        """
    )
    tilde = "~~~\n::: warning\n<!-- x -->\n~~~\n"
    in_list = "- item\n\n  ```xml\n  <!-- keep in list -->\n  ```\n"
    indented = "Para.\n\n    <!-- indented code keeps it -->\n"
    text = f"::: tip\n{fence}:::\n\n{tilde}\n{in_list}\n{indented}"
    body, _ = clean(text)
    assert fence in body
    assert tilde in body
    assert "  ```xml\n  <!-- keep in list -->\n  ```" in body
    assert "    <!-- indented code keeps it -->" in body
    code = [b for b in all_blocks(parse(text, "t")) if b.kind == "code"]
    assert code[0].text == fence.rstrip("\n")  # the ``` lines and info string are kept


def test_clean_normalizes_newlines_and_is_stable() -> None:
    body, _ = clean("# T\r\n\r\n::: tip\r\nX\r\n:::\r\n")
    assert "\r" not in body
    assert clean(body)[0] == body


# --- blocks --------------------------------------------------------------------------------


def test_block_kinds_nested_list_is_one_block_and_table_is_one_block() -> None:
    doc = parse(
        md(
            """
            # T

            Para one
            continues here.

            - a
              - a.1
              - a.2
            - b
              1. b.1

            | Col A | Col B |
            |-------|-------|
            | 1     | 2     |
            | 3     | 4     |

            > quoted
            > text

            ---

            <div>html</div>

            ```python
            print(1)
            ```
            """
        ),
        "t",
    )
    blocks = all_blocks(doc)
    # HTML tags are markup: what is left of <div>html</div> is its text.
    assert [b.kind for b in blocks] == ["paragraph", "list", "table", "blockquote", "paragraph", "code"]
    assert blocks[4].text == "html"
    assert blocks[0].text == "Para one\ncontinues here."
    assert blocks[1].text == "- a\n  - a.1\n  - a.2\n- b\n  1. b.1"
    assert blocks[2].text.count("\n") == 3
    assert blocks[5].text == "```python\nprint(1)\n```"


# --- headings ------------------------------------------------------------------------------


HEADINGS = md(
    """
    # Title

    Intro text.

    ## A

    a text

    ### A1

    a1 text

    ### A2

    ## B

    b text

    #### B deep

    deep text

    ### B1

    b1 text
    """
)


def test_heading_paths_follow_the_outline() -> None:
    doc = parse(HEADINGS, "x")
    assert doc.title == "Title"
    got = [(s.heading_path, s.anchor, [b.text for b in s.blocks]) for s in doc.sections]
    assert got == [
        ((), None, ["Intro text."]),
        (("A",), "a", ["a text"]),
        (("A", "A1"), "a1", ["a1 text"]),
        (("A", "A2"), "a2", []),  # a heading without body is still a section
        (("B",), "b", ["b text"]),
        (("B", "B deep"), "b-deep", ["deep text"]),
        (("B", "B1"), "b1", ["b1 text"]),
    ]
    for section in doc.sections:
        for block in section.blocks:
            assert (block.heading_path, block.anchor) == (section.heading_path, section.anchor)


def test_empty_intro_is_omitted() -> None:
    doc = parse("# T\n\n## A\n\ntext\n", "t")
    assert [s.heading_path for s in doc.sections] == [("A",)]


def test_a_scraped_table_of_contents_line_is_dropped_and_the_rest_kept() -> None:
    # As scraped from a docs site: the page's own headings, spaced and then squeezed together.
    doc = parse(md(
        """
        # Vision

        ## Before you upload

        Images must be under 5 MB.

        ## Limitations

        Claude cannot identify people.
        Before you upload Limitations FAQ
        BeforeyouuploadLimitationsFAQ
        See the FAQ for more.
        Limitations FAQ are listed below.

        ## FAQ

        Ask away.
        """), "x")
    assert [b.text for b in all_blocks(doc)] == [
        "Images must be under 5 MB.",
        "Claude cannot identify people.\nSee the FAQ for more.\nLimitations FAQ are listed below.",
        "Ask away.",
    ]


def test_later_h1s_behave_as_h2s() -> None:
    doc = parse("# First\n\nx\n\n## A\n\n### A1\n\n# Second\n\ny\n\n## C\n\nz\n", "t")
    assert doc.title == "First"
    paths = [s.heading_path for s in doc.sections]
    assert paths == [(), ("A",), ("A", "A1"), ("Second",), ("C",)]


def test_heading_text_loses_inline_markup_and_badges() -> None:
    doc = parse(
        md(
            """
            # The `Marten` **docs**

            ## `AddMarten()` options

            ## Using [links](https://x.y) and *emphasis*

            ## Disabling Npgsql Logging <Badge type="tip" text="7.0" />
            """
        ),
        "t",
    )
    assert doc.title == "The Marten docs"
    assert [s.heading_path[-1] for s in doc.sections] == [
        "AddMarten() options",
        "Using links and emphasis",
        "Disabling Npgsql Logging",
    ]
    assert [s.anchor for s in doc.sections] == [
        "addmarten-options",
        "using-links-and-emphasis",
        "disabling-npgsql-logging",
    ]


def test_custom_anchor_is_removed_from_text_and_used() -> None:
    doc = parse("# T\n\n## Using Custom Anchors {#my-anchor}\n\ntext\n", "t")
    (section,) = doc.sections
    assert section.heading_path == ("Using Custom Anchors",)
    assert section.anchor == "my-anchor"
    assert section.blocks[0].anchor == "my-anchor"


def test_duplicate_headings_get_numbered_anchors() -> None:
    doc = parse("# T\n\n## Usage\n\n### Example\n\n## Other\n\n### Example\n\n### Example\n", "t")
    assert [s.anchor for s in doc.sections] == ["usage", "example", "other", "example-1", "example-2"]


def test_headings_inside_containers_are_not_sections() -> None:
    doc = parse("# T\n\n## A\n\n> ## Quoted heading\n> text\n", "t")
    assert [s.heading_path for s in doc.sections] == [("A",)]
    assert doc.sections[0].blocks[0].kind == "blockquote"


# --- slugify -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Hello World!", "hello-world"),
        ("1. Intro", "_1-intro"),
        ("Ünïcödé", "unicode"),
        ("AddMarten() options", "addmarten-options"),
        ('Development Time with "Auto Create" Mode', "development-time-with-auto-create-mode"),
        ("Multi-Host Data Source (Read Replicas)", "multi-host-data-source-read-replicas"),
        ("  --a__b--  ", "a-b"),
        ("“Quoted” ‘text’", "quoted-text"),
        ("ﬁle", "file"),  # NFKD folds the ligature
        ("IEvent.Sequence / IEvent.Version", "ievent-sequence-ievent-version"),
        ("中文 标题", "中文-标题"),
    ],
)
def test_slugify_follows_vitepress(heading: str, slug: str) -> None:
    assert slugify(heading) == slug
