"""Storage: the embedded server's lifecycle, schema migrations and all SQL."""

from .database import ChunkRow, SearchHit, SourceInfo, Store, embed_hash

__all__ = ["ChunkRow", "SearchHit", "SourceInfo", "Store", "embed_hash"]
