"""`pgcite eval`: retrieval and answers measured against known answers, or chunking strategies
compared, as tables or JSON."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from pgcite.cli.common import ModeOption, cli_settings, default_source_name, err, print_table
from pgcite.errors import PgciteError


def _eval_table(report, title: str):
    from rich.table import Table

    from pgcite.evaluation.metrics import ANSWER_METRICS

    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("n", justify="right")
    table.add_column("missed by")
    for name, metric in report.metrics.items():
        if metric.value is None:
            value = "-"
        elif name == "top3_tokens":
            value = f"{metric.value:.1f}"
        else:
            value = f"{metric.value:.3f}"
        label = f"{name}@{report.k}" if name in ("mrr", "recall") else name
        if name == ANSWER_METRICS[0]:
            table.add_section()
        table.add_row(label, value, str(metric.count), escape(", ".join(metric.failing)))
    return table


def _compare_table(results, title: str):
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False)
    table.add_column("strategy", no_wrap=True, min_width=max(len(r.name) for r in results) if results else 8)
    for column in ("chunks", "hit@1", "hit@3", "MRR", "fact@3", "top-3\ntokens", "seconds"):
        table.add_column(column, justify="right")

    def rate(result, name: str) -> str:
        value = result.report.metrics[name].value
        return "-" if value is None else f"{value:.3f}"

    for r in results:
        tokens = r.report.metrics["top3_tokens"].value
        table.add_row(
            r.name,
            str(r.chunks),
            rate(r, "hit@1"),
            rate(r, "hit@3"),
            rate(r, "mrr"),
            rate(r, "fact@3"),
            "-" if tokens is None else f"{tokens:.0f}",
            f"{r.seconds:.1f}",
        )
    return table


def eval_questions(
    questions: Annotated[
        list[str],
        typer.Argument(
            help="JSONL files, one question per line (see `pgcite.evaluation.questions`); in a later file a row "
            "with only an id and fields (answer_fact, forbidden...) adds them to that question."
        ),
    ],
    source: Annotated[str | None, typer.Option("--source", help="Only this source.")] = None,
    version: Annotated[
        str | None, typer.Option("--version", help="Only this version (default: each source's default).")
    ] = None,
    k: Annotated[int, typer.Option("-k", help="Distinct sections that count as retrieved (MRR@k, recall@k).")] = 3,
    answers: Annotated[bool, typer.Option("--answers", help="Also ask every question and check the answers.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object on stdout: metrics and per-question rows.")
    ] = False,
    sealed: Annotated[
        bool,
        typer.Option(
            "--sealed", help="Totals only, never which questions missed: for a sealed half measured while tuning."
        ),
    ] = False,
    fail_under: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-under",
            metavar="METRIC=VALUE",
            help="Exit 1 when METRIC is below VALUE (repeatable), e.g. hit@3=0.9.",
        ),
    ] = None,
    compare_corpus: Annotated[
        str | None,
        typer.Option(
            "--compare",
            metavar="CORPUS_DIR",
            help="Re-chunk this corpus with each strategy into throw-away databases and compare retrieval.",
        ),
    ] = None,
    strategies: Annotated[
        str | None,
        typer.Option("--strategies", help="With --compare: a comma-separated subset, e.g. heading-256,fixed-256."),
    ] = None,
    mode: ModeOption = None,
) -> None:
    """Measure retrieval (and with --answers, answers) against questions with known answers."""
    from pgcite.embedding.models import make_embedder
    from pgcite.evaluation.compare import parse_strategies
    from pgcite.evaluation.metrics import ANSWER_METRICS, failed_bars, parse_bar
    from pgcite.evaluation.questions import EvalError, load_questions

    try:
        bars = [parse_bar(text) for text in fail_under or ()]
    except EvalError as exc:
        raise typer.BadParameter(str(exc), param_hint="--fail-under") from None
    if k < 1:
        raise typer.BadParameter(f"must be at least 1 (got {k})", param_hint="-k")
    if not answers and (needs := [name for name, _ in bars if name in ANSWER_METRICS]):
        raise typer.BadParameter(f"{needs[0]} is measured on answers: add --answers", param_hint="--fail-under")
    if compare_corpus is None and strategies is not None:
        raise typer.BadParameter("only applies with --compare", param_hint="--strategies")
    if compare_corpus is not None and (answers or bars):
        raise typer.BadParameter(
            "--compare measures retrieval of each strategy; run --answers and --fail-under without it",
            param_hint="--compare",
        )
    try:
        chosen = parse_strategies(strategies) if compare_corpus is not None else []
    except EvalError as exc:
        raise typer.BadParameter(str(exc), param_hint="--strategies") from None
    settings = cli_settings()
    if mode is not None:
        settings = dataclasses.replace(settings, search_mode=mode)
    qs = load_questions(*questions)
    if compare_corpus is not None:
        _eval_compare(
            qs,
            compare_corpus,
            chosen,
            settings=settings,
            embedder=make_embedder(settings),
            k=k,
            source=source,
            as_json=as_json,
        )
        return

    from pgcite.core import Pgcite
    from pgcite.evaluation.metrics import evaluate
    from pgcite.evaluation.runs import run_answers, run_searches

    with (
        Pgcite(settings) as app,
        Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[item]}"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as progress,
    ):
        app.require_source(source)
        generator = app.generator if answers else None
        task = progress.add_task("searching", total=len(qs), item="")

        def advance(item: str) -> None:
            progress.update(task, advance=1, item=item)

        retrievals = run_searches(qs, app, k=k, source=source, progress=advance, version=version)
        records = None
        if generator is not None:
            progress.reset(task, total=len(qs), description=f"asking ({generator.name})", item="")
            records = run_answers(qs, app, source=source, progress=advance, version=version)
    report = evaluate(qs, retrievals, records, k=k)
    report.info = {
        "questions": len(qs),
        "source": source,
        "version": version,
        "search_mode": settings.search_mode,
        "generator": generator.name if generator else None,
    }
    if sealed:
        report = report.totals_only()
    if as_json:
        print(report.dumps())
    else:
        title = (
            f"{len(qs)} questions from {' + '.join(questions)}, k={k}, {settings.search_mode} search"
            + (f", source {source}" if source else "")
            + (f", answers by {generator.name}" if generator else "")
        )
        print_table(_eval_table(report, escape(title)))
    if failures := failed_bars(report, bars):
        for line in failures:
            err.print(f"[red]fail:[/] {escape(line)}", soft_wrap=True)
        raise typer.Exit(1)


def _eval_compare(qs, corpus: str, chosen, *, settings, embedder, k: int, source, as_json: bool) -> None:
    from pathlib import Path

    from pgcite.evaluation.compare import compare, scratch_server

    if not Path(corpus).is_dir() and not corpus.endswith(".zip") and not corpus.startswith("s3://"):
        raise PgciteError(f"no such folder, .zip file or s3:// location: {corpus}")
    name = source or default_source_name(corpus)
    _, where = scratch_server(settings)
    err.print(
        f"comparing {len(chosen)} chunking strategies on {escape(corpus)}: each is ingested into a throw-away "
        f"database pgcite_cmp_N on {escape(where)}, dropped afterwards; each embeds the whole corpus"
    )
    finished = []
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err, transient=True
    ) as progress:
        task = progress.add_task("starting", total=None)

        def note(text: str) -> None:
            progress.update(task, description=escape(text))

        def done(result) -> None:
            finished.append(result)
            progress.console.print(f"{escape(result.name)}: {result.chunks} chunks, {result.seconds:.1f} s")

        results = compare(
            qs,
            corpus,
            settings=settings,
            embedder=embedder,
            strategies=chosen,
            k=k,
            source_name=name,
            progress=note,
            done=done,
        )
    if as_json:
        print(
            json.dumps(
                {
                    "corpus": corpus,
                    "k": k,
                    "questions": len(qs),
                    "search_mode": settings.search_mode,
                    "strategies": [r.to_json() for r in results],
                },
                ensure_ascii=False,
                sort_keys=True,
            )
        )
        return
    print_table(
        _compare_table(results, escape(f"{len(qs)} questions on {corpus}, k={k}, {settings.search_mode} search"))
    )
