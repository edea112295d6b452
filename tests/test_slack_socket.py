"""`pgcite slack`: the Slack bot over Socket Mode, against a fake of Slack's Web API (whose
apps.connections.open gives a ws:// URL on loopback) and a fake Socket Mode WebSocket server that
sends an `events_api` envelope and expects its ack, with a real database and the bundled model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pgcite.core import Pgcite
from pgcite.errors import PgciteError
from pgcite.messaging.socket_mode import SocketMode
from pgcite.server.chat import is_follow_up
from tests.fake_slack import APP_TOKEN, TOKEN, FakeSlack, FakeSocketMode
from tests.http_server import warm_app
from tests.test_slack import CHANNELS, DOCS, answer_in, logged, mention, text_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def socket():
    with FakeSocketMode() as server:
        yield server


@pytest.fixture(scope="module")
def fake(socket: FakeSocketMode):
    with FakeSlack(socket=socket) as server:
        yield server


@pytest.fixture(scope="module")
def core(admin_dsn: str, embedder, tmp_path_factory, fake: FakeSlack):
    with warm_app(admin_dsn, embedder, tmp_path_factory.mktemp("socket"), {"w": (DOCS, "https://widgets.dev/")},
                  slack_bot_token=TOKEN, slack_app_token=APP_TOKEN, slack_api_url=fake.url,
                  slack_channels=CHANNELS) as app:
        yield app


def test_a_mention_over_socket_mode_is_acked_and_answered_in_its_thread(core: Pgcite, fake: FakeSlack,
                                                                        socket: FakeSocketMode):
    bot = SocketMode(core, is_follow_up)
    try:
        bot.connect()
        socket.connected()
        event, ts = mention(fake, "C1", "What is the default spin rate? (over Socket Mode)")
        envelope_id = socket.deliver("events_api", event)
        assert socket.acked(envelope_id) == {"envelope_id": envelope_id}
        answer = answer_in(fake, "C1", ts)
        assert "40 turns per second" in text_of(answer) and "<https://widgets.dev/tuning" in text_of(answer)
        [entry] = logged(core, "What is the default spin rate? (over Socket Mode)")
        assert (entry.channel, entry.key_name) == ("slack", "T1/C1/U1")
        assert any(c.get("thread_ts") == ts for c in fake.calls_of("chat.postMessage"))
    finally:
        bot.close()


def test_a_refused_app_token_is_one_line(core: Pgcite, fake: FakeSlack):
    fake.fail("apps.connections.open", 200, error="invalid_auth")  # a revoked token
    bot = SocketMode(core, is_follow_up)
    try:
        with pytest.raises(PgciteError, match=r"^Slack refused PGCITE_SLACK_APP_TOKEN \(invalid_auth\): make a new"):
            bot.connect()
    finally:
        bot.close()


def pgcite(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PGCITE_")}
    return subprocess.run([sys.executable, "-m", "pgcite", "slack"], cwd=tmp_path, capture_output=True, text=True,
                          env={**environ, **env}, timeout=60)


@pytest.mark.parametrize(("token", "says"), [
    ("", "PGCITE_SLACK_APP_TOKEN is not set: make an app-level token (xapp-...)"),
    ("xoxb-not-an-app-token", "PGCITE_SLACK_APP_TOKEN is not an app-level token (xapp-...)"),
])
def test_pgcite_slack_without_an_app_token_says_so_in_one_line(tmp_path: Path, token: str, says: str):
    done = pgcite(tmp_path, PGCITE_SLACK_APP_TOKEN=token, PGCITE_SLACK_BOT_TOKEN=TOKEN)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {says}") and "docs/slack.md#socket-mode" in line
