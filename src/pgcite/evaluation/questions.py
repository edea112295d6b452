"""The question set `pgcite eval` and the eval/ scripts measure against: the JSONL format, its
one-clear-error-per-bad-line parsing, and overlays of a later file onto an earlier one's questions.

A question set is one JSON object per line (fields: id, question, gold, chunk_fact,
answer_fact, answerable, forbidden, and answer, a reference answer kept for readers and not
scored; only question is required):

    {"id": "stop", "question": "How do I stop the server?",
     "gold": [{"path": "storage.md", "heading": "The embedded server's lifecycle"}],
     "chunk_fact": "pgcite stop", "answer_fact": "pgcite stop"}
    {"id": "cat", "question": "Am I a cat?", "answerable": false}

What counts as a gold or a chunk_fact being found is in `pgcite.evaluation.metrics`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pgcite.errors import PgciteError

_FIELDS = {"id", "question", "gold", "chunk_fact", "answer_fact", "answerable", "forbidden", "answer"}


class EvalError(PgciteError):
    """A question set that cannot be read, or an evaluation that cannot run."""


@dataclass(frozen=True)
class Gold:
    path: str
    heading: str | None = None  # None: any section of the page


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    gold: tuple[Gold, ...] = ()
    chunk_fact: str | None = None
    answer_fact: str | None = None  # a regular expression, matched ignoring case
    answerable: bool = True
    forbidden: str | None = None  # a regular expression, matched ignoring case
    line: int = 0

    @property
    def judged_on_retrieval(self) -> bool:
        return self.answerable and bool(self.gold or self.chunk_fact)


def _regex(value: object, field: str, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise EvalError(f"{where}: {field!r} must be a non-empty string (a regular expression)")
    try:
        re.compile(value)
    except re.error as exc:
        raise EvalError(f"{where}: {field!r} is not a valid regular expression ({exc})") from None
    return value


def _gold(value: object, where: str) -> tuple[Gold, ...]:
    if value is None:
        return ()
    shape = f'{where}: "gold" must be a list of {{"path": ..., "heading": ...}} objects'
    if not isinstance(value, list):
        raise EvalError(shape)
    golds = []
    for item in value:
        if not isinstance(item, dict) or set(item) - {"path", "heading"}:
            raise EvalError(shape)
        path, heading = item.get("path"), item.get("heading")
        if not isinstance(path, str) or not path or not (heading is None or isinstance(heading, str)):
            raise EvalError(shape + " (path a non-empty string, heading a string)")
        golds.append(Gold(path, heading))
    return tuple(golds)


def _row(line: str, where: str) -> dict:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise EvalError(
            f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); write one JSON object per line"
        ) from None
    if not isinstance(data, dict):
        raise EvalError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if unknown := sorted(set(data) - _FIELDS):
        raise EvalError(f"{where}: unknown field {unknown[0]!r}; known: {', '.join(sorted(_FIELDS))}")
    return data


def _question(data: dict, number: int, where: str) -> Question:
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise EvalError(f'{where}: "question" must be a non-empty string')
    ident = data.get("id", f"line{number}")
    if not isinstance(ident, (str, int)) or isinstance(ident, bool) or not str(ident).strip():
        raise EvalError(f'{where}: "id" must be a non-empty string')
    answerable = data.get("answerable", True)
    if not isinstance(answerable, bool):
        raise EvalError(f'{where}: "answerable" must be true or false')
    chunk_fact = data.get("chunk_fact")
    if chunk_fact is not None and (not isinstance(chunk_fact, str) or not chunk_fact.strip()):
        raise EvalError(f'{where}: "chunk_fact" must be a non-empty string')
    if not isinstance(data.get("answer", ""), str):
        raise EvalError(f'{where}: "answer" (the reference answer) must be a string')
    gold = _gold(data.get("gold"), where)
    answer_fact = _regex(data.get("answer_fact"), "answer_fact", where)
    if not answerable and (gold or chunk_fact or answer_fact):
        raise EvalError(f'{where}: a question with "answerable": false has no gold, chunk_fact or answer_fact')
    return Question(
        str(ident),
        question,
        gold,
        chunk_fact,
        answer_fact,
        answerable,
        _regex(data.get("forbidden"), "forbidden", where),
        number,
    )


def parse_questions(lines: Iterable[str], name: str = "questions") -> list[Question]:
    """Questions from JSONL text; blank lines are skipped. The first bad line raises EvalError
    naming its line number."""
    return parse_question_files([(name, lines)])


def parse_question_files(files: Sequence[tuple[str, Iterable[str]]]) -> list[Question]:
    """Questions from several JSONL texts, (name, lines) each. In a later file, a row without a
    "question" whose id an earlier file has overlays that question's fields: answer facts or
    forbidden patterns for a set that lives elsewhere (a corpus's own questions) are kept apart."""
    rows: dict[str, tuple[dict, Question, str]] = {}  # id: (fields, question, where it was read)
    for index, (name, lines) in enumerate(files):
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{name} line {number}"
            data = _row(line, where)
            ident = str(data.get("id", f"line{number}"))
            if index > 0 and "question" not in data:
                if ident not in rows:
                    raise EvalError(f"{where}: no question has id {ident!r}, so this row has nothing to add to")
                base, first, first_where = rows[ident]
                data = {**base, **data}
                rows[ident] = (data, _question(data, first.line, where), first_where)
                continue
            if ident in rows:
                raise EvalError(f"{where}: duplicate id {ident!r} (first on {rows[ident][2]})")
            rows[ident] = (data, _question(data, number, where), where)
    if not rows:
        names = ", ".join(name for name, _ in files)
        raise EvalError(f"{names}: no questions; write one JSON object per line")
    return [question for _, question, _ in rows.values()]


def load_questions(*paths: str | Path) -> list[Question]:
    """Questions from one or more JSONL files (see parse_question_files for overlays)."""
    files = []
    for path in map(Path, paths):
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise EvalError(f"no such question file: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise EvalError(f"cannot read {path}: {exc}") from None
        files.append((path.name, text.splitlines()))
    return parse_question_files(files)
