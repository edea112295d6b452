"""The insights page (/insights) and the HTML report in Debian's Chromium (Playwright), over a log
made by real asks on two sources through the HTTP API, the Ask-AI widget in a docs site's page, an
MCP client (the protocol's SDK) and the chat endpoint (the openai client): every chart holds the
counts written here, filters change them and survive a reload, a scoped key sees none of the other
source's questions, and the page works at 375 px in dark mode. Screenshots are kept under
build/test-artifacts/insights/ to be looked at."""

from __future__ import annotations

import contextlib
import uuid
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import openai
import pytest

from pgcite.core import Pgcite
from pgcite.store import Store, log_rows
from pgcite.store.log_rows import LogEntry
from pgcite.vocabulary import REFUSAL
from tests.browser import browser  # noqa: F401 - the fixture
from tests.browser import shot
from tests.http_server import call, served
from tests.test_api import DOCS, GADGETS
from tests.test_insights import CHARGE, PAIR_G, PAIR_W, SPIN
from tests.test_mcp import run
from tests.test_widget import HOST_PAGE, docs_site
from tests.test_widget import ask as widget_ask

pytestmark = pytest.mark.slow

core, base = served({"w": (DOCS, "https://github.com/acme/widgets/blob/main/docs/"),
                     "g": (GADGETS, "https://gadgets.dev/")})

# What the log holds once `asked` has run, written out: questions by channel and by source.
BY_CHANNEL = {"HTTP API": 2, "Widget": 1, "Chat API": 1, "MCP (agents)": 2}
BY_SOURCE = {"w": 3, "g": 3}
REFUSED = 2  # PAIR_W and PAIR_G: the docs do not say
DOWN = 1  # the chat answer, marked down

# Each chart's datasets, summed over the span, and its table's rows, as the page shows them.
FIGURES = """() => {
  const charts = {};
  for (const card of document.querySelectorAll("[data-chart]")) {
    const chart = Chart.getChart(card.querySelector("canvas"));
    charts[card.dataset.chart] = {
      sums: Object.fromEntries(chart.data.datasets.map((d) => [d.label, d.data.reduce((a, b) => a + (b || 0), 0)])),
      colour: chart.data.datasets.length ? chart.data.datasets[0].backgroundColor : null,
      header: [...card.querySelectorAll("thead th")].map((th) => th.textContent),
      rows: [...card.querySelectorAll("tbody tr")].map((tr) => [...tr.children].map((td) => td.textContent)),
    };
  }
  return charts;
}"""


@pytest.fixture(scope="module")
def keys(core: Pgcite) -> dict[str, str]:
    return {"w": core.create_key("reader-w", sources=["w"]), "g": core.create_key("reader-g", sources=["g"]),
            "admin-w": core.create_key("admin-w", sources=["w"], admin=True),
            "ops": core.create_key("ops", admin=True)}


@pytest.fixture(scope="module")
def asked(browser, base: str, core: Pgcite, keys: dict) -> None:  # noqa: F811 - the fixture
    """Six real asks: two through the API and one through the widget on w, one through the chat
    endpoint and two through MCP on g."""
    assert call(base, "/v1/ask", {"question": SPIN}, key=keys["w"]).status == 200
    assert call(base, "/v1/ask", {"question": PAIR_W}, key=keys["w"]).body["refused"]
    with docs_site(lambda: HOST_PAGE.format(server=base, theme="light", attributes=attributes)) as origin:
        attributes = f'data-key="{core.create_key("site", sources=["w"], origins=[origin])}"'
        context = browser.new_context()
        page = context.new_page()
        page.goto(origin + "/")
        page.locator("pgcite-ask .launcher").click()
        assert "[1]" in widget_ask(page, SPIN, 0).inner_text()
        context.close()
    chat = openai.OpenAI(base_url=base + "/v1", api_key=keys["g"], max_retries=0)
    reply = chat.chat.completions.create(model="pgcite:g", messages=[{"role": "user", "content": CHARGE}])
    rated = call(base, f"/v1/answers/{reply.model_extra['pgcite']['id']}/feedback", {"rating": "down"}, key=keys["g"])
    assert rated.status == 200

    async def agent(client):
        return [await client.call_tool("ask_docs", {"question": q}) for q in (CHARGE, PAIR_G)]

    with ThreadPoolExecutor(1) as thread:  # off Playwright's thread, whose event loop is running
        answered, refused = thread.submit(run, agent, base, keys["g"]).result()
    assert not answered.structured_content["refused"] and refused.structured_content["refused"]
    core.answer_log.flush()
    with Store.open(core.settings) as store:  # the written counts are what the log holds
        rows = dict(store.conn.execute("SELECT channel, count(*) FROM answer_log GROUP BY 1").fetchall())
        assert rows == {"api": 2, "widget": 1, "chat": 1, "mcp": 2}
        assert store.conn.execute("SELECT count(*) FILTER (WHERE refused), count(*) FILTER (WHERE rating = 'down')"
                                  " FROM answer_log").fetchone() == (REFUSED, DOWN)


@contextlib.contextmanager
def insights_page(browser, url: str, key: str | None = None, requests: list | None = None,  # noqa: F811
                  wait: bool = True, **options) -> Iterator:
    """A page of /insights (or a report) in a context of its own; `key` is typed into the key form
    when the page asks for one; `requests` gets every URL the page asks for. No page may log an
    error but a refused request's (a CSP violation is one)."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, **options})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource") else None)
    if requests is not None:
        page.on("request", lambda request: requests.append(request.url))
    page.goto(url)
    if key:
        page.fill("#key-input", key)
        page.press("#key-input", "Enter")
    if wait:
        page.wait_for_selector("html[data-ready]")
    try:
        yield page
    finally:
        context.close()
    assert errors == []


def ready(page) -> dict:
    """The figures of every chart, once they are drawn and the gaps are in."""
    page.wait_for_selector("html[data-ready][data-gaps]")
    return page.evaluate(FIGURES)


def column_sums(figure: dict) -> dict[str, int]:
    return {h: sum(int(r[i]) for r in figure["rows"]) for i, h in enumerate(figure["header"]) if i}


def test_every_chart_holds_the_logged_counts(browser, base: str, keys: dict, asked: None):  # noqa: F811
    with insights_page(browser, base + "/insights", keys["ops"]) as page:
        charts = ready(page)
        assert charts["channels"]["sums"] == BY_CHANNEL
        assert column_sums(charts["channels"]) == {**BY_CHANNEL, "all": 6}
        assert charts["sources"]["sums"] == BY_SOURCE
        assert column_sums(charts["sources"]) == {**BY_SOURCE, "all": 6}
        shares = charts["shares"]["rows"]
        assert [sum(int(row[i]) for row in shares) for i in (1, 2, 4)] == [6, REFUSED, DOWN]
        assert charts["pages"]["sums"] == {"answers citing it": 4}  # the four answers, each citing one page
        gaps = page.locator("[data-list=gaps] .gap")  # the two pairing questions are one need, then the one marked down
        assert gaps.locator(".gap-question").all_inner_texts()[1:] == [CHARGE]
        pairing = gaps.first.text_content()
        assert PAIR_W in pairing and PAIR_G in pairing and "Closest sections: Gadgets > Charging" in pairing
        assert "Asked 2 times" in gaps.first.inner_text() and "Asked 1 time" in gaps.nth(1).inner_text()
        tiles = page.locator(".tiles dd").all_inner_texts()
        assert tiles[:2] == ["6", "6 answered or refused"] and "33.3%" in tiles
        page.locator("[data-chart=channels] summary").click()  # the numbers, one click away
        assert page.get_by_role("table").first.is_visible()
        shot(page, "insights", "desktop-light")


def test_filters_change_the_figures_and_survive_a_reload(browser, base: str, keys: dict, asked: None):  # noqa: F811
    with insights_page(browser, base + "/insights", keys["ops"]) as page:
        page.select_option("#channel", "mcp")
        page.wait_for_url("**/insights?since=7d&channel=mcp")
        charts = ready(page)
        assert charts["channels"]["sums"] == {"MCP (agents)": 2} and charts["sources"]["sums"] == {"g": 2}
        page.select_option("#since", "30d")
        page.wait_for_url("**/insights?since=30d&channel=mcp")
        for _ in range(2):  # as chosen, and after a reload
            charts = ready(page)
            assert page.input_value("#channel") == "mcp" and page.input_value("#since") == "30d"
            assert charts["channels"]["sums"] == {"MCP (agents)": 2}
            assert len(charts["channels"]["rows"]) == 31  # a bar a day
            page.reload()
        page.goto(base + "/insights?source=w&channel=api")
        charts = ready(page)
        assert charts["channels"]["sums"] == {"HTTP API": 2} and page.input_value("#source") == "w"
        page.goto(base + "/insights?since=30d&unit=week")  # a span set in the URL alone stays on a change
        assert len(ready(page)["channels"]["rows"]) in (5, 6)  # the weeks that 30 days touch
        page.select_option("#channel", "chat")
        page.wait_for_url("**/insights?since=30d&channel=chat&unit=week")
        assert ready(page)["channels"]["sums"] == {"Chat API": 1}
        page.goto(base + "/insights?since=2020-01-01&until=2020-01-08")  # a week before any question
        charts = ready(page)
        assert charts["channels"]["sums"] == {} and len(charts["channels"]["rows"]) == 7
        assert page.locator(".tiles dd").first.inner_text() == "0"
        assert "No unanswered questions" in page.locator("[data-list=gaps]").inner_text()
        page.goto(base + "/insights?since=yesterday-ish")
        page.locator("#status").wait_for()
        assert "yesterday-ish" in page.locator("#status").inner_text()


def test_a_scoped_key_sees_none_of_the_other_sources_questions(browser, base: str, keys: dict,  # noqa: F811
                                                               asked: None):
    with insights_page(browser, base + "/insights", keys["admin-w"]) as page:
        charts = ready(page)
        assert charts["sources"]["sums"] == {"w": 3}
        assert charts["channels"]["sums"] == {"HTTP API": 2, "Widget": 1}
        task = page.locator("[data-list=gaps] a.task")  # w's docs live in a GitHub repository
        assert task.get_attribute("href").startswith("https://github.com/acme/widgets/issues/new?")
        text = page.evaluate("document.body.textContent")  # closed tables and examples included
        assert PAIR_W in text and PAIR_G not in text and CHARGE not in text and "gadgets" not in text.lower()
        assert page.locator("#source option").all_inner_texts() == ["All sources", "w"]
        page.goto(base + "/insights?source=g")
        page.locator("#status").wait_for()
        assert "no source named 'g'" in page.locator("#status").inner_text()
        assert page.locator("[data-chart]").count() == 0
    assert call(base, "/v1/insights/gaps?source=g", key=keys["admin-w"]).status == 404
    only_w = call(base, "/v1/insights/gaps", key=keys["admin-w"]).body["gaps"]
    assert [g["examples"] for g in only_w] == [[PAIR_W]] and only_w[0]["source"] == "w"
    with insights_page(browser, base + "/insights", keys["w"], wait=False) as page:  # a reader's key is not enough
        page.locator("#key-message", has_text="may only read").wait_for()  # no wait_for_function: the CSP forbids eval
        assert page.locator("#key").is_visible() and page.locator("[data-chart]").count() == 0


def test_on_a_phone_in_dark_mode(browser, base: str, keys: dict, asked: None):  # noqa: F811
    with insights_page(browser, base + "/insights", keys["ops"], viewport={"width": 375, "height": 812},
                       color_scheme="dark", is_mobile=True, has_touch=True) as page:
        charts = ready(page)
        assert charts["channels"]["sums"] == BY_CHANNEL
        assert charts["channels"]["colour"] == "#56b4e9"  # the dark palette's first colour
        assert page.evaluate("document.documentElement.scrollWidth") <= 375  # nothing wider than the phone
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(15, 17, 21)"
        shot(page, "insights", "phone-dark", full_page=False)


def test_the_html_report_opens_offline_with_the_same_figures(browser, core: Pgcite, asked: None,  # noqa: F811
                                                              tmp_path: Path):
    env = dict(os.environ, PGCITE_DATABASE_URL=core.settings.database_url, PGCITE_HOME=str(tmp_path / "home"))

    def pgcite(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pgcite", "insights", *args], capture_output=True, text=True,
                              env=env, timeout=300)

    report = tmp_path / "report.html"
    done = pgcite("--since", "7d", "--html", str(report))
    assert done.returncode == 0, done.stderr
    assert str(report) in done.stdout and "Content-Security-Policy" in report.read_text()
    both = pgcite("--json", "--gaps", "0", "--html", str(tmp_path / "again.html"))  # stdout stays JSON
    assert json.loads(both.stdout)["total"]["questions"] == 6 and "again.html" in both.stderr
    for wrong in (tmp_path, tmp_path / "no" / "such" / "folder.html"):
        failed = pgcite("--html", str(wrong))
        assert failed.returncode == 1 and len(failed.stderr.strip().splitlines()) == 1, failed.stderr
        assert str(wrong) in failed.stderr and "Traceback" not in failed.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".html") == ["again.html", "report.html"]
    requests: list[str] = []
    with insights_page(browser, report.as_uri(), requests=requests, offline=True) as page:
        charts = ready(page)
        assert charts["channels"]["sums"] == BY_CHANNEL and charts["sources"]["sums"] == BY_SOURCE
        assert page.locator("#filters").is_hidden() and PAIR_G in page.locator("main").inner_text()
        shot(page, "insights", "report")
    assert [r for r in requests if not r.startswith("file:")] == []


# A reader's question is data: markup in it, or an end to the report's script, stays text.
HOSTILE = 'Why does </script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> fail?'


def test_a_question_with_markup_is_shown_as_text_on_the_page_and_in_the_report(browser, base: str,  # noqa: F811
                                                                               core: Pgcite, keys: dict,
                                                                               tmp_path: Path):
    asked_at = datetime.now(UTC) - timedelta(days=40)  # in a span of its own: no other test counts it
    row = LogEntry(id=str(uuid.uuid4()), asked_at=asked_at, channel="api", key_name="reader-w", scope=("w",),
                   question=HOSTILE, source=None, path=None, version=None, retrieved=[], answer=REFUSAL,
                   refused=True, checks={}, generator="extractive", note="", latency_ms=12)
    with Store.open(core.settings) as store:
        log_rows.insert(store, [row])
    env = dict(os.environ, PGCITE_DATABASE_URL=core.settings.database_url, PGCITE_HOME=str(tmp_path / "home"))
    report = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "pgcite", "insights", "--since", "45d", "--until", "35d", "--html",
                           str(report)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    for url, key in ((base + "/insights?since=45d&until=35d", keys["ops"]), (report.as_uri(), None)):
        with insights_page(browser, url, key) as page:
            ready(page)
            assert page.locator("[data-list=gaps] .gap-question").all_inner_texts() == [HOSTILE]
            assert page.evaluate("window.__pwned") is None and page.locator("main img").count() == 0
