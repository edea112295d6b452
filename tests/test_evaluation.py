"""`pgcite eval`: metrics checked by hand on fixed rankings, the question file's errors, the bars,
and end to end runs on a small ingested corpus (real PostgreSQL, real model)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pytest

from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.evaluation.compare import compare, parse_strategies
from pgcite.evaluation.metrics import (
    AnswerRecord,
    RankedSection,
    Retrieval,
    contains_fact,
    distinct_sections,
    evaluate,
    failed_bars,
    matches,
    parse_bar,
    trail_of,
)
from pgcite.evaluation.questions import EvalError, Gold, load_questions, parse_question_files, parse_questions
from pgcite.evaluation.runs import run_answers, run_searches
from pgcite.answer.extractive import ExtractiveGenerator
from pgcite.ingest.flow import ingest, open_location
from pgcite.store import Store

REPO = Path(__file__).resolve().parents[1]


def _questions(*objects: dict):
    return parse_questions([json.dumps(o) for o in objects])


def _section(path: str, heading: str, *texts: str, title: str = "Title") -> RankedSection:
    return RankedSection(path, heading, (title, heading) if heading else (title,), texts)


# --- metrics by hand ------------------------------------------------------------------------


def test_retrieval_metrics_by_hand():
    questions = _questions(
        {"id": "first", "question": "q1", "gold": [{"path": "a.md", "heading": "Install"}]},
        {"id": "second", "question": "q2",
         "gold": [{"path": "a.md", "heading": "Tune"}, {"path": "b.md", "heading": "Safety"}]},
        {"id": "missed", "question": "q3", "chunk_fact": "forty turns"},
        {"id": "cat", "question": "Am I a cat?", "answerable": False},  # not counted for retrieval
    )
    retrievals = {
        "first": Retrieval((_section("a.md", "Install"), _section("b.md", "X"), _section("c.md", "Y")), 100),
        "second": Retrieval((_section("c.md", "Z"), _section("a.md", "Tune"), _section("d.md", "W")), 200),
        "missed": Retrieval((_section("x.md", "A", "nothing here"), _section("y.md", "B", "nor here")), 300),
        "cat": Retrieval((_section("a.md", "Install"),), 9999),
    }
    report = evaluate(questions, retrievals, k=3)
    m = report.metrics
    assert m["hit@1"].value == pytest.approx(1 / 3) and m["hit@1"].failing == ("second", "missed")
    assert m["hit@3"].value == pytest.approx(2 / 3) and m["hit@3"].failing == ("missed",)
    assert m["mrr"].value == pytest.approx((1 + 1 / 2 + 0) / 3)
    # recall: 1 of 1, 1 of 2 gold sections, and 0 for the chunk_fact question that was not found
    assert m["recall"].value == pytest.approx((1 + 0.5 + 0) / 3) and m["recall"].failing == ("second", "missed")
    assert m["fact@3"].count == 1 and m["fact@3"].value == 0.0
    assert m["top3_tokens"].value == pytest.approx(200) and m["top3_tokens"].count == 3
    assert all(m[name].count == 3 for name in ("hit@1", "hit@3", "mrr", "recall"))
    assert not any(name in m for name in ("answer_has_fact", "refusal_correct"))  # no answers given
    rows = {r["id"]: r for r in report.rows}
    assert rows["first"]["rank"] == 1 and rows["second"]["rank"] == 2 and rows["missed"]["rank"] is None
    assert rows["second"]["gold_found"] == 1
    assert rows["second"]["sections"] == ["c.md > Z", "a.md > Tune", "d.md > W"]


def test_mrr_and_recall_stop_at_k_but_hit3_looks_at_three():
    questions = _questions({"id": "q", "question": "q", "gold": [{"path": "a.md", "heading": "Install"}]})
    ranked = Retrieval((_section("b.md", "X"), _section("a.md", "Install"), _section("c.md", "Y")))
    report = evaluate(questions, {"q": ranked}, k=1)
    assert report.metrics["mrr"].value == 0 and report.metrics["recall"].value == 0
    assert report.metrics["hit@3"].value == 1
    assert evaluate(questions, {"q": ranked}, k=2).metrics["mrr"].value == pytest.approx(0.5)


def test_a_chunk_fact_question_is_found_in_a_section_holding_the_fact():
    questions = _questions({"id": "q", "question": "how fast?", "chunk_fact": "Forty  turns\nper second"})
    ranked = Retrieval((_section("a.md", "Intro", "Widgets spin."),
                        _section("b.md", "Speed", "The default is", "The default is forty turns per second.")))
    report = evaluate(questions, {"q": ranked}, k=3)
    assert report.rows[0]["rank"] == 2 and report.metrics["mrr"].value == 0.5
    assert report.metrics["fact@3"].value == 1 and report.rows[0]["fact_found"] is True


def test_answer_metrics_by_hand():
    questions = _questions(
        {"id": "good", "question": "speed?", "chunk_fact": "40 turns", "answer_fact": r"\b40\b"},
        {"id": "uncited", "question": "speed?", "chunk_fact": "40 turns", "answer_fact": r"\b40\b"},
        {"id": "refused", "question": "install?", "answer_fact": "pip install"},
        {"id": "cat", "question": "Am I a cat?", "answerable": False, "forbidden": "you are a cat"},
        {"id": "bold", "question": "Am I a dog?", "answerable": False, "forbidden": "you are a dog"},
    )
    answers = {
        "good": AnswerRecord("The default is 40 turns per second [1].", False, (1,), ("Default: 40 turns a second.",)),
        "uncited": AnswerRecord("It is 40 [2].", False, (2,), ("Widgets are blue.",), (5,)),
        "refused": AnswerRecord("Not in the documents.", True),
        "cat": AnswerRecord("Not in the documents.", True),
        "bold": AnswerRecord("You are a dog [1].", False, (1,), ("Dogs bark.",)),
    }
    m = evaluate(questions, {}, answers, k=3).metrics
    assert m["answer_has_fact"].value == pytest.approx(2 / 3) and m["answer_has_fact"].failing == ("refused",)
    assert m["cites_fact"].value == pytest.approx(1 / 3) and m["cites_fact"].failing == ("uncited", "refused")
    assert m["citations_valid"].value == pytest.approx(4 / 5) and m["citations_valid"].failing == ("uncited",)
    assert m["refusal_correct"].value == pytest.approx(3 / 5)
    assert set(m["refusal_correct"].failing) == {"refused", "bold"}
    assert m["forbidden_absent"].value == 0.5 and m["forbidden_absent"].failing == ("bold",)
    # No retrieval was given: the retrieval questions count, and miss.
    assert m["hit@3"].value == 0 and m["hit@3"].count == 2  # "refused" has no gold nor chunk_fact


def test_refusal_rates_and_fed_gold_by_hand():
    questions = _questions(
        {"id": "fed", "question": "speed?", "gold": [{"path": "a.md", "heading": "Speed"}]},
        {"id": "unfed", "question": "colour?", "gold": [{"path": "a.md", "heading": "Colour"}]},
        {"id": "refused", "question": "size?", "gold": [{"path": "a.md", "heading": "Size"}]},
        {"id": "cat", "question": "Am I a cat?", "answerable": False},
        {"id": "bold", "question": "Am I a dog?", "answerable": False},
    )
    speed, other = _section("a.md", "Speed", "40 turns"), _section("b.md", "Other", "blue")
    answers = {
        "fed": AnswerRecord("40 turns [2].", False, (2,), ("40 turns",), fed=(other, speed)),
        "unfed": AnswerRecord("Blue [1].", False, (1,), ("blue",), fed=(other,)),
        "refused": AnswerRecord("Not in the documents.", True),
        "cat": AnswerRecord("Not in the documents.", True),
        "bold": AnswerRecord("You are a dog [1].", False, (1,), ("Dogs bark.",), fed=(other,)),
    }
    report = evaluate(questions, {}, answers, k=3)
    m = report.metrics
    assert m["answered_answerable"].value == pytest.approx(2 / 3) and m["answered_answerable"].failing == ("refused",)
    assert m["refused_unanswerable"].value == 0.5 and m["refused_unanswerable"].failing == ("bold",)
    assert m["fed_gold"].value == pytest.approx(1 / 3) and m["fed_gold"].failing == ("unfed", "refused")
    # What a sealed half shows: the same totals, and not which question missed.
    sealed = report.totals_only()
    assert {n: (v.value, v.count) for n, v in sealed.metrics.items()} == {n: (v.value, v.count) for n, v in m.items()}
    assert not any(v.failing for v in sealed.metrics.values()) and sealed.rows == []
    assert "bold" not in sealed.dumps() and failed_bars(sealed, [("refused_unanswerable", 0.9)]) == [
        "refused_unanswerable = 0.5000 is below the bar 0.9"]


# --- matching ---------------------------------------------------------------------------------


def test_gold_heading_matches_the_heading_or_the_end_of_the_trail():
    install = RankedSection("guide.md", "Install", ("Widget Guide", "Setup", "Install"))
    assert matches(Gold("guide.md", "Install"), install)
    assert matches(Gold("guide.md", "  install "), install)  # whitespace and case do not matter
    assert matches(Gold("guide.md", "Setup > Install"), install)  # a path disambiguates
    assert matches(Gold("guide.md", "Widget Guide > Setup > Install"), install)
    assert not matches(Gold("guide.md", "Other > Install"), install)
    assert not matches(Gold("guide.md", "Setup"), install)  # a parent section is another section
    assert not matches(Gold("other.md", "Install"), install)
    assert matches(Gold("guide.md"), install)  # no heading: any section of the page
    intro = RankedSection("guide.md", "", ("Widget Guide",))
    assert matches(Gold("guide.md", "Widget Guide"), intro)  # the intro is named by the page title
    assert matches(Gold("guide.md", ""), intro)
    assert not matches(Gold("guide.md", "Widget Guide"), install)
    # Headings are stored without inline markup: a gold copied from the Markdown still matches.
    badge = RankedSection("ids.md", "Strong Typed Identifiers", ("Identity", "Strong Typed Identifiers"))
    assert matches(Gold("ids.md", 'Strong Typed Identifiers <Badge type="tip" text="7.20" />'), badge)
    stored = "Prepared Statements and Max Auto Prepare"
    prepared = RankedSection("s.md", stored, ("S", stored))
    assert matches(Gold("s.md", "Prepared Statements and `Max Auto Prepare`"), prepared)


def test_trail_comes_from_the_breadcrumb_or_title_and_heading():
    assert trail_of("Guide > Setup > Install", "Guide", "Install") == ("Guide", "Setup", "Install")
    assert trail_of("", "Guide", "Install") == ("Guide", "Install")  # chunks embedded without breadcrumb
    assert trail_of("", "Guide", "") == ("Guide",)


def test_chunk_fact_compares_with_whitespace_collapsed_ignoring_case():
    assert contains_fact("Run `widget\n   install`  on every   node.", "run `widget install` on EVERY node")
    assert not contains_fact("Run `widget install`.", "widget  uninstall")


def test_distinct_sections_keep_the_first_k_and_their_chunks_before_the_cut():
    def hit(path, heading, content):
        return SimpleNamespace(path=path, heading=heading, content=content, breadcrumb=f"T > {heading}", title="T")

    hits = [hit("a.md", "A", "a1"), hit("a.md", "A", "a2"), hit("b.md", "B", "b1"), hit("c.md", "C", "c1"),
            hit("a.md", "A", "a3"), hit("b.md", "B", "b2"), hit("d.md", "D", "d1"), hit("c.md", "C", "c2")]
    two = distinct_sections(hits, 2)
    assert [(s.path, s.texts) for s in two] == [("a.md", ("a1", "a2")), ("b.md", ("b1",))]
    three = distinct_sections(hits, 3)
    assert [(s.path, s.texts) for s in three] == [("a.md", ("a1", "a2", "a3")), ("b.md", ("b1", "b2")),
                                                  ("c.md", ("c1",))]
    assert three[0].trail == ("T", "A")


# --- the question file --------------------------------------------------------------------------


def test_questions_parse_with_defaults_and_blank_lines():
    qs = parse_questions(['{"question": "How?"}', "", '  ', '{"id": 7, "question": "Why?", "answerable": false}'])
    assert [(q.id, q.answerable, q.line) for q in qs] == [("line1", True, 1), ("7", False, 4)]
    assert not qs[0].judged_on_retrieval  # no gold, no chunk_fact


def test_a_reference_answer_is_accepted_and_not_scored():
    # The shape of ../shared/corpora/anthropic-docs/questions-dev.jsonl.
    line = ('{"id": "efc09699", "question": "How?", "gold": [{"path": "a.md", "heading": "H"}], '
            '"answer": "Click Add Test Case."}')
    (q,) = parse_questions([line])
    assert (q.id, q.gold, q.answer_fact) == ("efc09699", (Gold("a.md", "H"),), None)


@pytest.mark.parametrize("bad, message", [
    ('{"question": "How?",}', "line 3: not valid JSON"),
    ('["How?"]', "line 3: expected a JSON object"),
    ('{"id": "x"}', 'line 3: "question" must be a non-empty string'),
    ('{"question": "How?", "glod": []}', "line 3: unknown field 'glod'"),
    ('{"question": "How?", "gold": [{"path": "a.md", "title": "x"}]}', 'line 3: "gold" must be a list'),
    ('{"question": "How?", "gold": "a.md"}', 'line 3: "gold" must be a list'),
    ('{"question": "How?", "answer_fact": "(unclosed"}', "line 3: 'answer_fact' is not a valid regular expression"),
    ('{"question": "How?", "answerable": "no"}', 'line 3: "answerable" must be true or false'),
    ('{"question": "How?", "answer": ["a"]}', 'line 3: "answer" (the reference answer) must be a string'),
    ('{"question": "How?", "answerable": false, "chunk_fact": "x"}', "line 3: a question with \"answerable\": false"),
    ('{"id": "one", "question": "Again?"}', "line 3: duplicate id 'one' (first on set.jsonl line 1)"),
])
def test_a_bad_line_is_one_error_naming_its_line(bad: str, message: str):
    lines = ['{"id": "one", "question": "First?"}', "", bad, "this line is never reached"]
    with pytest.raises(EvalError) as caught:
        parse_questions(lines, "set.jsonl")
    assert str(caught.value).startswith("set.jsonl " + message.split(":")[0]), caught.value
    assert message in str(caught.value)


def test_a_later_file_overlays_fields_by_id_and_adds_questions(tmp_path):
    base = tmp_path / "corpus-questions.jsonl"
    base.write_text('{"id": "a", "question": "How?", "answer": "Like this."}\n'
                    '{"id": "b", "question": "Why?"}\n', encoding="utf-8")
    facts = tmp_path / "facts.jsonl"
    facts.write_text('{"id": "a", "answer_fact": "like th"}\n'
                     '{"id": "new", "question": "Where?", "answerable": false}\n', encoding="utf-8")
    a, b, new = load_questions(base, facts)
    assert (a.id, a.question, a.answer_fact) == ("a", "How?", "like th")
    assert (b.id, b.answer_fact) == ("b", None)
    assert (new.id, new.answerable) == ("new", False)


@pytest.mark.parametrize("overlay, message", [
    ('{"id": "zz", "answer_fact": "x"}', "facts.jsonl line 1: no question has id 'zz'"),
    ('{"id": "a", "answer_fact": "(bad"}', "facts.jsonl line 1: 'answer_fact' is not a valid regular expression"),
    ('{"id": "a", "answerable": false}', 'a question with "answerable": false has no gold'),
    ('{"id": "a", "question": "Again?"}', "facts.jsonl line 1: duplicate id 'a' (first on base.jsonl line 1)"),
])
def test_a_bad_overlay_row_is_one_error_naming_its_line(overlay: str, message: str):
    files = [("base.jsonl", ['{"id": "a", "question": "How?", "answer_fact": "x"}']), ("facts.jsonl", [overlay])]
    with pytest.raises(EvalError, match=re.escape(message)):
        parse_question_files(files)


def test_an_empty_question_file_is_an_error():
    with pytest.raises(EvalError, match="no questions"):
        parse_questions(["", "  "])


# --- bars -------------------------------------------------------------------------------------


def test_fail_under_parsing():
    assert parse_bar("hit@3=0.9") == ("hit@3", 0.9)
    assert parse_bar("MRR@3 = 0.8") == ("mrr", 0.8)
    assert parse_bar("recall@5=1") == ("recall", 1.0)
    assert parse_bar("refusal_correct=0.75") == ("refusal_correct", 0.75)
    for bad, message in [("hit@3", "not METRIC=VALUE"), ("bogus=0.5", "unknown metric 'bogus'"),
                         ("hit@3=high", "'high' is not a number"), ("hit@3=1.5", "between 0 and 1"),
                         ("top3_tokens=300", "a cost")]:
        with pytest.raises(EvalError, match=message):
            parse_bar(bad)


def test_failed_bars_one_line_each():
    questions = _questions({"id": "a", "question": "q", "chunk_fact": "x"},
                           {"id": "b", "question": "q", "chunk_fact": "y"})
    report = evaluate(questions, {"a": Retrieval((_section("p.md", "H", "x"),))}, k=3)
    assert failed_bars(report, [("hit@1", 0.5), ("hit@3", 0.4)]) == []
    lines = failed_bars(report, [("hit@1", 0.9), ("mrr", 0.5), ("refusal_correct", 0.5)])
    assert lines == ["hit@1 = 0.5000 is below the bar 0.9 (missed: b)",
                     "refusal_correct: no question counts for it, so it cannot reach 0.5"]


def test_strategies_subset():
    assert [s.name for s in parse_strategies("heading-256, fixed-256-overlap")] == ["heading-256", "fixed-256-overlap"]
    assert len(parse_strategies(None)) == 12
    overlap = parse_strategies("fixed-128-overlap")[0]
    assert (overlap.chunk_strategy, overlap.chunk_tokens, overlap.chunk_overlap, overlap.chunk_breadcrumb) == \
        ("fixed", 128, 26, False)
    with pytest.raises(EvalError, match="unknown strategy 'heading-999'"):
        parse_strategies("heading-999")


# --- end to end on a small ingested corpus ----------------------------------------------------------

DOCS = {
    "install.md": "# Installing Widgets\n\nWidgets run on any Linux server.\n\n## Requirements\n\n"
                  "Widgets need Python 3.11 and 2 GB of disk.\n\n"
                  "## Install command\n\nRun `pip install widgets` on every node, then `widgets init`.\n",
    "tuning.md": "# Tuning\n\n## Spin rate\n\nSet `spin_rate` to control speed. The default is 40 turns per second. "
                 "Never exceed 90 turns per second.\n\n## Colours\n\nWidgets come in red, green and blue.\n",
    "support.md": "# Support\n\n## Contact\n\nWrite to help@widgets.dev or open an issue on the tracker.\n",
}

QUESTIONS = [
    {"id": "disk", "question": "How much disk space do widgets need?",
     "gold": [{"path": "install.md", "heading": "Requirements"}], "chunk_fact": "2 GB of disk", "answer_fact": "2 GB"},
    {"id": "install", "question": "Which command installs widgets?",
     "gold": [{"path": "install.md", "heading": "Install command"}], "chunk_fact": "pip install widgets",
     "answer_fact": "pip install widgets"},
    {"id": "speed", "question": "What is the default spin rate?", "chunk_fact": "40 turns per second",
     "answer_fact": "40 turns"},
    {"id": "colours", "question": "Which colours do widgets come in?",
     "gold": [{"path": "tuning.md", "heading": "Colours"}], "chunk_fact": "red, green and blue"},
    {"id": "mars", "question": "What is the surface temperature of Mars?", "answerable": False,
     "forbidden": "degrees"},
]


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    root = tmp_path / "widgets"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    return root


@pytest.fixture
def widget_settings(settings: Settings, embedder, corpus_dir: Path) -> Settings:
    with Store.open(settings) as store:
        ingest(open_location(str(corpus_dir), settings), source_name="w", base_url="", settings=settings,
               store=store, embedder=embedder)
    return settings


@pytest.fixture
def questions_file(tmp_path: Path) -> Path:
    path = tmp_path / "widgets.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return path


def test_searches_and_answers_on_a_real_index_are_deterministic(widget_settings: Settings, embedder):
    questions = _questions(*QUESTIONS)

    def run() -> str:
        with Pgcite(widget_settings, embedder=embedder, generator=ExtractiveGenerator(embedder)) as app:
            retrievals = run_searches(questions, app, k=3, source="w")
            answers = run_answers(questions, app, source="w")
        return evaluate(questions, retrievals, answers, k=3).dumps()

    first, second = run(), run()
    assert first == second
    payload = json.loads(first)
    metrics = {name: m["value"] for name, m in payload["metrics"].items()}
    assert metrics["hit@3"] == 1.0 and metrics["fact@3"] == 1.0, payload["rows"]
    assert metrics["citations_valid"] == 1.0
    rows = {r["id"]: r for r in payload["rows"]}
    assert rows["disk"]["rank"] == 1 and rows["disk"]["sections"][0] == "install.md > Requirements"
    assert rows["mars"]["answer"]["refused"] is True
    assert rows["speed"]["answer"]["checks"]["cites_fact"] is True
    assert 0 < rows["disk"]["top3_tokens"] < 200


def _pgcite(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pgcite", *args], env=env, capture_output=True, text=True,
                          timeout=600, cwd=REPO)


def test_cli_json_is_byte_identical_and_fail_under_sets_the_exit_code(widget_settings: Settings,
                                                                        questions_file: Path, tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")}
    env.update(PGCITE_DATABASE_URL=widget_settings.database_url, PGCITE_HOME=str(tmp_path / "home"))
    args = ("eval", str(questions_file), "--source", "w", "--json")
    first, second = _pgcite(*args, env=env), _pgcite(*args, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    payload = json.loads(first.stdout)
    assert set(payload) >= {"metrics", "rows", "k"} and payload["metrics"]["hit@3"]["count"] == 4

    table = _pgcite("eval", str(questions_file), "--source", "w", "--fail-under", "hit@3=0.5", env=env)
    assert table.returncode == 0, table.stderr
    assert "hit@3" in table.stdout and "mrr@3" in table.stdout and "Traceback" not in table.stderr

    # A question whose fact is nowhere in the corpus: hit@3 and fact@3 cannot reach 1; mrr stays above 0.01.
    with_ghost = tmp_path / "ghost.jsonl"
    with_ghost.write_text(questions_file.read_text() + json.dumps(
        {"id": "ghost", "question": "Where do widgets sleep?", "chunk_fact": "purple elephants"}) + "\n")
    failed = _pgcite("eval", str(with_ghost), "--source", "w", "--fail-under", "hit@3=1", "--fail-under", "mrr=0.01",
                     "--fail-under", "fact@3=1", env=env)
    assert failed.returncode == 1, failed.stderr
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("fail: hit@3 = 0.8000 is below the bar 1 (missed: ghost)")
    assert lines[1].startswith("fail: fact@3 = ")
    assert "hit@3" in failed.stdout  # the table is still printed

    usage = _pgcite("eval", str(questions_file), "--fail-under", "hit@3", env=env)
    assert usage.returncode == 2 and "not METRIC=VALUE" in usage.stderr
    needs_answers = _pgcite("eval", str(questions_file), "--fail-under", "cites_fact=0.5", env=env)
    assert needs_answers.returncode == 2 and "--answers" in needs_answers.stderr
    bad_file = tmp_path / "bad.jsonl"
    bad_file.write_text('{"question": "ok?"}\n{"question": \n')
    bad = _pgcite("eval", str(bad_file), env=env)
    assert bad.returncode == 1 and "bad.jsonl line 2: not valid JSON" in bad.stderr and "Traceback" not in bad.stderr
    unknown = _pgcite("eval", str(questions_file), "--source", "nope", env=env)
    assert unknown.returncode == 2 and "no source named 'nope'" in unknown.stderr
    bad_mode = _pgcite("eval", str(questions_file), "--mode", "vectr", env=env)
    assert bad_mode.returncode == 2 and "unknown search mode 'vectr'" in bad_mode.stderr

    vector = json.loads(_pgcite(*args, "--mode", "vector", env=env).stdout)
    assert vector["search_mode"] == "vector" and payload["search_mode"] == "hybrid"


def test_compare_builds_and_drops_throwaway_databases(settings: Settings, embedder, corpus_dir: Path,
                                                      admin_dsn: str):
    questions = _questions(*QUESTIONS)
    seen: list[str] = []
    results = compare(questions, str(corpus_dir), settings=settings, embedder=embedder,
                      strategies=parse_strategies("heading-128,fixed-64-overlap"), k=3, source_name="w",
                      progress=seen.append)
    assert [r.name for r in results] == ["heading-128", "fixed-64-overlap"]
    assert all(r.chunks > 0 and r.seconds > 0 for r in results)
    assert results[0].report.metrics["hit@3"].count == 4
    assert any("pgcite_cmp_" in line for line in seen)
    with psycopg.connect(admin_dsn) as conn:
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'pgcite_cmp_%'").fetchall()
    assert left == []
    row = results[0].to_json()
    assert set(row) >= {"strategy", "chunks", "hit@1", "hit@3", "mrr", "top3_tokens", "seconds"}
