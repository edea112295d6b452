"""Versioned schema migrations. Append new steps; never edit a released one."""

MIGRATIONS: list[str] = [
    # 1: sources, documents, chunks. The embedding column is added by Store.bind_model, once the
    # model (and so the dimension) is known.
    """
    CREATE TABLE pgcite_settings (
        key   text PRIMARY KEY,
        value text NOT NULL
    );
    CREATE TABLE sources (
        name       text PRIMARY KEY,
        location   text NOT NULL,
        base_url   text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE documents (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source      text NOT NULL REFERENCES sources (name) ON DELETE CASCADE,
        path        text NOT NULL,
        title       text NOT NULL,
        url         text NOT NULL DEFAULT '',
        checksum    text NOT NULL,
        ingested_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (source, path)
    );
    CREATE TABLE chunks (
        id           text PRIMARY KEY,  -- {source}:{path}#{index}
        document_id  bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        source       text NOT NULL,     -- repeated from documents so filtered searches need no join
        ord          int NOT NULL,
        heading      text NOT NULL,
        heading_path text[] NOT NULL,
        breadcrumb   text NOT NULL,
        anchor       text,
        url          text NOT NULL DEFAULT '',
        content      text NOT NULL,
        tokens       int NOT NULL,
        embed_hash   bytea NOT NULL,    -- sha256(model, embedded text): the embedding cache key
        flags        text[] NOT NULL DEFAULT '{}',  -- injection-style text found at ingest (safety.py)
        fts          tsvector GENERATED ALWAYS AS (to_tsvector('english', breadcrumb || ' ' || content)) STORED
    );
    CREATE INDEX chunks_document_idx ON chunks (document_id);
    CREATE INDEX chunks_source_idx ON chunks (source);
    CREATE INDEX chunks_embed_hash_idx ON chunks (embed_hash);
    CREATE INDEX chunks_fts_idx ON chunks USING gin (fts);
    """,
]
