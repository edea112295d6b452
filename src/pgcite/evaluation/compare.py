"""`pgcite eval --compare`: the same searches over the corpus re-chunked with each strategy, each
in a throw-away database, so strategies are compared on the same questions.

The bundled model reads 256 tokens (special tokens included), so 512-token windows are embedded
from their first 254 tokens only, although the whole window is stored and returned."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from pgcite.errors import first_line
from pgcite.evaluation.metrics import Report, evaluate, rounded
from pgcite.evaluation.questions import EvalError, Question
from pgcite.evaluation.runs import Progress, run_searches


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
        return rounded({"strategy": self.name, "chunks": self.chunks, "seconds": round(self.seconds, 1), **values})


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
