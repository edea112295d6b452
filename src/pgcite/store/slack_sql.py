"""The SQL of Slack's events (migration 21): each event is taken once, by the first server to record
its id, and held by a lease its answerer renews; a pending answer whose lease ran out (its server
stopped mid-answer) is taken again by another. The question is kept only until it is answered."""

from __future__ import annotations

from dataclasses import dataclass

from pgcite.store.database import Store

KEPT = "1 day"  # how long an answered event's id is kept to refuse a late redelivery


@dataclass(frozen=True)
class Pending:
    """An event taken to be answered."""

    event_id: str
    team: str
    channel: str
    user: str
    thread_ts: str
    reply_ts: str  # the placeholder reply being grown into the answer; "" before it is posted
    question: str


def take(store: Store, pending: Pending, lease: float) -> bool:
    """Record a new event as this server's for `lease` seconds; False when its id was seen before."""
    row = store.conn.execute(
        """INSERT INTO slack_events (event_id, team, channel, user_id, thread_ts, reply_ts, question, lease_until)
           VALUES (%s, %s, %s, %s, %s, %s, %s, now() + make_interval(secs => %s))
           ON CONFLICT (event_id) DO NOTHING RETURNING 1""",
        (
            pending.event_id,
            pending.team,
            pending.channel,
            pending.user,
            pending.thread_ts,
            pending.reply_ts,
            pending.question,
            lease,
        ),
    ).fetchone()
    return row is not None


def started(store: Store, event_id: str, reply_ts: str, question: str, lease: float) -> None:
    """The placeholder is posted: where the answer goes, and the question it answers."""
    store.conn.execute(
        """UPDATE slack_events SET reply_ts = %s, question = %s, lease_until = now() + make_interval(secs => %s)
           WHERE event_id = %s""",
        (reply_ts, question, lease, event_id),
    )


def renew(store: Store, event_id: str, lease: float) -> None:
    store.conn.execute(
        "UPDATE slack_events SET lease_until = now() + make_interval(secs => %s) WHERE event_id = %s AND NOT done",
        (lease, event_id),
    )


def finish(store: Store, event_id: str) -> None:
    """Answered: the question is no longer kept; the id is, to refuse a redelivery."""
    store.conn.execute("UPDATE slack_events SET done = true, question = '' WHERE event_id = %s", (event_id,))


def take_stalled(store: Store, lease: float, within: str = "1 hour") -> list[Pending]:
    """Pending answers whose lease ran out (asked within `within`), now this server's; older ones
    are given up. Also forgets answered events past KEPT."""
    with store.conn.transaction():
        store.conn.execute(
            "DELETE FROM slack_events WHERE received_at < now() - %s::interval AND (done OR lease_until < now())",
            (KEPT,),
        )
        store.conn.execute(
            """UPDATE slack_events SET done = true, question = ''
               WHERE NOT done AND lease_until < now() AND received_at < now() - %s::interval""",
            (within,),
        )
        rows = store.conn.execute(
            """UPDATE slack_events SET lease_until = now() + make_interval(secs => %s)
               WHERE event_id IN (SELECT event_id FROM slack_events WHERE NOT done AND lease_until < now()
                                  FOR UPDATE SKIP LOCKED)
               RETURNING event_id, team, channel, user_id, thread_ts, reply_ts, question""",
            (lease,),
        ).fetchall()
    return [Pending(*row) for row in rows]
