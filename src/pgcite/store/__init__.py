"""Storage: the embedded server's lifecycle, schema migrations and all SQL."""

from .database import SEARCH_MODES, ChunkRow, SearchFilter, SearchHit, SourceInfo, Store, WordMatch, embed_hash

__all__ = ["SEARCH_MODES", "ChunkRow", "SearchFilter", "SearchHit", "SourceInfo", "Store", "WordMatch", "embed_hash"]
