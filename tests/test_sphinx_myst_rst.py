"""MyST's ```{eval-rst} blocks read as reStructuredText, by the reader the site's .rst pages go
through (rst.py): no directive line left in the text, an extension's examples kept as code, reST
sections nested under the Markdown heading they follow as Sphinx nests them. tests/sites/sphinx-myst
is a small project written for these tests; Sphinx itself builds it for the section ids."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.test_sites import read_site, text

from pgcite.ingest.sites import Page

PROJECT = Path(__file__).parent / "sites" / "sphinx-myst"


@pytest.fixture(scope="module")
def pages() -> dict[str, Page]:
    return read_site(PROJECT)[1]


def blocks(page: Page, kind: str) -> list[str]:
    return [b.text for s in page.parsed.sections for b in s.blocks if b.kind == kind]


def test_no_directive_line_of_an_eval_rst_block_is_left_in_the_text(pages: dict[str, Page]) -> None:
    assert set(pages) == {"index.md", "guide/winding.md", "guide/bobbins.rst"}
    for page in pages.values():
        lines = [line for s in page.parsed.sections for b in s.blocks for line in b.text.split("\n")]
        assert not [line for line in lines if line.lstrip().startswith(".. ")], page.path
        assert "eval-rst" not in text(page) and "currentmodule" not in text(page)
    # The prose around them stays prose, its roles read as Sphinx shows them.
    assert "Spindle winds thread onto `Bobbin` objects." in text(pages["index.md"])
    winding = pages["guide/winding.md"]
    assert "Wind a bobbin with `wind()`; the **turns** say how full it gets." in blocks(winding, "paragraph")
    assert "Winding stops at the bobbin's `capacity`." in blocks(winding, "paragraph")
    assert "> **Note:** A loose thread tangles." in text(winding)


def test_code_in_an_eval_rst_block_is_a_code_block(pages: dict[str, Page]) -> None:
    code = blocks(pages["guide/winding.md"], "code")
    # An extension's example directive holds Python: shown as code, whole, not read as text.
    assert code[0] == "```python\nimport spindle\n\nbobbin = spindle.Bobbin(turns=12)\nspindle.wind(bobbin)\n```"
    assert code[1] == "```shell\n$ spindle wind --turns 12\n```"
    assert "```python\nspindle.unwind(bobbin)\n```" in code  # the same directive written as MyST
    # A .rst page reads the same directive the same way; one holding text keeps its text.
    bobbins = pages["guide/bobbins.rst"]
    assert blocks(bobbins, "code") == ["```python\nbobbin = spindle.Bobbin(turns=3)\nprint(bobbin.capacity)\n```"]
    assert blocks(bobbins, "paragraph") == ["A bobbin holds one colour."]


def test_autodoc_in_eval_rst_blocks_is_left_out_and_said_once_a_page(pages: dict[str, Page]) -> None:
    winding = pages["guide/winding.md"]
    assert winding.problems == (
        "autoclass Bobbin, autofunction wind: autodoc pulls docstrings from the code, which pgcite does not "
        "import: left out",
    )
    assert ":members:" not in text(winding)
    assert "- A list item holding reST:\n\n  Wound thread keeps its twist." in text(winding)  # indented, read too


def test_a_rest_section_nests_under_the_markdown_heading_before_it_with_sphinxs_id(
    pages: dict[str, Page], tmp_path: Path
) -> None:
    winding = pages["guide/winding.md"]
    sections = [(s.heading_path, s.anchor) for s in winding.parsed.sections]
    assert sections == [
        ((), None),
        (("Winding by hand",), "winding-by-hand"),
        (("Winding by hand", "Thread tension"), "thread-tension"),
    ]
    assert "Keep the tension under 3 newtons." in blocks(winding, "paragraph")
    # Sphinx itself: the reST title is an <h3> inside the <h2>, with the id pgcite links it by.
    out = tmp_path / "html"
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-C", "-D", "project=Spindle", "-D",
         "extensions=myst_parser", str(PROJECT), str(out)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    html = (out / winding.route).read_text()
    assert re.search(r'<section id="thread-tension">\s*<h3>Thread tension', html)
    assert html.index('id="winding-by-hand"') < html.index('id="thread-tension"')
