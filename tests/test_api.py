"""The HTTP API and the OpenAI-compatible chat endpoint, over a real uvicorn server on loopback,
a real database and the bundled model; the official `openai` client parses every chat response."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest
from psycopg.conninfo import make_conninfo

from pgcite import shapes
from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.answer.generation import ChatGenerator
from pgcite.vocabulary import REFUSAL, SearchFilter
from tests.conftest import _drop_database, _fresh_database
from tests.fake_openai import FakeOpenAI, Reply
from tests.test_ask import DOCS as WIDGETS
from tests.http_server import call, running, served, write_folder

pytestmark = pytest.mark.slow

DOCS = {name: text for name, text in WIDGETS.items() if name != "billing.md"}  # no planted injection here
GADGETS = {"gadgets.md": "# Gadgets\n\n## Charging\n\nA gadget charges in 3 hours from a USB-C port.\n"}


core, base = served({"w": (DOCS, "https://widgets.dev/"), "g": (GADGETS, "https://gadgets.dev/")})


def events(base: str, path: str, body: dict) -> tuple[str, list[tuple[str, dict | str]]]:
    """The (event, data) pairs of a Server-Sent Events response, in order, and its content type."""
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    out: list[tuple[str, dict | str]] = []
    with urllib.request.urlopen(request, timeout=60) as response:
        kind = response.headers["Content-Type"]
        name = "message"
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                payload = line[len("data: "):]
                out.append((name, payload if payload == "[DONE]" else json.loads(payload)))
                name = "message"
    return kind, out


def test_health_readiness_and_openapi(base: str):
    health = call(base, "/healthz")
    assert (health.status, health.body) == (200, {"status": "ok"})
    ready = call(base, "/readyz")
    assert ready.status == 200 and ready.body["checks"] == {"database": True, "schema": True, "model": True}
    schema = call(base, "/openapi.json")
    assert schema.status == 200
    assert {"/v1/search", "/v1/ask", "/v1/chat/completions", "/v1/models"} <= set(schema.body["paths"])
    page = call(base, "/docs")
    assert page.status == 200 and "/openapi.json" in page.text


def test_search_is_the_search_json_object(base: str, core: Pgcite):
    reply = call(base, "/v1/search?q=What+is+the+default+spin+rate%3F&k=2&source=w")
    body = reply.body
    assert reply.status == 200
    expected = shapes.search("What is the default spin rate?", core.search(
        "What is the default spin rate?", k=2, filters=SearchFilter(source="w")))
    assert body == json.loads(json.dumps(expected))
    assert body["results"][0]["path"] == "tuning.md" and len(body["results"]) == 2


def test_sources_lists_what_was_ingested(base: str):
    reply = call(base, "/v1/sources")
    assert reply.status == 200
    assert {(s["name"], s["documents"]) for s in reply.body["sources"]} == {("w", 3), ("g", 1)}


def test_ask_answers_with_citations_and_streams_events_in_order(base: str):
    question = {"question": "What is the default spin rate?", "source": "w"}
    reply = call(base, "/v1/ask", question)
    answer = reply.body
    assert reply.status == 200 and not answer["refused"] and answer["citations"]
    assert "40 turns per second" in answer["answer"]
    assert answer["sources"][0]["path"] == "tuning.md"

    kind, stream = events(base, "/v1/ask", {**question, "stream": True})
    assert kind.startswith("text/event-stream")
    names = [name for name, _ in stream]
    assert names[0] == "sources" and names[-2:] == ["answer", "done"]
    assert set(names[1:-2]) == {"delta"} and len(names) >= 4
    assert "".join(d["text"] for n, d in stream if n == "delta").strip() == answer["answer"]
    assert stream[0][1]["sources"] == answer["sources"]
    assert {**stream[-2][1], "id": None} == {**answer, "id": None}  # each answer is logged with an id of its own
    assert stream[-2][1]["id"] != answer["id"]


def test_an_off_topic_question_is_refused(base: str):
    reply = call(base, "/v1/ask", {"question": "Who wrote Hamlet?"})
    assert reply.status == 200 and reply.body["refused"] and reply.body["answer"] == REFUSAL


@pytest.mark.parametrize("path, body, status, kind", [
    ("/v1/search?q=spin&k=0", None, 422, "invalid_request"),
    ("/v1/search?q=spin&k=1e20", None, 422, "invalid_request"),
    ("/v1/search?q=spin&mode=fuzzy", None, 422, "invalid_request"),
    ("/v1/search?q=spin&source=nope", None, 404, "not_found"),
    ("/v1/search", None, 422, "invalid_request"),
    ("/v1/ask", {"question": ""}, 422, "invalid_request"),
    ("/v1/ask", {"question": "   "}, 400, "bad_request"),
    ("/v1/ask", {"question": "x" * 5000}, 422, "invalid_request"),
    ("/v1/ask", {"question": "spin?", "threshold": 7}, 422, "invalid_request"),
    ("/v1/ask", {"question": "spin?", "surprise": 1}, 422, "invalid_request"),
    ("/v1/ask", b"{not json", 422, "invalid_request"),
    ("/v1/nothing-here", None, 404, "not_found"),
])
def test_bad_requests_get_one_line_json_errors(base: str, path: str, body, status: int, kind: str):
    reply = call(base, path, body)
    error = reply.body["error"]
    assert reply.status == status, error
    assert error["type"] == kind and error["code"] == kind
    assert "\n" not in error["message"] and error["message"]


def test_a_wrong_method_is_json_too(base: str):
    reply = call(base, "/v1/ask", method="GET")
    assert reply.status == 405 and reply.body["error"]["type"] == "method_not_allowed"


def test_models_list_one_per_source_and_one_for_all(base: str):
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
    assert [m.id for m in client.models.list()] == ["pgcite", "pgcite:g", "pgcite:w"]


def test_chat_completion_carries_annotations_sources_and_the_answer(base: str):
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
    completion = client.chat.completions.create(
        model="pgcite:w", messages=[{"role": "user", "content": "What is the default spin rate?"}])
    message = completion.choices[0].message
    assert completion.object == "chat.completion" and completion.choices[0].finish_reason == "stop"
    assert "40 turns per second" in message.content
    assert message.annotations, message
    for annotation in message.annotations:
        cited = annotation.url_citation
        assert annotation.type == "url_citation"
        assert message.content[cited.start_index:cited.end_index] in {"[1]", "[2]", "[3]", "[4]", "[5]"}
        assert cited.url.startswith("https://widgets.dev/") and " > " in cited.title
    assert "\n\nSources:\n[1] " in message.content
    extra = completion.model_extra["pgcite"]
    assert extra["refused"] is False and extra["sources"][0]["path"] == "tuning.md"


def test_chat_streams_standard_chunks_with_annotations_at_the_end(base: str):
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
    messages = [{"role": "user", "content": "What is the default spin rate?"}]
    whole = client.chat.completions.create(model="pgcite:w", messages=messages).choices[0].message
    chunks = list(client.chat.completions.create(model="pgcite:w", messages=messages, stream=True,
                                                 stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content.strip() == whole.content.strip()
    tail = [c for c in chunks if c.choices and c.choices[0].delta.model_extra.get("annotations") is not None]
    assert len(tail) == 1 and tail[0].choices[0].delta.content is None
    assert tail[0].model_extra["pgcite"]["citations"]
    for annotation in tail[0].choices[0].delta.model_extra["annotations"]:
        cited = annotation["url_citation"]
        assert content[cited["start_index"]:cited["end_index"]].startswith("[")
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


def test_chat_refusal_is_an_ordinary_completion(base: str):
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
    completion = client.chat.completions.create(model="pgcite", messages=[{"role": "user", "content": "Who wrote Hamlet?"}])
    assert completion.choices[0].message.content == REFUSAL
    assert completion.model_extra["pgcite"]["refused"] is True


def test_chat_scope_is_the_model(base: str):
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
    asked = [{"role": "user", "content": "How long does a gadget take to charge?"}]
    scoped = client.chat.completions.create(model="pgcite:w", messages=asked).model_extra["pgcite"]
    assert all(s["source"] == "w" for s in scoped["sources"] + scoped["dropped"])
    everywhere = client.chat.completions.create(model="pgcite", messages=asked).model_extra["pgcite"]
    assert everywhere["sources"][0]["source"] == "g" and "3 hours" in everywhere["answer"]
    with pytest.raises(openai.NotFoundError, match="no model"):
        client.chat.completions.create(model="gpt-4o", messages=asked)
    with pytest.raises(openai.NotFoundError, match="no source named"):
        client.chat.completions.create(model="pgcite:nope", messages=asked)


def test_chat_follow_up_is_asked_with_the_question_before_it(base: str):
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
    turns = [{"role": "user", "content": "What do widgets need to be installed?"},
             {"role": "assistant", "content": "Widgets need Python 3.11 and 2 GB of disk. [1]"},
             {"role": "user", "content": "and which command?"}]
    answer = client.chat.completions.create(model="pgcite:w", messages=turns).model_extra["pgcite"]
    assert answer["question"] == "What do widgets need to be installed? and which command?"
    assert any(s["path"] == "install.md" for s in answer["sources"])


def test_chat_rejects_a_conversation_that_does_not_end_with_the_user(base: str):
    ends_with_assistant = call(base, "/v1/chat/completions", {"model": "pgcite", "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})
    assert ends_with_assistant.status == 400 and "last message" in ends_with_assistant.body["error"]["message"]
    empty = call(base, "/v1/chat/completions", {"model": "pgcite", "messages": []})
    assert empty.status == 422 and empty.body["error"]["type"] == "invalid_request"


def test_temperature_and_max_tokens_are_passed_to_the_chat_model(core: Pgcite, embedder):
    with FakeOpenAI() as fake, Pgcite(core.settings, embedder=embedder,
                                      generator=ChatGenerator(fake.chat_settings())) as chatty, running(chatty) as url:
        fake.script("The default is 40 turns per second [1].")
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused")
        completion = client.chat.completions.create(
            model="pgcite:w", temperature=0.7, max_tokens=123,
            messages=[{"role": "user", "content": "What is the default spin rate?"}])
        assert completion.choices[0].message.content.startswith("The default is 40 turns per second [1].")
        assert fake.last_chat["temperature"] == 0.7 and fake.last_chat["max_tokens"] == 123


def test_a_chat_ui_is_told_which_links_to_check(core: Pgcite, embedder):
    """A chat UI shows none of pgcite's checks and makes every URL a link: the content itself says
    which links lead off the docs' own site, as code, streamed or not."""
    relayed = "The default is 40 turns per second [1]; see https://evil.example/spin for more."
    with FakeOpenAI() as fake, Pgcite(core.settings, embedder=embedder,
                                      generator=ChatGenerator(fake.chat_settings())) as chatty, running(chatty) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused")
        asked = {"model": "pgcite:w", "messages": [{"role": "user", "content": "What is the default spin rate?"}]}
        fake.script(relayed)
        whole = client.chat.completions.create(**asked)
        fake.script(Reply(relayed, split=5))
        streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(**asked, stream=True)
                           if c.choices)
    content = whole.choices[0].message.content
    assert content.endswith("\n\nCheck before you follow: `https://evil.example/spin` (not on the docs' own site)")
    assert streamed == content
    assert whole.model_extra["pgcite"]["checks"]["foreign_links"] == ["https://evil.example/spin"]


def test_a_client_that_hangs_up_mid_stream_stops_the_generation(core: Pgcite, embedder):
    long_answer = "The default is 40 turns per second [1]. " * 20
    with FakeOpenAI() as fake, Pgcite(core.settings, embedder=embedder,
                                      generator=ChatGenerator(fake.chat_settings())) as chatty, running(chatty) as url:
        fake.script(Reply(long_answer, split=8, pause=0.2))  # about 20 s if read to the end
        request = urllib.request.Request(url + "/v1/ask", data=json.dumps(
            {"question": "What is the default spin rate?", "source": "w", "stream": True}).encode(),
            headers={"Content-Type": "application/json"})
        response = urllib.request.urlopen(request, timeout=30)
        for raw in response:
            if raw.startswith(b"event: delta"):
                break
        response.close()  # hang up after the first piece of text
        deadline = time.monotonic() + 10
        while not fake.outcomes and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fake.outcomes == ["aborted"]


def test_a_database_that_goes_away_gets_503_json(admin_dsn: str, embedder, tmp_path: Path):
    name = _fresh_database(admin_dsn)
    settings = Settings(home=tmp_path / "home", database_url=make_conninfo(admin_dsn, dbname=name))
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(write_folder(tmp_path / "widgets", DOCS), source="w")
        app.warm_up()
        with running(app) as url:
            assert call(url, "/v1/search?q=spin+rate").status == 200
            _drop_database(admin_dsn, name)  # WITH (FORCE): the pool's connections are cut
            for path in ("/v1/search?q=spin+rate", "/readyz"):
                reply = call(url, path)
                assert reply.status == 503, reply.text
                assert reply.body["error"]["type"] == "unavailable" and "\n" not in reply.body["error"]["message"]


def test_a_chat_model_failing_mid_answer_ends_the_stream_with_an_error(core: Pgcite, embedder):
    with FakeOpenAI() as fake, Pgcite(core.settings, embedder=embedder,
                                      generator=ChatGenerator(fake.chat_settings())) as chatty, running(chatty) as url:
        fake.script(Reply("The default is 40 turns per second [1].", split=4, error_after=2),
                    Reply("The default is 40 turns per second [1].", split=4, error_after=2))
        question = {"question": "What is the default spin rate?", "source": "w", "stream": True}
        _, stream = events(url, "/v1/ask", question)
        assert [n for n, _ in stream][0] == "sources" and stream[-1][0] == "error"
        assert "failed mid-answer" in stream[-1][1]["error"]["message"] and "done" not in [n for n, _ in stream]

        client = openai.OpenAI(base_url=url + "/v1", api_key="unused")
        with pytest.raises(openai.APIError, match="failed mid-answer"):
            list(client.chat.completions.create(model="pgcite:w", stream=True,
                                                messages=[{"role": "user", "content": "What is the default spin rate?"}]))
