"""`pgcite eval`'s arithmetic, a pure function kept apart from the database and the models so it
can be checked by hand: which retrieved sections answer a question, the metrics over a question
set (`evaluate`, `Report`), and the bars of --fail-under.

Retrieval is judged over distinct sections, (path, heading) pairs: the search fetches several
chunks per wanted section and keeps the first k distinct sections, so three chunks of one long
section count once. A retrieved section answers a question when its path is a gold path and the
gold heading is its heading, or the last element(s) of its heading trail ("Title > H2 > H3";
the intro section's trail ends with the page title). A gold without a heading accepts any
section of that page. Headings are compared ignoring case, whitespace, backticks and HTML tags
(the stored heading of "## `Max` <Badge .../>" is "Max"). A question with a chunk_fact and no gold
is answered by a section when one of its chunks among the top ones contains the fact (whitespace
collapsed, ignoring case); fact@3 asks the same of every question with a chunk_fact, which
judges fixed windows fairly: a window is labelled with the section it starts in."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pgcite.evaluation.questions import EvalError, Gold, Question

# Metric names, in the order they are shown. Rates are in [0, 1]; top3_tokens is a cost.
RETRIEVAL_METRICS = ("hit@1", "hit@3", "mrr", "recall", "fact@3", "top3_tokens")
ANSWER_METRICS = (
    "answer_has_fact",
    "cites_fact",
    "citations_valid",
    "refusal_correct",
    "forbidden_absent",
    "refused_unanswerable",
    "answered_answerable",
    "fed_gold",
)
METRICS = RETRIEVAL_METRICS + ANSWER_METRICS
# Other spellings accepted by --fail-under.
_ALIASES = {"hit1": "hit@1", "hit3": "hit@3", "mrr@k": "mrr", "recall@k": "recall", "fact3": "fact@3"}


# --------------------------------------------------------------------------------------------
# Matching


def collapse(text: str) -> str:
    """Whitespace collapsed to single spaces, case folded: how facts and headings are compared."""
    return " ".join(text.split()).casefold()


def contains_fact(text: str, fact: str) -> bool:
    return collapse(fact) in collapse(text)


@dataclass(frozen=True)
class RankedSection:
    """One distinct retrieved section, as ranked."""

    path: str
    heading: str  # innermost heading, "" for the intro
    trail: tuple[str, ...]  # page title, then the headings in force, outermost first
    texts: tuple[str, ...] = ()  # its chunks among the top ones, best first

    @property
    def label(self) -> str:
        return f"{self.path} > {self.heading}" if self.heading else self.path


_MARKUP = re.compile(r"<[^>]*>|`")


def heading_key(heading: str) -> str:
    """A heading as compared: HTML tags (`<Badge .../>`) and backticks removed, whitespace
    collapsed, case folded; so a gold heading may be copied from the Markdown as written."""
    return collapse(_MARKUP.sub("", heading))


def matches(gold: Gold, section: RankedSection) -> bool:
    """Same path, and the gold heading is the section's heading or names the end of its trail
    ("Install" or "Guide > Install"); no gold heading means any section of the page."""
    if gold.path != section.path:
        return False
    if gold.heading is None:
        return True
    if heading_key(gold.heading) == heading_key(section.heading):
        return True
    parts = tuple(heading_key(p) for p in gold.heading.split(" > "))
    trail = tuple(heading_key(t) for t in section.trail)
    return 0 < len(parts) <= len(trail) and trail[-len(parts) :] == parts


def trail_of(breadcrumb: str, title: str, heading: str) -> tuple[str, ...]:
    if breadcrumb.strip():
        return tuple(part.strip() for part in breadcrumb.split(" > "))
    return tuple(p for p in (title, heading) if p)


def distinct_sections(hits: Sequence[Any], count: int) -> list[RankedSection]:
    """The first `count` distinct (path, heading) sections of ranked chunks, each with the texts
    of its chunks that rank before the next section beyond `count` would start."""
    order: list[tuple[str, str]] = []
    texts: dict[tuple[str, str], list[str]] = {}
    first: dict[tuple[str, str], Any] = {}
    for hit in hits:
        key = (hit.path, hit.heading)
        if key not in texts:
            if len(order) == count:
                break
            order.append(key)
            texts[key] = []
            first[key] = hit
        texts[key].append(hit.content)
    return [
        RankedSection(
            path,
            heading,
            trail_of(first[(path, heading)].breadcrumb, first[(path, heading)].title, heading),
            tuple(texts[(path, heading)]),
        )
        for path, heading in order
    ]


# --------------------------------------------------------------------------------------------
# Metrics: a pure function of the questions, what was retrieved and what was answered


@dataclass(frozen=True)
class Retrieval:
    sections: tuple[RankedSection, ...]  # distinct sections, best first: max(k, 3) at most
    top3_tokens: int = 0  # tokens of the three best chunks, breadcrumb included


@dataclass(frozen=True)
class AnswerRecord:
    text: str
    refused: bool
    citations: tuple[int, ...] = ()
    cited_texts: tuple[str, ...] = ()  # content of each cited source
    invalid_citations: tuple[int, ...] = ()
    fed: tuple[RankedSection, ...] = ()  # the sections the generator was given
    note: str = ""  # why no generator was called, when it was not (answer.Answer.note)


@dataclass(frozen=True)
class Metric:
    value: float | None  # None when no question counts for it
    count: int  # questions that count for it
    failing: tuple[str, ...] = ()  # ids of the questions that missed it


@dataclass
class Report:
    k: int
    metrics: dict[str, Metric]
    rows: list[dict]
    info: dict = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict:
        return rounded(
            {
                **self.info,
                "k": self.k,
                "metrics": {
                    name: {"value": m.value, "count": m.count, "failing": list(m.failing)}
                    for name, m in self.metrics.items()
                },
                "rows": self.rows,
            }
        )

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True)

    def totals_only(self) -> Report:
        """The metrics without which questions missed them: what may be seen of a sealed set while tuning."""
        return Report(self.k, {name: Metric(m.value, m.count) for name, m in self.metrics.items()}, [], self.info)


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v) for v in value]
    return value


def _relevant(question: Question, section: RankedSection) -> bool:
    if question.gold:
        return any(matches(g, section) for g in question.gold)
    return question.chunk_fact is not None and any(contains_fact(t, question.chunk_fact) for t in section.texts)


def _rate(scores: Mapping[str, float]) -> Metric:
    """Mean of per-question scores in [0, 1]; failing: the questions below 1."""
    if not scores:
        return Metric(None, 0)
    return Metric(sum(scores.values()) / len(scores), len(scores), tuple(q for q, s in scores.items() if s < 1))


def _matches_regex(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


def evaluate(
    questions: Sequence[Question],
    retrievals: Mapping[str, Retrieval],
    answers: Mapping[str, AnswerRecord] | None = None,
    *,
    k: int = 3,
) -> Report:
    """Metrics over the questions (see the module docstring for what counts as found).

    Retrieval metrics count answerable questions with a gold or a chunk_fact:
    hit@1 / hit@3 (a right section first / in the top 3), mrr (1/rank of the first right section
    in the top k, 0 when none), recall (share of gold sections found in the top k; for a
    question with only a chunk_fact, 1 when found), fact@3 (chunk_fact in a chunk of the top 3
    sections, questions with a chunk_fact), top3_tokens (mean tokens of the three best chunks).

    Answer metrics, when `answers` is given: answer_has_fact (answer_fact matches the answer),
    cites_fact (a cited source contains chunk_fact or matches answer_fact), citations_valid (no
    citation named a missing source), refusal_correct (refused exactly when not answerable),
    forbidden_absent (the forbidden pattern does not match), refused_unanswerable (unanswerable
    questions refused), answered_answerable (answerable questions not refused), fed_gold (a right
    section among those the generator was given, questions judged on retrieval)."""
    if k < 1:
        raise EvalError(f"-k must be at least 1 (got {k})")
    scores: dict[str, dict[str, float]] = {name: {} for name in METRICS if name != "top3_tokens"}
    tokens: dict[str, int] = {}
    rows: list[dict] = []
    for q in questions:
        got = retrievals.get(q.id, Retrieval(()))
        top_k, top_3 = got.sections[:k], got.sections[:3]
        rank = next((i for i, s in enumerate(top_k, 1) if _relevant(q, s)), None)
        row: dict[str, Any] = {
            "id": q.id,
            "question": q.question,
            "answerable": q.answerable,
            "sections": [s.label for s in got.sections[: max(k, 3)]],
            "top3_tokens": got.top3_tokens,
            "rank": rank,
        }
        if q.judged_on_retrieval:
            scores["hit@1"][q.id] = float(bool(top_k[:1]) and _relevant(q, top_k[0]))
            scores["hit@3"][q.id] = float(any(_relevant(q, s) for s in top_3))
            scores["mrr"][q.id] = 1.0 / rank if rank else 0.0
            if q.gold:
                found = sum(1 for g in q.gold if any(matches(g, s) for s in top_k))
                scores["recall"][q.id] = found / len(q.gold)
                row["gold_found"] = found
            else:
                scores["recall"][q.id] = float(rank is not None)
            tokens[q.id] = got.top3_tokens
        if q.answerable and q.chunk_fact is not None:
            fact = any(contains_fact(t, q.chunk_fact) for s in top_3 for t in s.texts)
            scores["fact@3"][q.id] = float(fact)
            row["fact_found"] = fact
        if answers is not None and q.id in answers:
            a = answers[q.id]
            checks: dict[str, bool] = {
                "citations_valid": not a.invalid_citations,
                "refusal_correct": a.refused != q.answerable,
            }
            if q.answerable and q.answer_fact is not None:
                checks["answer_has_fact"] = not a.refused and _matches_regex(q.answer_fact, a.text)
            if q.answerable and (q.chunk_fact is not None or q.answer_fact is not None):
                checks["cites_fact"] = not a.refused and any(
                    (q.chunk_fact is not None and contains_fact(t, q.chunk_fact))
                    or (q.answer_fact is not None and _matches_regex(q.answer_fact, t))
                    for t in a.cited_texts
                )
            if q.forbidden is not None:
                checks["forbidden_absent"] = not _matches_regex(q.forbidden, a.text)
            checks["answered_answerable" if q.answerable else "refused_unanswerable"] = a.refused != q.answerable
            if q.judged_on_retrieval:
                checks["fed_gold"] = any(_relevant(q, s) for s in a.fed)
            for name, ok in checks.items():
                scores[name][q.id] = float(ok)
            row["answer"] = {
                "text": a.text,
                "refused": a.refused,
                "note": a.note,
                "citations": list(a.citations),
                "invalid_citations": list(a.invalid_citations),
                "checks": checks,
            }
        rows.append(row)
    metrics: dict[str, Metric] = {}
    for name in METRICS:
        if name in ANSWER_METRICS and answers is None:
            continue
        if name == "top3_tokens":
            metrics[name] = Metric(sum(tokens.values()) / len(tokens) if tokens else None, len(tokens))
        else:
            metrics[name] = _rate(scores[name])
    return Report(k, metrics, rows)


# --------------------------------------------------------------------------------------------
# Bars (--fail-under)


def metric_name(text: str) -> str:
    name = text.strip().lower()
    name = _ALIASES.get(name, name)
    if re.fullmatch(r"(mrr|recall)@\d+", name):
        name = name.split("@")[0]
    if name not in METRICS:
        raise EvalError(f"unknown metric {text!r}; known: {', '.join(METRICS)}")
    return name


def parse_bar(text: str) -> tuple[str, float]:
    """ "hit@3=0.9" -> ("hit@3", 0.9)."""
    name, sep, value = text.partition("=")
    if not sep:
        raise EvalError(f"{text!r} is not METRIC=VALUE (for example hit@3=0.9)")
    metric = metric_name(name)
    if metric == "top3_tokens":
        raise EvalError("top3_tokens is a cost, not a score: it has no lower bar")
    try:
        bar = float(value)
    except ValueError:
        raise EvalError(f"{text!r}: {value.strip()!r} is not a number") from None
    if not 0 <= bar <= 1:
        raise EvalError(f"{text!r}: a bar is a share between 0 and 1")
    return metric, bar


def failed_bars(report: Report, bars: Sequence[tuple[str, float]]) -> list[str]:
    """One line per bar the report does not reach."""
    lines = []
    for name, bar in bars:
        metric = report.metrics.get(name)
        if metric is None or metric.value is None:
            lines.append(f"{name}: no question counts for it, so it cannot reach {bar:g}")
        elif round(metric.value, 4) < bar:
            failing = f" (missed: {', '.join(metric.failing)})" if metric.failing else ""
            lines.append(f"{name} = {metric.value:.4f} is below the bar {bar:g}{failing}")
    return lines
