"""The MCP server, driven by the protocol's own Python SDK client: over streamable HTTP at /mcp on a
real `pgcite serve` on loopback (keys and scopes as on /v1/*), and over stdio from `pgcite mcp`."""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from pgcite.core import Pgcite
from pgcite.server.hosts import allowed_hosts
from pgcite.vocabulary import REFUSAL
from tests.http_server import call, served

pytestmark = pytest.mark.slow

TOOLS = {"search_docs", "ask_docs", "read_page", "read_section", "list_sources"}
ALPHA = {
    "index.md": "---\ndescription: Widgets that spin.\n---\n# Alpha Widgets\n\nAlpha makes widgets.\n",
    "spin.md": "# Spinning\n\n## Spin rate\n\nThe default spin rate is 40 turns per second.\n\n"
    "## Stopping\n\nPress the red lever to stop a widget.\n",
}
# Every word of beta's is its own: none may reach a caller scoped to alpha.
BETA = {
    "beta.md": "# Zephyrine Gearbox\n\n## Lubrication\n\nGrease the zephyrine gearbox with quokkalube every "
    "17 fortnights; the default spin rate of a gearbox is 12 turns per second.\n"
}
BETA_MARKERS = ("Zephyrine", "zephyrine", "quokkalube", "fortnights", "beta.md")
ANSWERABLE = "What is the default spin rate of a widget?"
UNANSWERABLE = "Which Kubernetes operator deploys the billing service?"

core, base = served({"alpha": (ALPHA, "https://alpha.example/"), "beta": (BETA, "https://beta.example/docs/")})


@asynccontextmanager
async def http_client(base: str, key: str | None = None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(base + "/mcp", http_client=http)) as client:
            yield client


def run(session, base: str, key: str | None = None):
    """Run `session(client)` against the server's /mcp and return what it returns."""

    async def main():
        async with http_client(base, key) as client:
            return await session(client)

    return anyio.run(main)


async def _tour(client) -> dict:
    """What every transport must do: the tools, a cited answer, a refusal, reading what was found."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    found = await client.call_tool("search_docs", {"query": "spin rate", "k": 3})
    answered = await client.call_tool("ask_docs", {"question": ANSWERABLE})
    refused = await client.call_tool("ask_docs", {"question": UNANSWERABLE})
    first = found.structured_content["sections"][0]
    page = await client.call_tool("read_page", {"url": first["url"]})
    section = await client.call_tool("read_section", {"id": first["id"]})
    sources = await client.call_tool("list_sources", {})
    return dict(
        tools=tools, found=found, answered=answered, refused=refused, page=page, section=section, sources=sources
    )


def _check_tour(tour: dict, sources: set[str]) -> None:
    assert set(tour["tools"]) == TOOLS
    for tool in tour["tools"].values():
        assert tool.description and tool.output_schema and tool.annotations.read_only_hint
    found = tour["found"].structured_content["sections"]
    assert found[0]["url"] == "https://alpha.example/spin.md#spin-rate" and "40 turns" in found[0]["text"]
    answered = tour["answered"]
    assert not answered.is_error and not answered.structured_content["refused"]
    assert "40" in answered.structured_content["answer"] and "[1]" in answered.structured_content["answer"]
    assert answered.structured_content["sources"][0]["url"].startswith("https://alpha.example/spin")
    assert "Sources:" in answered.content[0].text and "https://alpha.example/spin" in answered.content[0].text
    refused = tour["refused"].structured_content
    assert refused["refused"] and refused["answer"] == REFUSAL and refused["answer_id"]
    page = tour["page"].structured_content
    assert page["path"] == "spin.md" and "## Stopping" in page["markdown"] and "red lever" in page["markdown"]
    section = tour["section"].structured_content
    assert section["markdown"].startswith("## Spin rate") and "red lever" not in section["markdown"]
    assert {s["name"] for s in tour["sources"].structured_content["sources"]} == sources


def test_the_sdk_client_over_streamable_http(base: str, core: Pgcite):
    _check_tour(run(_tour, base), {"alpha", "beta"})
    core.answer_log.flush()
    logged = [e for e in core.log_entries(limit=20) if e.channel == "mcp"]
    assert {e.question for e in logged} >= {ANSWERABLE, UNANSWERABLE, "spin rate"}
    assert [e.generator for e in logged if e.question == "spin rate"] == ["search"]
    assert any(e.refused for e in logged if e.question == UNANSWERABLE)  # so gaps see it


def test_tool_errors_are_one_line_and_name_what_to_do(base: str):
    async def session(client):
        return [
            await client.call_tool("search_docs", {"query": "x", "source": "nope"}),
            await client.call_tool("read_page", {"url": "https://alpha.example/missing"}),
            await client.call_tool("read_section", {"id": "alpha:spin.md#99"}),
            await client.call_tool("read_page", {}),
            await client.call_tool("search_docs", {"query": "x", "k": 10_000}),
            await client.call_tool("search_docs", {"query": "x" * 4_001, "k": "many"}),
            await client.call_tool("read_page", {"source": "alpha\x00", "path": "spin.md"}),
        ]

    unknown, no_page, no_section, unnamed, too_many, malformed, nul = run(session, base)
    everything = (unknown, no_page, no_section, unnamed, too_many, malformed, nul)
    assert all(r.is_error for r in everything)
    assert all("\n" not in r.content[0].text for r in everything)
    assert "k: Input should be less than or equal to 100" in too_many.content[0].text
    assert "query: " in malformed.content[0].text and "k: " in malformed.content[0].text
    assert "fix the arguments" in malformed.content[0].text
    # A NUL is the caller's to remove, not a database fault to retry.
    assert "NUL" in nul.content[0].text and "database" not in nul.content[0].text
    assert "no source named 'nope'" in unknown.content[0].text
    assert "no page at" in no_page.content[0].text and "search_docs" in no_page.content[0].text
    assert "no section" in no_section.content[0].text
    assert "url, or by its source and path" in unnamed.content[0].text
    assert "\n" not in unknown.content[0].text and "Traceback" not in too_many.content[0].text


MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_a_rebound_host_name_is_refused_on_every_route_in_json(base: str):
    """DNS rebinding: a page on evil.example, once its name points at 127.0.0.1, sends its own name
    as Host. A server on loopback answers only to loopback names, on /v1/* as on /mcp."""
    port = base.rsplit(":", 1)[1]
    rebound = {"Host": f"rebind.evil.example:{port}"}
    for method, path, body, extra in [
        ("GET", "/v1/search?q=spin", None, {}), ("POST", "/v1/ask", {"question": "spin rate?"}, {}),
        ("GET", "/v1/sources", None, {}), ("GET", "/llms.txt", None, {}), ("GET", "/", None, {}),
        ("POST", "/mcp", LIST_TOOLS, MCP_ACCEPT),
    ]:
        refused = call(base, path, body, method=method, headers={**rebound, **extra})
        assert refused.status == 421, (path, refused.status)
        assert refused.body["error"]["type"] == "misdirected_request", path
        assert "PGCITE_SERVE_HOSTS" in refused.body["error"]["message"]
    for name in ("localhost", "127.0.0.1"):
        assert call(base, "/v1/search?q=spin", headers={"Host": f"{name}:{port}"}).status == 200
    # An MCP request from a page on another host, and one that is not JSON: the API's JSON errors.
    paged = call(base, "/mcp", LIST_TOOLS, headers={**MCP_ACCEPT, "Origin": "https://evil.example"})
    assert paged.status == 403 and "from a web page at https://evil.example" in paged.body["error"]["message"]
    plain = call(base, "/mcp", b'{"jsonrpc": "2.0"}', headers={**MCP_ACCEPT, "Content-Type": "text/plain"})
    assert plain.status == 415 and "send it as application/json" in plain.body["error"]["message"]
    local = call(base, "/mcp", LIST_TOOLS, headers={**MCP_ACCEPT, "Origin": f"http://localhost:{port}"})
    assert local.status == 200


def test_no_idle_stream_is_held_open_on_get(base: str):
    """A GET would open a stream for messages pgcite never sends, held for good (1,000 of them cost
    40 MB a worker): MCP lets a server answer 405 instead, at once."""
    started = time.monotonic()
    opened = call(base, "/mcp", headers={"Accept": "text/event-stream"})
    assert opened.status == 405 and opened.body["error"]["type"] == "method_not_allowed"
    assert time.monotonic() - started < 10


def test_the_host_names_a_server_answers_to():
    assert allowed_hosts("127.0.0.1", "") == {"127.0.0.1", "localhost", "::1"}
    assert allowed_hosts("::1", "docs.internal, [fd00::1]") == {"127.0.0.1", "localhost", "::1", "docs.internal",
                                                                 "fd00::1"}
    assert allowed_hosts("0.0.0.0", "") is None  # on a network address the keys are the guard
    assert allowed_hosts("0.0.0.0", "answers.example.com") == {"answers.example.com", "0.0.0.0"}


@pytest.fixture(scope="module")
def alpha_key(core: Pgcite, base: str):
    key = core.create_key("mcp-alpha", sources=["alpha"])
    yield key
    core.revoke_key("mcp-alpha")


def test_a_key_scoped_to_alpha_never_sees_beta_through_mcp(base: str, core: Pgcite, alpha_key: str):
    question = "What is the default spin rate of a zephyrine gearbox lubricated with quokkalube?"
    beta_chunk = core.search("zephyrine gearbox", k=1)[0]

    async def session(client):
        return [
            await client.list_tools(),
            await client.call_tool("list_sources", {}),
            await client.call_tool("search_docs", {"query": question, "k": 10}),
            await client.call_tool("ask_docs", {"question": question}),
            await client.call_tool("search_docs", {"query": question, "source": "beta"}),
            await client.call_tool("read_page", {"url": beta_chunk.url}),
            await client.call_tool("read_page", {"source": "beta", "path": "beta.md"}),
            await client.call_tool("read_section", {"id": beta_chunk.id}),
        ]

    results = run(session, base, alpha_key)
    for result in results[1:]:
        text = json.dumps(result.model_dump(mode="json"))
        for own_words in (question, beta_chunk.url, beta_chunk.id, "'beta.md'"):  # echoed back, no leak
            text = text.replace(own_words, "")
        assert not [m for m in BETA_MARKERS if m in text], text[:400]
    assert [s["name"] for s in results[1].structured_content["sources"]] == ["alpha"]
    hidden, *unread = results[4:]
    assert hidden.is_error and "no source named 'beta'" in hidden.content[0].text  # as if it did not exist
    assert all(r.is_error and ("no page" in r.content[0].text or "no section" in r.content[0].text) for r in unread)
    # Without a key (one exists now) or with a wrong one, /mcp answers as /v1/* does.
    anonymous = call(base, "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert anonymous.status == 401 and anonymous.headers["WWW-Authenticate"] == "Bearer"
    wrong = call(base, "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, key="pgc_wrong")
    assert wrong.status == 401 and "not valid" in wrong.body["error"]["message"]


def test_the_sdk_client_over_stdio(core: Pgcite, tmp_path):
    """`pgcite mcp` as Claude Code or Cursor start it: a subprocess speaking on stdin and stdout."""
    env = {**os.environ, "PGCITE_DATABASE_URL": core.settings.database_url, "PGCITE_HOME": str(tmp_path)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "pgcite", "mcp"], env=env)

    async def main():
        async with Client(params) as client:
            return await _tour(client)

    _check_tour(anyio.run(main), {"alpha", "beta"})


def test_stdio_answers_a_line_that_is_no_message_with_a_json_rpc_error(core: Pgcite, tmp_path):
    """Raw JSON-RPC on `pgcite mcp`'s stdin: text that is not JSON gets -32700, JSON that is not a
    message -32600 (id null, as JSON-RPC 2.0 says), and the server goes on answering."""
    import subprocess

    env = {**os.environ, "PGCITE_DATABASE_URL": core.settings.database_url, "PGCITE_HOME": str(tmp_path)}
    hello = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    lines = ["this is not json", json.dumps({"hello": "world"}), json.dumps(hello)]
    done = subprocess.run([sys.executable, "-m", "pgcite", "mcp"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, env=env, timeout=300)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r.get("id") for r in replies] == [None, None, 7], done.stdout + done.stderr
    assert replies[0]["error"]["code"] == -32700 and "not JSON" in replies[0]["error"]["message"]
    assert replies[1]["error"]["code"] == -32600
    assert replies[2]["result"]["serverInfo"]["name"] == "pgcite"
