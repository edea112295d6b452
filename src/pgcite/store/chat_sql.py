"""The SQL of the chats' deliveries (migration 21): Slack's events and Discord's interactions.
Each is taken once, by the first server to record its id, and held by a lease its answerer renews; a
pending answer whose lease ran out (its server stopped mid-answer, or its job waited too long in a
busy server's queue) is taken again by another, of the same platform. Each taking gets a holder id
of its own (migration 23), and only the holder renews, records or finishes it: a server that lost
its lease finds out at its next renewal and stops, so the answer is written once. The question, and
where the answer goes, are kept only until it is answered."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass

from psycopg import sql

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
    holder: str = ""  # this taking's id: set by take and take_stalled


def take(store: Store, pending: Pending, lease: float) -> Pending | None:
    """Record a new delivery as this server's for `lease` seconds: it, held; None when its id was seen before."""
    held = dataclasses.replace(pending, holder=str(uuid.uuid4()))
    row = store.conn.execute(
        """INSERT INTO chat_events (event_id, team, channel, user_id, thread, reply, question, platform, lease_until,
                                    holder)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, now() + make_interval(secs => %s), %s)
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
            held.holder,
        ),
    ).fetchone()
    return held if row is not None else None


def started(store: Store, pending: Pending, lease: float) -> bool:
    """The placeholder is posted: where the answer goes, and the question it answers. False when
    the delivery is no longer this taking's."""
    return _held(
        store,
        "reply = %s, question = %s, lease_until = now() + make_interval(secs => %s)",
        (pending.reply, pending.question, lease),
        pending,
    )


def renew(store: Store, pending: Pending, lease: float) -> bool:
    """The lease extended by `lease` seconds; False when another server has taken the delivery since."""
    return _held(store, "lease_until = now() + make_interval(secs => %s)", (lease,), pending)


def finish(store: Store, pending: Pending) -> bool:
    """Answered: the question and where it went are no longer kept; the id is, to refuse a redelivery."""
    return _held(store, "done = true, question = '', reply = ''", (), pending)


def _held(store: Store, assignments: str, values: tuple, pending: Pending) -> bool:
    """SET `assignments` (one of this module's) on the delivery if this taking still holds it."""
    query = sql.SQL("UPDATE chat_events SET {} WHERE event_id = %s AND holder = %s AND NOT done")
    cursor = store.conn.execute(query.format(sql.SQL(assignments)), (*values, pending.event_id, pending.holder))
    return cursor.rowcount == 1


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
            """UPDATE chat_events SET lease_until = now() + make_interval(secs => %s), holder = gen_random_uuid()::text
               WHERE event_id IN (SELECT event_id FROM chat_events WHERE platform = %s AND NOT done
                                  AND lease_until < now() FOR UPDATE SKIP LOCKED)
               RETURNING event_id, team, channel, user_id, thread, reply, question, platform, holder""",
            (lease, platform),
        ).fetchall()
    return [Pending(*row) for row in rows]
