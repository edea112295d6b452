"""Keeping a source in step with its docs: the watch loop of `pgcite ingest --watch`, the `git pull`
before a sync of a folder ingested with `--pull`, and sync intervals as people write them."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import psycopg
from watchfiles import DefaultFilter
from watchfiles import watch as changes

from pgcite.errors import PgciteError, SourceError, first_line
from pgcite.ingest.sources import is_remote

if TYPE_CHECKING:
    from pgcite.core import Pgcite
    from pgcite.ingest.flow import IngestReport

# A pass starts once the files have been quiet for STEP_MS, or DEBOUNCE_MS after the first change of a
# burst that goes on: an editor's save, a `git checkout` of many files, a copy of a folder are each one pass.
STEP_MS = 300
DEBOUNCE_MS = 2000
PULL_TIMEOUT = 120  # seconds


def watch(
    core: Pgcite,
    location: str,
    *,
    source: str,
    options: dict,
    first: IngestReport,
    on_pass: Callable[[IngestReport], None],
    on_error: Callable[[str], None],
    stop: threading.Event | None = None,
) -> None:
    """Run a pass over `location` (a folder or a .zip) each time its files change, or a file its
    pages include from beside the folder, until Ctrl-C or `stop`. `first` is the report of the pass
    before. Each pass is an ingest: only the changed files are read, in their own transactions,
    with the embedding cache. A pass that fails is reported and the watch goes on."""
    check_watchable(location)
    location = os.path.abspath(location)
    folder = os.path.isdir(location)
    ignored = DefaultFilter()  # version control, editors' swap and backup files
    report = first
    while True:
        included = _outside(location, report.included) if folder else set()
        # The folder (a zip through its folder: a tool replacing it, write then rename, would end a
        # watch on the file), and the folders of the files included from outside it; a file in a
        # folder above the docs (the project's README) is watched alone, not the whole project.
        paths = sorted(
            {location if folder else os.path.dirname(location)}
            | {
                path if os.path.realpath(location).startswith(os.path.dirname(path) + os.sep) else os.path.dirname(path)
                for path in included
                if os.path.exists(path)
            }
        )

        def wanted(change, path: str) -> bool:
            if not ignored(change, path):
                return False
            if not folder:
                return os.path.abspath(path) == location
            return path.startswith(location + os.sep) or os.path.realpath(path) in included

        for _ in changes(
            *paths, watch_filter=wanted, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=stop, raise_interrupt=False
        ):
            try:
                report = core.ingest(location, source=source, trigger="watch", **options)
            except (PgciteError, psycopg.Error) as exc:  # a folder emptied, the database restarting
                on_error(first_line(exc))
                continue
            on_pass(report)
            if _outside(location, report.included) != included:
                break  # the pages include other files now: watch their folders
        else:
            return  # Ctrl-C or `stop`


def _outside(folder: str, included: list[str]) -> set[str]:
    """The real paths of the included files (paths from `folder`) that are not under it."""
    root = os.path.realpath(folder)
    real = {os.path.realpath(os.path.join(root, path)) for path in included}
    return {path for path in real if not path.startswith(root + os.sep)}


def check_watchable(location: str) -> None:
    if is_remote(location):
        raise PgciteError(
            "--watch reads a folder or a .zip; keep an S3 source in step with the server's schedule "
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
        why = first_line(exc.stderr.strip() or exc.stdout.strip() or f"exit status {exc.returncode}")
        why = re.sub(r"://[^/\s@]+@", "://", why)  # a remote's user and token: the reason is shown to readers
        raise SourceError(
            f"git pull in {folder} failed ({why}); fix the clone (it must fast-forward to its "
            "upstream), then sync again"
        ) from None


_INTERVAL = re.compile(r"^\s*(\d+)\s*(s|m|h|d)?\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MIN_INTERVAL = 10  # seconds: a scheduled sync lists the whole source


def parse_interval(text: str) -> int | None:
    """Seconds from "90s", "15m", "2h", "1d" (a bare number is minutes); None for "off"."""
    if text.strip().lower() in ("off", "never", "none"):
        return None
    match = _INTERVAL.match(text.lower())
    if not match:
        raise PgciteError(f"a sync interval is a number and a unit, as 90s, 15m, 2h or 1d, or off (got {text!r})")
    seconds = int(match[1]) * _SECONDS[match[2] or "m"]
    if seconds < MIN_INTERVAL:
        raise PgciteError(f"a sync interval is at least {MIN_INTERVAL} s (got {text!r})")
    return seconds


def format_interval(seconds: int) -> str:
    """The largest unit that writes `seconds` whole: 900 -> 15m."""
    unit = next(u for u in ("d", "h", "m", "s") if seconds % _SECONDS[u] == 0)
    return f"{seconds // _SECONDS[unit]}{unit}"
