"""The ingest flow: Source -> Document -> Site (clean, route) -> chunk -> embed (cached) -> Store,
idempotent.

The site generator is detected first (sites/): it says which files are pages, how to clean them,
their links and versions. Unchanged files are skipped: unread when the listing's stamp is the one
stored (sources.py), else by their sha256; a changed file is replaced in one transaction; files
gone from the source are removed once the whole source has been read; chunks whose text was
embedded before reuse the stored vector; a page whose text is the same but whose links are not
(another builder, route base or base URL) is re-routed in place. A source with no page at all is
an error, and nothing stored is removed. Each pass is recorded as the source's last sync
(store/sync_rows.py)."""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence

from pgcite.config import Settings
from pgcite.embedding.models import Embedder
from pgcite.errors import PgciteError, SourceError, first_line
from pgcite.ingest.chunking import Chunk, chunk_by_headings, chunk_fixed
from pgcite.ingest.fetch import CrawlSettings
from pgcite.ingest.locations import open_source
from pgcite.ingest.markdown import ParsedDocument
from pgcite.ingest.report import IngestInterrupted, IngestReport, Progress
from pgcite.ingest.sites import Site, detect, join_url
from pgcite.ingest.sites.base import web_address
from pgcite.ingest.sources import DEFAULT_EXCLUDE, Document, Limits, Skipped, Source, Unchanged
from pgcite.ingest.writer import Pending, Writer
from pgcite.retrieval import calibration
from pgcite.retrieval.rerank import ReaderReranker
from pgcite.safety import own_sites
from pgcite.store import Store, documents_sql, log_rows, sync_rows


def chunk_budget(settings: Settings, embedder: Embedder) -> int:
    """Tokens per chunk, breadcrumb included: the model's window less [CLS], [SEP] and the
    document prefix."""
    return settings.chunk_tokens or embedder.window - 2 - embedder.count_tokens(embedder.document_prefix)


# Bump when cleaning or chunking changes what a file turns into, so that stored files are
# re-processed by the next ingest (their vectors come back from the cache where the text is the same).
PROCESSING_VERSION = 9


def processing_checksum(file_checksum: str, settings: Settings, budget: int, site: str = "", includes: str = "") -> str:
    """What is stored as a document's checksum: the file's bytes, what it includes, the site
    generator that read it and how it was chunked, so an ingest with other settings (or a newer
    pgcite, or a changed included file) re-processes the file instead of skipping it."""
    recipe = (
        f"{PROCESSING_VERSION}:{site}:{settings.chunk_strategy}:{budget}:{settings.chunk_overlap}:"
        f"{settings.chunk_breadcrumb}:{settings.allowed_hosts}:{includes}"
    )
    return hashlib.sha256(f"{file_checksum}\0{recipe}".encode()).hexdigest()


def sealed(checksum: str, publishing: str) -> str:
    """What is stored: the processing checksum, then how the site routes its pages where that is
    not its generator's default (Site.publishing), apart, so that a page whose text is the same
    but whose routes changed is re-routed rather than read as changed."""
    return f"{checksum}+{hashlib.sha256(publishing.encode()).hexdigest()[:16]}" if publishing else checksum


def same_text(stored: str, checksum: str) -> bool:
    """Whether a stored checksum (sealed) is that of a page processed to the same text."""
    return stored.split("+", 1)[0] == checksum


def chunk_document(parsed: ParsedDocument, settings: Settings, embedder: Embedder, budget: int) -> list[Chunk]:
    if settings.chunk_strategy == "headings":
        return chunk_by_headings(
            parsed,
            embedder.count_tokens,
            max_tokens=budget,
            overlap_tokens=settings.chunk_overlap,
            with_breadcrumb=settings.chunk_breadcrumb,
            additive=embedder.tokenizer.additive,
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


WRITE_BATCH = 128  # chunks of whole files embedded as one batch, while the previous one is stored


def open_location(
    location: str,
    settings: Settings,
    extra_exclude: Sequence[str] = (),
    include_root: str | None = None,
    crawl: CrawlSettings | None = None,
) -> Source:
    """The source behind a folder path, .zip path, s3:// URL or site URL, with the default
    exclusions; a site is crawled as `crawl` says (default: the settings' deadlines)."""
    return open_source(
        location,
        exclude=(*DEFAULT_EXCLUDE, *extra_exclude),
        limits=Limits(max_file_bytes=settings.max_file_bytes),
        include_root=include_root,
        crawl=crawl or crawl_settings(settings),
    )


def crawl_settings(
    settings: Settings, deadline: float | None = None, page_deadline: float | None = None
) -> CrawlSettings:
    """How a site's URL is crawled: a source's own deadlines (`--deadline`, `--page-deadline`, kept
    with it), else the settings' (crawl_deadline, crawl_page_deadline)."""
    chosen = CrawlSettings(
        page_deadline=settings.crawl_page_deadline if page_deadline is None else page_deadline,
        deadline=settings.crawl_deadline if deadline is None else deadline,
    )
    for value, flag, setting in (
        (chosen.page_deadline, "--page-deadline", "crawl_page_deadline"),
        (chosen.deadline, "--deadline", "crawl_deadline"),
    ):
        if not (math.isfinite(value) and value > 0):
            raise PgciteError(
                f"a crawl's {flag.removeprefix('--')} is a number of seconds over 0 (got {value!r}): fix {flag} "
                f"or the setting {setting} (PGCITE_{setting.upper()})"
            )
    return chosen


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
    sphinx_builder: str | None = None,
    languages: Sequence[str] | None = None,
    progress: Progress | None = None,
    options: dict | None = None,
    trigger: str = "ingest",
    recorded_location: str | None = None,
    reader: ReaderReranker | None = None,
) -> IngestReport:
    """Ingest `source` as `source_name`. `site` is the generator (detected when None, or named);
    `base_url` defaults to the one the site's configuration gives; `version` labels an
    unversioned site (a versioned one labels its pages itself); `languages`: only pages in these
    (by default all the site's); `sphinx_builder`: how a Sphinx site is built, over what its
    settings say. options: the arguments this ingest was asked with, kept for a sync; trigger:
    what started it (the last sync says);
    recorded_location: the source's location to record, when not where it was read from (an upload).
    reader: pgcite's reader, when it is on: its bar is measured for the source too (calibration.py)."""
    started = time.perf_counter()
    if not isinstance(site, Site):
        site = detect(source, site, route_base=route_base, sphinx_builder=sphinx_builder)
    if site.versions and version:
        raise PgciteError(
            f"this {site.name} site has versions of its own ({', '.join(site.versions)}): ingest it "
            "without a version label; searches and answers choose among those versions"
        )
    kept = kept_languages(site, languages)
    base_url, refused = web_base_url(base_url, site)
    source.include, source.exclude = site.include, (*source.exclude, *site.exclude)
    report = IngestReport(
        source=source_name,
        site=site.name,
        base_url=base_url,
        versions=site.versions,
        default_version=site.default_version or version,
        languages=tuple(lang for lang in site.languages if kept is None or lang in kept),
        problems=[*refused, *site.problems],
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
            # The site's default, else the first language kept (--languages fr,de on an English site).
            default_language=site.default_language
            if kept is None or site.default_language in kept
            else (report.languages[0] if report.languages else ""),
            options=options,
        )
        known = store.stored_files(source_name)
        # A new version label changes every stored row: re-process all files (the vectors come
        # from the cache). A new base URL changes every link: each page is read to re-route it.
        stored = known if previous is None or previous[1] == version else {}
        moved = previous is not None and previous[0] != base_url
        # The files whose stored version is current as long as their bytes are the same: the scan
        # skips those whose stamp says so, without reading them.
        current = {
            path: f.stamp
            for path, f in stored.items()
            if f.stamp
            and not moved
            and f.checksum
            == sealed(
                processing_checksum(f.file_checksum, settings, budget, site.name, site.digest(f.includes)),
                site.publishing,
            )
        }
        restamp: dict[str, tuple[str, str]] = {}
        processed: dict[str, tuple[str, ...]] = {}  # path -> the site paths its page includes now
        bulk_load = not store.has_chunks()
        if bulk_load:
            store.drop_vector_index()

        seen: set[str] = set()
        pending: list[Pending] = []
        interrupted = False
        writer = Writer(
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
                if kept is not None and site.language_of(site.files.to_site(item.path)) not in kept:
                    report.left_out += 1  # not seen: a page stored before is removed
                    continue
                seen.add(item.path)
                report.scanned += 1
                if isinstance(item, Unchanged):
                    report.unchanged += 1
                elif isinstance(item, Skipped):
                    report.skipped.append(item)  # the stored version, if any, is kept
                elif item.path in stored and same_text(
                    stored[item.path].checksum,
                    text := processing_checksum(
                        item.checksum, settings, budget, site.name, site.digest(stored[item.path].includes)
                    ),
                ):
                    if stored[item.path].checksum == sealed(text, site.publishing) and not moved:
                        report.unchanged += 1
                        restamp[item.path] = (item.stamp, item.checksum)
                    else:
                        _reroute(store, site, item, base_url, sealed(text, site.publishing), report)
                else:
                    try:
                        page = site.render(item)
                        chunks = chunk_document(page.parsed, settings, embedder, budget)
                    except Exception as exc:  # noqa: BLE001 - one page that cannot be read costs that page alone
                        report.skipped.append(Skipped(item.path, f"could not be read: {first_line(exc)[:300]}"))
                        continue
                    report.problems += [f"{item.path}: {problem}" for problem in page.problems]
                    processed[item.path] = page.included
                    checksum = sealed(
                        processing_checksum(item.checksum, settings, budget, site.name, site.digest(page.included)),
                        site.publishing,
                    )
                    pending.append(Pending(page, checksum, chunks, item.path not in known, item.stamp, item.checksum))
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
            store.record_languages(source_name)
            report.stale_answers = log_rows.mark_stale(store, source_name)
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
    report.calibration = calibration.refresh(store, embedder, source_name, reader)
    sync_rows.record(store, source_name, trigger=trigger, seconds=report.seconds, report=report)
    return report


def _reroute(store: Store, site: Site, item: Document, base_url: str, checksum: str, report: IngestReport) -> None:
    """A page whose text is as stored but whose site publishes it elsewhere now: its links set in
    place (its chunks keep their text and vectors; nothing is embedded)."""
    try:
        page = site.render(item)  # the route may come from the page's own front matter
    except Exception as exc:  # noqa: BLE001 - as for a changed page: one that cannot be read costs it alone
        report.skipped.append(Skipped(item.path, f"could not be read: {first_line(exc)[:300]}"))
        return
    url = join_url(base_url, page.route)
    if documents_sql.reroute_document(store.conn, report.source, item.path, url, checksum, item.stamp, item.checksum):
        report.rerouted += 1
    else:  # the same links (a checksum stored before routes were kept with it)
        report.unchanged += 1


def kept_languages(site: Site, languages: Sequence[str] | None) -> set[str] | None:
    """The site's languages that `languages` names ("pt" keeps pt-br and pt-pt); None keeps all."""
    if not languages:
        return None
    if not site.languages:
        raise SourceError(f"--languages: this {site.name} site names no languages of its own; leave the option out")
    kept: set[str] = set()
    for wanted in (w.strip().lower().replace("_", "-") for w in languages if w.strip()):
        found = {tag for tag in site.languages if tag == wanted or tag.split("-", 1)[0] == wanted}
        if not found:
            raise SourceError(
                f"--languages: this site has no {wanted!r} pages; it publishes {', '.join(site.languages)}"
            )
        kept |= found
    return kept


def _usable(store: Store) -> bool:
    return not (store.conn.closed or store.conn.broken)


def check_base_url(given: str) -> None:
    """SourceError (one line) unless `given` is an http(s) address a citation may start with."""
    if not web_address(given):
        raise SourceError(
            f"the base URL {given!r} is not an http:// or https:// address: give the address the docs are "
            "published at (https://docs.example.com/)"
        )


def web_base_url(given: str, site: Site) -> tuple[str, list[str]]:
    """(the base URL every citation starts with, what was refused): the one given (`--base-url`, an
    upload's `base_url`), else the site's configuration's. Only an http(s) address: one given
    otherwise stops the ingest (one line); the configuration's is left out, said in the report."""
    if given:
        check_base_url(given)
        return given, []
    if not site.base_url or web_address(site.base_url):
        return site.base_url, []
    return "", [
        f"{site.base_url_setting} {site.base_url!r} is not an http:// or https:// address: left out, so answers "
        "cite paths, not links; give --base-url https://... for links"
    ]


def _no_pages(source: Source, site: Site) -> str:
    kinds = ", ".join(site.pages)
    return (
        f"no pages in {source.location}: no {kinds} files where a {site.name} site keeps them "
        f"({source.others} other files); point at the documentation folder, or name its site generator "
        "(`pgcite ingest --site`)"
    )
