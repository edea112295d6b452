"""The Slack bot over HTTP: requests signed exactly as Slack signs them, sent to a real `pgcite serve`
(uvicorn on loopback) whose Bolt app talks to a fake of Slack's Web API speaking its wire format
(tests/fake_slack.py), with a real database and the bundled model (the offline generator answers)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from slack_sdk import WebClient

from pgcite.answer.checks import Checks
from pgcite.answer.flow import Answer
from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.messaging import bots, render
from pgcite.messaging.slack import SlackBot
from pgcite.messaging.channels import ChannelMap, Scope
from pgcite.messaging import streaming
from pgcite.store import chat_sql, server
from pgcite.vocabulary import REFUSAL, Passage, SearchHit, Usage
from tests.fake_slack import BOT_USER, TEAM, TOKEN, FakeSlack, sign
from tests.http_server import Reply, call, running, warm_app, write_folder

pytestmark = pytest.mark.slow

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
DOCS = {  # tests/test_ask.py's widgets
    "install.md": "# Installing Widgets\n\n## Requirements\n\nWidgets need Python 3.11 and 2 GB of disk.\n\n"
                  "## Install command\n\nRun `pip install widgets` on every node, then `widgets init`.\n",
    "tuning.md": "# Tuning\n\n## Spin rate\n\nSet `spin_rate` to control speed. The default is 40 turns per second. "
                 "Never exceed 90 turns per second.\n",
    "support.md": "# Support\n\n## Contact\n\nWrite to help@widgets.dev or open an issue at https://widgets.dev/issues.\n",
}
GADGETS = {"gadgets.md": "# Gadgets\n\n## Charging\n\nA gadget charges in 3 hours from a USB-C port.\n"}
CHANNELS = "T1/C1=w; T1/C2=g; T1/dm=w"


@pytest.fixture(scope="module")
def fake():
    with FakeSlack() as server:
        yield server


def slack_of(fake: FakeSlack) -> dict:
    """The settings of a server that answers Slack through `fake`."""
    return dict(slack_bot_token=TOKEN, slack_signing_secret=SECRET, slack_api_url=fake.url, slack_channels=CHANNELS)


@pytest.fixture(scope="module")
def core(admin_dsn: str, embedder, tmp_path_factory, fake: FakeSlack):
    sources = {"w": (DOCS, "https://widgets.dev/"), "g": (GADGETS, "https://gadgets.dev/")}
    with warm_app(admin_dsn, embedder, tmp_path_factory.mktemp("slack"), sources, **slack_of(fake)) as app:
        yield app


@pytest.fixture(scope="module")
def base(core: Pgcite):
    with running(core) as url:
        yield url


# --- what Slack sends ------------------------------------------------------------------------

def post(base: str, body: bytes, content_type: str, *, secret: str = SECRET, timestamp: int | None = None,
         headers: dict | None = None, signed: bool = True) -> Reply:
    signature = sign(secret, body, timestamp) if signed else {}
    return call(base, "/slack/events", body, headers={"Content-Type": content_type, **signature, **(headers or {})})


def deliver(base: str, envelope: dict, **options) -> Reply:
    """An Events API delivery (JSON)."""
    return post(base, json.dumps(envelope).encode(), "application/json", **options)


def interact(base: str, payload: dict, **options) -> Reply:
    """An interactivity request: the payload form-encoded, as Slack sends a button click."""
    body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
    return post(base, body, "application/x-www-form-urlencoded", **options)


def envelope(event: dict) -> dict:
    return {
        "token": "legacy-verification-token", "team_id": TEAM, "api_app_id": "A1", "event": event,
        "type": "event_callback", "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}", "event_time": int(time.time()),
        "authorizations": [{"enterprise_id": None, "team_id": TEAM, "user_id": BOT_USER, "is_bot": True,
                            "is_enterprise_install": False}],
        "is_ext_shared_channel": False,
    }


def mention(fake: FakeSlack, channel: str, question: str, *, user: str = "U1",
            thread_ts: str | None = None) -> tuple[dict, str]:
    """A person mentions the bot: the message as Slack stores it, and the app_mention event it sends."""
    text = f"<@{BOT_USER}> {question}"
    ts = fake.user_message(channel, user, text, thread_ts)
    event = {"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": channel, "event_ts": ts,
             **({"thread_ts": thread_ts} if thread_ts else {})}
    return envelope(event), ts


def text_of(message: dict) -> str:
    return "\n".join(b["text"]["text"] for b in message.get("blocks", []) if b["type"] == "section")


def answer_in(fake: FakeSlack, channel: str, thread_ts: str, timeout: float = 30.0) -> dict:
    """The bot's finished answer in a thread (it carries the feedback buttons)."""
    def done():
        return next((m for m in fake.messages[channel] if m.get("thread_ts") == thread_ts and m.get("bot_id")
                     and any(b["type"] == "actions" for b in m.get("blocks", []))), None)
    return fake.wait_for(done, timeout)


def bot_replies(fake: FakeSlack, channel: str, thread_ts: str) -> list[dict]:
    return [m for m in fake.messages[channel] if m.get("thread_ts") == thread_ts and m.get("bot_id")]


def logged(core: Pgcite, question: str):
    return [e for e in core.log_entries() if e.question == question]


def answer_id(message: dict) -> str:
    actions = next(b for b in message["blocks"] if b["type"] == "actions")
    return actions["elements"][0]["value"]


def click(answer: dict, ident: str) -> dict:
    """*Not helpful* clicked on the answer `answer` (logged as `ident`) in C1, as Slack sends it."""
    return {
        "type": "block_actions", "user": {"id": "U2", "username": "ana", "team_id": TEAM}, "api_app_id": "A1",
        "token": "legacy-verification-token", "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "container": {"type": "message", "message_ts": answer["ts"], "channel_id": "C1", "is_ephemeral": False},
        "team": {"id": TEAM, "domain": "t1"}, "enterprise": None, "is_enterprise_install": False,
        "channel": {"id": "C1", "name": "docs"}, "message": answer, "state": {"values": {}},
        "response_url": "https://hooks.slack.com/actions/T1/1/x",
        "actions": [{"action_id": "pgcite_not_helpful", "block_id": "pgcite_feedback", "value": ident,
                     "type": "button", "text": {"type": "plain_text", "text": "Not helpful"},
                     "action_ts": str(time.time())}],
    }


@contextlib.contextmanager
def refusing_connections(database_url: str, admin_dsn: str) -> Iterator[None]:
    """New connections to the database refused, as while it is down or restarting, until the block ends."""
    database = sql.Identifier(psycopg.conninfo.conninfo_to_dict(database_url)["dbname"])
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(database))
        try:
            yield
        finally:
            admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(database))


# --- a mention, a follow-up, a click ---------------------------------------------------------

def test_a_mention_gets_a_threaded_answer_with_each_citation_a_link(base: str, fake: FakeSlack, core: Pgcite):
    event, ts = mention(fake, "C1", "What is the default spin rate?")
    started = time.monotonic()
    reply = deliver(base, event)
    assert reply.status == 200 and time.monotonic() - started < 3  # Slack's three seconds
    answer = answer_in(fake, "C1", ts)
    shown = text_of(answer)
    assert "40 turns per second" in shown
    assert re.search(r"<https://widgets\.dev/tuning[^|>]*\|\[\d\]>", shown), shown  # [n] links to page#anchor
    assert "*Sources*\n[1] <https://widgets.dev/tuning" in shown
    assert [b["elements"][i]["action_id"] for b in answer["blocks"] if b["type"] == "actions" for i in (0, 1)] == [
        "pgcite_helpful", "pgcite_not_helpful"]
    posted = [c for c in fake.calls_of("chat.postMessage") if c.get("thread_ts") == ts]
    assert len(posted) == 1 and posted[0]["text"] == render.escape(render.THINKING)  # a placeholder, grown
    assert any(c["ts"] == answer["ts"] for c in fake.calls_of("chat.update"))
    [entry] = logged(core, "What is the default spin rate?")
    assert (entry.channel, entry.key_name, entry.scope) == ("slack", "T1/C1/U1", ("w",))
    assert entry.id == answer_id(answer)


def test_a_follow_up_in_the_thread_is_asked_with_the_question_before_it(base: str, fake: FakeSlack, core: Pgcite):
    event, root = mention(fake, "C1", "How do I install widgets?")
    assert deliver(base, event).status == 200
    answer_in(fake, "C1", root)
    follow, ts = mention(fake, "C1", "and what are the requirements?", thread_ts=root)
    assert deliver(base, follow).status == 200
    fake.wait_for(lambda: len([m for m in bot_replies(fake, "C1", root)
                               if any(b["type"] == "actions" for b in m.get("blocks", []))]) == 2)
    assert any(c["ts"] == root for c in fake.calls_of("conversations.replies"))
    [entry] = logged(core, "How do I install widgets? and what are the requirements?")
    assert not entry.refused and "Python 3.11" in entry.answer
    # A question that stands alone is asked alone, also in a thread.
    alone, _ = mention(fake, "C1", "What is the default spin rate of a widget in turns per second?", thread_ts=root)
    deliver(base, alone)
    fake.wait_for(lambda: logged(core, "What is the default spin rate of a widget in turns per second?"))


def test_a_button_click_and_its_comment_reach_the_answer_log(base: str, fake: FakeSlack, core: Pgcite):
    event, ts = mention(fake, "C1", "Which command installs widgets?")
    deliver(base, event)
    answer = answer_in(fake, "C1", ts)
    clicked = click(answer, answer_id(answer))
    assert interact(base, clicked).status == 200
    opened = fake.wait_for(lambda: fake.calls_of("views.open"))[-1]
    assert opened["trigger_id"] == clicked["trigger_id"]
    [entry] = logged(core, "Which command installs widgets?")
    assert (entry.rating, entry.comment) == ("down", None)
    view = opened["view"]
    submission = {
        "type": "view_submission", "team": {"id": TEAM, "domain": "t1"}, "user": {"id": "U2", "team_id": TEAM},
        "api_app_id": "A1", "token": "legacy-verification-token", "trigger_id": "1.2.3", "is_enterprise_install": False,
        "view": {**view, "id": "V1", "team_id": TEAM, "state": {"values": {
            "comment": {"comment": {"type": "plain_text_input", "value": "It should say which node first"}}}}},
        "response_urls": [],
    }
    reply = interact(base, submission)
    assert reply.status == 200 and reply.text == ""  # an empty ack closes the modal
    [entry] = logged(core, "Which command installs widgets?")
    assert (entry.rating, entry.comment) == ("down", "It should say which node first")


# --- refused, or answered once ---------------------------------------------------------------

@pytest.mark.parametrize("how", ["unsigned", "forged", "stale", "tampered", "future"])
def test_an_unsigned_forged_or_replayed_request_is_refused_before_any_work(base: str, fake: FakeSlack,
                                                                           core: Pgcite, how: str):
    event, _ = mention(fake, "C1", f"What is the default spin rate ({how})?")
    body = json.dumps(event).encode()
    calls = len(fake.calls)
    if how == "unsigned":
        reply = post(base, body, "application/json", signed=False)
    elif how == "forged":
        reply = post(base, body, "application/json", secret="not-the-secret")
    elif how == "stale":  # a request recorded and sent again six minutes later
        reply = post(base, body, "application/json", timestamp=int(time.time()) - 360)
    elif how == "future":
        reply = post(base, body, "application/json", timestamp=int(time.time()) + 360)
    else:  # signed, then changed on the way
        headers = sign(SECRET, body)
        changed = body.replace(b"C1", b"C2")
        reply = call(base, "/slack/events", changed, headers={"Content-Type": "application/json", **headers})
    assert reply.status == 401 and reply.body["error"]["message"].startswith("not a request from Slack")
    assert "\n" not in reply.body["error"]["message"]
    time.sleep(0.5)
    assert len(fake.calls) == calls and not logged(core, f"What is the default spin rate ({how})?")


def test_a_delivery_slack_retries_is_answered_once(base: str, fake: FakeSlack, core: Pgcite):
    event, ts = mention(fake, "C1", "Where do I write for support?")
    assert deliver(base, event).status == 200
    retried = deliver(base, event, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert retried.status == 200
    answer_in(fake, "C1", ts)
    # The same message again under another event id (a second subscription): still once.
    deliver(base, {**event, "event_id": "EvOTHER" + ts.replace(".", "")})
    time.sleep(1.0)
    assert len(bot_replies(fake, "C1", ts)) == 1
    assert len(logged(core, "Where do I write for support?")) == 1


def test_deliveries_at_the_same_moment_are_answered_once(base: str, fake: FakeSlack, core: Pgcite):
    event, ts = mention(fake, "C1", "What do widgets need to run?")
    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(lambda n: deliver(base, event, headers={"X-Slack-Retry-Num": str(n)}).status,
                                 range(4)))
    assert statuses == [200] * 4
    answer_in(fake, "C1", ts)
    time.sleep(1.0)
    assert len(bot_replies(fake, "C1", ts)) == 1 and len(logged(core, "What do widgets need to run?")) == 1


def test_a_channel_reads_only_the_sources_it_is_mapped_to(base: str, fake: FakeSlack, core: Pgcite):
    # C2 reads g (gadgets) only: the widgets' answer is not its to give.
    event, ts = mention(fake, "C2", "What is the default spin rate?")
    deliver(base, event)
    shown = text_of(answer_in(fake, "C2", ts))
    assert shown.startswith(render.escape(REFUSAL)) and "widgets" not in shown and "40" not in shown
    # C1 reads w (widgets) only.
    event, ts = mention(fake, "C1", "How long does a gadget take to charge?")
    deliver(base, event)
    shown = text_of(answer_in(fake, "C1", ts))
    assert "gadgets.dev" not in shown and "3 hours" not in shown
    event, ts = mention(fake, "C2", "How long does a gadget take to charge?")
    deliver(base, event)
    shown = text_of(answer_in(fake, "C2", ts))
    assert "3 hours" in shown and "<https://gadgets.dev/" in shown and "widgets" not in shown
    assert {e.scope for e in logged(core, "How long does a gadget take to charge?")} == {("w",), ("g",)}


def test_a_direct_message_is_answered_in_its_thread(base: str, fake: FakeSlack, core: Pgcite):
    text = "What is the default spin rate? (asked directly)"
    ts = fake.user_message("D1", "U3", text)
    event = {"type": "message", "channel_type": "im", "user": "U3", "text": text, "ts": ts, "channel": "D1",
             "event_ts": ts}
    deliver(base, envelope(event))
    assert "40 turns per second" in text_of(answer_in(fake, "D1", ts))
    # The bot's own posts and edits come back as message events: never answered.
    deliver(base, envelope({**event, "user": BOT_USER, "bot_id": "BBOT", "ts": fake.next_ts()}))
    deliver(base, envelope({**event, "subtype": "message_changed", "ts": fake.next_ts()}))
    time.sleep(1.0)
    assert len(logged(core, text)) == 1


def test_an_unmapped_channel_gets_no_answer(base: str, fake: FakeSlack, core: Pgcite):
    event, ts = mention(fake, "C9", "What is the default spin rate in C9?")
    assert deliver(base, event).status == 200
    note = fake.wait_for(lambda: [c for c in fake.calls_of("chat.postEphemeral") if c["channel"] == "C9"])
    assert note[0]["user"] == "U1" and "not set up" in note[0]["text"]
    assert not bot_replies(fake, "C9", ts) and not logged(core, "What is the default spin rate in C9?")


def test_a_question_over_the_length_limit_is_told_so(base: str, fake: FakeSlack, core: Pgcite):
    event, ts = mention(fake, "C1", "spin " * 1000)
    deliver(base, event)
    reply = fake.wait_for(lambda: bot_replies(fake, "C1", ts))[0]
    assert "at most 4000 characters" in reply["text"] and "(this one has 4999)" in reply["text"]
    assert not any(e.question.startswith("spin spin") for e in core.log_entries())


# --- faults ----------------------------------------------------------------------------------

def test_429_and_5xx_while_updating_still_deliver_the_final_answer(base: str, fake: FakeSlack, core: Pgcite):
    fake.fail("chat.update", 429, times=3, retry_after=1)
    fake.fail("chat.update", 500, times=3)
    event, ts = mention(fake, "C1", "What is the default spin rate?")
    deliver(base, event)
    answer = answer_in(fake, "C1", ts)
    assert "40 turns per second" in text_of(answer)
    assert len(bot_replies(fake, "C1", ts)) == 1  # updated in place, not posted twice
    assert len(fake.calls_of("chat.update")) >= 7


def test_an_answer_left_by_a_server_that_stopped_is_finished_by_the_next(fake: FakeSlack, core: Pgcite):
    question = "What is the default spin rate? (before the restart)"
    ts = fake.user_message("C1", "U1", f"<@{BOT_USER}> {question}")
    placeholder = fake._call("chat.postMessage", {"channel": "C1", "thread_ts": ts, "text": render.THINKING})[1]["ts"]
    with core.writer() as store:  # what the stopped server left: the event taken, its placeholder posted
        pending = chat_sql.Pending(f"T1/C1/{ts}", TEAM, "C1", "U1", ts, placeholder, question)
        assert chat_sql.take(store, pending, lease=0)
    with running(core):  # a server starting finishes it in the same reply
        answer = answer_in(fake, "C1", ts)
    assert answer["ts"] == placeholder and "40 turns per second" in text_of(answer)
    assert len(logged(core, question)) == 1


def test_an_answer_that_waited_past_its_lease_is_left_to_the_server_that_took_it(fake: FakeSlack, core: Pgcite):
    """A busy server's queued job starts after its lease ran out and another server took the delivery:
    it stops without a word to Slack, and the other answers once."""
    question = "What is the default spin rate? (a long wait in the queue)"
    ts = fake.user_message("C1", "U1", f"<@{BOT_USER}> {question}")
    pending = chat_sql.Pending(f"T1/C1/{ts}", TEAM, "C1", "U1", ts, "", question)
    with core.writer() as store:
        late = chat_sql.take(store, pending, lease=0)  # taken, and its lease already over
        [taken] = [p for p in chat_sql.take_stalled(store, "slack", 60) if p.event_id == pending.event_id]
    assert late and taken.holder and taken.holder != late.holder
    bot = SlackBot(core, follow_up=lambda question: False)
    scope = bot.channels.scope(TEAM, "C1", direct=False)
    bot._start(late, scope)
    bot._answer(dataclasses.replace(late, reply="1.000001"), scope)  # had it posted its placeholder already
    assert bot_replies(fake, "C1", ts) == [] and logged(core, question) == []
    with pytest.raises(bots.LeaseLost), core.writer() as store:
        assert not chat_sql.started(store, late, 60) and not chat_sql.finish(store, late)
        bots.Lease(core, late)(now=True)
    bot._start(taken, scope)
    assert "40 turns per second" in text_of(answer_in(fake, "C1", ts))
    assert len(bot_replies(fake, "C1", ts)) == 1 and len(logged(core, question)) == 1
    with core.writer() as store:  # finished, once
        assert not chat_sql.renew(store, taken, 60) and not chat_sql.finish(store, taken)


def test_a_placeholder_posted_after_the_lease_ran_out_is_deleted(fake: FakeSlack, core: Pgcite):
    """The placeholder's post slept through a rate limit; meanwhile the lease ran out and another
    server took the delivery (and answers it): the late placeholder must not stay in the thread."""
    question = "What is the default spin rate? (a rate-limited placeholder)"
    ts = fake.user_message("C1", "U1", f"<@{BOT_USER}> {question}")
    pending = chat_sql.Pending(f"T1/C1/{ts}", TEAM, "C1", "U1", ts, "", question)
    with core.writer() as store:
        held = chat_sql.take(store, pending, lease=60)
    assert held
    fake.fail("chat.postMessage", 429, retry_after=2)
    taken: list[chat_sql.Pending] = []
    posts = len(fake.calls_of("chat.postMessage"))

    def another_server_takes_it() -> None:
        fake.wait_for(lambda: len(fake.calls_of("chat.postMessage")) > posts)  # the post sleeps on its 429
        with core.writer() as store:
            store.conn.execute("UPDATE chat_events SET lease_until = now() - interval '1 second' "
                               "WHERE event_id = %s", (pending.event_id,))
            taken.extend(p for p in chat_sql.take_stalled(store, "slack", 60) if p.event_id == pending.event_id)

    other = threading.Thread(target=another_server_takes_it)
    other.start()
    bot = SlackBot(core, follow_up=lambda question: False)
    bot._start(held, bot.channels.scope(TEAM, "C1", direct=False))
    other.join(timeout=30)
    assert taken and taken[0].holder != held.holder
    assert len(fake.calls_of("chat.delete")) == 1 and bot_replies(fake, "C1", ts) == []
    assert logged(core, question) == []  # this server did not answer: the other one does


def not_recorded(reply: Reply, what: str, then: str) -> bool:
    """A 503 whose JSON error says, in one line, that `what` was not recorded and what happens next."""
    message = reply.body.get("error", {}).get("message", "")
    return (reply.status == 503 and "\n" not in message and message.endswith(then)
            and message.startswith(f"{what} was not recorded: the database did not take it"))


def test_an_event_the_database_cannot_record_is_not_acknowledged(base: str, fake: FakeSlack, core: Pgcite,
                                                                  settings, admin_dsn: str):
    """Acknowledged and then lost, a question is never answered (no sweep finds what was never
    recorded): Slack gets a 503 instead, and delivers the event again."""
    with Pgcite(dataclasses.replace(settings, **slack_of(fake)), embedder=core.embedder) as app, running(app) as down:
        event, ts = mention(fake, "C1", "What is the default spin rate? (database down)")
        with refusing_connections(settings.database_url, admin_dsn):
            reply = deliver(down, event)
    assert not_recorded(reply, "the question", "Slack delivers it again") and bot_replies(fake, "C1", ts) == []
    # The same event, delivered again to a server whose database is up: answered.
    assert deliver(base, event).status == 200
    assert "40 turns per second" in text_of(answer_in(fake, "C1", ts))


def test_a_click_the_database_cannot_record_is_not_acknowledged(fake: FakeSlack, core: Pgcite, settings,
                                                                admin_dsn: str):
    """A rating was acknowledged before it was written: when the database could not take it, Slack
    had its 200 and the rating was lost without a word. Now Slack gets a 503 (it shows the person
    that the click failed) and no box for a comment opens on a rating that is not there."""
    opened = len(fake.calls_of("views.open"))
    with (Pgcite(dataclasses.replace(settings, **slack_of(fake)), embedder=core.embedder) as app,
          running(app) as down, refusing_connections(settings.database_url, admin_dsn)):
        reply = interact(down, click({"ts": fake.next_ts(), "blocks": []}, str(uuid.uuid4())))
    assert not_recorded(reply, "the rating", "click again")
    assert len(fake.calls_of("views.open")) == opened


def test_ten_events_at_once_while_other_pgcite_processes_start_and_stop_are_each_answered_once(
        fake: FakeSlack, embedder, server_tmp: Path):
    """Issue 63's battery. Every connection of a server went through the embedded PostgreSQL wheel's
    lock, which is between processes and not safe between threads: while another pgcite process
    started or stopped an embedded PostgreSQL on the machine (a sync from cron, a second server),
    events' threads failed after Slack had its 200, and 6 to 14 questions of 16 were never answered.
    Here a real server on an embedded PostgreSQL of its own gets 10 signed events at once while
    `pgcite status` and `pgcite stop` start and stop another home's, the burst sent while one is
    starting: each event gets its 200, and each question exactly one reply, the finished answer (no
    "Looking in the docs…" left)."""
    home, others = server_tmp / "home", [server_tmp / f"other{n}" for n in range(100)]
    stop, exits = threading.Event(), []

    def pgcite(command: str, home: Path) -> None:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")}, "PGCITE_HOME": str(home)}
        done = subprocess.run([str(Path(sys.executable).with_name("pgcite")), command], env=env,
                              capture_output=True, timeout=120)
        exits.append(done.returncode)

    def churn() -> None:  # a fresh home each time: its start holds the wheel's lock longest (initdb)
        for other in others:
            if stop.is_set():
                return
            pgcite("status", other)
            pgcite("stop", other)

    def starting() -> bool:
        return any((other / "postgres").exists() and not server.running_pid(other) for other in others)

    churner = threading.Thread(target=churn, daemon=True)
    try:
        with Pgcite(Settings(home=home, **slack_of(fake)), embedder=embedder) as app:
            app.ingest(write_folder(server_tmp / "w", DOCS), source="w", base_url="https://widgets.dev/")
            app.warm_up()
            with running(app) as base:
                asked = [mention(fake, "C1", f"What is the default spin rate? (battery {n})") for n in range(10)]
                churner.start()
                deadline = time.monotonic() + 60
                while not starting() and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert starting(), "no other home started within a minute"
                with ThreadPoolExecutor(len(asked)) as pool:
                    statuses = list(pool.map(lambda sent: deliver(base, sent[0]).status, asked))
                assert statuses == [200] * 10  # each recorded, none refused with 503 for Slack to send again
                answers = [answer_in(fake, "C1", ts, timeout=180) for _, ts in asked]
                time.sleep(1.0)  # a second reply, were there one, would be posted by now
    finally:
        stop.set()
        churner.join(240)
        for other in (home, *others):
            server.stop(other)
    assert all("40 turns per second" in text_of(answer) for answer in answers)
    assert [len(bot_replies(fake, "C1", ts)) for _, ts in asked] == [1] * 10
    assert len(exits) >= 2 and set(exits) == {0}  # the other processes started and stopped, and worked


def test_slack_checks_the_request_url_with_a_signed_challenge(base: str):
    challenge = {"token": "legacy-verification-token", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
                 "type": "url_verification"}
    reply = deliver(base, challenge)
    assert reply.status == 200 and reply.body == {"challenge": challenge["challenge"]}
    assert deliver(base, challenge, secret="guessed").status == 401


def test_an_empty_mention_gets_a_hint(base: str, fake: FakeSlack):
    event, ts = mention(fake, "C1", "")
    deliver(base, event)
    assert "Ask a question after the mention" in fake.wait_for(lambda: bot_replies(fake, "C1", ts))[0]["text"]


def test_a_reply_that_cannot_be_updated_is_posted_again(fake: FakeSlack):
    client = WebClient(token=TOKEN, base_url=fake.url)
    root = fake.user_message("C5", "U1", "a question")
    placeholder = client.chat_postMessage(channel="C5", thread_ts=root, text="…")["ts"]
    fake.fail("chat.update", 200, error="message_not_found")  # someone deleted the placeholder
    reply = streaming.Reply(client, "C5", root, placeholder, sleep=lambda seconds: None)
    assert reply.finish("The answer.", [{"type": "section", "text": {"type": "mrkdwn", "text": "The answer."}}])
    assert [m["text"] for m in bot_replies(fake, "C5", root)] == ["…", "The answer."]


def test_a_growing_reply_is_updated_at_most_once_an_interval_and_a_refused_update_skipped(fake: FakeSlack):
    client = WebClient(token=TOKEN, base_url=fake.url)
    root = fake.user_message("C6", "U1", "a question")
    placeholder = client.chat_postMessage(channel="C6", thread_ts=root, text="…")["ts"]
    reply = streaming.Reply(client, "C6", root, placeholder)
    updates = lambda: [c["text"] for c in fake.calls_of("chat.update") if c["ts"] == placeholder]  # noqa: E731
    reply.grow("Set", [])
    assert updates() == []  # the placeholder is under a second old
    reply.INTERVAL = 0
    reply.grow("Set spin", [])
    fake.fail("chat.update", 429, retry_after=30)
    reply.grow("Set spin_rate", [])  # refused: skipped, not waited for
    reply.grow("Set spin_rate to", [])  # none until the Retry-After is over
    assert updates() == ["Set spin", "Set spin_rate"]
    assert fake.message("C6", placeholder)["text"] == "Set spin"
    assert reply.finish("Set spin_rate to control speed.", [])  # the final one always goes
    assert fake.message("C6", placeholder)["text"] == "Set spin_rate to control speed."


# --- the parts -------------------------------------------------------------------------------

def test_the_channel_map_reads_like_a_keys_scope():
    channels = ChannelMap.parse("T1/C1=a,b; T1/dm=a; T1/*=c; T2/C5=*")
    assert channels.scope("T1", "C1") == Scope(("a", "b"))
    assert channels.scope("T1", "D7", direct=True) == Scope(("a",))
    assert channels.scope("T1", "C8") == Scope(("c",))
    assert channels.scope("T2", "C5") == Scope(None)
    assert channels.scope("T2", "C6") is None and channels.scope("T3", "C1") is None
    for bad in ("T1/C1", "T1=a", "T1/C1=", "T1/C1=a;T1/C1=b", "T1/C<1>=a", "T1/C1=no way"):
        with pytest.raises(PgciteError, match="PGCITE_SLACK_CHANNELS"):
            ChannelMap.parse(bad)


def test_document_text_cannot_make_links_or_mentions():
    hit = SearchHit(id="w:a.md#0", source="w", path="a.md", url="https://widgets.dev/a#x|y>", title="A",
                    heading="H", breadcrumb="A <!channel> > H", content="", distance=0.1)
    answer = Answer(question="q", text="Ping <!channel> & see <https://evil.example|here> [1].", refused=False,
                    generator="extractive", citations=[1], sources=[Passage(1, hit)], dropped=[], checks=Checks(),
                    usage=Usage(), id="00000000-0000-0000-0000-000000000001")
    text, blocks = render.answer_message(answer)
    shown = "\n".join(b["text"]["text"] for b in blocks if b["type"] == "section")
    assert "Ping &lt;!channel&gt; &amp; see &lt;https://evil.example|here&gt; <https://widgets.dev/a#x%7Cy&gt;|[1]>." in shown
    assert "[1] <https://widgets.dev/a#x%7Cy&gt;|A &lt;!channel&gt; &gt; H>" in shown
    assert "<!" not in text and "<http" not in text
    assert render.question_of(f"<@{BOT_USER}> how &amp; why &lt;x&gt; <https://a.dev|this> in <#C1|general>?") == (
        "how & why <x> this in #general?")
