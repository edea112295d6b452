"""`pgcite eval`: measure retrieval (and, optionally, answers) against a set of questions with
known answers, so a change that makes things worse is seen, and chunking strategies can be
compared on the same questions.

Three layers, kept apart so the arithmetic can be checked by hand:
- `parse_questions` / `load_questions`: the JSONL question set, with one clear error per bad line;
- `evaluate`: a pure function from per-question ranked sections (and answer records) to metrics;
- `run_searches` / `run_answers` / `compare`: the parts that talk to the database and the models.

A question set is one JSON object per line (fields: id, question, gold, chunk_fact,
answer_fact, answerable, forbidden, and answer, a reference answer kept for readers and not
scored; only question is required):

    {"id": "stop", "question": "How do I stop the server?",
     "gold": [{"path": "storage.md", "heading": "The embedded server's lifecycle"}],
     "chunk_fact": "pgcite stop", "answer_fact": "pgcite stop"}
    {"id": "cat", "question": "Am I a cat?", "answerable": false}

Retrieval is judged over distinct sections, (path, heading) pairs: the search fetches several
chunks per wanted section and keeps the first k distinct sections, so three chunks of one long
section count once. A retrieved section answers a question when its path is a gold path and the
gold heading is its heading, or the last element(s) of its heading trail ("Title > H2 > H3";
the intro section's trail ends with the page title). A gold without a heading accepts any
section of that page. Headings are compared ignoring case, whitespace, backticks and HTML tags
(the stored heading of "## `Max` <Badge .../>" is "Max"). A question with a chunk_fact and no gold
is answered by a section when one of its chunks among the top ones contains the fact (whitespace
collapsed, ignoring case); fact@3 asks the same of every question with a chunk_fact, which
judges fixed windows fairly: a window is labelled with the section it starts in.

`--compare` runs the same searches over the corpus re-chunked with each strategy. The bundled
model reads 256 tokens (special tokens included), so 512-token windows are embedded from their
first 254 tokens only, although the whole window is stored and returned."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgcite.errors import PgciteError, first_line

if TYPE_CHECKING:
    from pgcite.core import Pgcite

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
# How many chunks a search fetches per distinct section wanted, and at most.
CHUNKS_PER_SECTION = 8
MAX_FETCH = 50

_FIELDS = {"id", "question", "gold", "chunk_fact", "answer_fact", "answerable", "forbidden", "answer"}


class EvalError(PgciteError):
    """A question set that cannot be read, or an evaluation that cannot run."""


# --------------------------------------------------------------------------------------------
# The question set


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
        return _rounded(
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


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
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


# --------------------------------------------------------------------------------------------
# Running searches and questions


Progress = Callable[[str], None]


def fetch_size(k: int) -> int:
    return min(max(k, 3) * CHUNKS_PER_SECTION, MAX_FETCH)


def _tokens(embedder, hit) -> int:
    return embedder.count_tokens(f"{hit.breadcrumb}\n{hit.content}" if hit.breadcrumb else hit.content)


def run_searches(
    questions: Sequence[Question],
    app: Pgcite,
    *,
    k: int,
    source: str | None = None,
    mode: str | None = None,
    progress: Progress | None = None,
    version: str | None = None,
) -> dict[str, Retrieval]:
    """Each question through `search`, as `pgcite search` runs it."""
    from pgcite.vocabulary import SearchFilter

    retrievals = {}
    for q in questions:
        if progress:
            progress(q.id)
        hits = app.search(q.question, k=fetch_size(k), mode=mode, filters=SearchFilter(source=source, version=version))
        retrievals[q.id] = Retrieval(
            tuple(distinct_sections(hits, max(k, 3))), sum(_tokens(app.embedder, h) for h in hits[:3])
        )
    return retrievals


def run_answers(
    questions: Sequence[Question],
    app: Pgcite,
    *,
    source: str | None = None,
    mode: str | None = None,
    progress: Progress | None = None,
    version: str | None = None,
) -> dict[str, AnswerRecord]:
    """Each question through `ask`, as `pgcite ask` runs it (flagged chunks left out)."""
    from pgcite.vocabulary import SearchFilter

    records = {}
    for q in questions:
        if progress:
            progress(q.id)
        answer = app.ask(
            q.question, mode=mode, filters=SearchFilter(source=source, version=version, exclude_flagged=True)
        )
        by_number = {p.number: p.hit.content for p in answer.sources}
        fed = tuple(
            RankedSection(
                p.hit.path, p.hit.heading, trail_of(p.hit.breadcrumb, p.hit.title, p.hit.heading), (p.hit.content,)
            )
            for p in answer.sources
        )
        records[q.id] = AnswerRecord(
            answer.text,
            answer.refused,
            tuple(answer.citations),
            tuple(by_number[n] for n in answer.citations if n in by_number),
            tuple(answer.checks.invalid_citations),
            fed,
            answer.note,
        )
    return records


# --------------------------------------------------------------------------------------------
# Comparing chunking strategies on throw-away databases


@dataclass(frozen=True)
class Strategy:
    name: str
    chunk_strategy: str
    chunk_tokens: int
    chunk_overlap: int
    chunk_breadcrumb: bool

    def apply(self, settings):
        return dataclasses.replace(
            settings,
            chunk_strategy=self.chunk_strategy,
            chunk_tokens=self.chunk_tokens,
            chunk_overlap=self.chunk_overlap,
            chunk_breadcrumb=self.chunk_breadcrumb,
        )


def _strategies() -> dict[str, Strategy]:
    table = {}
    for size in (64, 128, 256, 512):
        table[f"fixed-{size}"] = Strategy(f"fixed-{size}", "fixed", size, 0, False)
        table[f"fixed-{size}-overlap"] = Strategy(f"fixed-{size}-overlap", "fixed", size, round(size * 0.2), False)
    for size in (128, 256):
        table[f"heading-{size}"] = Strategy(f"heading-{size}", "headings", size, 0, True)
        table[f"heading-{size}-nocrumb"] = Strategy(f"heading-{size}-nocrumb", "headings", size, 0, False)
    return table


STRATEGIES = _strategies()


def parse_strategies(text: str | None) -> list[Strategy]:
    if not text:
        return list(STRATEGIES.values())
    chosen = []
    for name in (n.strip() for n in text.split(",")):
        if name not in STRATEGIES:
            raise EvalError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
        if STRATEGIES[name] not in chosen:
            chosen.append(STRATEGIES[name])
    return chosen


@dataclass(frozen=True)
class StrategyResult:
    name: str
    chunks: int
    seconds: float
    report: Report

    def to_json(self) -> dict:
        values = {name: m.value for name, m in self.report.metrics.items()}
        return _rounded({"strategy": self.name, "chunks": self.chunks, "seconds": round(self.seconds, 1), **values})


def scratch_server(settings) -> tuple[str, str]:
    """The DSN next to which throw-away databases are made, and where that is, for the user."""
    from pgcite.store import server

    if settings.database_url:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(settings.database_url)
        return settings.database_url, f"your server {info.get('host') or 'localhost'}:{info.get('port') or 5432}"
    return server.start(settings.home), f"the embedded server in {settings.home}"


@contextlib.contextmanager
def scratch_database(base_dsn: str) -> Iterator[tuple[str, str]]:
    """A new empty database pgcite_cmp_<n> on the server of `base_dsn`, dropped afterwards."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    try:
        conn = psycopg.connect(base_dsn, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        first = first_line(exc)
        raise EvalError(f"cannot connect to PostgreSQL to make a throw-away database: {first}") from None
    with conn:
        for n in itertools.count(1):
            name = f"pgcite_cmp_{n}"
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                break
            except psycopg.errors.DuplicateDatabase:
                continue
            except psycopg.errors.InsufficientPrivilege:
                raise EvalError(
                    f"role {conn.info.user!r} may not create databases; --compare needs CREATEDB "
                    "(ALTER ROLE ... CREATEDB) to make its throw-away databases"
                ) from None
    try:
        yield make_conninfo(base_dsn, dbname=name), name
    finally:
        with psycopg.connect(base_dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def compare(
    questions: Sequence[Question],
    corpus: str,
    *,
    settings,
    embedder,
    strategies: Sequence[Strategy],
    k: int = 3,
    source_name: str = "corpus",
    progress: Progress | None = None,
    done: Callable[[StrategyResult], None] | None = None,
) -> list[StrategyResult]:
    """Ingest `corpus` once per strategy into a throw-away database, evaluate retrieval on each."""
    from pgcite.core import Pgcite

    base_dsn, _ = scratch_server(settings)
    results = []
    for strategy in strategies:
        if progress:
            progress(f"{strategy.name}: creating a throw-away database")
        with scratch_database(base_dsn) as (dsn, database):
            local = dataclasses.replace(strategy.apply(settings), database_url=dsn)
            with Pgcite(local, embedder=embedder) as app:
                if progress:
                    progress(f"{strategy.name}: ingesting into {database}")
                started = time.perf_counter()
                app.ingest(corpus, source=source_name)
                seconds = time.perf_counter() - started
                chunks = app.status().chunks
                if progress:
                    progress(f"{strategy.name}: asking {len(questions)} questions")
                retrievals = run_searches(questions, app, k=k, source=source_name)
        result = StrategyResult(strategy.name, chunks, seconds, evaluate(questions, retrievals, k=k))
        results.append(result)
        if done:
            done(result)
    return results
