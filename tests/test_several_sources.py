"""Several sources in one home (issue 62): a question finds the source that answers it whatever
else the home holds, as in a home of its own. pgcite's own Slack and Discord pages (which say
"message" and "token" often, about other things) beside a small push-notification API."""

import shutil
from pathlib import Path

import pytest

from pgcite.core import Pgcite
from pgcite.vocabulary import SearchFilter

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How do I send a message with an application token?"


@pytest.fixture
def home(settings, embedder, tmp_path):
    chat = tmp_path / "chat"
    chat.mkdir()
    for page in ("slack.md", "discord.md"):
        shutil.copy(ROOT / "docs" / page, chat / page)
    with Pgcite(settings, embedder=embedder) as app:
        app.ingest(str(chat), source="chat")
        app.ingest(str(ROOT / "tests" / "sites" / "notify"), source="notify")
        yield app


def test_a_question_finds_its_source_across_sources_as_it_does_alone(home):
    alone = home.search(QUESTION, k=3, filters=SearchFilter(source="notify"))
    across = home.search(QUESTION, k=3, filters=SearchFilter())
    assert across[0].source == "notify" and across[0].heading == alone[0].heading


def test_the_answer_quotes_the_source_that_answers_and_no_quote_is_called_the_opposite(home):
    answer = home.ask(QUESTION)
    assert not answer.refused and answer.sources[0].hit.source == "notify"
    assert answer.checks.unsupported == []
