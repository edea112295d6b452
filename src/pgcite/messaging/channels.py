"""Which sources each chat channel may read (the settings slack_channels and discord_channels), as a
key's scope is: `TEAM/CHANNEL=a,b` entries separated by `;` (Discord: `GUILD/CHANNEL=a,b`). CHANNEL
may be `dm` (Slack: every direct message in the workspace) or `*` (the rest of the workspace or
guild); sources may be `*` (every source). A channel no entry covers is not set up: it gets no answer."""

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


@dataclass(frozen=True)
class Syntax:
    """How a platform's setting names its places, for its errors."""

    setting: str  # the environment variable
    team: str  # what the part before the slash is called
    example: str


SLACK = Syntax("PGCITE_SLACK_CHANNELS", "TEAM", "T0123/C0456=docs;T0123/*=docs,faq")
DISCORD = Syntax("PGCITE_DISCORD_CHANNELS", "GUILD", "81384788765712384/81384788765712385=docs;81384788765712384/*=faq")


def _bad(syntax: Syntax, entry: str, why: str) -> PgciteError:
    return PgciteError(
        f"{syntax.setting}: {entry[:80]!r} {why}; write {syntax.team}/CHANNEL=SOURCE[,SOURCE] entries separated "
        f"by ';' (e.g. {syntax.example})"
    )


@dataclass(frozen=True)
class ChannelMap:
    scopes: dict[tuple[str, str], Scope]

    @classmethod
    def parse(cls, text: str, syntax: Syntax = SLACK) -> ChannelMap:
        scopes: dict[tuple[str, str], Scope] = {}
        for entry in filter(None, (e.strip() for e in text.split(";"))):
            where, equals, names = entry.partition("=")
            team, slash, channel = where.strip().partition("/")
            team, channel = team.strip(), channel.strip()
            if not equals or not slash or not team or not channel:
                raise _bad(syntax, entry, f"is not {syntax.team}/CHANNEL=SOURCES")
            if not (team.isalnum() and (channel.isalnum() or channel == REST)):
                raise _bad(syntax, entry, f"names a {syntax.team.lower()} or channel that is not an id")
            listed = [n.strip() for n in names.split(",") if n.strip()]
            if not listed:
                raise _bad(syntax, entry, "names no source")
            if (team, channel) in scopes:
                raise _bad(syntax, entry, "maps a channel twice")
            if listed == [EVERY]:
                scopes[(team, channel)] = Scope(None)
                continue
            for name in listed:
                check_name(name, f"{syntax.setting}: a source name in {entry[:80]!r}")
            scopes[(team, channel)] = Scope(tuple(listed))
        return cls(scopes)

    def scope(self, team: str, channel: str, *, direct: bool = False) -> Scope | None:
        """What `channel` of workspace `team` may read (a direct message: `direct`); None: not set up."""
        for key in ((team, channel), (team, DIRECT) if direct else None, (team, REST)):
            if key is not None and key in self.scopes:
                return self.scopes[key]
        return None
