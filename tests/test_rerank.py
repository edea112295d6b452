"""The optional second ranking stage: a re-ranking server speaking /rerank (vLLM, Jina, Cohere; and
text-embeddings-inference's answer), here a fake on loopback that scores by shared words."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.answer.generation import GenerationError
from pgcite.retrieval.rerank import RerankError
from pgcite.vocabulary import SearchFilter
from tests.fake_openai import FakeOpenAI, closed_port

DOCS = {
    "speed.md": "# Speed\n\n## Spin rate\n\nWidgets spin at 40 turns per second by default; set `spin_rate`.\n",
    "colour.md": "# Colour\n\n## Paint\n\nWidgets come painted blue; repaint them with `widgets paint`.\n",
    "noise.md": "# Noise\n\n## Hum\n\nA spinning widget hums quietly; felt pads make it quieter still.\n",
}
QUESTION = "Which colour are widgets painted, and how do I repaint them?"


@pytest.fixture
def app(settings: Settings, embedder, tmp_path: Path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(root), source="w")
    yield settings, embedder


@pytest.mark.parametrize("shape", ["cohere", "tei"])
def test_the_server_orders_the_candidates(app, shape: str):
    settings, embedder = app
    with FakeOpenAI(rerank_shape=shape) as server:
        reranked = dataclasses.replace(settings, rerank_url=server.url, rerank_model=server.rerank_model,
                                       rerank_candidates=3)
        with Pgcite(reranked, embedder=embedder) as core:
            hits = core.search("felt pads hum quietly", k=2, filters=SearchFilter(source="w"))
            answer = core.ask(QUESTION, threshold=1.0)
        [request, *_] = [r["body"] for r in server.requests if r["path"] == "/v1/rerank"]
    assert request["model"] == "fake-rerank" and request["query"] == "felt pads hum quietly"
    assert len(request["documents"]) == 3 and request["documents"] == request["texts"]
    # The fake's order (shared words), and its score as the rank score; k cut after re-ranking.
    assert len(hits) == 2 and hits[0].path == "noise.md"
    assert hits[0].rank_score == pytest.approx(1.0) and hits[1].rank_score == pytest.approx(0.0)
    assert answer.sources[0].hit.path == "colour.md"


def test_a_server_that_is_down_or_wrong_is_one_line(app):
    settings, embedder = app
    down = dataclasses.replace(settings, rerank_url=f"http://127.0.0.1:{closed_port()}/v1", rerank_timeout=2.0)
    with Pgcite(down, embedder=embedder) as core:
        with pytest.raises(RerankError, match="cannot reach the re-ranking server") as info:
            core.search("spin rate", k=2)
    assert "\n" not in str(info.value) and info.value.kind == "unavailable"
    with FakeOpenAI() as server:
        wrong = dataclasses.replace(settings, rerank_url=server.url, rerank_model="no-such-model")
        with Pgcite(wrong, embedder=embedder) as core:
            with pytest.raises(RerankError, match="HTTP 404"):
                core.ask(QUESTION, threshold=1.0)


def test_without_a_server_or_the_reader_nothing_changes(app):
    settings, embedder = app
    with Pgcite(dataclasses.replace(settings, reader="off"), embedder=embedder) as core:
        assert core.reranker is None
        hits = core.search("felt pads hum quietly", k=3, filters=SearchFilter(source="w"))
    assert hits == sorted(hits, key=lambda h: -h.rank_score)


def test_the_chat_model_chooses_among_the_candidates(app):
    settings, embedder = app
    with Pgcite(settings, embedder=embedder) as core:
        first = [h.path for h in core.search(QUESTION, k=3, filters=SearchFilter(source="w"))]
    hum = first.index("noise.md") + 1  # the fake chat model will name the hum section only
    with FakeOpenAI() as server:
        chat = dataclasses.replace(settings, chat_url=server.url, chat_model=server.chat_model,
                                   rerank_with_chat=True, rerank_candidates=3, chat_verify=False)
        server.script(f"[{hum}]", "Widgets hum [1].")
        with Pgcite(chat, embedder=embedder) as core:
            answer = core.ask(QUESTION, threshold=1.0)
        choice, fed = [r["body"] for r in server.requests]
    assert not choice.get("stream") and fed.get("stream")
    shown = choice["messages"][1]["content"]
    assert shown.count("<source id=") == 3 and shown.rstrip().endswith(f"Question: {QUESTION}")
    assert [p.hit.path for p in answer.sources][0] == "noise.md"
    assert '<source id="1">\nA spinning widget hums' in fed["messages"][1]["content"]
    # The others follow in the first stage's order.
    assert [p.hit.path for p in answer.sources][1:] == [p for p in first if p != "noise.md"][: len(answer.sources) - 1]


def test_a_choice_naming_nothing_keeps_the_first_order(app):
    settings, embedder = app
    with Pgcite(settings, embedder=embedder) as core:
        first = [h.path for h in core.search(QUESTION, k=3, filters=SearchFilter(source="w"))]
    with FakeOpenAI() as server:
        chat = dataclasses.replace(settings, chat_url=server.url, chat_model=server.chat_model,
                                   rerank_with_chat=True, rerank_candidates=3, chat_verify=False)
        server.script("None of them, sorry: [7, 0]", "Not in the documents.")
        with Pgcite(chat, embedder=embedder) as core:
            answer = core.ask(QUESTION, threshold=1.0)
    assert [p.hit.path for p in answer.sources] == first[: len(answer.sources)]


def test_choosing_needs_a_chat_model(app):
    settings, embedder = app
    alone = dataclasses.replace(settings, rerank_with_chat=True)
    with Pgcite(alone, embedder=embedder) as core:
        with pytest.raises(GenerationError, match="needs a chat model") as info:
            core.ask(QUESTION, threshold=1.0)
    assert "\n" not in str(info.value)
