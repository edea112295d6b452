"""Keeping a source in step with its docs: what `pgcite ingest --watch` can watch (its loop is the
command's), whether a source can be read again from where it was, the `git pull` before a sync of
a folder ingested with `--pull`, and sync intervals as people write them."""

from __future__ import annotations

import os
import re
import subprocess

from pgcite.errors import PgciteError, SourceError
from pgcite.ingest.locations import is_remote

PULL_TIMEOUT = 120  # seconds
UPLOADED = "(uploaded zip)"  # the location of a source ingested from an upload


def check_readable_again(name: str, location: str) -> None:
    """Raise (one line) when source `name`, read from `location`, cannot be read from there again."""
    if location == UPLOADED:
        raise SourceError(
            f"source {name!r} was uploaded as a zip, which is not kept: upload it again "
            f"(POST /v1/sources/{name}/ingest) to bring it up to date"
        )
    if not is_remote(location) and not os.path.exists(location):
        raise SourceError(
            f"source {name!r} was read from {location}, which is not there any more: "
            "ingest it again from where it is now"
        )


def check_watchable(location: str) -> None:
    if is_remote(location):
        raise PgciteError(
            "--watch reads a folder or a .zip; keep an S3 or web source in step with the server's schedule "
            "(`pgcite sources schedule NAME 15m`) or POST /v1/sources/NAME/sync"
        )


def pull(folder: str) -> None:
    """`git pull --ff-only` in `folder`, a clone of the docs' repository: a sync then reads what was
    pushed. Local commits or edits that conflict stop it, with git's reason."""
    if not os.path.isdir(folder):
        raise SourceError(f"{folder} is not a folder: only a folder (a git clone) can be pulled")
    try:
        subprocess.run(
            ["git", "-C", folder, "pull", "--ff-only", "--quiet"],
            check=True,
            capture_output=True,
            text=True,
            timeout=PULL_TIMEOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )  # never wait for a password
    except FileNotFoundError:
        raise SourceError("git is not installed here; install it, or ingest the source again without pulling") from None
    except subprocess.TimeoutExpired:
        raise SourceError(
            f"git pull in {folder} took over {PULL_TIMEOUT} s; check the network and the remote"
        ) from None
    except subprocess.CalledProcessError as exc:
        why = (exc.stderr.strip() or exc.stdout.strip() or f"exit status {exc.returncode}").splitlines()[0]
        why = re.sub(r"://[^/\s@]+@", "://", why)  # a remote's user and token: the reason is shown to readers
        raise SourceError(
            f"git pull in {folder} failed ({why}); fix the clone (it must fast-forward to its "
            "upstream), then sync again"
        ) from None


_INTERVAL = re.compile(r"^\s*(\d+)\s*(s|m|h|d)?\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MIN_INTERVAL = 10  # seconds: a scheduled sync lists the whole source
MAX_INTERVAL = 366 * 86400  # a year, and PostgreSQL's interval holds it


def parse_interval(text: str) -> int | None:
    """Seconds from "90s", "15m", "2h", "1d" (a bare number is minutes); None for "off"."""
    if text.strip().lower() in ("off", "never", "none"):
        return None
    match = _INTERVAL.match(text.lower())
    if not match:
        raise PgciteError(f"a sync interval is a number and a unit, as 90s, 15m, 2h or 1d, or off (got {text!r})")
    seconds = int(match[1]) * _SECONDS[match[2] or "m"]
    if not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
        raise PgciteError(f"a sync interval is from {MIN_INTERVAL} s to 366 days (got {text[:40]!r})")
    return seconds


def format_interval(seconds: int) -> str:
    """The largest unit that writes `seconds` whole: 900 -> 15m."""
    unit = next(u for u in ("d", "h", "m", "s") if seconds % _SECONDS[u] == 0)
    return f"{seconds // _SECONDS[unit]}{unit}"
