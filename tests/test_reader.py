"""pgcite's reader: its conversion gives the training code's scores and is cached, it reads which
section answers a question, it orders what `ask` feeds and refuses with the offline generator when
nothing answers, `search` stays as fast as before unless asked, and it can be turned off."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.embedding import reader as reader_module
from pgcite.embedding.models import bundled_model_dir
from pgcite.embedding.reader import CARD, PARITY, load_reader
from pgcite.errors import EmbeddingError, PgciteError
from pgcite.retrieval.rerank import ReaderReranker
from pgcite.vocabulary import REFUSAL, SearchFilter

pytestmark = pytest.mark.slow

DOCS = {
    "kettle.md": "# Kettle\n\n## Descaling\n\nTo descale the kettle, fill it with one part vinegar to two parts water, "
    "boil it, leave it for an hour and rinse it twice.\n\n## Capacity\n\nThe kettle holds 1.7 litres; the window "
    "shows the level.\n",
    "toaster.md": "# Toaster\n\n## Browning\n\nTurn the dial from 1 (pale) to 6 (dark) to choose how brown the toast "
    "gets.\n\n## Crumb tray\n\nSlide the crumb tray out from the back and empty it once a week.\n",
    "warranty.md": "# Warranty\n\nEvery appliance comes with a two-year warranty from the date of purchase. Keep the "
    "receipt.\n",
}


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    return load_reader(bundled_model_dir(), tmp_path_factory.mktemp("cache"), "fp32")


def test_the_conversion_gives_the_training_codes_scores(bundled):
    for pair in json.loads(CARD.read_text())["reference"]:
        assert abs(float(bundled.scores(pair["question"], [pair["text"]])[0]) - pair["score"]) <= PARITY


def test_it_reads_which_section_answers(bundled):
    question = "How do I get the limescale out of my kettle?"
    texts = [f"Kettle > {h}\n{t}" for h, t in (
        ("Capacity", "The kettle holds 1.7 litres; the window shows the level."),
        ("Descaling", "To descale the kettle, fill it with one part vinegar to two parts water, boil it, leave it "
                      "for an hour and rinse it twice."),
        ("Lid", "Press the button on the handle to open the lid."),
    )]
    scores = bundled.scores(question, texts)
    assert int(np.argmax(scores)) == 1, scores
    # Batched or one at a time, the same scores.
    alone = [float(bundled.scores(question, [t])[0]) for t in texts]
    assert np.allclose(scores, alone, atol=1e-4)


def test_int8_keeps_the_order(tmp_path: Path, bundled):
    quantized = load_reader(bundled_model_dir(), tmp_path, "int8")
    question = "How brown will the toast be?"
    texts = ["Toaster > Browning\n" + DOCS["toaster.md"].split("\n\n")[2], "Toaster > Crumb tray\n" +
             DOCS["toaster.md"].split("\n\n")[4], "Warranty\n" + DOCS["warranty.md"].split("\n\n")[1]]
    assert np.argsort(quantized.scores(question, texts))[-1] == np.argsort(bundled.scores(question, texts))[-1]
    # Quantized from the fp32 conversion, both kept in the cache.
    assert len(list(tmp_path.glob("pgcite-reader-int8-*.onnx"))) == 1
    assert len(list(tmp_path.glob("pgcite-reader-*.weights"))) == 1


def test_a_damaged_conversion_is_written_again(tmp_path: Path):
    first = load_reader(bundled_model_dir(), tmp_path, "fp32").scores("kettle size?", ["The kettle holds 1.7 l."])
    graph = next(tmp_path.glob("*.onnx"))
    graph.write_bytes(graph.read_bytes()[:100])
    again = load_reader(bundled_model_dir(), tmp_path, "fp32").scores("kettle size?", ["The kettle holds 1.7 l."])
    assert np.allclose(first, again, atol=1e-6)


def test_other_word_embeddings_are_refused(tmp_path: Path, monkeypatch):
    card = json.loads(CARD.read_text()) | {"words_sha256": "0" * 64}
    fake = tmp_path / "reader.json"
    fake.write_text(json.dumps(card))
    monkeypatch.setattr(reader_module, "CARD", fake)
    with pytest.raises(EmbeddingError, match="other word embeddings") as info:
        load_reader(bundled_model_dir(), tmp_path / "cache", "fp32")
    assert "\n" not in str(info.value)


def test_scoring_does_not_import_torch(tmp_path: Path):
    probe = ("import sys; from pathlib import Path; from pgcite.embedding.models import bundled_model_dir; "
             "from pgcite.embedding.reader import load_reader; "
             f"r = load_reader(bundled_model_dir(), Path({str(tmp_path)!r})); "
             "assert r.scores('kettle size?', ['The kettle holds 1.7 litres.', 'Toast']).shape == (2,); "
             "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


@pytest.fixture
def appliances(settings: Settings, embedder, tmp_path: Path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    settings = dataclasses.replace(settings, reader="fp32")
    with Pgcite(settings, embedder=embedder) as app:
        report = app.ingest(str(root), source="home")
    return settings, embedder, report


def test_ask_is_ordered_by_the_reader_and_search_only_when_asked(appliances):
    settings, embedder, _ = appliances
    question = "How do I get the limescale out of my kettle?"
    # Ordering alone: whether to refuse is the bar's (measured on the held-out sets, docs/reader.md).
    with Pgcite(dataclasses.replace(settings, reader_bar=-50.0), embedder=embedder) as app:
        assert isinstance(app.reranker, ReaderReranker)
        plain = app.search(question, k=3, filters=SearchFilter(source="home"))
        assert app._reader is None  # search did not load the reader
        read = app.search(question, k=3, filters=SearchFilter(source="home"), rerank=True)
        answer = app.ask(question, filters=SearchFilter(source="home"))
    assert plain == sorted(plain, key=lambda h: -h.rank_score)  # the first stage's order
    assert read[0].heading == "Descaling" and read[0].rank_score > read[1].rank_score
    assert not answer.refused and answer.sources[0].hit.heading == "Descaling"
    assert "vinegar" in answer.text and "[1]" in answer.text


def test_with_the_offline_generator_its_bar_decides(appliances):
    settings, embedder, _ = appliances
    question = "How brown will the toast be?"
    with Pgcite(dataclasses.replace(settings, reader_bar=50.0), embedder=embedder) as app:
        refused = app.ask(question, filters=SearchFilter(source="home"))
    with Pgcite(dataclasses.replace(settings, reader_bar=-50.0), embedder=embedder) as app:
        answered = app.ask(question, filters=SearchFilter(source="home"))
    assert refused.refused and refused.text == REFUSAL and "no section reads as answering" in refused.note
    assert refused.dropped and not refused.sources  # the closest sections are still shown
    assert not answered.refused and answered.sources[0].hit.heading == "Browning"


def test_each_source_has_its_bar_measured_at_ingest(appliances):
    settings, embedder, report = appliances
    measured = report.calibration
    with Pgcite(settings, embedder=embedder) as app:
        assert measured.reader == app.reranker.identity
    assert measured.reader_unanswered_high is not None and measured.reader_answered_low is not None
    assert min(measured.reader_answered_low, measured.reader_unanswered_high) <= measured.reader_bar
    assert measured.reader_bar <= max(measured.reader_answered_low, measured.reader_unanswered_high)
    assert measured.to_json()["reader_bar"] == measured.reader_bar
    # Off, an ingest measures nothing of it, and keeps what was measured.
    with Pgcite(dataclasses.replace(settings, reader="off"), embedder=embedder) as app, app.reader() as store:
        assert app.reranker is None and store.load_calibration("home")["reader"] == measured.reader


def test_it_can_be_turned_off_and_a_wrong_value_is_one_line(appliances):
    settings, embedder, _ = appliances
    with Pgcite(dataclasses.replace(settings, reader="off"), embedder=embedder) as app:
        assert app.reranker is None
    with (
        Pgcite(dataclasses.replace(settings, reader="fp16"), embedder=embedder) as app,
        pytest.raises(PgciteError, match="PGCITE_READER is 'fp16'; use off, fp32 or int8") as info,
    ):
        app.ask("How brown will the toast be?")
    assert "\n" not in str(info.value)
