"""A reader trained on a sentence or two reads a section as windows of its units (sentences, list
items, rows, code), each after the section's breadcrumb, and the section scores as its best window:
so an answer deep in a long section is read, where a whole-section reader stops at its token limit."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pgcite.answer.units import reading_units
from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.embedding.reader import reader_card, reads_windows, windows
from pgcite.retrieval.rerank import ReaderReranker
from pgcite.vocabulary import SearchFilter


def test_units_are_packed_into_windows_in_order():
    units = ["one two three.", "four five.", "six seven eight nine.", "ten."]
    assert windows(units, most_words=5, most=10) == ["one two three. four five.", "six seven eight nine. ten."]
    # A unit longer than a window is a window alone; only the first `most` are read.
    assert windows(["a " * 50, "b.", "c."], most_words=5, most=2) == ["a " * 50, "b. c."]
    assert windows([], most_words=5, most=2) == []


def test_a_section_is_cut_into_the_units_the_generator_quotes():
    content = (
        "To descale it, use vinegar. Rinse twice.\n\n- Unplug it first.\n- Let it cool.\n\n"
        "| Part | Dishwasher |\n|---|---|\n| Lid | no |\n\n```sh\nkettle --descale\n```\n"
    )
    assert reading_units(content) == [
        "To descale it, use vinegar.",
        "Rinse twice.",
        "Unplug it first.",
        "Let it cool.",
        "Part: Lid; Dishwasher: no",
        "kettle --descale",
    ]


FILLER = [
    "The kettle comes in four colours, each with a matching toaster.",
    "Its body is brushed steel with a soft-touch handle that stays cool.",
    "A blue light inside the window glows while the water heats.",
    "The base turns all the way round so either hand can lift it.",
    "The cord winds under the base so the kettle stands neatly on the counter.",
    "The spout has a filter that keeps flakes out of your cup.",
    "The kettle switches itself off when the water boils or when it is lifted.",
    "It is quiet: a soft click tells you it has finished.",
    "The lid opens wide, so it is easy to fill from the tap.",
    "It was designed in Copenhagen and is made in Portugal.",
]


@pytest.mark.slow
@pytest.mark.skipif(not reads_windows(), reason="the shipped reader reads whole sections (reader.json has no unit)")
def test_an_answer_deep_in_a_long_section_is_read(settings: Settings, embedder, tmp_path: Path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "kettle.md").write_text(
        "# Kettle\n\n## About the kettle\n\n"
        + " ".join(FILLER * 2)
        + " To descale the kettle, boil one part vinegar with two parts water and rinse it twice.\n\n"
        "## Capacity\n\nThe kettle holds 1.7 litres and the window shows the level.\n"
    )
    settings = dataclasses.replace(settings, reader="fp32", reader_bar=-50.0)
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(root), source="kettle")
        assert isinstance(app.reranker, ReaderReranker) and app.reranker.units is not None
        question = "How do I get limescale out of the kettle?"
        read = app.search(question, k=2, filters=SearchFilter(source="kettle"), rerank=True)
    assert read[0].heading == "About the kettle", [(h.heading, h.rank_score) for h in read]
    assert "vinegar" in read[0].reader_quote  # the window it read as the answer
    # Its making measured that it orders and should not refuse: no bar applies but one the user sets.
    assert reader_card().get("refuses") is False
    with Pgcite(dataclasses.replace(settings, reader_bar=float("nan")), embedder=embedder) as app:
        answer = app.ask("How much water does the kettle hold?", filters=SearchFilter(source="kettle"))
    assert not answer.refused and "1.7 litres" in answer.text, answer.note


@pytest.mark.slow
def test_without_units_a_section_is_read_whole(tmp_path: Path):
    """A reader given no way to cut sections (or one trained on whole sections) reads each once."""
    from pgcite.embedding.models import bundled_model_dir
    from pgcite.embedding.reader import load_reader
    from pgcite.vocabulary import SearchHit

    reader = load_reader(bundled_model_dir(), tmp_path, "fp32")
    whole = ReaderReranker(lambda: reader, candidates=5)
    hit = SearchHit("k:a#0", "k", "a.md", "", "Kettle", "Descaling", "Kettle > Descaling",
                    "Boil vinegar and water in it. Rinse twice.", 0.3)
    [read] = whole.rerank("How do I descale the kettle?", [hit])
    expected = reader.scores("How do I descale the kettle?", [f"{hit.breadcrumb}\n{hit.content}"])[0]
    assert read.reader_quote == "" and abs(read.rank_score - float(expected)) < 1e-5
