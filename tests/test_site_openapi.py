"""OpenAPI 3 and Swagger 2 documents (pgcite.ingest.sites.openapi): one section per operation,
anchored as Swagger UI deep-links it, schemas read in through their `$ref`s; a document given
alone, beside a site's pages, or broken. tests/sites/openapi/openapi.yaml is a small bookshop API
written for these tests; then an ingest and `ask` against the real database and model."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import psutil
import pytest
from tests.http_server import call
from tests.test_cli import pgcite
from tests.test_sites import read_site
from tests.test_workers import serving

from pgcite.answer.extractive import ExtractiveGenerator
from pgcite.cli.common import default_source_name
from pgcite.answer.flow import ask
from pgcite.config import Settings
from pgcite.core import Pgcite
from pgcite.errors import SourceError
from pgcite.ingest.flow import ingest, open_location
from pgcite.ingest.sites import join_url
from pgcite.ingest.sites.base import Page
from pgcite.ingest.sites.openapi import spec_markdown
from pgcite.store import Store

SPEC = Path(__file__).parent / "sites" / "openapi" / "openapi.yaml"
DOCS_URL = "https://api.bookshop.example/docs"

SWAGGER2 = {
    "swagger": "2.0",
    "info": {"title": "Pet store", "version": "1.0.0"},
    "host": "petstore.example",
    "basePath": "/api",
    "schemes": ["https"],
    "produces": ["application/json"],
    "paths": {
        "/pets": {
            "post": {
                "operationId": "addPet",
                "summary": "Add a pet",
                "parameters": [
                    {"name": "body", "in": "body", "required": True, "schema": {"$ref": "#/definitions/NewPet"}}
                ],
                "responses": {"200": {"description": "the pet", "schema": {"$ref": "#/definitions/Pet"}}},
            }
        },
        "/pets/{id}": {
            "get": {
                "operationId": "find pet by id",
                "parameters": [{"name": "id", "in": "path", "required": True, "type": "integer", "format": "int64"}],
                "responses": {"200": {"description": "pet response", "schema": {"$ref": "#/definitions/Pet"}}},
            }
        },
    },
    "definitions": {
        "NewPet": {"required": ["name"], "properties": {"name": {"type": "string"}, "tag": {"type": "string"}}},
        "Pet": {"allOf": [{"$ref": "#/definitions/NewPet"}, {"required": ["id"], "properties": {"id": {"type": "integer"}}}]},
    },
}


def sections(page: Page) -> dict[str | None, str]:
    """Anchor -> the section's text."""
    return {s.anchor: "\n".join(b.text for b in s.blocks) for s in page.parsed.sections}


def test_each_operation_is_a_section_under_its_tag_anchored_as_swagger_ui_links_it() -> None:
    site, pages = read_site(SPEC.parent)
    assert site.name == "openapi" and set(pages) == {"openapi.yaml"}
    page = pages["openapi.yaml"]
    assert page.title == "Bookshop API" and page.route == ""  # published where --base-url says
    found = sections(page)
    assert [a for a in found if a and a.count("/") == 2] == [
        "/books/listBooks",
        "/books/createBook",
        "/books/deleteBook",
        "/loans/createLoan",
        "/default/get_health",  # no tag, no operationId: Swagger UI's own names for both
    ]
    heading = {s.anchor: s.heading_path for s in page.parsed.sections}
    assert heading["/loans/createLoan"] == ("loans", "POST /loans: Lend a book to a member")
    assert join_url(DOCS_URL, page.route, "/books/createBook") == f"{DOCS_URL}#/books/createBook"
    # The API's own introduction: servers and how to authenticate.
    intro = found[None]
    assert "`https://api.bookshop.example/v2`: production" in intro and "X-Api-Key" in intro


def test_an_operation_says_its_parameters_body_responses_and_examples_with_refs_read_in() -> None:
    _, pages = read_site(SPEC.parent)
    found = sections(pages["openapi.yaml"])
    create = found["/books/createBook"]
    assert "Request body (application/json, required): NewBook, fields:" in create
    assert "- `isbn` (string, required): ISBN-13 without dashes." in create
    assert '"isbn": "9780441013593"' in create  # the example, as JSON
    assert "Response `201` (application/json): The book as stored, with its id. Returns Book, fields:" in create
    # allOf merged: NewBook's fields and Book's own, with their facts.
    assert "- `id` (integer (int64), required, read-only)" in create
    assert "- `status` (string): One of `available`, `lent`, `lost`." in create
    assert "Response `409`: A book with this ISBN is already in the catalogue." in create
    # A shared parameter ($ref) and a path-level one; a default; deprecation; no authentication.
    assert "- `limit` (query, integer): How many items to return at most. Default `20`." in found["/books/listBooks"]
    assert "- `bookId` (path, integer (int64), required): The book's id." in found["/books/deleteBook"]
    assert "Deprecated." in found["/books/deleteBook"]
    assert "Authentication: none." in found["/default/get_health"]
    assert "Authentication: `apiKey`." in found["/books/listBooks"]


def test_a_circular_schema_is_named_where_it_comes_round_again() -> None:
    _, pages = read_site(SPEC.parent)
    loan = sections(pages["openapi.yaml"])["/loans/createLoan"]
    # Loan > book (Book) > category (Category) > parent (Category): named, not expanded again.
    assert "  - `category` (Category)\n    - `name` (string)\n    - `parent` (Category)" in loan
    assert loan.count("`parent`") == 1


def test_swagger_2_body_parameters_definitions_and_operation_ids_with_spaces(tmp_path: Path) -> None:
    (tmp_path / "swagger.json").write_text(json.dumps(SWAGGER2))
    site, pages = read_site(tmp_path)
    found = sections(pages["swagger.json"])
    assert site.name == "openapi"
    add = found["/default/addPet"]
    assert "Request body (application/json, required): NewPet, fields:\n- `name` (string, required)" in add
    assert "Response `200` (application/json): the pet. Returns Pet, fields:" in add and "- `id` (integer, required)" in add
    # Swagger UI keeps an explicit operationId, its spaces escaped as the browser shows them.
    assert "- `id` (path, integer (int64), required)" in found["/default/find%20pet%20by%20id"]
    assert "`https://petstore.example/api`" in found[None]


def test_a_document_given_alone_is_the_only_page_whatever_its_name(tmp_path: Path) -> None:
    (tmp_path / "bookshop.yaml").write_text(SPEC.read_text())
    (tmp_path / "notes.md").write_text("# Notes\n\nNot part of the API.\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "openapi.yaml").write_text(SPEC.read_text())
    site, pages = read_site(tmp_path / "bookshop.yaml")
    assert site.name == "openapi" and set(pages) == {"bookshop.yaml"}
    assert pages["bookshop.yaml"].route == "" and pages["bookshop.yaml"].title == "Bookshop API"
    with pytest.raises(SourceError, match="is one file, read as an OpenAPI document"):
        read_site(tmp_path / "bookshop.yaml", site="mkdocs")
    assert default_source_name(str(tmp_path / "bookshop.yaml")) == "bookshop"
    # Published with Redoc, named: Redoc's anchors (tests/test_openapi_renderers.py reads both in a browser).
    site, pages = read_site(tmp_path / "bookshop.yaml", site="redoc")
    assert site.name == "redoc" and set(pages) == {"bookshop.yaml"}
    assert "tag/books/operation/createBook" in {s.anchor for s in pages["bookshop.yaml"].parsed.sections}
    site, pages = read_site(tmp_path / "sub", site="redoc")  # a folder holding one
    assert site.name == "redoc" and "tag/loans" in {s.anchor for s in pages["openapi.yaml"].parsed.sections}


def test_a_document_beside_a_sites_pages_is_read_with_them(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n\nStart here.\n")
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "openapi.yaml").write_text(SPEC.read_text())
    site, pages = read_site(tmp_path)
    assert site.name == "plain" and set(pages) == {"guide.md", "api/openapi.yaml"}
    assert pages["api/openapi.yaml"].route == "api/openapi.yaml"  # a plain folder links to its files
    assert "/books/createBook" in sections(pages["api/openapi.yaml"])
    # A folder whose root holds the document: routes are folders, Markdown beside it as plain.
    (tmp_path / "api" / "intro.md").write_text("# Intro\n\nHello.\n")
    site, pages = read_site(tmp_path / "api")
    assert site.name == "openapi" and pages["openapi.yaml"].route == "" and pages["intro.md"].route == "intro.md"


def test_what_is_not_an_api_description_is_refused_in_one_line(settings: Settings, embedder, tmp_path: Path) -> None:
    (tmp_path / "openapi.yaml").write_text("name: not an api\n")
    (tmp_path / "swagger.json").write_text("{broken")
    (tmp_path / "guide.md").write_text("# Guide\n\nStart here.\n")
    with Store.open(settings) as store:
        report = ingest(open_location(str(tmp_path), settings), source_name="bad", base_url="",
                        settings=settings, store=store, embedder=embedder)
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["openapi.yaml"].startswith("could not be read: not an OpenAPI 3 or Swagger 2 document")
    assert reasons["swagger.json"].startswith("could not be read: not valid JSON")
    assert report.paths["new"] == ["guide.md"]
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(SourceError, match=r"notes.txt is a file pgcite does not read alone"):
        open_location(str(tmp_path / "notes.txt"), settings)


# A 1 KB description whose example is ten levels of ten YAML aliases: 10^9 strings when expanded.
LAUGHS = (
    "openapi: 3.0.3\ninfo: {title: Laughs, version: '1'}\nx-lol:\n  a0: &a0 lol\n"
    + "".join(f"  a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]\n" for n in range(1, 10))
    + "paths:\n  /lol:\n    get:\n      responses:\n        '200':\n          description: lol\n"
    "          content:\n            application/json:\n              schema: {type: array, enum: *a9}\n"
    "              example: *a9\n"
)


def test_a_billion_laughs_description_is_refused_in_one_line_in_little_memory(tmp_path: Path) -> None:
    """Its example, dumped as JSON, grew one ingest to 23 GB: the aliases are counted before anything
    is built from them, in a child process held to 1 GB of address space."""
    (tmp_path / "openapi.yaml").write_text(LAUGHS)
    script = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from pgcite.ingest.flow import open_location
        from pgcite.ingest.sites import detect
        from pgcite.config import Settings
        source = open_location({str(tmp_path)!r}, Settings())
        site = detect(source)
        source.include = site.include
        [document] = list(source.scan())
        try:
            site.render(document)
        except ValueError as err:
            print(err)
        # This process's own peak (ru_maxrss would carry the forking test process's over exec).
        peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
        print(int(peak.split()[1]) // 1024)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    reason, megabytes = done.stdout.splitlines()
    assert reason == (
        "its YAML aliases expand to over 1,000,000 nodes more than it holds (a 'billion laughs'): "
        "write the repeated parts out, or share them with $ref"
    )
    assert int(megabytes) < 300


@pytest.mark.slow
def test_a_billion_laughs_description_is_skipped_by_a_capped_ingest_and_a_server_answers_throughout_its_upload(
    settings: Settings, embedder, tmp_path: Path
) -> None:
    """The battery's shape: `pgcite ingest` held to 1 GB of address space (it grew to 23 GB and was
    killed) skips the file in one line; a `pgcite serve` taking the same folder as an admin's zip
    answers /readyz throughout (it stopped answering for 20 s), its memory barely moving."""
    files = {"openapi.yaml": LAUGHS, "guide.md": "# Guide\n\n## Setup\n\nThe quokka setting is 7.\n"}
    for name, text in files.items():
        (tmp_path / "docs" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "docs" / name).write_text(text)
    refused = "its YAML aliases expand to over 1,000,000 nodes more than it holds (a 'billion laughs')"
    env = dict(os.environ, PGCITE_DATABASE_URL=settings.database_url, PGCITE_HOME=str(tmp_path / "home"))
    done = pgcite("ingest", str(tmp_path / "docs"), "--source", "laughs", env=env, timeout=300, memory=1 << 30)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    skipped = [line for line in done.stderr.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 1 and skipped[0].startswith(f"skipped openapi.yaml: could not be read: {refused}")
    assert "laughs: 1 new" in done.stdout

    upload = io.BytesIO()
    with zipfile.ZipFile(upload, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    with Pgcite(settings, embedder=embedder) as app:
        admin = app.create_key("laughs-admin", admin=True)
        with serving(app, tmp_path / "serve") as (url, server):
            process = psutil.Process(server.pid)
            before = process.memory_info().rss
            started = call(url, "/v1/sources/uploaded/ingest", upload.getvalue(), key=admin,
                           headers={"Content-Type": "application/zip"})
            assert started.status == 202, started.body
            job, slowest, peak = started.body["job"], 0.0, before
            while job["state"] in ("queued", "running"):
                asked = time.monotonic()
                assert call(url, "/readyz").status == 200
                slowest = max(slowest, time.monotonic() - asked)
                peak = max(peak, process.memory_info().rss)
                job = call(url, f"/v1/jobs/{job['id']}", key=admin).body["job"]
                time.sleep(0.05)
    assert job["state"] == "done" and "1 new" in job["summary"] and "1 skipped" in job["summary"], job
    assert slowest < 2 and peak - before < 500 << 20, (slowest, (peak - before) >> 20)


def test_a_description_sharing_a_few_parts_by_yaml_anchors_reads_them_in(tmp_path: Path) -> None:
    spec = SPEC.read_text().replace(
        "example: {title: Dune, isbn: \"9780441013593\", category: {name: fiction}}",
        "example: &dune {title: Dune, isbn: \"9780441013593\", category: &fiction {name: fiction}}",
    )
    assert "&dune" in spec
    spec += "x-samples: [*dune, *dune, {shelf: *fiction}]\n"
    (tmp_path / "openapi.yaml").write_text(spec)
    _, pages = read_site(tmp_path)
    assert '"isbn": "9780441013593"' in sections(pages["openapi.yaml"])["/books/createBook"]
    for doc in ("a: &a [*a]\n", "openapi: 3.0.3\nx: " + "[" * 1000 + "]" * 1000 + "\n"):
        with pytest.raises(ValueError, match=r"^(a YAML alias refers to a node that holds it|nested deeper)"):
            spec_markdown(doc, "openapi.yaml")


def test_which_endpoint_and_what_it_returns_are_answered_with_the_operation_cited(
    settings: Settings, embedder, tmp_path: Path
) -> None:
    with Store.open(settings) as store:
        report = ingest(open_location(str(SPEC), settings), source_name="api", base_url=DOCS_URL,
                        settings=settings, store=store, embedder=embedder)
    assert report.new == 1 and not report.skipped
    with Store.open(settings, read_only=True) as store:
        created = ask("Which endpoint adds a new book to the catalogue?", store=store, embedder=embedder,
                      generator=ExtractiveGenerator(embedder))
        lent = ask("What does the API return when I lend a book to a member?", store=store, embedder=embedder,
                   generator=ExtractiveGenerator(embedder))
    assert not created.refused and not lent.refused
    cited = [created.sources[n - 1].hit.url for n in created.citations]
    assert f"{DOCS_URL}#/books/createBook" in cited
    assert f"{DOCS_URL}#/loans/createLoan" in [lent.sources[n - 1].hit.url for n in lent.citations]
