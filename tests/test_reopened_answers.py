"""An answer opened again after the docs changed: `GET /v1/answers/ID` says how each section it
used reads now, the web page opens it from its link with a note when a cited section changed, the
widget keeps its conversation across the docs site's pages and says the same, and the gaps report
counts such answers. Real database, bundled model, real server on loopback, Debian's Chromium."""

from __future__ import annotations

import uuid


from pgcite.learn.log import Origin
from pgcite.vocabulary import SearchFilter
from tests.browser import browser  # noqa: F401 - the fixture
from tests.browser import shot
from tests.http_server import call, running
from tests.test_stale_answers import KEYS, acme  # noqa: F401 - the fixture
from tests.test_widget import HOST_PAGE, docs_site

ROTATE = "How do I rotate the API keys?"
DOCKER = "How do I run the image with Docker?"


def test_an_answer_reopened_over_http_says_how_its_sections_read_now(acme):
    app, docs = acme
    only = SearchFilter(source="acme")
    keys = app.ask(ROTATE, filters=only, origin=Origin("cli"))
    deploy = app.ask(DOCKER, filters=only, origin=Origin("cli"))
    app.rate(deploy.id, "down", "Which port?")
    reader = app.create_key("reader", sources=["acme"])
    other = app.create_key("other", sources=["elsewhere"])
    admin = app.create_key("ops", admin=True)
    with running(app) as base:
        fresh = call(base, f"/v1/answers/{keys.id}", key=reader)
        assert fresh.status == 200 and fresh.body["stale"] is False and fresh.body["stale_at"] is None
        assert fresh.body["question"] == ROTATE and fresh.body["answer"] == keys.text
        assert fresh.body["citations"] == keys.citations and fresh.body["source"] == "acme"
        assert {s["now"] for s in fresh.body["sources"]} == {"same"}
        assert "every 90 days" in fresh.body["sources"][0]["content"]
        assert "key_name" not in fresh.body and "channel" not in fresh.body  # who asked is not shown

        # A section above it added: its chunk is renumbered, its text unchanged, so nothing is stale.
        creating = "## Creating keys\n\nCreate a key with `acme keys create NAME`.\n\n## Rotating keys"
        (docs / "keys.md").write_text(KEYS.replace("## Rotating keys", creating))
        assert app.sync("acme").stale_answers == 0
        moved = call(base, f"/v1/answers/{keys.id}", key=reader).body
        assert moved["stale"] is False and {s["now"] for s in moved["sources"] if s["number"] in moved["citations"]} == {"same"}

        (docs / "keys.md").write_text(KEYS.replace("every 90 days", "every 30 days"))
        (docs / "deploy.md").unlink()
        assert app.sync("acme").stale_answers == 2
        changed = call(base, f"/v1/answers/{keys.id}", key=reader).body
        assert changed["stale"] is True and changed["stale_at"]
        cited = [s for s in changed["sources"] if s["number"] in changed["citations"]]
        assert cited and {s["now"] for s in cited} == {"changed"}
        assert "every 30 days" in cited[0]["content"]  # the section as it reads now
        removed = call(base, f"/v1/answers/{deploy.id}", key=reader).body
        assert [s["now"] for s in removed["sources"] if s["path"] == "deploy.md"] == ["removed"]

        # A link names one answer: never a guessable prefix, never another scope's, never a stranger's.
        assert call(base, f"/v1/answers/{keys.id[:8]}", key=reader).status == 404
        assert call(base, f"/v1/answers/{uuid.uuid4()}", key=reader).status == 404
        hidden = call(base, f"/v1/answers/{keys.id}", key=other)
        assert hidden.status == 404 and hidden.body["error"]["message"].startswith("no logged answer")
        assert call(base, f"/v1/answers/{keys.id}").status == 401

        # The gaps report counts the marked-down answer whose cited page has since gone.
        gaps = call(base, "/v1/gaps", key=admin).body["gaps"]
        assert [(g["examples"][0], g["stale"]) for g in gaps] == [(DOCKER, 1)]


def test_an_old_answer_opened_on_the_page_and_in_the_widget_says_its_section_changed(browser, acme):
    app, docs = acme
    keys = app.ask(ROTATE, filters=SearchFilter(source="acme"), origin=Origin("cli"))
    app.answer_log.flush()
    with running(app) as base, docs_site(lambda: HOST_PAGE.format(server=base, attributes=attributes, theme="light")) as origin:
        widget_key = app.create_key("docs-site", sources=["acme"], origins=[origin])
        attributes = f'data-key="{widget_key}" data-source="acme"'
        reader = app.create_key("reader", sources=["acme"])  # the page's key, as a reader enters it
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        context.add_init_script(f"localStorage.setItem('pgcite.key', '{reader}')")
        page = context.new_page()
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        try:
            # The page: an answer's link opens it again; nothing has changed yet.
            page.goto(f"{base}/?answer={keys.id}")
            turn = page.locator(".turn").first
            turn.locator(".feedback").wait_for()
            assert turn.locator(".question").inner_text() == ROTATE
            assert "every 90 days" in turn.locator(".answer").inner_text()
            assert turn.locator(".stale-note").count() == 0
            assert turn.locator(".permalink a").get_attribute("href") == f"./?answer={keys.id}"

            # A link that names no answer says so.
            page.goto(f"{base}/?answer={keys.id[:8]}")
            error = page.locator(".turn .error-line")
            error.wait_for()
            assert error.inner_text().startswith("Could not open this answer: ") and "is not an answer id" in error.inner_text()

            # The widget: asked on one page of the docs site, still there on the next.
            page.goto(origin + "/")
            page.locator("pgcite-ask .launcher").click()
            page.fill("pgcite-ask textarea#pgcite-question", ROTATE)
            page.press("pgcite-ask textarea#pgcite-question", "Enter")
            page.locator("pgcite-ask .turn .feedback").wait_for()
            page.goto(origin + "/")
            with page.expect_response(lambda r: "/v1/answers/" in r.url) as checked:
                page.locator("pgcite-ask .launcher").click()  # opening checks what it restored
            assert checked.value.status == 200
            restored = page.locator("pgcite-ask .turn")
            assert restored.count() == 1 and "every 90 days" in restored.inner_text()
            assert page.locator("pgcite-ask .stale").count() == 0

            (docs / "keys.md").write_text(KEYS.replace("every 90 days", "every 30 days"))
            assert app.sync("acme").stale_answers == 2  # the CLI's answer and the widget's

            page.goto(f"{base}/?answer={keys.id}")
            note = page.locator(".stale-note")
            note.wait_for()
            assert "cited a section that has since changed" in note.inner_text()
            assert "changed since this answer" in page.locator(".sources").inner_text()
            page.locator(".sources .hit-open").first.click()
            assert "now reads" in page.locator(".panel").inner_text()
            assert "every 30 days" in page.locator(".panel").inner_text()
            shot(page, "web", "reopened-stale")
            note.get_by_role("button", name="Ask again").click()
            # A function, not an expression: Playwright polls an expression with eval, which the page's CSP refuses.
            page.wait_for_function("() => document.querySelectorAll('.turn[data-state=done]').length === 2")
            assert "every 30 days" in page.locator(".turn").first.locator(".answer").inner_text()

            page.goto(origin + "/")
            page.locator("pgcite-ask .launcher").click()
            stale = page.locator("pgcite-ask .stale")
            stale.wait_for()
            assert "cited a section that has since changed" in stale.inner_text()
            shot(page, "widget", "restored-stale")
            stale.get_by_role("button", name="Ask again").click()
            page.wait_for_function(
                "() => document.querySelector('pgcite-ask').shadowRoot.querySelectorAll('.turn .feedback').length === 2")
            assert "every 30 days" in page.locator("pgcite-ask .turn").nth(1).inner_text()

            # Clear forgets the conversation, on this page and the next.
            page.locator("pgcite-ask button.clear").click()
            assert page.locator("pgcite-ask .turn").count() == 0
            page.goto(origin + "/")
            assert page.locator("pgcite-ask .turn").count() == 0
        finally:
            context.close()
        assert errors == []
