"""OpenAI-compatible grounded chat: `GET /v1/models` and `POST /v1/chat/completions`.

Any OpenAI client or chat UI pointed at pgcite gets answers from the docs only, each `[n]` marker
an `annotations` entry of type `url_citation` (the OpenAI API's own shape), and the full answer
object under a top-level `pgcite` key."""

from __future__ import annotations

import itertools
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import Depends, FastAPI
from pydantic import BaseModel, ConfigDict, Field

from pgcite import shapes
from pgcite.access import Caller
from pgcite.answer.flow import Answer
from pgcite.answer.generation import ChatGenerator
from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.learn.log import Origin
from pgcite.safety import check_text
from pgcite.server.streams import event_stream, guarded
from pgcite.vocabulary import MAX_QUESTION_CHARS, Delta, SearchFilter

MODEL = "pgcite"
MAX_MESSAGES = 100
_MARKER = re.compile(r"\[([1-9]\d*)\]")
# A follow-up leans on the turn before it ("and on the Team plan?"): asked alone it retrieves
# the wrong sections, so it is asked together with the previous question.
FOLLOW_UP_WORDS = 6
_FOLLOW_UP_START = re.compile(r"^\s*(and|or|but|also|what about|how about|and what about|same for|then)\b", re.I)


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # OpenAI clients send fields pgcite has no use for

    model: str
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    # pgcite's own: leave the Sources list out of the message content; a language to answer in
    # (as `@LANG` on the model name).
    pgcite_sources_in_content: bool = True
    pgcite_language: str | None = Field(default=None, max_length=35)


def _text(message: Message) -> str:
    if isinstance(message.content, str):
        return message.content
    parts = message.content or []
    return " ".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


def is_follow_up(text: str) -> bool:
    return len(text.split()) < FOLLOW_UP_WORDS or bool(_FOLLOW_UP_START.match(text))


def question_of(messages: list[Message]) -> str:
    """What to retrieve for and answer: the last user message, joined to the previous user
    message when it reads as a follow-up."""
    users = [_text(m).strip() for m in messages if m.role == "user"]
    if messages[-1].role != "user" or not users[-1]:
        raise PgciteError("the last message must be the user's, with text to answer")
    last = users[-1]
    earlier = [u for u in users[:-1] if u]
    asked = [earlier[-1], last] if earlier and is_follow_up(last) else [last]
    for text in asked:  # what is searched, answered and logged: the same limits as /v1/ask
        if len(text) > MAX_QUESTION_CHARS:
            raise PgciteError(f"a question is at most {MAX_QUESTION_CHARS} characters (a user message has {len(text)})")
        try:
            check_text(text)
        except ValueError as exc:
            raise PgciteError(f"a user message: {exc}") from None
    return " ".join(asked)


def scope_of(model: str, core: Pgcite, caller: Caller) -> tuple[str | None, str | None]:
    """(source, language) of a model: `pgcite` reads every source the caller may, `pgcite:NAME`
    only NAME; `@LANG` after either reads pages in that language."""
    model, at, language = model.partition("@")
    if at and not language:
        raise PgciteError(f"the model {model + at!r} names no language after '@' (e.g. {model}@fr)")
    if model == MODEL:
        return None, language or None
    prefix, _, name = model.partition(":")
    if prefix != MODEL or not name:
        raise PgciteError(
            f"no model {model!r}; GET /v1/models lists them ({MODEL} or {MODEL}:SOURCE, with @LANG to choose a "
            "language)",
            kind="not_found",
        )
    core.require_source(name, caller.sources)
    return name, language or None


def content_and_annotations(text: str, answer: Answer, with_sources: bool) -> tuple[str, list[dict]]:
    """The message content (the answer, then the cited sources unless left out, then a warning
    for each link off the docs' own sites) and one url_citation per [n] marker in the answer,
    indexed into that content. A chat UI shows pgcite's checks nowhere else."""
    by_number = {p.number: p.hit for p in answer.sources}
    annotations = []
    for m in _MARKER.finditer(text):
        hit = by_number.get(int(m.group(1)))
        if hit is not None:
            annotations.append(
                {
                    "type": "url_citation",
                    "url_citation": {
                        "start_index": m.start(),
                        "end_index": m.end(),
                        "url": hit.url or f"{hit.source}:{hit.path}",
                        "title": hit.breadcrumb or hit.title,
                    },
                }
            )
    content = text
    if with_sources and not answer.refused and answer.citations:
        lines = [
            f"[{n}] {by_number[n].breadcrumb} {by_number[n].url or by_number[n].path}".rstrip()
            for n in answer.citations
            if n in by_number
        ]
        content += "\n\nSources:\n" + "\n".join(lines)
    checks = answer.checks
    if links := [*checks.foreign_links, *checks.offsite_links]:
        # As code, so that the UI does not make it a link after all.
        content += (
            "\n\nCheck before you follow: " + ", ".join(f"`{x}`" for x in links) + (" (not on the docs' own site)")
        )
    return content, annotations


def _usage(answer: Answer) -> dict:
    prompt, completion = answer.usage.prompt_tokens or 0, answer.usage.completion_tokens or 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def add_chat_routes(app: FastAPI, core: Pgcite, read_access: Callable[..., Caller]) -> None:
    @app.get("/v1/models")
    def models(caller: Caller = Depends(read_access)) -> dict:
        sources = core.sources(caller.sources)
        ids = [MODEL, *(f"{MODEL}:{s.name}" for s in sources)]
        ids += [f"{MODEL}:{s.name}@{lang}" for s in sources if len(s.languages) > 1 for lang in s.languages]
        return {
            "object": "list",
            "data": [{"id": i, "object": "model", "created": 0, "owned_by": "pgcite"} for i in ids],
        }

    @app.post("/v1/chat/completions")
    def chat_completions(body: ChatRequest, caller: Caller = Depends(read_access)):
        source, language = scope_of(body.model, core, caller)
        question = question_of(body.messages)
        generator = core.generator
        max_tokens = body.max_completion_tokens or body.max_tokens
        if isinstance(generator, ChatGenerator) and (body.temperature is not None or max_tokens is not None):
            generator = generator.configured(temperature=body.temperature, max_tokens=max_tokens)
        events = core.ask_stream(
            question,
            generator=generator,
            filters=SearchFilter(
                source=source,
                language=language or body.pgcite_language,
                exclude_flagged=True,
                allowed_sources=caller.sources,
            ),
            origin=Origin("chat", caller.name),
        )
        ident, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        head = {"id": ident, "created": created, "model": body.model}
        if not body.stream:
            *_, answer = events
            assert isinstance(answer, Answer)
            content, annotations = content_and_annotations(answer.text, answer, body.pgcite_sources_in_content)
            return {
                **head,
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "logprobs": None,
                        "message": {
                            "role": "assistant",
                            "content": content,
                            "refusal": None,
                            "annotations": annotations,
                        },
                    }
                ],
                "usage": _usage(answer),
                "pgcite": shapes.answer(answer),
            }
        first = next(events)  # errors before the stream starts keep their status
        include_usage = bool(body.stream_options and body.stream_options.include_usage)

        def data(value: dict) -> str:
            return f"data: {json.dumps(value, ensure_ascii=False)}\n\n"

        def frame(delta: dict, finish: str | None = None, **extra) -> str:
            return data(
                {
                    **head,
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
                    **extra,
                }
            )

        def frames() -> Iterator[str]:
            streamed: list[str] = []
            yield frame({"role": "assistant", "content": ""})
            answer = None
            for event in itertools.chain([first], events):
                if isinstance(event, Delta):
                    streamed.append(event.text)
                    yield frame({"content": event.text})
                elif isinstance(event, Answer):
                    answer = event
            assert answer is not None
            text = "".join(streamed)
            content, annotations = content_and_annotations(text, answer, body.pgcite_sources_in_content)
            if len(content) > len(text):
                yield frame({"content": content[len(text) :]})
            yield frame({"annotations": annotations}, pgcite=shapes.answer(answer))
            yield frame({}, "stop")
            if include_usage:
                yield data({**head, "object": "chat.completion.chunk", "choices": [], "usage": _usage(answer)})

        return event_stream(guarded(frames(), events, data, last="data: [DONE]\n\n"))
