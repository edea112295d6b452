"""The MCP Inspector's CLI (npm @modelcontextprotocol/inspector, pinned in tests/inspector, installed
by `make dev`): a client nobody at pgcite wrote lists the tools and gets a cited answer and a
refusal, over streamable HTTP from a real `pgcite serve` and over stdio from `pgcite mcp`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pgcite.core import Pgcite
from tests.http_server import served

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent / "inspector"
NODE = HERE / "node_modules" / ".bin" / "node"
LAUNCHER = HERE / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
DOCS = {"spin.md": "# Spinning\n\n## Spin rate\n\nThe default spin rate is 40 turns per second.\n"}

core, base = served({"widgets": (DOCS, "https://widgets.example/")})


@pytest.fixture(scope="module")
def inspector(tmp_path_factory):
    if not LAUNCHER.is_file():
        pytest.skip("the MCP Inspector is not installed in tests/inspector: run `make dev`")
    state = tmp_path_factory.mktemp("inspector")

    def run(target: list[str], method: str, *extra: str, env: dict | None = None) -> dict:
        # --stored-auth-only: never start the OAuth flow (a browser, a callback port) on a 401.
        command = [str(NODE), str(LAUNCHER), "--cli", "--format", "json", "-q", "--stored-auth-only",
                   "--method", method, *extra, *target]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "MCP_INSPECTOR_SECRET_STORE": "memory",
                                   "MCP_STORAGE_DIR": str(state), **(env or {})})
        assert done.returncode == 0, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
        return json.loads(done.stdout)["result"]

    return run


def _ask(inspector, target: list[str], question: str) -> dict:
    result = inspector(target, "tools/call", "--tool-name", "ask_docs", "--tool-args-json",
                       json.dumps({"question": question}))
    assert not result.get("isError"), result
    return result["structuredContent"]


def _check(inspector, target: list[str]) -> None:
    tools = inspector(target, "tools/list")["tools"]
    assert {t["name"] for t in tools} == {"search_docs", "ask_docs", "read_page", "read_section", "list_sources"}
    found = inspector(target, "tools/call", "--tool-name", "search_docs", "--tool-args-json",
                      json.dumps({"query": "spin rate", "k": 2}))["structuredContent"]["sections"]
    assert found[0]["url"] == "https://widgets.example/spin.md#spin-rate"
    cited = _ask(inspector, target, "What is the default spin rate?")
    assert not cited["refused"] and "40" in cited["answer"] and "[1]" in cited["answer"]
    refused = _ask(inspector, target, "Which Kubernetes operator deploys the billing service?")
    assert refused["refused"] and refused["answer"] == "Not in the documents."


def test_the_inspector_over_streamable_http_with_a_key(inspector, base: str, core: Pgcite):
    key = core.create_key("inspector", sources=["widgets"])
    try:
        _check(inspector, [f"{base}/mcp", "--transport", "http", "--header", f"Authorization: Bearer {key}"])
    finally:
        core.revoke_key("inspector")


def test_the_inspector_over_stdio(inspector, core: Pgcite, tmp_path: Path):
    # The Inspector passes a server only the variables it is given with -e.
    settings = ["-e", f"PGCITE_DATABASE_URL={core.settings.database_url}", "-e", f"PGCITE_HOME={tmp_path}"]
    _check(inspector, [*settings, "--", sys.executable, "-m", "pgcite", "mcp"])
