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
        version    text NOT NULL DEFAULT '',
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
        version     text NOT NULL DEFAULT '',  -- a label set at ingest (--version), for filters
        ingested_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (source, path)
    );
    CREATE TABLE chunks (
        id           text PRIMARY KEY,  -- {source}:{path}#{index}
        document_id  bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        -- source, path and version are repeated from documents so filtered searches need no join
        source       text NOT NULL,
        path         text NOT NULL,
        version      text NOT NULL DEFAULT '',
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
        -- Full-text side of hybrid search (BM25 in SQL, see Store.search).
        fts          tsvector GENERATED ALWAYS AS (to_tsvector('english', breadcrumb || ' ' || content)) STORED
    );
    CREATE INDEX chunks_document_idx ON chunks (document_id);
    CREATE INDEX chunks_source_idx ON chunks (source);
    CREATE INDEX chunks_embed_hash_idx ON chunks (embed_hash);
    CREATE INDEX chunks_fts_idx ON chunks USING gin (fts);
    -- BM25's inverse document frequency per lexeme, refreshed after each ingest.
    CREATE MATERIALIZED VIEW lexeme_idf AS
        SELECT df.lexeme, ln(1 + (n.total - df.ndoc + 0.5) / (df.ndoc + 0.5)) AS idf
        FROM (SELECT lexeme, count(*) AS ndoc FROM chunks, unnest(tsvector_to_array(fts)) AS lexeme
              GROUP BY lexeme) df,
             (SELECT count(*) AS total FROM chunks) n;
    CREATE UNIQUE INDEX lexeme_idf_lexeme_idx ON lexeme_idf (lexeme);
    """,
    # 2: BM25 statistics per source, so one source's ranking does not depend on what else is
    # stored, and per section (a heading's chunks taken together) for section-level BM25.
    """
    DROP MATERIALIZED VIEW lexeme_idf;
    CREATE MATERIALIZED VIEW lexeme_idf AS
        SELECT df.source, df.lexeme, ln(1 + (n.total - df.ndoc + 0.5) / (df.ndoc + 0.5)) AS idf
        FROM (SELECT source, lexeme, count(*) AS ndoc FROM chunks, unnest(tsvector_to_array(fts)) AS lexeme
              GROUP BY source, lexeme) df
        JOIN (SELECT source, count(*) AS total FROM chunks GROUP BY source) n USING (source);
    CREATE UNIQUE INDEX lexeme_idf_source_lexeme_idx ON lexeme_idf (source, lexeme);
    CREATE MATERIALIZED VIEW source_stats AS
        SELECT source, sum(tokens)::float8 / sum(chunks) AS chunk_tokens, avg(tokens)::float8 AS section_tokens
        FROM (SELECT source, count(*) AS chunks, sum(tokens) AS tokens FROM chunks
              GROUP BY source, document_id, heading_path) sections
        GROUP BY source;
    CREATE UNIQUE INDEX source_stats_source_idx ON source_stats (source);
    """,
    # 3: the number of chunks per source, for the IDF of a question word the source never uses
    # (the word-match bar of Store.search weighs the question's words).
    """
    DROP MATERIALIZED VIEW source_stats;
    CREATE MATERIALIZED VIEW source_stats AS
        SELECT source, sum(chunks)::float8 AS chunks, sum(tokens)::float8 / sum(chunks) AS chunk_tokens,
               avg(tokens)::float8 AS section_tokens
        FROM (SELECT source, count(*) AS chunks, sum(tokens) AS tokens FROM chunks
              GROUP BY source, document_id, heading_path) sections
        GROUP BY source;
    CREATE UNIQUE INDEX source_stats_source_idx ON source_stats (source);
    """,
    # 4: how many chunks hold each lexeme, so a search can pick the question's rarest words and
    # bound how many chunks its full-text side scores (Store.search, TEXT_POSTINGS).
    """
    DROP MATERIALIZED VIEW lexeme_idf;
    CREATE MATERIALIZED VIEW lexeme_idf AS
        SELECT df.source, df.lexeme, df.ndoc, ln(1 + (n.total - df.ndoc + 0.5) / (df.ndoc + 0.5)) AS idf
        FROM (SELECT source, lexeme, count(*) AS ndoc FROM chunks, unnest(tsvector_to_array(fts)) AS lexeme
              GROUP BY source, lexeme) df
        JOIN (SELECT source, count(*) AS total FROM chunks GROUP BY source) n USING (source);
    CREATE UNIQUE INDEX lexeme_idf_source_lexeme_idx ON lexeme_idf (source, lexeme);
    """,
    # 5: site generators. Each source records its generator and the version search answers from
    # by default (its newest release; for an unversioned source, the label it was ingested with);
    # each document whether it is a guide page or release notes (ranked lower, Store.search), and
    # the files it includes (a changed include re-processes the page).
    """
    ALTER TABLE sources ADD COLUMN site text NOT NULL DEFAULT '';
    ALTER TABLE sources ADD COLUMN default_version text NOT NULL DEFAULT '';
    UPDATE sources SET default_version = version;
    ALTER TABLE documents ADD COLUMN kind text NOT NULL DEFAULT 'page';
    ALTER TABLE documents ADD COLUMN includes text[] NOT NULL DEFAULT '{}';  -- files the page includes
    """,
    # 6: API keys for `pgcite serve`: only a SHA-256 of each key is kept (keys are random, 256
    # bits); `sources` NULL reads every source; a revoked key stays listed.
    """
    CREATE TABLE api_keys (
        name        text PRIMARY KEY,
        key_hash    bytea NOT NULL UNIQUE,
        sources     text[],
        admin       boolean NOT NULL DEFAULT false,
        created_at  timestamptz NOT NULL DEFAULT now(),
        revoked_at  timestamptz
    );
    """,
    # 7: the answer log (store/log_rows.py): every answer, what it was built from, and its
    # feedback. `scope` is the sources the question was asked over (NULL: every source), so a key
    # scoped to sources sees only the rows asked within them.
    """
    CREATE TABLE answer_log (
        id          uuid PRIMARY KEY,
        asked_at    timestamptz NOT NULL DEFAULT now(),
        channel     text NOT NULL,
        key_name    text,
        scope       text[],
        question    text NOT NULL,
        source      text,
        path        text,
        version     text,
        retrieved   jsonb NOT NULL,
        answer      text NOT NULL,
        refused     boolean NOT NULL,
        checks      jsonb NOT NULL,
        generator   text NOT NULL,
        note        text NOT NULL DEFAULT '',
        latency_ms  int NOT NULL,
        rating      text CHECK (rating IN ('up', 'down')),
        comment     text,
        rated_at    timestamptz,
        confirmed   boolean NOT NULL DEFAULT false
    );
    CREATE INDEX answer_log_asked_at_idx ON answer_log (asked_at);
    """,
    # 8: whether a chunk is of its source's default version, as a column the planner keeps
    # statistics for. Compared per row with the sources table, the filter was estimated to keep
    # 0.5% of the rows, so the vector side sorted every chunk of a source instead of using HNSW
    # (0.70 s instead of 0.03 s at 100,000 chunks, docs/storage.md).
    """
    ALTER TABLE chunks ADD COLUMN in_default_version boolean NOT NULL DEFAULT true;
    UPDATE chunks c SET in_default_version = false FROM sources s
    WHERE s.name = c.source AND c.version <> s.default_version;
    """,
    # 9: the chunks of a section (document, heading path) through an index: hybrid search scores
    # the sections of its candidates, and found them by scanning every chunk holding a question word
    # (0.56 s per search at 100,000 chunks). It serves the document's chunks as well.
    """
    CREATE INDEX chunks_section_idx ON chunks (document_id, heading_path);
    DROP INDEX chunks_document_idx;
    """,
    # 10: vectors in half precision (halfvec): at a million chunks of 384 dimensions the HNSW index
    # takes 1.1 GB instead of 2.0 GB and builds in 142 s instead of 159, with the same recall
    # (docs/storage.md, "Vectors at a million"); models of up to 4,000 dimensions can be indexed. A
    # database made before is converted in place and its index rebuilt.
    """
    DO $$
    DECLARE
        dimension int := (SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass
                          AND attname = 'embedding' AND atttypid = 'vector'::regtype AND NOT attisdropped);
    BEGIN
        IF dimension IS NOT NULL THEN
            DROP INDEX IF EXISTS chunks_embedding_hnsw;
            EXECUTE format('ALTER TABLE chunks ALTER COLUMN embedding TYPE halfvec(%s)', dimension);
            -- as Store.refresh_indexes sizes it (index_sql.index_build_memory)
            PERFORM set_config('maintenance_work_mem', greatest(256, least(4096, round(
                (SELECT count(*) FROM chunks) * (2 * dimension + 700) * 1.25 / 1048576)))::int || 'MB', true);
            CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding halfvec_cosine_ops)
                WITH (ef_construction = 512);  -- index_sql.HNSW_EF_CONSTRUCTION
        END IF;
    END $$;
    """,
    # 11: keeping in step with the docs (store/sync_rows.py). Each document keeps the listing's stamp
    # of its file and the file's own checksum, so a sync skips an unchanged file without reading it;
    # each source how it was ingested (a sync reads it the same way), its schedule and its last sync.
    # A flag row in pgcite_settings says BM25's statistics are older than the chunks.
    """
    ALTER TABLE documents ADD COLUMN stamp text NOT NULL DEFAULT '';
    ALTER TABLE documents ADD COLUMN file_checksum text NOT NULL DEFAULT '';
    ALTER TABLE sources ADD COLUMN options jsonb NOT NULL DEFAULT '{}';
    ALTER TABLE sources ADD COLUMN sync_interval interval;
    ALTER TABLE sources ADD COLUMN synced_at timestamptz;
    ALTER TABLE sources ADD COLUMN last_sync jsonb;
    """,
    # 12: each source's relevance bar and vector weight, measured with its own model (calibration.py).
    """
    ALTER TABLE sources ADD COLUMN calibration jsonb;
    """,
    # 13: each page's mean chunk vector, for the page prior (search_sql.PAGE_WEIGHT): averaging a
    # page's chunks at every search cost 18 ms of 68 at 14,000 chunks.
    """
    ALTER TABLE documents ADD COLUMN page_embedding halfvec;
    DO $$
    BEGIN
        -- the embedding column comes with the first model bound (Store.bind_model)
        IF EXISTS (SELECT FROM information_schema.columns
                   WHERE table_schema = current_schema() AND table_name = 'chunks' AND column_name = 'embedding') THEN
            UPDATE documents d SET page_embedding = p.mean
            FROM (SELECT document_id, avg(embedding) AS mean FROM chunks GROUP BY document_id) p
            WHERE p.document_id = d.id;
        END IF;
    END $$;
    """,
    # 14: each page as cleaned, includes read in, and its front matter's description: what MCP's
    # read_page, llms-full.txt and /SOURCE/PATH.md serve. NULL until the page is read again (ingest
    # PROCESSING_VERSION 6 re-reads every page once; its vectors come from the cache).
    """
    ALTER TABLE documents ADD COLUMN markdown text;
    ALTER TABLE documents ADD COLUMN description text NOT NULL DEFAULT '';
    """,
    # 15: browser keys (access.py): the web pages (origins) a read key may be used from, for the
    # Ask-AI widget; NULL: a key that no web page may use.
    """
    ALTER TABLE api_keys ADD COLUMN origins text[];
    """,
    # 16: rate limits shared by every server on the database (server/limits.py): one row per request
    # counted in the last minute, per bucket (a key, an address). Unlogged: a crash may forget them.
    # The function counts under a lock per bucket, so two servers never both let the limit's last
    # request through; it returns the seconds to wait, 0 when the request may go.
    """
    CREATE UNLOGGED TABLE rate_hits (
        bucket text NOT NULL,
        at     timestamptz NOT NULL DEFAULT clock_timestamp()
    );
    CREATE INDEX rate_hits_bucket_idx ON rate_hits (bucket, at);
    CREATE FUNCTION pgcite_rate_hit(p_bucket text, p_limit int) RETURNS double precision
    LANGUAGE plpgsql AS $$
    DECLARE
        counted int;
        oldest timestamptz;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('pgcite:rate:' || p_bucket, 0));
        DELETE FROM rate_hits WHERE bucket = p_bucket AND at <= clock_timestamp() - interval '60 seconds';
        SELECT count(*), min(at) INTO counted, oldest FROM rate_hits WHERE bucket = p_bucket;
        IF counted >= p_limit THEN
            RETURN greatest(extract(epoch FROM oldest + interval '60 seconds' - clock_timestamp()), 0.001);
        END IF;
        INSERT INTO rate_hits (bucket) VALUES (p_bucket);
        IF random() < 0.01 THEN  -- now and then, the buckets nobody uses any more
            DELETE FROM rate_hits WHERE at <= clock_timestamp() - interval '60 seconds';
        END IF;
        RETURN 0;
    END $$;
    """,
    # 17: the server's ingest and sync jobs (store/jobs_sql.py), shared by every server on the
    # database: one queued sync per source at a time; an uploaded zip is kept with its job until it ends.
    """
    CREATE TABLE jobs (
        id              text PRIMARY KEY,
        source          text NOT NULL,
        location        text NOT NULL DEFAULT '',
        kind            text NOT NULL CHECK (kind IN ('ingest', 'sync')),
        trigger         text NOT NULL DEFAULT '',
        base_url        text NOT NULL DEFAULT '',
        requests        int NOT NULL DEFAULT 1,
        state           text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'failed')),
        run_after       timestamptz NOT NULL DEFAULT now(),
        owner           text,
        lease_until     timestamptz,
        attempts        int NOT NULL DEFAULT 0,
        files_read      int NOT NULL DEFAULT 0,
        chunks_embedded int NOT NULL DEFAULT 0,
        chunks_reused   int NOT NULL DEFAULT 0,
        summary         text NOT NULL DEFAULT '',
        error           text NOT NULL DEFAULT '',
        created_at      timestamptz NOT NULL DEFAULT now(),
        finished_at     timestamptz
    );
    CREATE UNIQUE INDEX jobs_one_waiting_sync ON jobs (source) WHERE kind = 'sync' AND state = 'queued';
    CREATE INDEX jobs_queued_idx ON jobs (created_at) WHERE state = 'queued';
    CREATE TABLE job_uploads (
        job_id text NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        part   int NOT NULL,
        data   bytea NOT NULL,
        PRIMARY KEY (job_id, part)
    );
    """,
    # 18: languages (docs/languages.md): each page's, from its site's layout and configuration; a
    # source's default language and the languages it holds, read by every search to choose one.
    """
    ALTER TABLE documents ADD COLUMN language text NOT NULL DEFAULT '';
    ALTER TABLE chunks ADD COLUMN language text NOT NULL DEFAULT '';
    ALTER TABLE sources ADD COLUMN default_language text NOT NULL DEFAULT '';
    ALTER TABLE sources ADD COLUMN languages text[] NOT NULL DEFAULT '{}';
    """,
    # 19: a logged answer is stale once a section it cited has changed or gone (log_rows.mark_stale,
    # run by every ingest and sync): `pgcite log --stale`, and export leaves it out.
    """
    ALTER TABLE answer_log ADD COLUMN stale_at timestamptz;
    """,
    # 20: each section's words and length (a heading's chunks taken together), kept at ingest so a
    # search reads one row per section it scores instead of every chunk of the section and summing
    # them (search_sql, docs/storage.md "Search beside the peers"). A chunk's tsvector holds its
    # words' positions, so concatenating the chunks' gives the section's counts exactly (up to 256
    # positions a word, PostgreSQL's limit).
    """
    CREATE AGGREGATE pgcite_tsvector_sum (tsvector) (SFUNC = tsvector_concat, STYPE = tsvector, INITCOND = '');
    CREATE TABLE sections (
        document_id  bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        heading_path text[] NOT NULL,
        source       text NOT NULL,
        tokens       int NOT NULL,
        fts          tsvector NOT NULL,
        PRIMARY KEY (document_id, heading_path)
    );
    INSERT INTO sections
        SELECT document_id, heading_path, min(source), sum(tokens), pgcite_tsvector_sum(fts ORDER BY ord)
        FROM chunks GROUP BY document_id, heading_path;
    """,
    # 21: chat platforms' deliveries (store/chat_sql.py): Slack's events and Discord's interactions
    # alike, each answered once, by whichever server took it first; an answer a stopped server left
    # half done is finished by another. `thread` and `reply` say where, in the platform's terms.
    """
    CREATE TABLE chat_events (
        event_id    text PRIMARY KEY,
        platform    text NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now(),
        team        text NOT NULL,
        channel     text NOT NULL,
        user_id     text NOT NULL,
        thread      text NOT NULL,
        reply       text NOT NULL DEFAULT '',
        question    text NOT NULL DEFAULT '',  -- emptied once answered
        lease_until timestamptz NOT NULL,
        done        boolean NOT NULL DEFAULT false
    );
    CREATE INDEX chat_events_pending_idx ON chat_events (platform, lease_until) WHERE NOT done;
    """,
    # 22: the insights (store/insights_sql.py) count the log's rows of a span by day, channel,
    # source and language, and the pages their answers cited. The pages an answer cited are kept in
    # columns of their own ("source:path" once each, and how many of its sections), and so is its
    # language (its first section's page's, '' when that has none): written by log_rows.insert, filled
    # here for the rows before. A covering index on asked_at holds them with every column the
    # counts read, so every figure is an index-only scan that never reads the rows' text and sections
    # (2 to 5 KB each, the sections compressed JSON). At a million answers 30 days' figures took 2.5 s
    # with the sections unpacked and 0.72 s from the columns (bench/insights.py, docs/answer-log.md);
    # filling the columns of a million rows took 34 s.
    # It serves whatever the plain index did (the log's listing, retention), so that one goes.
    """
    ALTER TABLE answer_log ADD COLUMN cited_pages text[] NOT NULL DEFAULT '{}',
        ADD COLUMN cited_counts int[] NOT NULL DEFAULT '{}', ADD COLUMN language text NOT NULL DEFAULT '';
    UPDATE answer_log SET (cited_pages, cited_counts) = (
        SELECT array_agg(page ORDER BY page), array_agg(n ORDER BY page)
        FROM (SELECT (r ->> 'source') || ':' || (r ->> 'path') AS page, count(*)::int AS n
              FROM jsonb_array_elements(retrieved) r WHERE (r ->> 'cited')::boolean GROUP BY 1) c)
    WHERE retrieved @> '[{"cited": true}]';
    UPDATE answer_log a SET language = d.language FROM documents d
    WHERE d.source = a.retrieved -> 0 ->> 'source' AND d.path = a.retrieved -> 0 ->> 'path' AND d.language <> '';
    CREATE INDEX answer_log_span_idx ON answer_log (asked_at) INCLUDE (channel, scope, language, generator,
        refused, rating, stale_at, latency_ms, cited_pages, cited_counts);
    DROP INDEX answer_log_asked_at_idx;
    """,
    # 23: a holder id for each taking of a chat delivery (store/chat_sql.py): a server whose answer
    # waited in its queue past the lease, while another server took the delivery, must not answer it
    # too. Only the holder renews, records or finishes it. Rows taken before have none, so they are
    # only ever taken again (once their lease runs out) by a sweep, which gives them one.
    """
    ALTER TABLE chat_events ADD COLUMN holder text;
    """,
    # 24: a page's place in its site's reading order (Sphinx's toctree, mdBook's SUMMARY.md), null
    # where the site says none: llms.txt and llms-full.txt list pages in it, the rest after by URL.
    """
    ALTER TABLE documents ADD COLUMN position int;
    """,
    # 25: when a job began to run (store/jobs_sql.py): a sync whose server stopped once it had run
    # past its crawl's deadline is not queued again, so a site that hangs every sync cannot hold one
    # over and over through restarts.
    """
    ALTER TABLE jobs ADD COLUMN started_at timestamptz;
    """,
]
