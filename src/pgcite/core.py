"""The one application object the command line, the server and the evaluation share.

`Pgcite(settings)` connects once (starting the embedded server when no DSN is set) and brings the
schema up to date; queries then borrow read-only connections from a pool, and the embedding model
and generator are loaded on first use and kept."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from pgcite import access
from pgcite.answer.flow import Answer, AnswerEvent, ask_stream
from pgcite.answer.generation import ChatGenerator, GenerationError, Generator, make_generator
from pgcite.answer.units import reading_units
from pgcite.config import Settings
from pgcite.embedding.models import Embedder, bundled_model_dir, fingerprint, make_embedder
from pgcite.embedding.reader import READER_PRECISIONS, BundledReader, load_reader
from pgcite.embedding.serialised import Serialised
from pgcite.errors import PgciteError, StoreError, first_line
from pgcite.learn.log import AnswerLog, Origin, entry_of, search_entry
from pgcite.learn.ops import LogOps
from pgcite.publish.pages import PageOps
from pgcite.publish.sources import SourceOps, no_source
from pgcite.retrieval.rerank import ChatChooser, ReaderReranker, Reranker, RerankServer
from pgcite.retrieval.search import search
from pgcite.store import Store, sync_rows
from pgcite.store.health import Health
from pgcite.store.status import Status
from pgcite.store.status import status as status_of
from pgcite.vocabulary import SearchFilter, SearchHit, check_name

if TYPE_CHECKING:  # ingest's readers and chunker load only when something is ingested
    from pgcite.ingest.report import IngestReport, Progress


class Pgcite(LogOps, PageOps, SourceOps, access.KeyOps):
    POOL_SIZE = 8  # read connections: the server's worker threads share them
    POOL_TIMEOUT = 10.0  # seconds a query waits for a free connection

    def __init__(
        self, settings: Settings, *, embedder: Embedder | None = None, generator: Generator | None = None
    ) -> None:
        """embedder, generator: already-made parts to use instead of making them from settings."""
        self.settings = settings
        # Connecting once up front gives the clear one-line errors of Store.open (and migrates).
        with Store.open(settings, read_only=True) as store:
            self.where = store.where
            self._dsn, self._password = store.conn.info.dsn, store.conn.info.password
        if settings.query_database_url:  # the query path logs in as its own read-only role
            with Store.open(
                dataclasses.replace(settings, database_url=settings.query_database_url), read_only=True
            ) as store:
                self._dsn, self._password = store.conn.info.dsn, store.conn.info.password
        self._pool: ConnectionPool | None = None
        self._embedder: Embedder | None = Serialised(embedder) if embedder is not None else None
        self._generator = generator
        self._reranker: Reranker | None = None
        self._reader: BundledReader | None = None
        self._warm = False
        self._identity_checked = False
        self._lock = threading.Lock()
        self.answer_log = AnswerLog(settings) if settings.answer_log else None
        # After an outage, the pool's dead connections are dropped at once.
        self.health = Health(settings, self._dsn, self._password, lambda: self._pool.check() if self._pool else None)

    def close(self) -> None:
        if self.answer_log is not None:
            self.answer_log.close()
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> Pgcite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the parts, made once --------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = Serialised(make_embedder(self.settings))
            return self._embedder

    @property
    def model_loaded(self) -> bool:
        return self._warm

    def warm_up(self) -> None:
        """Load the model and the generator now, not on the first question."""
        if (load := getattr(self.embedder, "warm_up", None)) is not None:  # the bundled model
            load()
        self.embedder.embed_query("warm up")
        _ = self.generator  # the property loads it
        self._warm = True

    @property
    def reranker(self) -> Reranker | None:
        """The second ranking stage: a re-ranking server, the chat model, or else pgcite's reader."""
        settings = self.settings
        if settings.rerank_with_chat and not settings.rerank_url and self._reranker is None:
            generator = self.generator
            if not isinstance(generator, ChatGenerator):
                raise GenerationError(
                    "PGCITE_RERANK_WITH_CHAT needs a chat model; set PGCITE_CHAT_URL and PGCITE_CHAT_MODEL"
                )
            with self._lock:
                self._reranker = self._reranker or ChatChooser(generator.choose, settings.rerank_candidates)
        with self._lock:
            if self._reranker is None and settings.rerank_url:
                self._reranker = RerankServer(settings)
            elif self._reranker is None and settings.reader != "off":
                bar = None if math.isnan(settings.reader_bar) else settings.reader_bar
                self._reranker = ReaderReranker(self._bundled_reader, settings.reader_candidates, bar, reading_units)
            return self._reranker

    def _bundled_reader(self) -> BundledReader:
        with self._lock:
            if self._reader is None:
                if self.settings.reader not in READER_PRECISIONS:
                    raise PgciteError(
                        f"PGCITE_READER is {self.settings.reader!r}; use off, {' or '.join(READER_PRECISIONS)}"
                    )
                self._reader = load_reader(bundled_model_dir(), self.settings.model_cache, self.settings.reader)
            return self._reader

    @property
    def generator(self) -> Generator:
        embedder = self.embedder
        with self._lock:
            if self._generator is None:
                self._generator = make_generator(self.settings, embedder)
            return self._generator

    @contextlib.contextmanager
    def reader(self) -> Iterator[Store]:
        """A read-only Store on a pooled connection (the query path)."""
        with self._lock:
            if self._pool is None:
                kwargs: dict[str, object] = {"autocommit": True, "connect_timeout": 10}
                if self._password:  # conninfo.dsn leaves the password out
                    kwargs["password"] = self._password
                self._pool = ConnectionPool(
                    self._dsn,
                    min_size=1,
                    max_size=self.POOL_SIZE,
                    kwargs=kwargs,
                    configure=Store.configure_reader,
                    timeout=self.POOL_TIMEOUT,
                    name="pgcite-read",
                    open=True,
                )
        self.health.check()  # during an outage: 503 at once, not after the pool's timeout
        try:
            with self._pool.connection() as conn:
                yield Store(conn, self.where)
        except PoolTimeout:
            raise StoreError(
                f"no database connection came free within {self.POOL_TIMEOUT:g} s at {self.where}; "
                "the server is overloaded or PostgreSQL is down"
            ) from None
        except psycopg.OperationalError as exc:  # the connection went, or cannot be made
            if not isinstance(exc, psycopg.errors.QueryCanceled):  # a timeout is a slow query, not an outage
                self.health.failed(exc)
            raise

    @contextlib.contextmanager
    def writer(self) -> Iterator[Store]:
        """A Store that may write, on a connection of its own (ingest, removal)."""
        with Store.open(self.settings) as store:
            yield store

    # --- what callers do -------------------------------------------------------------------

    def search(
        self,
        question: str,
        *,
        k: int = 5,
        mode: str | None = None,
        filters: SearchFilter = SearchFilter(),
        origin: Origin | None = None,
        rerank: bool = False,
    ) -> list[SearchHit]:
        """The k best chunks, best first. origin: who asked, for the answer log (MCP logs searches).
        rerank: by pgcite's reader too (a configured re-ranking server or chat model always ranks)."""
        started, embedder, reranker = time.monotonic(), self.embedder, self.reranker
        with self.reader() as store:
            self._check_identity(store, embedder)
            hits = search(
                store,
                embedder,
                question,
                k=k,
                mode=mode or self.settings.search_mode,
                filters=filters,
                reranker=reranker if rerank or not isinstance(reranker, ReaderReranker) else None,
            )
        if origin is not None and self.answer_log is not None:
            self.answer_log.record(search_entry(question, hits, origin, filters, time.monotonic() - started))
        return hits

    def ask_stream(
        self,
        question: str,
        *,
        threshold: float | None = None,
        context: int = 5,
        mode: str | None = None,
        filters: SearchFilter = SearchFilter(exclude_flagged=True),
        generator: Generator | None = None,
        origin: Origin | None = None,
    ) -> Iterator[AnswerEvent]:
        """The answer as events: Sources (before any text), Deltas, then the checked Answer.
        origin: who asked; the finished answer is logged (unless the log is off) and gets its id."""
        started = time.monotonic()
        embedder, generator = self.embedder, generator or self.generator
        with self.reader() as store:
            self._check_identity(store, embedder)
            events = ask_stream(
                question,
                store=store,
                embedder=embedder,
                generator=generator,
                max_distance=threshold,
                context=context,
                token_budget=self.settings.chat_context_tokens,
                mode=mode or self.settings.search_mode,
                filters=filters,
                allowed_hosts=self.settings.allowed_hosts,
                reranker=self.reranker,
            )
            sources = next(events)
        # The database is done with once the sources are known: a slow chat model holds no connection.
        yield sources
        for event in events:
            if isinstance(event, Answer) and origin is not None and self.answer_log is not None:
                self.answer_log.record_answer(event, entry_of(event, origin, filters, time.monotonic() - started))
            yield event

    def _check_identity(self, store: Store, embedder: Embedder) -> None:
        """Once per process: the model answering is the one the stored vectors came from."""
        if not self._identity_checked:
            stored = store.stored_model()
            if stored is None or stored[0] != embedder.model:
                return  # nothing ingested, or another model's name: the search's own checks say so
            store.check_fingerprint(embedder.model, fingerprint(embedder))
            self._identity_checked = True

    def ask(self, question: str, **options) -> Answer:
        """ask_stream, collected: the finished Answer."""
        *_, answer = self.ask_stream(question, **options)
        assert isinstance(answer, Answer)
        return answer

    def ingest(
        self,
        location: str,
        *,
        source: str,
        base_url: str = "",
        exclude: Sequence[str] = (),
        version: str = "",
        site: str | None = None,
        route_base: str | None = None,
        sphinx_builder: str | None = None,
        include_root: str | None = None,
        chunk_tokens: int | None = None,
        languages: Sequence[str] | None = None,
        pull: bool = False,
        crawl_deadline: float | None = None,
        crawl_page_deadline: float | None = None,
        progress: Progress | None = None,
        embedder: Embedder | None = None,
        trigger: str = "ingest",
        uploaded: bool = False,
        store: Store | None = None,
    ) -> IngestReport:
        """embedder: another than the query path's (the server's ingest jobs have their own).
        pull: `git pull` the folder before each sync (sync.py). crawl_deadline, crawl_page_deadline: a
        site URL's own deadlines, in seconds (None: the settings'). trigger: what started it, for the
        source's last sync. uploaded: `location` is a temporary copy of an upload, not to be kept.
        store: a writer to ingest on (a sync's, which holds the source's lock); default: a new one."""
        from pgcite.ingest.flow import crawl_settings, ingest, open_location
        from pgcite.ingest.locations import is_remote
        from pgcite.ingest.sync import UPLOADED

        # Kept with the source, so that a sync from anywhere reads it again the same way.
        location = os.path.abspath(location) if location and not is_remote(location) else location
        include_root = os.path.abspath(include_root) if include_root and not is_remote(include_root) else include_root
        options = {
            "base_url": base_url,
            "exclude": list(exclude),
            "version": version,
            "site": site,
            "route_base": route_base,
            "sphinx_builder": sphinx_builder,
            "include_root": include_root,
            "chunk_tokens": chunk_tokens,
            "languages": list(languages) if languages else None,
            "pull": pull,
            "crawl_deadline": crawl_deadline,
            "crawl_page_deadline": crawl_page_deadline,
        }
        tokens = self.settings.chunk_tokens if chunk_tokens is None else chunk_tokens
        settings = dataclasses.replace(self.settings, chunk_tokens=tokens)
        self.check_new_source(source)
        crawl = crawl_settings(settings, crawl_deadline, crawl_page_deadline)
        reader = open_location(location, settings, exclude, include_root=include_root, crawl=crawl)
        with contextlib.nullcontext(store) if store is not None else self.writer() as store:
            return ingest(
                reader,
                source_name=source,
                base_url=base_url,
                settings=settings,
                store=store,
                embedder=embedder or self.embedder,
                version=version,
                site=site,
                route_base=route_base,
                sphinx_builder=sphinx_builder,
                languages=languages,
                progress=progress,
                options=options,
                trigger=trigger,
                recorded_location=UPLOADED if uploaded else None,
                reader=reranker if isinstance(reranker := self.reranker, ReaderReranker) else None,
            )

    def sync(
        self, name: str, *, trigger: str = "sync", progress: Progress | None = None, embedder: Embedder | None = None
    ) -> IngestReport:
        """Read source `name` again from where it was ingested, with the same options (pulling the
        folder first when it was ingested with `pull`); only what changed is read and stored."""
        from pgcite.ingest.sync import check_readable_again, pull

        info = self.source(name)
        options = info.options or {"base_url": info.base_url}  # a source ingested before options were kept
        started = time.perf_counter()
        try:
            check_readable_again(name, info.location)
            # The pull and the ingest under the source's lock (re-entered by the ingest on the same
            # session): two syncs at once, from any process, take turns instead of pulling together.
            with self.writer() as store, store.source_lock(name):
                if options.get("pull"):
                    pull(info.location)
                return self.ingest(
                    info.location,
                    source=name,
                    progress=progress,
                    embedder=embedder,
                    trigger=trigger,
                    store=store,
                    **options,
                )
        except Exception as exc:  # recorded, so `pgcite sources` says why, and the schedule waits its interval
            with contextlib.suppress(Exception), self.writer() as store:  # a database that is down: exc says so
                sync_rows.record(
                    store, name, trigger=trigger, seconds=time.perf_counter() - started, error=first_line(exc)[:300]
                )
            raise

    def schedule(self, name: str, seconds: int | None) -> None:
        """Have the server sync source `name` every `seconds` (None: not on a schedule)."""
        with self.writer() as store:
            if not sync_rows.set_interval(store, name, seconds):
                raise no_source(name)

    def check_new_source(self, name: str) -> None:
        """A new source's name follows the rules (vocabulary.check_name); one made before them is kept."""
        if all(s.name != name for s in self.sources()):
            check_name(name, "a source name")

    def remove_source(self, name: str) -> None:
        with self.writer() as store:
            if not store.remove_source(name):
                raise no_source(name)

    def status(self) -> Status:
        with self.reader() as store:
            return status_of(store)
