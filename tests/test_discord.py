"""The Discord bot over HTTP interactions: requests signed with a real Ed25519 key, as Discord signs
them, sent to a real `pgcite serve` (uvicorn on loopback) configured with its public key, whose
answers go to a fake of Discord's REST API speaking its wire format (tests/fake_discord.py), with a
real database and the bundled model (the offline generator answers)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pgcite.answer.checks import Checks
from pgcite.answer.flow import Answer
from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.messaging import discord_render as render
from pgcite.messaging.channels import DISCORD, ChannelMap
from pgcite.messaging.discord_api import DiscordApi, Original
from pgcite.store import chat_sql
from pgcite.vocabulary import REFUSAL, Passage, SearchHit, Usage
from tests.fake_discord import APPLICATION, BOT_TOKEN, FakeDiscord, Signer
from tests.http_server import Reply, call, running, warm_app
from tests.test_slack import DOCS, GADGETS, not_recorded, refusing_connections

pytestmark = pytest.mark.slow

GUILD, WIDGETS, GADGET_CHANNEL, UNMAPPED = "9001", "9101", "9102", "9199"
CHANNELS = f"{GUILD}/{WIDGETS}=w; {GUILD}/{GADGET_CHANNEL}=g"
_ids = itertools.count(1_300_000_000_000_000_000)


@pytest.fixture(scope="module")
def signer():
    return Signer()


@pytest.fixture(scope="module")
def fake():
    with FakeDiscord() as server:
        yield server


def discord_of(fake: FakeDiscord, signer: Signer) -> dict:
    """The settings of a server that answers Discord through `fake`, `signer` being Discord."""
    return dict(discord_public_key=signer.public_hex, discord_application_id=APPLICATION, discord_api_url=fake.url,
                discord_channels=CHANNELS)


@pytest.fixture(scope="module")
def core(admin_dsn: str, embedder, tmp_path_factory, fake: FakeDiscord, signer: Signer):
    sources = {"w": (DOCS, "https://widgets.dev/"), "g": (GADGETS, "https://gadgets.dev/")}
    with warm_app(admin_dsn, embedder, tmp_path_factory.mktemp("discord"), sources, **discord_of(fake, signer)) as app:
        yield app


@pytest.fixture(scope="module")
def base(core: Pgcite):
    with running(core) as url:
        yield url


# --- what Discord sends ----------------------------------------------------------------------

def send(base: str, signer: Signer, interaction: dict | bytes, *, timestamp: int | None = None,
         signed: bool = True, key: Signer | None = None) -> Reply:
    body = interaction if isinstance(interaction, bytes) else json.dumps(interaction).encode()
    headers = (key or signer).headers(body, timestamp) if signed else {}
    return call(base, "/discord/interactions", body, headers={"Content-Type": "application/json", **headers})


def interaction(kind: int, data: dict | None, channel: str = WIDGETS, user: str = "5001") -> dict:
    ident = str(next(_ids))
    return {
        "id": ident, "application_id": APPLICATION, "type": kind, "token": f"tok-{uuid.uuid4().hex}",
        "version": 1, "guild_id": GUILD, "channel_id": channel, "app_permissions": "2147483648", "locale": "en-US",
        "guild_locale": "en-US", "channel": {"id": channel, "guild_id": GUILD, "type": 0, "name": "docs"},
        "member": {"user": {"id": user, "username": "ana", "global_name": "Ana", "discriminator": "0"},
                   "roles": [], "permissions": "0", "joined_at": "2024-01-01T00:00:00+00:00"},
        "entitlements": [], "authorizing_integration_owners": {"0": GUILD}, "context": 0,
        **({"data": data} if data is not None else {}),
    }


def ask(question: str, channel: str = WIDGETS, user: str = "5001") -> dict:
    """`/ask question:...`, as Discord delivers the slash command."""
    return interaction(2, {"id": "2001", "name": "ask", "type": 1, "guild_id": GUILD,
                           "options": [{"name": "question", "type": 3, "value": question}]}, channel, user)


def answered(fake: FakeDiscord, token: str) -> dict:
    """The interaction's message once it is the finished answer (it carries the buttons)."""
    return fake.wait_for(lambda: (m := fake.original(token)) and m.get("components") and m)


def logged(core: Pgcite, question: str):
    return [e for e in core.log_entries() if e.question == question]


def custom_ids(message: dict) -> list[str]:
    return [b["custom_id"] for row in message["components"] for b in row["components"]]


# --- a question, a message command, a click ---------------------------------------------------

def test_a_ping_is_answered_with_a_pong(base: str, signer: Signer):
    reply = send(base, signer, {"id": "1", "application_id": APPLICATION, "type": 1, "token": "t", "version": 1})
    assert reply.status == 200 and reply.body == {"type": 1}


def test_ask_is_deferred_then_edited_into_a_cited_answer(base: str, signer: Signer, fake: FakeDiscord,
                                                         core: Pgcite):
    sent = ask("What is the default spin rate?")
    started = time.monotonic()
    reply = send(base, signer, sent)
    assert reply.status == 200 and reply.body == {"type": 5} and time.monotonic() - started < 3
    message = answered(fake, sent["token"])
    shown = message["content"]
    assert shown.startswith("\\> What is the default spin rate?\n") and "40 turns per second" in shown
    assert re.search(r"\[\[\d\]\]\(https://widgets\.dev/tuning[^)\s]*\)", shown), shown  # [n] links to page#anchor
    assert "\n\n**Sources**\n[1] [Tuning \\> Spin rate](https://widgets.dev/tuning" in shown
    assert len(shown) <= 2000 and message["allowed_mentions"] == {"parse": []}
    [row] = message["components"]
    assert [(b["type"], b["style"], b["label"]) for b in row["components"]] == [(2, 3, "Helpful"), (2, 4, "Not helpful")]
    [entry] = logged(core, "What is the default spin rate?")
    assert (entry.channel, entry.key_name, entry.scope) == ("discord", f"{GUILD}/{WIDGETS}/5001", ("w",))
    assert custom_ids(message) == [f"pgcite:up:{entry.id}", f"pgcite:down:{entry.id}"]
    edits = fake.calls_of("edit", sent["token"])
    assert edits and all(path.startswith(f"/api/v10/webhooks/{APPLICATION}/") for _, path, _ in edits)
    assert not fake.calls_of("follow_up", sent["token"])


def test_the_message_command_asks_the_message_it_is_used_on(base: str, signer: Signer, fake: FakeDiscord,
                                                            core: Pgcite):
    target = "7777"
    sent = interaction(2, {"id": "2002", "name": "Ask pgcite", "type": 3, "guild_id": GUILD, "target_id": target,
                           "resolved": {"messages": {target: {
                               "id": target, "channel_id": WIDGETS, "type": 0, "author": {"id": "5002"},
                               "content": "<@5001> which command installs **widgets**? <:thinking:123456>",
                               "timestamp": "2024-01-01T00:00:00+00:00"}}}})
    assert send(base, signer, sent).body == {"type": 5}
    message = answered(fake, sent["token"])
    assert "pip install widgets" in message["content"].replace("\\", "")
    assert logged(core, "which command installs **widgets**? :thinking:")


def test_a_click_and_its_comment_reach_the_answer_log(base: str, signer: Signer, fake: FakeDiscord, core: Pgcite):
    sent = ask("Which command installs widgets?")
    send(base, signer, sent)
    down = custom_ids(answered(fake, sent["token"]))[1]
    click = interaction(3, {"custom_id": down, "component_type": 2}, user="5003")
    reply = send(base, signer, click)
    assert reply.status == 200 and reply.body["type"] == 9  # a modal for the comment
    modal = reply.body["data"]
    assert modal["custom_id"].startswith("pgcite_comment:down:") and len(modal["title"]) <= 45
    [entry] = logged(core, "Which command installs widgets?")
    assert (entry.rating, entry.comment) == ("down", None)
    text_input = {**modal["components"][0]["components"][0], "value": "It should say which node first"}
    submitted = interaction(5, {"custom_id": modal["custom_id"],
                                "components": [{"type": 1, "components": [
                                    {"type": 4, "custom_id": text_input["custom_id"], "value": text_input["value"]}]}]},
                            user="5003")
    reply = send(base, signer, submitted)
    assert reply.body["type"] == 4 and reply.body["data"]["flags"] == 64
    [entry] = logged(core, "Which command installs widgets?")
    assert (entry.rating, entry.comment) == ("down", "It should say which node first")
    # A click in a channel that does not read the answer's source records nothing.
    elsewhere = send(base, signer, interaction(3, {"custom_id": custom_ids(answered(fake, sent["token"]))[0],
                                                   "component_type": 2}, channel=GADGET_CHANNEL))
    assert elsewhere.body["type"] == 4 and elsewhere.body["data"]["flags"] == 64
    assert logged(core, "Which command installs widgets?")[0].rating == "down"


# --- refused, or answered once ---------------------------------------------------------------

@pytest.mark.parametrize("how", ["unsigned", "forged", "stale", "future", "tampered", "not hex"])
def test_an_unsigned_forged_or_replayed_request_is_refused_before_any_work(base: str, signer: Signer,
                                                                           fake: FakeDiscord, core: Pgcite, how: str):
    question = f"What is the default spin rate ({how})?"
    body = json.dumps(ask(question)).encode()
    calls = len(fake.calls)
    if how == "unsigned":
        reply = send(base, signer, body, signed=False)
    elif how == "forged":  # signed by another key
        reply = send(base, signer, body, key=Signer())
    elif how == "stale":  # recorded and sent again six minutes later
        reply = send(base, signer, body, timestamp=int(time.time()) - 360)
    elif how == "future":
        reply = send(base, signer, body, timestamp=int(time.time()) + 360)
    elif how == "tampered":  # signed, then changed on the way
        headers = signer.headers(body)
        reply = call(base, "/discord/interactions", body.replace(WIDGETS.encode(), GADGET_CHANNEL.encode()),
                     headers={"Content-Type": "application/json", **headers})
    else:
        headers = {**signer.headers(body), "X-Signature-Ed25519": "zz" * 64}
        reply = call(base, "/discord/interactions", body, headers={"Content-Type": "application/json", **headers})
    assert reply.status == 401 and reply.body["error"]["message"].startswith("not a request from Discord")
    assert "\n" not in reply.body["error"]["message"]
    time.sleep(0.5)
    assert len(fake.calls) == calls and not logged(core, question)


def test_an_interaction_delivered_twice_is_answered_once(base: str, signer: Signer, fake: FakeDiscord, core: Pgcite):
    sent = ask("How do I install widgets?")
    assert send(base, signer, sent).body == {"type": 5}
    assert send(base, signer, sent).body == {"type": 5}
    assert "pip install widgets" in answered(fake, sent["token"])["content"]
    time.sleep(1.5)
    assert len(logged(core, "How do I install widgets?")) == 1
    assert not fake.calls_of("follow_up", sent["token"])


def test_a_question_the_database_cannot_record_is_not_deferred(signer: Signer, fake: FakeDiscord, core: Pgcite,
                                                                settings, admin_dsn: str):
    """A deferred response promises an answer ("pgcite is thinking…"), so it is sent only once the
    question is recorded (what a stopped server leaves, a sweep finishes). When the database cannot take
    it: a 503 saying so in one line, and what to do. Discord sends an interaction once and shows its
    asker that it failed; nothing is edited later."""
    sent = ask("What is the default spin rate? (database down)")
    with (Pgcite(dataclasses.replace(settings, **discord_of(fake, signer)), embedder=core.embedder) as app,
          running(app) as down, refusing_connections(settings.database_url, admin_dsn)):
        reply = send(down, signer, sent)
    assert not_recorded(reply, "the question", "ask again")
    time.sleep(0.5)
    assert fake.original(sent["token"]) is None and not fake.calls_of("edit", sent["token"])


def test_a_click_the_database_cannot_record_says_so_without_saying_where_the_database_is(
        base: str, signer: Signer, fake: FakeDiscord, core: Pgcite, settings, admin_dsn: str):
    """The asker saw "Not recorded: cannot connect to PostgreSQL at HOST:PORT ...": where the database
    is, for anyone in the channel. The operators' log has it; the chat is told what to do."""
    sent = ask("Which command installs widgets? (a click while the database is down)")
    send(base, signer, sent)
    down = custom_ids(answered(fake, sent["token"]))[1]
    with (Pgcite(dataclasses.replace(settings, **discord_of(fake, signer)), embedder=core.embedder) as app,
          running(app) as url, refusing_connections(settings.database_url, admin_dsn)):
        reply = send(url, signer, interaction(3, {"custom_id": down, "component_type": 2}, user="5004"))
    assert reply.status == 200, (reply.status, reply.text)
    shown = reply.body["data"]["content"].replace("\\", "")  # Discord's Markdown escapes
    assert reply.body["type"] == 4 and reply.body["data"]["flags"] == 64, reply.body
    assert shown == "Not recorded: pgcite's database is not answering; try again in a moment", shown


def test_a_channel_reads_only_the_sources_it_is_mapped_to(base: str, signer: Signer, fake: FakeDiscord,
                                                          core: Pgcite):
    sent = ask("What is the default spin rate?", channel=GADGET_CHANNEL)
    send(base, signer, sent)
    shown = answered(fake, sent["token"])["content"]
    assert render.escape(REFUSAL) in shown and "widgets" not in shown and "40" not in shown
    sent = ask("How long does a gadget take to charge?")
    send(base, signer, sent)
    shown = answered(fake, sent["token"])["content"]
    assert "gadgets.dev" not in shown and "3 hours" not in shown
    sent = ask("How long does a gadget take to charge?", channel=GADGET_CHANNEL)
    send(base, signer, sent)
    shown = answered(fake, sent["token"])["content"]
    assert "3 hours" in shown and "(https://gadgets.dev/" in shown and "widgets" not in shown
    assert {e.scope for e in logged(core, "How long does a gadget take to charge?")} == {("w",), ("g",)}


def test_an_unmapped_channel_gets_a_note_only_its_asker_sees(base: str, signer: Signer, fake: FakeDiscord,
                                                             core: Pgcite):
    calls = len(fake.calls)
    reply = send(base, signer, ask("What is the default spin rate in an unmapped channel?", channel=UNMAPPED))
    assert reply.status == 200 and reply.body["type"] == 4
    assert reply.body["data"]["flags"] == 64 and "not set up" in reply.body["data"]["content"]
    direct = {**ask("And in a direct message?"), "guild_id": None, "member": None, "user": {"id": "5001"}}
    assert send(base, signer, direct).body["data"]["flags"] == 64
    time.sleep(0.5)
    assert len(fake.calls) == calls and not logged(core, "What is the default spin rate in an unmapped channel?")


def test_a_question_over_the_length_limit_is_told_so(base: str, signer: Signer, core: Pgcite):
    reply = send(base, signer, ask("spin " * 1000))
    assert reply.body["type"] == 4 and reply.body["data"]["flags"] == 64
    assert "at most 4000 characters" in reply.body["data"]["content"]
    assert not any(e.question.startswith("spin spin") for e in core.log_entries())


def test_a_body_that_is_not_an_interaction_is_a_400(base: str, signer: Signer):
    assert send(base, signer, b"not json").status == 400
    assert send(base, signer, {"type": 99, "id": "1"}).status == 400


# --- faults ----------------------------------------------------------------------------------

def test_429_and_5xx_while_editing_still_deliver_the_final_answer(base: str, signer: Signer, fake: FakeDiscord,
                                                                  core: Pgcite):
    fake.fail("edit", 429, times=3, retry_after=0.5)
    fake.fail("edit", 500, times=3)
    sent = ask("What do widgets need to run?")
    send(base, signer, sent)
    message = answered(fake, sent["token"])
    assert "Python 3.11" in message["content"]
    assert not fake.calls_of("follow_up", sent["token"])  # edited in place, not sent twice
    assert len(fake.calls_of("edit", sent["token"])) >= 7


def test_an_answer_left_by_a_server_that_stopped_is_finished_by_the_next(fake: FakeDiscord, core: Pgcite):
    question = "What is the default spin rate? (before the restart)"
    token = f"tok-{uuid.uuid4().hex}"
    with core.writer() as store:  # what the stopped server left: the interaction taken and deferred
        pending = chat_sql.Pending(str(next(_ids)), GUILD, WIDGETS, "5001", "", token, question, "discord")
        assert chat_sql.take(store, pending, lease=0)
    with running(core):  # a server starting finishes it in the same message
        message = answered(fake, token)
    assert "40 turns per second" in message["content"] and len(logged(core, question)) == 1


def test_a_message_that_cannot_be_edited_is_sent_as_a_follow_up(fake: FakeDiscord):
    api = DiscordApi(fake.url, APPLICATION)
    fake.delete_original("tok-deleted")
    reply = Original(api, "tok-deleted", "test", sleep=lambda seconds: None)
    assert reply.finish(render.note("The answer."))
    assert [m["content"] for m in fake.follow_ups["tok-deleted"]] == ["The answer."]
    assert len(fake.calls_of("edit", "tok-deleted")) == 1  # a deleted message is not tried again


# --- registering -----------------------------------------------------------------------------

def pgcite(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")}
    return subprocess.run([sys.executable, "-m", "pgcite", *args], cwd=tmp_path, capture_output=True, text=True,
                          env={**environ, **env}, timeout=60)


def test_registering_the_commands_is_one_call(fake: FakeDiscord, tmp_path: Path):
    env = {"PGCITE_DISCORD_APPLICATION_ID": APPLICATION, "PGCITE_DISCORD_API_URL": fake.url}
    done = pgcite(["discord", "register"], tmp_path, PGCITE_DISCORD_BOT_TOKEN=BOT_TOKEN, **env)
    assert done.returncode == 0, done.stderr
    assert "registered /ask, Ask pgcite" in done.stdout
    ask_command, message_command = fake.commands[""]
    assert (ask_command["name"], ask_command["type"], message_command["type"]) == ("ask", 1, 3)
    assert ask_command["options"][0] | {} == {"type": 3, "name": "question", "description": "What you want to know",
                                              "required": True, "max_length": 4000}
    done = pgcite(["discord", "register", "--guild", GUILD], tmp_path, PGCITE_DISCORD_BOT_TOKEN=BOT_TOKEN, **env)
    assert done.returncode == 0 and [c["name"] for c in fake.commands[GUILD]] == ["ask", "Ask pgcite"]
    refused = pgcite(["discord", "register"], tmp_path, PGCITE_DISCORD_BOT_TOKEN="wrong", **env)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines() == [
        "error: registering the commands failed: Discord answered 401: 401: Unauthorized; check "
        "PGCITE_DISCORD_BOT_TOKEN"]
    missing = pgcite(["discord", "register"], tmp_path, **env)
    assert missing.returncode == 1 and "PGCITE_DISCORD_BOT_TOKEN is not set" in missing.stderr


# --- the parts -------------------------------------------------------------------------------

def test_the_channel_map_reads_discord_ids():
    channels = ChannelMap.parse("9001/9101=a,b; 9001/*=c", DISCORD)
    assert channels.scope("9001", "9101").sources == ("a", "b") and channels.scope("9001", "9555").sources == ("c",)
    assert channels.scope("9002", "9101") is None
    with pytest.raises(PgciteError, match="PGCITE_DISCORD_CHANNELS: .* GUILD/CHANNEL"):
        ChannelMap.parse("9001=a", DISCORD)


def _answer(text: str, hits: list[SearchHit], **checks) -> Answer:
    return Answer(question="q", text=text, refused=False, generator="extractive", citations=[1 + i for i in range(len(hits))],
                  sources=[Passage(1 + i, h) for i, h in enumerate(hits)], dropped=[], checks=Checks(**checks),
                  usage=Usage(), id="00000000-0000-0000-0000-000000000001")


def _hit(url: str, breadcrumb: str) -> SearchHit:
    return SearchHit(id="w:a.md#0", source="w", path="a.md", url=url, title="A", heading="H", breadcrumb=breadcrumb,
                     content="", distance=0.1)


def test_document_text_cannot_ping_link_or_format():
    hit = _hit("https://widgets.dev/a_(b)#x y", "A @everyone > [H](https://evil.example)")
    text = "Ping @everyone and <@123> <#456>, see [here](https://evil.example) **now** `x` [1]."
    message = render.answer_message(_answer(text, [hit]), "why <@123>?")
    shown = message["content"]
    assert ("Ping \\@everyone and \\<\\@123\\> \\<\\#456\\>, see \\[here\\]\\(https\\://evil.example\\) "
            "\\*\\*now\\*\\* \\`x\\` [[1]](https://widgets.dev/a_%28b%29#x%20y).") in shown
    assert "[1] [A \\@everyone \\> \\[H\\]\\(https\\://evil.example\\)](https://widgets.dev/a_%28b%29#x%20y)" in shown
    assert shown.startswith("\\> why \\<\\@123\\>?\n") and message["allowed_mentions"] == {"parse": []}
    assert render.question_of("<@!1> <@&2> how \\*do\\* I <#3> <:wave:99> <t:1700000000:R>") == "how *do* I :wave:"


def test_a_long_answer_is_trimmed_to_discords_limit_with_its_sources_kept():
    hits = [_hit(f"https://widgets.dev/page-{n}#{'section-' * 8}{n}", f"Page {n} > " + "Long heading " * 6)
            for n in range(1, 9)]
    text = " ".join(f"Sentence {n} says something worth reading about widgets [{1 + n % 8}]." for n in range(120))
    message = render.answer_message(_answer(text, hits, offsite_links=["https://else.example/x"]), "a question?")
    shown = message["content"]
    assert len(shown) <= 2000 and render.CUT in shown
    assert "**Sources**" in shown and "[1] [Page 1" in shown and "Check before you follow" in shown
    body = shown.split(render.CUT)[0]
    assert body.count("[[") == body.count("](https://")  # no link cut in half
    growing = render.growing("a question?", text * 3)
    assert len(growing["content"]) <= 2000 and growing["content"].endswith(" …")
