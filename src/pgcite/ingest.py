"""The ingest flow: Source -> Document -> parse -> chunk -> embed (cached) -> Store, idempotent.

Unchanged files (sha256) are skipped; a changed file is replaced in one transaction; files gone
from the source are removed once the whole source has been read; chunks whose text was embedded
before reuse the stored vector."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Callable, Sequence

from .chunking import Chunk, chunk_by_headings, chunk_fixed
from .config import Settings
from .embedding import Embedder
from .errors import PgciteError
from .markdown import ParsedDocument, parse
from .safety import injection_flags
from .sources import DEFAULT_EXCLUDE, Limits, Skipped, Source, open_source
from .store import ChunkRow, Store, embed_hash


@dataclass
class IngestReport:
    source: str
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    chunks_embedded: int = 0
    chunks_reused: int = 0
    seconds: float = 0.0
    # "path > heading: kinds" of chunks that read like instructions to an AI (left out of answers).
    flagged: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.source}: {self.new} new, {self.changed} changed, {self.unchanged} unchanged, "
            f"{self.removed} removed, {len(self.skipped)} skipped files; "
            f"{self.chunks_embedded} chunks embedded, {self.chunks_reused} reused; {self.seconds:.1f} s"
        )


def published_url(base_url: str, path: str, anchor: str | None = None) -> str:
    """VitePress routing: `a/index.md` -> `a/`, `a/b.md` -> `a/b.html`, plus `#anchor`."""
    if not base_url:
        return ""
    posix = PurePosixPath(path)
    route = posix.parent.as_posix() + "/" if posix.stem == "index" else posix.with_suffix(".html").as_posix()
    route = "" if route == "./" else route.removeprefix("./")
    url = base_url.rstrip("/") + "/" + route
    return f"{url}#{anchor}" if anchor else url


def chunk_budget(settings: Settings, embedder: Embedder) -> int:
    """Tokens per chunk, breadcrumb included: the model's window less [CLS], [SEP] and the
    document prefix."""
    return settings.chunk_tokens or embedder.window - 2 - embedder.count_tokens(embedder.document_prefix)


# Bump when cleaning or chunking changes what a file turns into, so that stored files are
# re-processed by the next ingest (their vectors come back from the cache where the text is the same).
PROCESSING_VERSION = 2


def processing_checksum(file_checksum: str, settings: Settings, budget: int) -> str:
    """What is stored as a document's checksum: the file's bytes and how they were chunked, so an
    ingest with other chunk settings (or a newer pgcite) re-processes the file instead of skipping it."""
    recipe = (f"{PROCESSING_VERSION}:{settings.chunk_strategy}:{budget}:{settings.chunk_overlap}:"
              f"{settings.chunk_breadcrumb}")
    return hashlib.sha256(f"{file_checksum}\0{recipe}".encode()).hexdigest()


def chunk_document(parsed: ParsedDocument, settings: Settings, embedder: Embedder, budget: int) -> list[Chunk]:
    if settings.chunk_strategy == "headings":
        return chunk_by_headings(parsed, embedder.count_tokens, max_tokens=budget,
                                 overlap_tokens=settings.chunk_overlap, with_breadcrumb=settings.chunk_breadcrumb)
    if settings.chunk_strategy == "fixed":
        return chunk_fixed(parsed, embedder.tokenizer, window=budget, overlap=settings.chunk_overlap,
                           with_breadcrumb=settings.chunk_breadcrumb)
    raise PgciteError(f"unknown chunk_strategy {settings.chunk_strategy!r}; use 'headings' or 'fixed'")


@dataclass
class _Pending:
    path: str
    checksum: str  # processing_checksum
    title: str
    chunks: list[Chunk]
    is_new: bool


Progress = Callable[[str], None]  # called once per file read, with its path


def open_location(location: str, settings: Settings, extra_exclude: Sequence[str] = ()) -> Source:
    """The source behind a folder path, .zip path or s3:// URL, with the default exclusions."""
    return open_source(location, exclude=(*DEFAULT_EXCLUDE, *extra_exclude),
                       limits=Limits(max_file_bytes=settings.max_file_bytes))


def ingest(
    source: Source,
    *,
    source_name: str,
    base_url: str,
    settings: Settings,
    store: Store,
    embedder: Embedder,
    version: str = "",
    progress: Progress | None = None,
) -> IngestReport:
    started = time.perf_counter()
    report = IngestReport(source=source_name)
    store.bind_model(embedder.model, embedder.dimension)
    budget = chunk_budget(settings, embedder)

    with store.source_lock(source_name):
        previous = store.upsert_source(source_name, source.location, base_url, version)
        # A new base URL or version label changes every stored row: re-process all files (the
        # vectors come from the cache).
        stored = store.document_checksums(source_name) if previous in (None, (base_url, version)) else {}
        known_paths = set(store.document_checksums(source_name))
        bulk_load = store.chunk_count() == 0
        if bulk_load:
            store.drop_vector_index()

        seen: set[str] = set()
        pending: list[_Pending] = []
        for item in source.scan():
            seen.add(item.path)
            if progress:
                progress(item.path)
            if isinstance(item, Skipped):
                report.skipped.append(item)  # the stored version, if any, is kept
                continue
            checksum = processing_checksum(item.checksum, settings, budget)
            if stored.get(item.path) == checksum:
                report.unchanged += 1
                continue
            parsed = parse(item.text, fallback_title=PurePosixPath(item.path).stem)
            chunks = chunk_document(parsed, settings, embedder, budget)
            pending.append(_Pending(item.path, checksum, parsed.title, chunks, is_new=item.path not in known_paths))
            if sum(len(p.chunks) for p in pending) >= settings.embedding_batch_size * 4:
                _write(pending, source_name, base_url, version, store, embedder, report)
                pending = []
        _write(pending, source_name, base_url, version, store, embedder, report)

        report.removed = store.delete_documents(source_name, sorted(known_paths - seen))
        store.refresh_indexes()
    report.seconds = time.perf_counter() - started
    return report


def _write(
    pending: list[_Pending], source_name: str, base_url: str, version: str, store: Store, embedder: Embedder,
    report: IngestReport,
) -> None:
    """Embed what the cache lacks for a batch of files, then store each file in its own transaction."""
    if not pending:
        return
    # The cache key is the exact text the model sees, prefix included.
    hashes = {id(c): embed_hash(embedder.model, embedder.document_prefix + c.embed_text)
              for p in pending for c in p.chunks}
    vectors = store.cached_embeddings(list(set(hashes.values())))
    report.chunks_reused += sum(1 for h in hashes.values() if h in vectors)
    missing = {h: c.embed_text for p in pending for c in p.chunks if (h := hashes[id(c)]) not in vectors}
    if missing:
        embedded = embedder.embed_documents(list(missing.values()))
        vectors.update(zip(missing.keys(), embedded))
        report.chunks_embedded += len(missing)
    for p in pending:
        path = p.path
        rows = [
            ChunkRow(
                id=f"{source_name}:{path}#{c.index}",
                ord=c.index,
                heading=c.heading,
                heading_path=c.heading_path,
                breadcrumb=c.breadcrumb,
                anchor=c.anchor,
                url=published_url(base_url, path, c.anchor),
                content=c.content,
                tokens=c.tokens,
                embed_hash=hashes[id(c)],
                embedding=vectors[hashes[id(c)]],
                flags=tuple(injection_flags(c.content)),
            )
            for c in p.chunks
        ]
        store.replace_document(source_name, path, p.title, published_url(base_url, path), p.checksum, rows,
                               version)
        report.flagged += [f"{path} > {r.heading or p.title}: {', '.join(r.flags)}" for r in rows if r.flags]
        if p.is_new:
            report.new += 1
        else:
            report.changed += 1
