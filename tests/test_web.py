"""The web page in a real browser: Debian's headless Chromium driven by Playwright, against the real
server on loopback, a real database and the bundled model. Screenshots are kept under
build/test-artifacts/web/ (their paths are printed) to be looked at."""

from __future__ import annotations

import contextlib
import json
import re
from typing import Iterator

import pytest

from pgcite.core import Pgcite
from pgcite.answer.generation import ChatGenerator
from tests.fake_openai import FakeOpenAI, Reply
from tests.browser import browser  # noqa: F401 - the fixture
from tests.browser import shot as browser_shot
from tests.http_server import call, running, served

pytestmark = pytest.mark.slow


GUIDE = {
    "api-keys.md": "# API keys\n\nKeys let a client read from the server. Each key has a name and, optionally, the "
                   "sources it may read.\n\n"
                   "## Creating a key\n\nCreate a read key with `pgcite keys create NAME`. The key is printed once; "
                   "only its hash is stored.\n\n"
                   "## Rotating an API key\n\nTo rotate an API key without downtime, create the new key first, deploy "
                   "it to every client, then revoke the old key.\n\n"
                   "```shell\npgcite keys create deploy-2026\npgcite keys revoke deploy-2025\n```\n\n"
                   "A revoked key stops working at once; requests that use it get `401 Unauthorized`.\n\n"
                   "## Staging keys\n\nStaging keys are kept in the vault at https://vault.partner.test/keys.\n",
    "install.md": "# Installing pgcite\n\n## Requirements\n\npgcite needs Python 3.11 and about 500 MB of disk for "
                  "the embedded PostgreSQL server.\n\n## Install command\n\nRun `pip install pgcite`, then "
                  "`pgcite init` to create the database.\n",
    "search.md": "# Searching\n\n## Search modes\n\npgcite searches in three modes: `vector`, `text` and `hybrid`. "
                 "The default is `hybrid`, which combines both scores.\n\n## Result count\n\nPass `k` to choose how "
                 "many sections come back; the default is 5.\n",
}
# Hostile text, as a page about markup would hold it: none of it may run in the page.
HOSTILE = {
    "markup.md": "# Release notes\n\n## Markup in section text\n\n"
                 "Version 2.3 shows markup in section text as plain characters, never as HTML. A page may hold "
                 "`<script>window.__pwned = 1</script>` or `<img src=x onerror=\"window.__pwned=2\">` and the "
                 "reader sees exactly that.\n\n"
                 "```html\n<script>window.__pwned = 1</script>\n<img src=x onerror=\"window.__pwned=2\">\n```\n\n"
                 "A link such as [click](javascript:window.__pwned=3) is shown as text too and never followed; "
                 "one whose text is code, such as [`render_markup()`](https://notes.example.com/api), shows "
                 "its code. An escaped tag, form.\\<NAME>.data, shows its brackets and no backslash.\n",
    "backups.md": "# Backups\n\n## Nightly backups\n\nThe server takes a backup every night at 02:00 and keeps the "
                  "last 14 backups.\n",
}

ROTATE = "How do I rotate an API key?"
MARKUP = "How does version 2.3 show markup in section text?"
# Nowhere near the docs: beyond the bar measured for them, so nothing is dropped and the page
# looks up the closest matches itself.
UNANSWERABLE = "Which wine goes best with grilled salmon at a summer wedding?"


core, base = served({"guide": (GUIDE, "https://docs.example.com/"), "notes": (HOSTILE, "https://notes.example.com/")})


@contextlib.contextmanager
def opened(browser, base: str, **options) -> Iterator:
    """The page at `base` in a context of its own; fails if a script error or a CSP violation occurred."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 860}, **options})
    page = context.new_page()
    page.set_default_timeout(30_000)
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(base + "/")
    try:
        yield page
    finally:
        context.close()
    assert problems == []


def shot(page, name: str) -> None:
    browser_shot(page, "web", name)


def ask(page, question: str, state: str = "done"):
    """Type the question, press Enter, wait for its answer (the newest turn) to end in `state`."""
    page.fill("#question", question)
    page.press("#question", "Enter")
    page.locator("article.turn").first.locator("h2.question", has_text=question).wait_for()
    page.wait_for_function("s => document.querySelector('article.turn').dataset.state === s", arg=state)
    exact = re.compile(f"^{re.escape(question)}$")
    return page.locator("article.turn").filter(has=page.locator("h2.question", has_text=exact)).first


def answer_event(stream: str) -> dict:
    """The `answer` event's data in a Server-Sent Events body."""
    for block in stream.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if lines.get("event") == "answer":
            return json.loads(lines["data"])
    raise AssertionError(f"no answer event in {stream[:300]!r}")


def hrefs(page) -> list[str]:
    return page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")


def test_the_page_and_its_files_are_served_with_strict_headers(base: str):
    page = call(base, "/")
    assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "<title>pgcite</title>" in page.text
    script = call(base, "/static/app.js")
    assert script.status == 200 and script.headers["Content-Type"].startswith("text/javascript")
    assert call(base, "/static/app.css").headers["Content-Type"].startswith("text/css")
    for reply in (page, script):
        assert reply.headers["Content-Security-Policy"] == (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
        assert reply.headers["X-Content-Type-Options"] == "nosniff"
        assert reply.headers["Referrer-Policy"] == "no-referrer"
        assert re.fullmatch(r"no-cache|(public, )?max-age=\d{1,4}", reply.headers["Cache-Control"])
    for name in ("nope.js", "..%2Fweb.py", "__init__.py"):
        missing = call(base, f"/static/{name}")
        assert missing.status == 404 and missing.body["error"]["type"] == missing.body["error"]["code"] == "not_found"
    assert call(base, "/static/index.html%00").status == 400  # a NUL in a path: the client's mistake
    assert "/" not in call(base, "/openapi.json").body["paths"]


def test_ask_read_the_cited_section_rate_the_answer_and_meet_a_refusal(browser, core: Pgcite, base: str):
    with opened(browser, base) as page:
        picker = page.locator("#source")
        page.locator("#picker").wait_for()  # two sources: the picker shows
        assert picker.locator("option").all_inner_texts() == ["All sources", "guide (3 pages)", "notes (2 pages)"]
        shot(page, "0-start")

        with page.expect_response(lambda r: r.url.endswith("/v1/ask")) as asked:
            turn = ask(page, ROTATE)
        event = answer_event(asked.value.text())
        assert asked.value.request.headers["x-pgcite-client"] == "page"
        answer = turn.locator(".answer")
        assert "revoke the old key" in answer.inner_text()
        assert "pgcite keys revoke deploy-2025" in answer.locator("pre code").inner_text()
        # Every fed section, with its score; the ones left out behind a click.
        assert turn.locator(".sources ol .hit-title").all_inner_texts() == [
            " › ".join(p["breadcrumb"].split(" > ")) for p in event["sources"]]
        assert turn.locator(".sources ol .hit-score").all_inner_texts() == [f"{p['score']:.2f}" for p in event["sources"]]
        assert turn.locator(".sources details.dropped .hit").count() == len(event["dropped"])
        assert turn.locator(".sources ol .hit-title").first.inner_text() == "API keys › Rotating an API key"
        shot(page, "1-answer")

        cite = answer.locator("button.cite").first
        assert cite.inner_text() == "1"
        cite.click()
        panel = turn.locator(".panel")
        assert panel.locator(".panel-title").inner_text() == "API keys"
        assert panel.locator(".crumbs li").all_inner_texts() == ["API keys", "Rotating an API key"]
        assert "pgcite keys create deploy-2026" in panel.locator("pre code").inner_text()
        assert panel.locator("a.open-page").get_attribute("href") == "https://docs.example.com/api-keys.md#rotating-an-api-key"
        box, beside = answer.bounding_box(), panel.bounding_box()
        assert beside["x"] > box["x"] + box["width"]  # beside the answer on a wide screen
        shot(page, "2-cited-section")
        page.keyboard.press("Escape")
        assert panel.count() == 0 and page.evaluate("document.activeElement.classList.contains('cite')")

        assert event["id"], "the answer has no id: is the answer log on?"
        turn.locator(".thumb-down").click()
        turn.locator(".feedback textarea").fill("It does not say how to rotate the key in CI.")
        with page.expect_response(lambda r: r.url.endswith("/feedback") and r.request.method == "POST") as sent:
            turn.locator(".feedback .send").click()
        assert sent.value.status == 200
        assert sent.value.request.post_data_json == {"rating": "down", "comment": "It does not say how to rotate the key in CI."}
        assert turn.locator(".feedback-thanks").inner_text() == "Thanks for the feedback."
        logged = {e.id: e for e in core.log_entries(limit=None)}[event["id"]]
        assert (logged.channel, logged.question, logged.rating, logged.comment) == (
            "page", ROTATE, "down", "It does not say how to rotate the key in CI.")
        shot(page, "3-feedback-sent")

        # No section is near enough, so the page searches for the closest matches itself; their
        # URLs are made hostile on the way, and must not become links.
        searched: list[str] = []

        def poisoned(route) -> None:
            searched.append(route.request.url)
            response = route.fetch()
            body = response.json()
            for hit in body["results"]:
                hit["url"] = "javascript:window.__pwned=5"
            route.fulfill(response=response, json=body)

        page.route("**/v1/search?*", poisoned)
        refused = ask(page, UNANSWERABLE, state="refused")
        assert refused.locator(".refusal-title").inner_text() == "Not in the documents."
        assert refused.locator(".sources").count() == 0  # a refusal is not an answer
        matches = refused.locator(".closest .hit")
        matches.first.wait_for()
        assert len(searched) == 1 and "k=3" in searched[0] and "source=" not in searched[0]
        assert 1 <= matches.count() <= 3
        shot(page, "4-refusal")
        matches.first.locator(".hit-open").click()  # the closest matches open like citations
        refused.locator(".panel .section-text").wait_for()
        assert refused.locator(".panel a").count() == 0
        assert refused.locator(".panel .no-page").inner_text() == "Published at javascript:window.__pwned=5"
        refused.locator(".thumb-up").click()  # a rating alone, no comment
        with page.expect_response(lambda r: r.url.endswith("/feedback")) as sent:
            refused.locator(".feedback .send").click()
        assert sent.value.status == 200 and sent.value.request.post_data_json == {"rating": "up"}
        refused.locator(".feedback-thanks").wait_for()

        picker.select_option("notes")
        with page.expect_request(lambda r: r.url.endswith("/v1/ask")) as asked:
            hostile = ask(page, MARKUP)
        assert asked.value.post_data_json == {"question": MARKUP, "source": "notes", "stream": True}
        assert hostile.locator(".tag").inner_text() == "notes"
        hostile.locator(".answer button.cite").first.click()
        text = hostile.locator(".panel .section-text")
        assert "<script>window.__pwned = 1</script>" in text.inner_text()  # shown, as text
        link = text.locator(".doc-link")  # a document's own link: its text, the target only as a tooltip
        assert link.first.inner_text() == "click" and link.first.get_attribute("title") == "javascript:window.__pwned=3"
        assert link.nth(1).locator("code").inner_text() == "render_markup()"  # not its Markdown source
        assert text.locator("script, img").count() == 0
        assert "An escaped tag, form.<NAME>.data, shows its brackets" in text.inner_text()  # as Markdown shows it
        shot(page, "5-hostile-section")
        assert page.evaluate("window.__pwned") is None
        assert not [h for h in hrefs(page) if not re.match(r"https?://|#|\./", h)]
        scripts = [s.get_attribute("src") for s in page.locator("script").all()]
        assert scripts == ["static/shared.js", "static/app.js"]  # only the page's own


def test_on_a_phone_with_the_keyboard_alone(browser, base: str):
    with opened(browser, base, viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True) as page:
        page.locator("#question").focus()
        turn = ask(page, ROTATE)
        page.keyboard.press("Tab")  # from the box: the Ask button, then the first citation
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.matches('.answer button.cite')")
        page.keyboard.press("Enter")
        panel = turn.locator(".panel")
        panel.wait_for()
        answer, below = turn.locator(".answer").bounding_box(), panel.bounding_box()
        assert below["y"] >= answer["y"] + answer["height"]  # below the answer on a narrow screen
        assert page.evaluate("document.documentElement.scrollWidth") <= 375  # nothing sticks out
        shot(page, "6-phone")
        page.keyboard.press("Escape")
        assert panel.count() == 0


def test_dark_colour_scheme(browser, base: str):
    with opened(browser, base, color_scheme="dark") as page:
        turn = ask(page, ROTATE)
        turn.locator(".answer button.cite").first.click()
        turn.locator(".panel").wait_for()
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert sum(int(c) for c in re.findall(r"\d+", background)[:3]) < 3 * 60, background
        shot(page, "7-dark")


# An answer from a chat model, with every kind of trouble the checks report: a claim its source
# does not support, a sentence with no citation, a citation of a source that does not exist (the
# server removes it), a link found in no source, one on another site than the docs', and a javascript: link.
TROUBLED = ("To rotate an API key, create the new key first, deploy it to every client, then revoke the old key [1].\n\n"
            "```shell\npgcite keys create deploy-2026\npgcite keys revoke deploy-2025\n```\n\n"
            "- Rotated keys are emailed to the security team every Monday morning [1].\n"
            "- Keys made before 2020 never expire and cannot be revoked at all.\n\n"
            "Staging keys are kept in the vault at https://vault.partner.test/keys [1].\n\n"
            "Read [the guide](javascript:window.__pwned=4) or https://evil.example/rotate for more [7].")


def test_the_answer_streams_in_and_check_warnings_sit_by_their_sentences(browser, core: Pgcite, embedder):
    with FakeOpenAI() as fake, \
            Pgcite(core.settings, embedder=embedder, generator=ChatGenerator(fake.chat_settings())) as chatty, \
            running(chatty) as url, opened(browser, url) as page:
        fake.script(Reply(TROUBLED, split=6, pause=0.04))  # about 3 s of deltas
        # What the answer showed while it was still being written.
        page.evaluate("""() => {
            window.__seen = [];
            new MutationObserver(() => {
                const turn = document.querySelector('article.turn[data-state=streaming]');
                const text = turn && turn.querySelector('.answer').textContent;
                if (text && !text.includes('Searching')) window.__seen.push(text.length);
            }).observe(document.body, {subtree: true, childList: true, characterData: true});
        }""")
        page.fill("#question", ROTATE)
        page.press("#question", "Enter")
        page.locator("article.turn[data-state=streaming] .answer .caret").wait_for()
        shot(page, "8-streaming")
        turn = page.locator("article.turn[data-state=done]")
        turn.wait_for()
        seen = page.evaluate("window.__seen")
        assert len(set(seen)) >= 3 and seen == sorted(seen), seen  # it grew piece by piece, shown as it came

        flagged = turn.locator(".answer mark.flagged")
        marked = dict(zip(flagged.all_inner_texts(), turn.locator(".answer .warn-note").all_inner_texts()))
        unsupported = next(note for text, note in marked.items() if "emailed to the security team" in text)
        assert unsupported.startswith("⚠ Not supported by [1]")
        uncited = next(note for text, note in marked.items() if "never expire" in text)
        assert uncited.startswith("⚠ No citation, and no source supports it (support ")

        warnings = turn.locator(".warnings").inner_text()
        assert "Removed citation [7]: there is no source 7." in warnings
        assert "Link found in no source (do not trust it): https://evil.example/rotate" in warnings
        assert ("Link to another site than the docs' own (check it before you follow it): "
                "https://vault.partner.test/keys") in warnings
        assert "[the guide](javascript:window.__pwned=4)" in turn.locator(".answer").inner_text()  # as text
        assert not [h for h in hrefs(page) if "evil" in h or "vault" in h or not re.match(r"https?://|#|\./", h)]
        assert page.evaluate("window.__pwned") is None
        shot(page, "9-check-warnings")

        # The model fails mid-answer: the stream ends with an `error` event, shown as one line.
        fake.script(Reply("To rotate an API key, create the new key first [1].", split=4, error_after=2))
        failed = ask(page, "How do I rotate an API key without downtime?", state="error")
        error = failed.locator(".error-line").inner_text()
        assert error.startswith("Could not answer: ") and "failed mid-answer" in error and "\n" not in error


def test_a_read_key_is_asked_for_once_and_kept(browser, core: Pgcite, base: str):
    key = core.create_key("web-reader")
    try:
        with opened(browser, base) as page:
            form = page.locator("#key")
            form.wait_for()
            assert "API key" in page.locator("#key-message").inner_text()
            page.fill("#key-input", "pgc_not-a-key")
            page.press("#key-input", "Enter")
            page.locator("#key-message", has_text="not accepted").wait_for()
            shot(page, "10-key-form")
            page.fill("#key-input", key)
            page.press("#key-input", "Enter")
            page.locator("#picker").wait_for()
            assert form.is_hidden()
            assert page.evaluate("localStorage.getItem('pgcite.key')") == key
            with page.expect_request(lambda r: r.url.endswith("/v1/ask")) as asked:
                ask(page, ROTATE)
            assert asked.value.headers["authorization"] == f"Bearer {key}"
            page.reload()  # kept: no form this time
            page.locator("#picker").wait_for()
            assert form.is_hidden()
    finally:
        core.revoke_key("web-reader")
