"""The SQL of the chats' deliveries (migration 21): Slack's events and Discord's interactions.
Each is taken once, by the first server to record its id, and held by a lease its answerer renews; a
pending answer whose lease ran out (its server stopped mid-answer) is taken again by another, of the
same platform. The question, and where the answer goes, are kept only until it is answered."""

from __future__ import annotations

from dataclasses import dataclass

from pgcite.store.database import Store

KEPT = "1 day"  # how long an answered delivery's id is kept to refuse a late redelivery


@dataclass(frozen=True)
class Pending:
    """A delivery taken to be answered."""

    event_id: str
    team: str  # Slack's workspace, Discord's guild
    channel: str
    user: str
    thread: str  # Slack: the thread's ts; Discord: unused
    reply: str  # Slack: the placeholder reply's ts ("" before it is posted); Discord: the interaction's token
    question: str
    platform: str = "slack"


def take(store: Store, pending: Pending, lease: float) -> bool:
    """Record a new delivery as this server's for `lease` seconds; False when its id was seen before."""
    row = store.conn.execute(
        """INSERT INTO chat_events (event_id, team, channel, user_id, thread, reply, question, platform, lease_until)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, now() + make_interval(secs => %s))
           ON CONFLICT (event_id) DO NOTHING RETURNING 1""",
        (
            pending.event_id,
            pending.team,
            pending.channel,
            pending.user,
            pending.thread,
            pending.reply,
            pending.question,
            pending.platform,
            lease,
        ),
    ).fetchone()
    return row is not None


def started(store: Store, event_id: str, reply: str, question: str, lease: float) -> None:
    """The placeholder is posted: where the answer goes, and the question it answers."""
    store.conn.execute(
        """UPDATE chat_events SET reply = %s, question = %s, lease_until = now() + make_interval(secs => %s)
           WHERE event_id = %s""",
        (reply, question, lease, event_id),
    )


def renew(store: Store, event_id: str, lease: float) -> None:
    store.conn.execute(
        "UPDATE chat_events SET lease_until = now() + make_interval(secs => %s) WHERE event_id = %s AND NOT done",
        (lease, event_id),
    )


def finish(store: Store, event_id: str) -> None:
    """Answered: the question and where it went are no longer kept; the id is, to refuse a redelivery."""
    store.conn.execute("UPDATE chat_events SET done = true, question = '', reply = '' WHERE event_id = %s", (event_id,))


def take_stalled(store: Store, platform: str, lease: float, within: str = "1 hour") -> list[Pending]:
    """The platform's pending answers whose lease ran out (asked within `within`), now this server's;
    older ones are given up. Also forgets answered deliveries past KEPT."""
    with store.conn.transaction():
        store.conn.execute(
            """DELETE FROM chat_events WHERE platform = %s AND received_at < now() - %s::interval
               AND (done OR lease_until < now())""",
            (platform, KEPT),
        )
        store.conn.execute(
            """UPDATE chat_events SET done = true, question = '', reply = ''
               WHERE platform = %s AND NOT done AND lease_until < now() AND received_at < now() - %s::interval""",
            (platform, within),
        )
        rows = store.conn.execute(
            """UPDATE chat_events SET lease_until = now() + make_interval(secs => %s)
               WHERE event_id IN (SELECT event_id FROM chat_events WHERE platform = %s AND NOT done
                                  AND lease_until < now() FOR UPDATE SKIP LOCKED)
               RETURNING event_id, team, channel, user_id, thread, reply, question, platform""",
            (lease, platform),
        ).fetchall()
    return [Pending(*row) for row in rows]
