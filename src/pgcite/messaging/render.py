"""Slack's text both ways. In: a message's mrkdwn read back to the question (mentions, links and
entities undone). Out: an answer as Block Kit, each [n] a link to its section's page and anchor, the
sources listed, and Helpful / Not helpful buttons. Text from the documents is data: `&`, `<` and `>`
are escaped, so no document can make a link, a mention or an @channel of its own."""

from __future__ import annotations

import json
import re

from pgcite.answer.flow import Answer
from pgcite.messaging import citations

HELPFUL, NOT_HELPFUL = "pgcite_helpful", "pgcite_not_helpful"
RATINGS = {HELPFUL: "up", NOT_HELPFUL: "down"}
FEEDBACK_VIEW = "pgcite_feedback"
COMMENT = "comment"
THINKING = "_Looking in the docs…_"
SECTION_CHARS = 2900  # a section block's text holds 3000 characters
MAX_SECTIONS = 40  # a message holds 50 blocks
COMMENT_CHARS = 2000

_ENTITY = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")


def escape(text: str) -> str:
    """Text shown as it is: Slack's three control characters escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def mentions(text: str, user: str) -> bool:
    return f"<@{user}>" in text


def question_of(text: str) -> str:
    """A message's text as a question: mentions dropped, `<url|label>` its label, entities undone."""

    def plain(m: re.Match) -> str:
        target, label = m.group(1), m.group(2)
        if target.startswith("@"):
            return ""
        if target.startswith("#"):
            return f"#{label}" if label else ""
        if target.startswith("!"):  # <!here>, <!date^...|label>
            return label or ""
        return label or target

    return " ".join(_unescape(_ENTITY.sub(plain, text)).split())


def _link(url: str, label: str) -> str:
    """`<url|label>` for a web address; anything else is the label alone."""
    if not citations.web(url):
        return label
    return f"<{escape(url).replace('|', '%7C')}|{label}>"


def _pieces(text: str) -> list[str]:
    """Text cut at line ends (else spaces) into pieces a section block holds."""
    pieces: list[str] = []
    for line in text.split("\n"):
        while len(line) > SECTION_CHARS:
            cut = line.rfind(" ", 0, SECTION_CHARS)
            cut = cut if cut > 0 else SECTION_CHARS
            pieces.append(line[:cut])
            line = line[cut:].lstrip()
        if pieces and len(pieces[-1]) + 1 + len(line) <= SECTION_CHARS:
            pieces[-1] += "\n" + line
        else:
            pieces.append(line)
    return [p for p in pieces if p.strip()] or [" "]


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def growing(text: str) -> tuple[str, list[dict]]:
    """The reply while the answer is still being written."""
    shown = escape(text)[: SECTION_CHARS * 3] + " …"
    return shown, [_section(p) for p in _pieces(shown)]


def note(text: str) -> tuple[str, list[dict]]:
    """A one-line message of pgcite's own (an error, a refusal to take a question)."""
    return escape(text), [_section(escape(text))]


def answer_message(answer: Answer) -> tuple[str, list[dict]]:
    """The finished answer: (fallback text, blocks)."""
    parts = ["".join(piece for piece, _ in citations.cited_text(answer.text, answer, escape, _link))]
    if cited := citations.cited_sources(answer):
        lines = [f"{marks} {_link(hit.url, escape(citations.label(hit)))}" for marks, hit in cited]
        parts.append("*Sources*\n" + "\n".join(lines))
    if links := citations.untrusted_links(answer):
        shown = ", ".join(f"`{escape(x).replace('`', '')}`" for x in links)
        parts.append(f"Check before you follow: {shown} (not on the docs' own site)")
    blocks = [_section(p) for part in parts for p in _pieces(part)][:MAX_SECTIONS]
    if answer.id:
        blocks.append(
            {
                "type": "actions",
                "block_id": "pgcite_feedback",
                "elements": [
                    _button(HELPFUL, "Helpful", answer.id),
                    _button(NOT_HELPFUL, "Not helpful", answer.id),
                ],
            }
        )
    return escape(answer.text)[:SECTION_CHARS], blocks


def _button(action: str, label: str, answer_id: str) -> dict:
    return {"type": "button", "action_id": action, "text": {"type": "plain_text", "text": label}, "value": answer_id}


def feedback_view(answer_id: str, rating: str, team: str, channel: str) -> dict:
    """The modal after a click: the rating is recorded; a comment may follow."""
    word = "helpful" if rating == "up" else "not helpful"
    return {
        "type": "modal",
        "callback_id": FEEDBACK_VIEW,
        "private_metadata": json.dumps({"answer": answer_id, "rating": rating, "team": team, "channel": channel}),
        "title": {"type": "plain_text", "text": "Thanks"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Done"},
        "blocks": [
            _section(f"Recorded as *{word}*. Anything to add? It helps the docs team (optional)."),
            {
                "type": "input",
                "block_id": COMMENT,
                "optional": True,
                "label": {"type": "plain_text", "text": "Comment"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": COMMENT,
                    "multiline": True,
                    "max_length": COMMENT_CHARS,
                },
            },
        ],
    }
