"""The ingest flow: Source -> Document -> Site (clean, route) -> chunk -> embed (cached) -> Store,
idempotent.

The site generator is detected first (sites/): it says which files are pages, how to clean them,
their links and versions. Unchanged files are skipped: unread when the listing's stamp is the one
stored (sources.py), else by their sha256; a changed file is replaced in one transaction; files
gone from the source are removed once the whole source has been read; chunks whose text was
embedded before reuse the stored vector. A source with no page at all is an error, and nothing
stored is removed. Each pass is recorded as the source's last sync (store/sync_rows.py)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import psycopg

from pgcite.retrieval import calibration
from pgcite.retrieval.calibration import Calibration
from pgcite.ingest.chunking import Chunk, chunk_by_headings, chunk_fixed
from pgcite.config import Settings
from pgcite.embedding.models import Embedder, fingerprint
from pgcite.errors import PgciteError, SourceError, first_line
from pgcite.ingest.markdown import ParsedDocument
from pgcite.safety import injection_flags, link_flags, own_sites
from pgcite.ingest.sites import Page, Site, detect, join_url
from pgcite.ingest.sources import DEFAULT_EXCLUDE, Limits, Skipped, Source, Unchanged, open_source
from pgcite.store import ChunkRow, Store, embed_hash, sync_rows


@dataclass
class IngestReport:
    source: str
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    others: int = 0  # files that are not pages of the site (counted, not read)
    chunks_embedded: int = 0
    chunks_reused: int = 0  # their vectors were stored before this ingest
    chunks_repeated: int = 0  # their text was another chunk's of this same ingest (embedded once)
    seconds: float = 0.0
    site: str = ""
    base_url: str = ""
    versions: tuple[str, ...] = ()
    default_version: str = ""
    # "path > heading: kinds" of chunks that read like instructions to an AI (left out of answers).
    flagged: list[str] = field(default_factory=list)
    # "path: include X left out: why", one per include that could not be read.
    problems: list[str] = field(default_factory=list)
    # The paths of the new, changed and removed files.
    paths: dict[str, list[str]] = field(default_factory=lambda: {"new": [], "changed": [], "removed": []})
    # The files the stored pages include, as paths from the source's root ("../src/app.py" for a
    # file beside an ingested folder): what else `--watch` watches.
    included: list[str] = field(default_factory=list)
    calibration: Calibration | None = None  # the source's relevance bar, as measured (calibration.py)

    @property
    def files_read(self) -> int:
        return self.new + self.changed + self.unchanged + len(self.skipped)

    def summary(self) -> str:
        versions = f", versions {', '.join(self.versions)} (default {self.default_version})" if self.versions else ""
        return (
            f"{self.source}: {self.new} new, {self.changed} changed, {self.unchanged} unchanged, "
            f"{self.removed} removed, {len(self.skipped)} skipped files, {self.others} other files; "
            f"{self.chunks_embedded} chunks embedded, {self.chunks_reused} reused"
            f"{f', {self.chunks_repeated} repeated' if self.chunks_repeated else ''}; {self.site} site{versions}; "
            f"{self.seconds:.1f} s"
        )


class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C during an ingest, raised once its end has run: what was read so far is `report`."""

    def __init__(self, report: IngestReport) -> None:
        super().__init__("interrupted")
        self.report = report


def cache_text(embedder: Embedder, text: str) -> str:
    """What a chunk's cached vector is keyed by, beside the model: the text as the server gets it,
    and the input type it is sent with (only when one is set, so older caches stay valid)."""
    text = embedder.document_prefix + text
    return f"\0input_type={embedder.document_input_type}\0{text}" if embedder.document_input_type else text


def chunk_budget(settings: Settings, embedder: Embedder) -> int:
    """Tokens per chunk, breadcrumb included: the model's window less [CLS], [SEP] and the
    document prefix."""
    return settings.chunk_tokens or embedder.window - 2 - embedder.count_tokens(embedder.document_prefix)


# Bump when cleaning or chunking changes what a file turns into, so that stored files are
# re-processed by the next ingest (their vectors come back from the cache where the text is the same).
PROCESSING_VERSION = 5


def processing_checksum(file_checksum: str, settings: Settings, budget: int, site: str = "", includes: str = "") -> str:
    """What is stored as a document's checksum: the file's bytes, what it includes, the site
    generator that read it and how it was chunked, so an ingest with other settings (or a newer
    pgcite, or a changed included file) re-processes the file instead of skipping it."""
    recipe = (
        f"{PROCESSING_VERSION}:{site}:{settings.chunk_strategy}:{budget}:{settings.chunk_overlap}:"
        f"{settings.chunk_breadcrumb}:{settings.allowed_hosts}:{includes}"
    )
    return hashlib.sha256(f"{file_checksum}\0{recipe}".encode()).hexdigest()


def chunk_document(parsed: ParsedDocument, settings: Settings, embedder: Embedder, budget: int) -> list[Chunk]:
    if settings.chunk_strategy == "headings":
        return chunk_by_headings(
            parsed,
            embedder.count_tokens,
            max_tokens=budget,
            overlap_tokens=settings.chunk_overlap,
            with_breadcrumb=settings.chunk_breadcrumb,
        )
    if settings.chunk_strategy == "fixed":
        return chunk_fixed(
            parsed,
            embedder.tokenizer,
            window=budget,
            overlap=settings.chunk_overlap,
            with_breadcrumb=settings.chunk_breadcrumb,
        )
    raise PgciteError(f"unknown chunk_strategy {settings.chunk_strategy!r}; use 'headings' or 'fixed'")


@dataclass
class _Pending:
    page: Page
    checksum: str  # processing_checksum
    chunks: list[Chunk]
    is_new: bool
    stamp: str  # the file's, from the listing
    file_checksum: str


EMBED_SLICE = 128  # chunks embedded between two progress reports (about 5 s with the bundled model)
WRITE_BATCH = 128  # chunks of whole files embedded as one batch, while the previous one is stored

# Called after each file is read and after each slice is embedded, with the file's path and the
# report so far.
Progress = Callable[[str, IngestReport], None]


def open_location(
    location: str, settings: Settings, extra_exclude: Sequence[str] = (), include_root: str | None = None
) -> Source:
    """The source behind a folder path, .zip path or s3:// URL, with the default exclusions."""
    return open_source(
        location,
        exclude=(*DEFAULT_EXCLUDE, *extra_exclude),
        limits=Limits(max_file_bytes=settings.max_file_bytes),
        include_root=include_root,
    )


def ingest(
    source: Source,
    *,
    source_name: str,
    base_url: str,
    settings: Settings,
    store: Store,
    embedder: Embedder,
    version: str = "",
    site: Site | str | None = None,
    route_base: str | None = None,
    progress: Progress | None = None,
    options: dict | None = None,
    trigger: str = "ingest",
    recorded_location: str | None = None,
) -> IngestReport:
    """Ingest `source` as `source_name`. `site` is the generator (detected when None, or named);
    `base_url` defaults to the one the site's configuration gives; `version` labels an
    unversioned site (a versioned one labels its pages itself). options: the arguments this
    ingest was asked with, kept for a sync; trigger: what started it (the last sync says);
    recorded_location: the source's location to record, when not where it was read from (an upload)."""
    started = time.perf_counter()
    if not isinstance(site, Site):
        site = detect(source, site, route_base=route_base)
    if site.versions and version:
        raise PgciteError(
            f"this {site.name} site has versions of its own ({', '.join(site.versions)}): ingest it "
            "without a version label; searches and answers choose among those versions"
        )
    base_url = base_url or site.base_url
    source.include, source.exclude = site.include, (*source.exclude, *site.exclude)
    report = IngestReport(
        source=source_name,
        site=site.name,
        base_url=base_url,
        versions=site.versions,
        default_version=site.default_version or version,
    )
    store.bind_model(embedder.model, embedder.dimension)
    budget = chunk_budget(settings, embedder)

    with store.source_lock(source_name):
        previous = store.upsert_source(
            source_name,
            recorded_location or source.location,
            base_url,
            version,
            site=site.name,
            default_version=report.default_version,
            options=options,
        )
        known = store.stored_files(source_name)
        # A new base URL or version label changes every stored row: re-process all files (the
        # vectors come from the cache).
        stored = known if previous in (None, (base_url, version)) else {}
        # The files whose stored version is current as long as their bytes are the same: the scan
        # skips those whose stamp says so, without reading them.
        current = {
            path: f.stamp
            for path, f in stored.items()
            if f.stamp
            and f.checksum == processing_checksum(f.file_checksum, settings, budget, site.name, site.digest(f.includes))
        }
        restamp: dict[str, tuple[str, str]] = {}
        processed: dict[str, tuple[str, ...]] = {}  # path -> the site paths its page includes now
        bulk_load = not store.has_chunks()
        if bulk_load:
            store.drop_vector_index()

        seen: set[str] = set()
        pending: list[_Pending] = []
        interrupted = False
        writer = _Writer(
            source_name,
            base_url,
            version,
            store,
            embedder,
            report,
            progress,
            own_sites([base_url], settings.allowed_hosts),
        )
        try:
            for item in source.scan(current):
                seen.add(item.path)
                if isinstance(item, Unchanged):
                    report.unchanged += 1
                elif isinstance(item, Skipped):
                    report.skipped.append(item)  # the stored version, if any, is kept
                elif item.path in stored and stored[item.path].checksum == processing_checksum(
                    item.checksum, settings, budget, site.name, site.digest(stored[item.path].includes)
                ):
                    report.unchanged += 1
                    restamp[item.path] = (item.stamp, item.checksum)
                else:
                    try:
                        page = site.render(item)
                        chunks = chunk_document(page.parsed, settings, embedder, budget)
                    except Exception as exc:  # one page that cannot be read costs that page alone
                        report.skipped.append(Skipped(item.path, f"could not be read: {first_line(exc)[:300]}"))
                        continue
                    report.problems += [f"{item.path}: {problem}" for problem in page.problems]
                    processed[item.path] = page.included
                    checksum = processing_checksum(
                        item.checksum, settings, budget, site.name, site.digest(page.included)
                    )
                    pending.append(_Pending(page, checksum, chunks, item.path not in known, item.stamp, item.checksum))
                    if sum(len(p.chunks) for p in pending) >= WRITE_BATCH:
                        writer.submit(pending)
                        pending = []
                if progress:
                    progress(item.path, report)
            writer.submit(pending)
            writer.finish()
            report.others = source.others
            if not seen:
                raise SourceError(_no_pages(source, site))
            store.restamp(source_name, restamp)
            gone = sorted(set(known) - seen)
            report.removed = store.delete_documents(source_name, gone)
            report.paths["removed"] = gone
            # What the pages include now: a page read again says, the others as stored.
            report.included = sorted(
                {
                    site.files.to_source(include)
                    for path in seen
                    for include in processed.get(path, known[path].includes if path in known else ())
                }
            )
        except KeyboardInterrupt:
            interrupted = True
        except Exception:
            # A new source that failed before any page was stored (the embedding server is down)
            # would stay behind empty, listed by `pgcite sources` and /v1/models.
            if previous is None and _usable(store) and not store.stored_files(source_name):
                store.remove_source(source_name)
            raise
        finally:
            writer.close()
            # Even after a failure the index dropped for a bulk load comes back; on a lost
            # connection the next ingest does it, and the error that says why is the one reported.
            if not interrupted and _usable(store):
                store.refresh_indexes()
    if interrupted:  # Ctrl-C may have left the connection mid-command: end on a new one
        with Store.open(settings) as fresh:
            fresh.refresh_indexes()
    report.seconds = time.perf_counter() - started
    if interrupted:
        raise IngestInterrupted(report)
    report.calibration = calibration.refresh(store, embedder, source_name)
    sync_rows.record(store, source_name, trigger=trigger, seconds=report.seconds, report=report)
    return report


def _usable(store: Store) -> bool:
    return not (store.conn.closed or store.conn.broken)


def _no_pages(source: Source, site: Site) -> str:
    kinds = ", ".join(site.pages)
    return (
        f"no pages in {source.location}: no {kinds} files where a {site.name} site keeps them "
        f"({source.others} other files); point at the documentation folder, or name its site generator (`pgcite ingest --site`)"
    )


class _Writer:
    """Embeds one batch of files on a worker thread while the caller reads and chunks the next:
    the model (ONNX Runtime, which releases the GIL) is not left waiting on reading or chunking.
    Each file is stored in its own transaction, before the next batch looks up its cache, so a
    text is embedded once per ingest however often it repeats."""

    def __init__(
        self,
        source_name: str,
        base_url: str,
        version: str,
        store: Store,
        embedder: Embedder,
        report: IngestReport,
        progress: Progress | None,
        own: frozenset[str],
    ) -> None:
        self.source_name, self.base_url, self.version = source_name, base_url, version
        self.own = own  # the docs' own sites, for the link flags
        self.store, self.embedder, self.report, self.progress = store, embedder, report, progress
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pgcite-embed")
        self._in_flight: tuple[list[_Pending], dict[int, str], Future] | None = None
        self._seen: set[bytes] = set()  # texts of this ingest so far, embedded or reused
        self._identity_checked = False

    def submit(self, pending: list[_Pending]) -> None:
        """Store the batch before (its vectors then serve this one as cache), then start embedding
        what the cache lacks of `pending`."""
        if not pending:
            return
        self.finish()
        # The cache key is the exact text the model sees, prefix included.
        hashes = {
            id(c): embed_hash(self.embedder.model, cache_text(self.embedder, c.embed_text))
            for p in pending
            for c in p.chunks
        }
        vectors = self.store.cached_embeddings(list(set(hashes.values())))
        missing: dict[bytes, str] = {}
        for c in (c for p in pending for c in p.chunks):
            h = hashes[id(c)]
            if h in self._seen:
                self.report.chunks_repeated += 1
            elif h in vectors:
                self.report.chunks_reused += 1
            else:
                missing[h] = c.embed_text
            self._seen.add(h)
        if missing and not self._identity_checked:
            # Before the first new vector is stored (and only then: a sync with nothing new to embed
            # does not load the model): the model is the one the stored vectors came from.
            self.store.check_fingerprint(self.embedder.model, fingerprint(self.embedder), record=True)
            self._identity_checked = True
        self._in_flight = (
            pending,
            hashes,
            self._worker.submit(self._embed, list(missing.items()), vectors, pending[-1].page.path),
        )

    def finish(self) -> None:
        """Store the batch being embedded, once its vectors are there."""
        if self._in_flight is not None:
            pending, hashes, vectors = self._in_flight
            self._in_flight = None
            self._store(pending, hashes, vectors.result())

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)

    def _embed(self, missing: list[tuple[str, str]], vectors: dict, path: str) -> dict:
        # In slices, so that progress is seen while one huge page (a changelog of 1,700 chunks) embeds.
        for start in range(0, len(missing), EMBED_SLICE):
            part = missing[start : start + EMBED_SLICE]
            vectors.update(zip((h for h, _ in part), self.embedder.embed_documents([text for _, text in part])))
            self.report.chunks_embedded += len(part)
            if self.progress:
                self.progress(path, self.report)
        return vectors

    def _store(self, pending: list[_Pending], hashes: dict[int, str], vectors: dict) -> None:
        source_name, base_url, version, report = self.source_name, self.base_url, self.version, self.report
        for p in pending:
            page = p.page
            rows = [
                ChunkRow(
                    id=f"{source_name}:{page.path}#{c.index}",
                    ord=c.index,
                    heading=c.heading,
                    heading_path=c.heading_path,
                    breadcrumb=c.breadcrumb,
                    anchor=c.anchor,
                    url=join_url(base_url, page.route, c.anchor),
                    content=c.content,
                    tokens=c.tokens,
                    embed_hash=hashes[id(c)],
                    embedding=vectors[hashes[id(c)]],
                    flags=tuple(injection_flags(c.content) + link_flags(c.content, self.own)),
                )
                for c in p.chunks
            ]
            try:
                self.store.replace_document(
                    source_name,
                    page.path,
                    page.title,
                    join_url(base_url, page.route),
                    p.checksum,
                    rows,
                    page.version or version,
                    page.kind,
                    page.included,
                    p.stamp,
                    p.file_checksum,
                )
            except (psycopg.errors.DataError, psycopg.errors.ProgramLimitExceeded) as exc:
                # What this page holds, not the database: say so for the page, and go on.
                report.skipped.append(Skipped(page.path, f"could not be stored: {first_line(exc)[:300]}"))
                continue
            report.flagged += [
                f"{page.path} > {r.heading or page.title}: {', '.join(r.flags)}" for r in rows if r.flags
            ]
            if p.is_new:
                report.new += 1
            else:
                report.changed += 1
            report.paths["new" if p.is_new else "changed"].append(page.path)
        if self.progress:
            self.progress(pending[-1].page.path, report)
