"""Which sources each Slack channel may read (the setting slack_channels), as a key's scope is:
`TEAM/CHANNEL=a,b` entries separated by `;`. CHANNEL may be `dm` (every direct message in the
workspace) or `*` (the rest of the workspace); sources may be `*` (every source). A channel no
entry covers is not set up: it gets no answer."""

from __future__ import annotations

from dataclasses import dataclass

from pgcite.errors import PgciteError
from pgcite.vocabulary import check_name

DIRECT = "dm"
REST = "*"
EVERY = "*"


@dataclass(frozen=True)
class Scope:
    sources: tuple[str, ...] | None  # None: every source


def _bad(entry: str, why: str) -> PgciteError:
    return PgciteError(
        f"PGCITE_SLACK_CHANNELS: {entry[:80]!r} {why}; write TEAM/CHANNEL=SOURCE[,SOURCE] entries separated "
        "by ';' (e.g. T0123/C0456=docs;T0123/*=docs,faq)"
    )


@dataclass(frozen=True)
class ChannelMap:
    scopes: dict[tuple[str, str], Scope]

    @classmethod
    def parse(cls, text: str) -> ChannelMap:
        scopes: dict[tuple[str, str], Scope] = {}
        for entry in filter(None, (e.strip() for e in text.split(";"))):
            where, equals, names = entry.partition("=")
            team, slash, channel = where.strip().partition("/")
            team, channel = team.strip(), channel.strip()
            if not equals or not slash or not team or not channel:
                raise _bad(entry, "is not TEAM/CHANNEL=SOURCES")
            if not (team.isalnum() and (channel.isalnum() or channel == REST)):
                raise _bad(entry, "names a team or channel that is not a Slack id")
            listed = [n.strip() for n in names.split(",") if n.strip()]
            if not listed:
                raise _bad(entry, "names no source")
            if (team, channel) in scopes:
                raise _bad(entry, "maps a channel twice")
            if listed == [EVERY]:
                scopes[(team, channel)] = Scope(None)
                continue
            for name in listed:
                check_name(name, f"PGCITE_SLACK_CHANNELS: a source name in {entry[:80]!r}")
            scopes[(team, channel)] = Scope(tuple(listed))
        return cls(scopes)

    def scope(self, team: str, channel: str, *, direct: bool = False) -> Scope | None:
        """What `channel` of workspace `team` may read (a direct message: `direct`); None: not set up."""
        for key in ((team, channel), (team, DIRECT) if direct else None, (team, REST)):
            if key is not None and key in self.scopes:
                return self.scopes[key]
        return None
