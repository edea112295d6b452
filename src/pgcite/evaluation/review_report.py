"""A review as people read it: Markdown fit for a pull-request comment (the counts first, then each
changed answer with its citations before and after as links), and the `--json` object."""

from __future__ import annotations

import dataclasses

from pgcite.evaluation.review import KINDS, LINK_KINDS, Change, Cited, Review, Side

__all__ = ["to_json", "to_markdown"]

_EXCERPT = 300  # characters of an answer shown in the report


def to_json(review: Review) -> dict:
    return {
        "base": review.base,
        "head": review.head,
        "questions": review.questions,
        "changed": len(review.changes),
        "counts": review.counts,
        "changes": [dataclasses.asdict(change) for change in review.changes],
        "broken_links": [dataclasses.asdict(b) for b in review.broken_links],
        "lost_urls": [{"url": url, "why": why} for url, why in review.lost_urls],
    }


def _cell(text: str) -> str:
    """Text from a document or an answer as Markdown text: one line, no markup of its own."""
    flat = " ".join(text.split())
    return "".join(f"\\{ch}" if ch in "\\`*_[]<|#" else ch for ch in flat)


def _link(cited: Cited) -> str:
    name = _cell(cited.heading or cited.path)
    return (
        f"[{name}]({cited.url})" if cited.url.startswith(("http://", "https://")) else f"{name} ({_cell(cited.path)})"
    )


def _side(label: str, side: Side) -> str:
    if side.refused:
        return f"  - {label}: refused (Not in the documents.)"
    text = _cell(side.text)
    excerpt = text[:_EXCERPT] + ("…" if len(text) > _EXCERPT else "")
    cited = ", ".join(_link(c) for c in side.cited) or "no citation"
    return f"  - {label}: {excerpt}\n    cites {cited}"


def _change(change: Change) -> str:
    lines = [f"- **{_cell(change.question)}** ({', '.join(change.kinds)})", _side("before", change.base)]
    lines.append(_side("after", change.head))
    new = sorted(set(change.head.warnings) - set(change.base.warnings))
    lines += [f"  - new warning: {_cell(w)}" for w in new]
    return "\n".join(lines)


def _links(review: Review) -> list[str]:
    """The links the change breaks, and the logged citations that lead nowhere now."""
    parts = []
    if review.broken_links:
        parts += ["", f"### {len(review.broken_links)} links between pages broken by the change", ""]
        parts += [
            f"- {_cell(b.heading or b.path)} ({_cell(b.path)}): `{b.target}`: {_cell(b.why)}"
            for b in review.broken_links
        ]
    if review.lost_urls:
        parts += ["", f"### {len(review.lost_urls)} {LINK_KINDS['lost-url']}", ""]
        parts += [f"- <{url}>: {_cell(why)}" for url, why in review.lost_urls]
    return parts


def to_markdown(review: Review) -> str:
    counts = review.counts
    title = f"## pgcite review: {_cell(review.base)} → {_cell(review.head)}"
    if review.changes:
        summary = ", ".join(f"{counts[kind]} {meaning}" for kind, meaning in KINDS.items() if counts[kind])
        line = f"{review.questions} questions asked of both versions; {len(review.changes)} answers changed: {summary}."
    else:
        line = f"{review.questions} questions asked of both versions: no answer changed."
    links = ", ".join(f"{counts[kind]} {meaning}" for kind, meaning in LINK_KINDS.items() if counts[kind])
    parts = [title, "", line + (f" Links: {links}." if links else "")]
    for kind, meaning in KINDS.items():
        changes = [c for c in review.changes if c.kinds and c.kinds[0] == kind]
        if changes:
            parts += ["", f"### {len(changes)} {meaning}", "", *(_change(c) for c in changes)]
    return "\n".join(parts + _links(review)) + "\n"
