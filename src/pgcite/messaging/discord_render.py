"""Discord's text both ways. In: a message's content read back to the question (mentions, channels and
emoji undone). Out: an answer as one message of at most 2,000 characters, each [n] a masked link
`[[n]](url)` to its section's page and anchor, the sources listed, and Helpful / Not helpful buttons.
Text from the documents is data: Discord's markdown characters are escaped with a backslash (no
heading, link, spoiler or mention of a document's own), and every message sets
`allowed_mentions: {"parse": []}`, so nothing pgcite writes can ping anyone.

A finished answer longer than Discord's limit is trimmed, the Sources kept: the answer's text is cut
between words (never inside a link) and ends with a note saying so; the full answer stays in the log."""

from __future__ import annotations

import re
from urllib.parse import quote

from pgcite.answer.flow import Answer
from pgcite.messaging import citations

LIMIT = 2000  # characters of a message's content
THINKING = "*Looking in the docs…*"
CUT = "… *(trimmed to fit Discord's 2,000 characters; `pgcite log` has the whole answer)*"
HELPFUL, NOT_HELPFUL = "up", "down"
BUTTON, MODAL, COMMENT = "pgcite", "pgcite_comment", "comment"
COMMENT_CHARS = 2000
EPHEMERAL, SUPPRESS_EMBEDS = 64, 4  # message flags
QUESTION_SHOWN = 300  # characters of the question quoted above its answer
LABEL_CHARS = 100  # of a source's breadcrumb
SOURCES_ROOM = 1200  # the most the Sources list may take; past it, the last sources are counted, not listed

_SPECIAL = re.compile(r"([\\*_~`|>#\-\[\]()<@:])")
_ESCAPED = re.compile(r"\\([^0-9A-Za-z\s])")
_MENTION = re.compile(r"<(?:@[!&]?|#)\d+>|<t:-?\d+(?::\w)?>|</[\w -]+:\d+>")
_EMOJI = re.compile(r"<a?:(\w+):\d+>")
NO_MENTIONS: dict[str, list[str]] = {"parse": []}


def escape(text: str) -> str:
    """Text shown as it is: every markdown and mention character escaped."""
    return _SPECIAL.sub(r"\\\1", text)


def question_of(content: str) -> str:
    """A message's content as a question: mentions dropped, custom emoji their name, escapes undone."""
    text = _EMOJI.sub(r":\1:", _MENTION.sub("", content))
    return " ".join(_ESCAPED.sub(r"\1", text).split())


def _url(url: str) -> str:
    """A URL as a masked link's target: nothing in it can end the link or start markup."""
    return quote(url, safe="/:?#&=%+,;~!$*@'")


def _link(url: str, label: str) -> str:
    """`[label](url)` for a web address; anything else is the label alone."""
    return f"[{label}]({_url(url)})" if citations.web(url) else label


def _cut(text: str, room: int) -> str:
    """Escaped text cut to `room` characters between words, never after a lone escaping backslash."""
    if len(text) <= room:
        return text
    at = text.rfind(" ", 0, room)
    cut = text[: at if at > room // 2 else room]
    return cut[:-1] if (len(cut) - len(cut.rstrip("\\"))) % 2 else cut


def message(content: str, components: list | None = None) -> dict:
    return {
        "content": content[:LIMIT],
        "components": components or [],
        "allowed_mentions": NO_MENTIONS,
        "flags": SUPPRESS_EMBEDS,
    }


def _asked(question: str) -> str:
    shown = _cut(escape(" ".join(question.split())), QUESTION_SHOWN)
    return f"\\> {shown}{' …' if len(shown) < len(escape(question)) else ''}\n"


def growing(question: str, text: str) -> dict:
    """The message while the answer is still being written."""
    head = _asked(question)
    return message(head + _cut(escape(text), LIMIT - len(head) - 2) + " …")


def note(text: str, *, ephemeral: bool = False) -> dict:
    """A message of pgcite's own (an error, a refusal to take a question); ephemeral: only its asker sees it."""
    body = message(_cut(escape(text), LIMIT))
    if ephemeral:
        body["flags"] = EPHEMERAL
    return body


def _sources(answer: Answer) -> str:
    cited = citations.cited_sources(answer)
    lines: list[str] = []
    for marks, hit in cited:
        line = f"{marks} {_link(hit.url, _cut(escape(citations.label(hit)), LABEL_CHARS))}"
        if sum(len(x) + 1 for x in lines) + len(line) > SOURCES_ROOM:
            lines.append(f"and {len(cited) - len(lines)} more")
            break
        lines.append(line)
    return "\n\n**Sources**\n" + "\n".join(lines) if lines else ""


def answer_message(answer: Answer, question: str) -> dict:
    """The finished answer, within Discord's limit: its text cut if need be, its Sources kept."""
    tail = _sources(answer)
    if links := citations.untrusted_links(answer):
        shown = ", ".join(f"`{x.replace('`', '')}`" for x in links)
        tail += f"\n\nCheck before you follow: {_cut(shown, 300)} (not on the docs' own site)"
    head = _asked(question)
    pieces = citations.cited_text(answer.text, answer, escape, _link)
    body = "".join(piece for piece, _ in pieces)
    if len(head) + len(body) + len(tail) > LIMIT:
        room, kept = LIMIT - len(head) - len(tail) - len(CUT), []
        for piece, whole in pieces:
            if len(piece) > room:
                if not whole:
                    kept.append(_cut(piece, room))
                break
            kept.append(piece)
            room -= len(piece)
        body = "".join(kept).rstrip() + CUT
    return message(head + body + tail, _buttons(answer.id) if answer.id else [])


def _buttons(answer_id: str) -> list[dict]:
    def button(rating: str, label: str, style: int) -> dict:
        return {"type": 2, "style": style, "label": label, "custom_id": f"{BUTTON}:{rating}:{answer_id}"}

    return [{"type": 1, "components": [button(HELPFUL, "Helpful", 3), button(NOT_HELPFUL, "Not helpful", 4)]}]


def comment_modal(answer_id: str, rating: str) -> dict:
    """The modal after a click: the rating is recorded; a comment may follow."""
    word = "helpful" if rating == HELPFUL else "not helpful"
    return {
        "custom_id": f"{MODAL}:{rating}:{answer_id}",
        "title": f"Thanks: recorded as {word}",
        "components": [
            {
                "type": 1,
                "components": [
                    {
                        "type": 4,  # a text input
                        "custom_id": COMMENT,
                        "style": 2,  # paragraph
                        "label": "Anything to add? (optional)",
                        "placeholder": "It helps the docs team",
                        "required": False,
                        "max_length": COMMENT_CHARS,
                    }
                ],
            }
        ],
    }
