"""A review as people read it: Markdown fit for a pull-request comment (the counts first, then each
changed answer with its citations before and after as links), and the `--json` object."""

from __future__ import annotations

import dataclasses

from pgcite.evaluation.review import KINDS, Change, Cited, Review, Side

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


def to_markdown(review: Review) -> str:
    counts = review.counts
    title = f"## pgcite review: {_cell(review.base)} → {_cell(review.head)}"
    if not review.changes:
        return f"{title}\n\n{review.questions} questions asked of both versions: no answer changed.\n"
    summary = ", ".join(f"{counts[kind]} {meaning}" for kind, meaning in KINDS.items() if counts[kind])
    parts = [
        title,
        "",
        f"{review.questions} questions asked of both versions; {len(review.changes)} answers changed: {summary}.",
    ]
    for kind, meaning in KINDS.items():
        changes = [c for c in review.changes if c.kinds and c.kinds[0] == kind]
        if changes:
            parts += ["", f"### {len(changes)} {meaning}", "", *(_change(c) for c in changes)]
    return "\n".join(parts) + "\n"
