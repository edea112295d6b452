// pgcite's insights: the answer log's figures as charts, each with its numbers in a table one click away.
// Served at /insights (figures from GET v1/insights, filters kept in the URL) and inlined into
// `pgcite insights --html` (figures from the embedded #insights-data, no requests at all).
// Questions and page titles are only ever set with textContent, never parsed as HTML.
"use strict";
(() => {
  const { el, safeUrl, oneLine, savedKey: saved } = window.pgciteShared; // shared.js
  const FILTERS = ["since", "source", "channel", "language"]; // the form's
  const KEPT = ["until", "unit"]; // kept from the URL when the form changes (a shared view's span)
  const CHANNELS = {
    cli: "Command line", api: "HTTP API", page: "Web page", widget: "Widget", chat: "Chat API",
    mcp: "MCP (agents)", slack: "Slack", discord: "Discord",
  };
  const EVERY_SOURCE = "*";
  const $ = (selector) => document.querySelector(selector);
  const embedded = document.getElementById("insights-data");
  const figures = $("#figures"), statusLine = $("#status"), keyForm = $("#key"), filters = $("#filters");
  const charts = [], makers = new Map(); // drawn charts; each figure card -> how to draw its chart
  let serial = 0, shown = null;

  const link = (url, text) => {
    const href = safeUrl(url);
    return href ? el("a", { href, target: "_blank", rel: "noopener noreferrer", text }) : el("span", { text });
  };

  const showStatus = (message) => { statusLine.textContent = message || ""; statusLine.hidden = !message; };
  const pct = (share) => (share == null ? "–" : `${(share * 100).toFixed(1)}%`);
  const ms = (value) => (value == null ? "–" : `${Math.round(value)} ms`);
  const day = (iso) => iso.slice(0, 10);
  const sourceName = (label) => (label === EVERY_SOURCE ? "every source" : label);
  const channelName = (name) => CHANNELS[name] || name;

  // ---- the figures: from the report's own data, else the server, with a key when it wants one ----
  function askForKey(message) {
    return new Promise((resolve) => {
      $("#key-message").textContent = message;
      keyForm.hidden = false;
      $("#key-input").focus();
      keyForm.onsubmit = (event) => {
        event.preventDefault();
        saved.set($("#key-input").value.trim());
        $("#key-input").value = "";
        keyForm.hidden = true;
        resolve();
      };
    });
  }

  async function get(path) {
    for (;;) {
      const headers = new Headers({ Accept: "application/json" });
      const key = saved.get();
      if (key) headers.set("Authorization", "Bearer " + key);
      const response = await fetch(path, { headers });
      const body = await response.json().catch(() => null);
      if (response.status === 401 || response.status === 403) {
        const said = oneLine((body && body.error && body.error.message) || "");
        await askForKey(`The insights need an API key that may read the answer log. ${said}`.trim());
        continue;
      }
      if (!response.ok) throw new Error(oneLine((body && body.error && body.error.message) || `HTTP ${response.status}`));
      return body;
    }
  }

  const wanted = () => {
    const params = new URLSearchParams(location.search);
    return Object.fromEntries([...FILTERS, ...KEPT].map((name) => [name, params.get(name) || ""]));
  };

  const filterQuery = () => {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(wanted())) if (value) query.set(name, value);
    return query;
  };

  // The figures (SQL alone, fast) and the sources for the filter; the gaps come after (gapsLater).
  async function load() {
    if (embedded) return { data: JSON.parse(embedded.textContent), sources: [] };
    const data = await get("v1/insights?" + filterQuery() + "&gaps=0");
    const sources = (await get("v1/sources")).sources.map((s) => s.name);
    return { data, sources };
  }

  // ---- the filters: a GET form, so the URL holds the view ----------------------------------------
  function fillFilters(data, sources) {
    const now = wanted();
    const options = {
      source: [...sources],
      channel: Object.keys(CHANNELS).concat(data.channels.filter((c) => !(c in CHANNELS))),
      language: [...(data.languages || [])],
    };
    for (const [name, values] of Object.entries(options)) {
      const select = filters.elements[name];
      select.replaceChildren(select.options[0]);
      if (now[name] && !values.includes(now[name])) values.push(now[name]);
      for (const value of values) select.append(el("option", { value, text: name === "channel" ? channelName(value) : value }));
    }
    const since = filters.elements.since;
    if (now.since && ![...since.options].some((o) => o.value === now.since)) since.append(el("option", { value: now.since, text: `Since ${now.since}` }));
    for (const name of FILTERS) if (now[name]) filters.elements[name].value = now[name];
    // A choice applies at once; the button stays for keyboards and for when scripts are slow.
    for (const select of filters.querySelectorAll("select")) select.onchange = () => filters.requestSubmit();
    filters.onsubmit = (event) => { // empty filters stay out of the URL
      event.preventDefault();
      const query = new URLSearchParams(), kept = wanted();
      for (const name of FILTERS) if (filters.elements[name].value) query.set(name, filters.elements[name].value);
      for (const name of KEPT) if (kept[name]) query.set(name, kept[name]);
      location.search = query.toString();
    };
  }

  // ---- charts: colours from the stylesheet, so they follow light and dark -------------------------
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const series = (i) => css(`--series-${(i % 8) + 1}`);

  const axis = (more) => ({ grid: { color: css("--border") }, border: { color: css("--border") }, ...more,
    ticks: { color: css("--muted"), ...(more.ticks || {}) } });

  function options(scales, legend = true) {
    return {
      responsive: true, maintainAspectRatio: false, animation: false, scales,
      plugins: { legend: { display: legend, position: "bottom", labels: { color: css("--text"), boxWidth: 12 } } },
    };
  }
  function table(caption, header, rows) {
    return el("div", { class: "table-wrap" }, el("table", {},
      el("caption", { class: "visually-hidden", text: caption }),
      el("thead", {}, el("tr", {}, header.map((h, i) => el("th", { scope: "col", class: i ? "num" : null, text: h })))),
      el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell, i) => (i
        ? el("td", { class: "num", text: String(cell) })
        : el("th", { scope: "row" }, cell))))))));
  }

  // A chart and its table: `make(canvas)` draws, `rows` are the same numbers as text.
  function figure(id, title, summary, make, header, rows) {
    const headingId = `h-${id}-${++serial}`;
    const canvas = el("canvas", { role: "img", "aria-label": `${summary} The numbers are in the table below.` });
    const card = el("section", { class: "card figure", "data-chart": id, "aria-labelledby": headingId },
      el("h2", { id: headingId, text: title }),
      el("div", { class: "canvas-box" }, canvas),
      el("details", {}, el("summary", { text: "Show the numbers" }), table(title, header, rows)));
    makers.set(card, () => make(canvas));
    return card;
  }

  // Bars count questions or answers: whole numbers from zero on the value axis.
  function bars(labels, sets, { stacked = false, horizontal = false } = {}) {
    const [index, value] = horizontal ? ["y", "x"] : ["x", "y"];
    return (canvas) => new Chart(canvas, {
      type: "bar",
      data: { labels, datasets: sets.map((s, i) => ({ backgroundColor: series(i), ...s })) },
      options: { ...options({ [index]: axis({ stacked }), [value]: axis({ stacked, beginAtZero: true, ticks: { precision: 0 } }) },
        !horizontal), indexAxis: index },
    });
  }

  function lines(labels, sets, unit) {
    return (canvas) => new Chart(canvas, {
      type: "line",
      data: { labels, datasets: sets.map((s, i) => ({ borderColor: series(i), backgroundColor: series(i), spanGaps: true, pointRadius: 3, ...s })) },
      options: options({ x: axis({}), y: axis({ beginAtZero: true, title: { display: true, text: unit, color: css("--muted") } }) }),
    });
  }

  // ---- the page -------------------------------------------------------------------------------
  function tiles(total) {
    const tile = (label, value, note) => el("div", { class: "tile" },
      el("dt", { text: label }), el("dd", { text: value }), note ? el("dd", { class: "muted small", text: note }) : null);
    return el("dl", { class: "tiles" },
      tile("Questions", String(total.questions), `${total.answers} answered or refused`),
      tile("Refused", pct(total.refused_share), `${total.refused} of ${total.answers}`),
      tile("Marked down", pct(total.down_share), `${total.down} of ${total.answers} (${total.rated} rated)`),
      tile("Latency p50 / p95", `${ms(total.latency_ms.p50)} / ${ms(total.latency_ms.p95)}`));
  }

  function spanLine(data) {
    const span = data.span;
    const where = [span.source && `source ${span.source}`, span.channel && channelName(span.channel), span.language && `language ${span.language}`];
    return `From ${span.since.slice(0, 16).replace("T", " ")} to ${span.until.slice(0, 16).replace("T", " ")} UTC, by ${span.unit}`
      + where.filter(Boolean).map((w) => ` · ${w}`).join("");
  }

  function overTime(data) {
    const b = data.buckets, unit = data.span.unit;
    const labels = b.map((x) => x.start.slice(5, 10));
    const dates = b.map((x) => (unit === "week" ? `week of ${day(x.start)}` : day(x.start)));
    const per = `per ${unit}`;
    const byChannel = data.channels.map((c) => ({ label: channelName(c), data: b.map((x) => x.channels[c]) }));
    const bySource = data.sources.map((s) => ({ label: sourceName(s), data: b.map((x) => x.sources[s]) }));
    const share = (v) => (v == null ? null : Math.round(v * 1000) / 10);
    return [
      figure("channels", `Questions ${per}, by channel`, `Stacked bars of questions ${per} by channel.`,
        bars(labels, byChannel, { stacked: true }), ["", ...byChannel.map((s) => s.label), "all"],
        b.map((x, i) => [dates[i], ...byChannel.map((s) => s.data[i]), x.questions])),
      figure("sources", `Questions ${per}, by source`, `Stacked bars of questions ${per} by the source asked.`,
        bars(labels, bySource, { stacked: true }), ["", ...bySource.map((s) => s.label), "all"],
        b.map((x, i) => [dates[i], ...bySource.map((s) => s.data[i]), x.questions])),
      figure("shares", "Refused and marked down", `Lines of the share of answers refused and marked down ${per}, in percent.`,
        lines(labels, [{ label: "refused %", data: b.map((x) => share(x.refused_share)) },
          { label: "marked down %", data: b.map((x) => share(x.down_share)) }], "% of answers"),
        ["", "answers", "refused", "refused %", "marked down", "marked down %"],
        b.map((x, i) => [dates[i], x.answers, x.refused, pct(x.refused_share), x.down, pct(x.down_share)])),
      figure("latency", "Latency", `Lines of the median and 95th percentile latency ${per}, in milliseconds.`,
        lines(labels, [{ label: "median", data: b.map((x) => x.latency_ms.p50) },
          { label: "p95", data: b.map((x) => x.latency_ms.p95) }], "ms"),
        ["", "median ms", "p95 ms"], b.map((x, i) => [dates[i], ms(x.latency_ms.p50), ms(x.latency_ms.p95)])),
    ];
  }

  function citedPages(pages) {
    const name = (p) => p.title || p.path;
    return figure("pages", "The most cited pages", "Horizontal bars of the answers citing each page.",
      bars(pages.map((p) => oneLine(name(p)).slice(0, 40)), [{ label: "answers citing it", data: pages.map((p) => p.answers) }],
        { horizontal: true }),
      ["page", "source", "answers", "sections cited"],
      pages.map((p) => [link(p.url, name(p)), p.source, p.answers, p.citations]));
  }

  function gapsCard(gaps) {
    const card = el("section", { class: "card", "data-list": "gaps", "aria-labelledby": "h-gaps", "aria-busy": gaps ? "false" : "true" },
      el("h2", { id: "h-gaps", text: "What the docs are missing" }));
    if (!gaps) card.append(el("p", { class: "muted", text: "Grouping the unanswered questions…" }));
    else fillGaps(card, gaps);
    return card;
  }

  function fillGaps(card, gaps) {
    card.replaceChildren(card.firstChild);
    card.setAttribute("aria-busy", "false");
    if (!gaps.length) return card.append(el("p", { class: "muted", text: "No unanswered questions in this span." }));
    const trend = { up: "up from", down: "down from", same: "as" };
    card.append(el("ol", { class: "gaps" }, gaps.map((g) => el("li", { class: "gap" },
      el("p", { class: "gap-question", text: g.examples[0] }),
      el("p", { class: "muted small", text: `Asked ${g.count} ${g.count === 1 ? "time" : "times"} · `
        + (g.trend === "new" ? "new this span" : `${trend[g.trend]} ${g.previous} the span before`)
        + (g.source ? ` · ${g.source}` : "") + ` · ${Object.entries(g.reasons).map(([r, n]) => `${n} ${r}`).join(", ")}` }),
      g.examples.length > 1 ? el("details", {}, el("summary", { text: `Asked ${g.examples.length - 1} other ${g.examples.length === 2 ? "way" : "ways"}` }),
        el("ul", {}, g.examples.slice(1).map((e) => el("li", { text: e })))) : null,
      g.closest.length ? el("p", { class: "small" }, "Closest sections: ",
        g.closest.flatMap((h, i) => [i ? " · " : "", link(h.url, h.breadcrumb || h.path)])) : null,
      safeUrl(g.task_url) ? el("a", { class: "task", href: safeUrl(g.task_url), target: "_blank", rel: "noopener noreferrer", text: "File a docs task" }) : null))));
  }

  async function gapsLater(card) {
    try {
      fillGaps(card, (await get("v1/insights/gaps?" + filterQuery())).gaps);
    } catch (error) {
      card.replaceChildren(card.firstChild, el("p", { class: "error-line", role: "alert", text: `The gaps could not be read: ${error.message}` }));
    }
    document.documentElement.dataset.gaps = "true"; // for tests and screenshots: the gaps are in
  }

  function askAgain(again) {
    return el("section", { class: "card", "data-list": "ask-again", "aria-labelledby": "h-again" },
      el("h2", { id: "h-again", text: "Ask again" }),
      el("p", { class: "muted", text: `${again.count} ${again.count === 1 ? "answer" : "answers"} cited sections that have changed since.` }),
      again.examples.length ? el("ul", { class: "again" }, again.examples.map((e) => el("li", {},
        el("span", { class: "muted small", text: `${day(e.asked_at)} · ${channelName(e.channel)} · ${sourceName(e.source)} · ` }),
        el("span", { text: e.question })))) : null);
  }

  function draw() {
    while (charts.length) charts.pop().destroy();
    for (const card of figures.querySelectorAll(".figure")) charts.push(makers.get(card)());
  }

  function render(data) {
    shown = data;
    makers.clear();
    $("#span").textContent = spanLine(data);
    figures.replaceChildren(
      tiles(data.total),
      el("div", { class: "grid" }, overTime(data), citedPages(data.cited_pages)),
      gapsCard(embedded ? data.gaps : null),
      askAgain(data.ask_again));
    if (typeof Chart === "undefined") showStatus("The charts could not be drawn; every figure is in its table.");
    else draw();
    figures.setAttribute("aria-busy", "false");
    document.documentElement.dataset.ready = "true"; // for tests and screenshots: everything is drawn
  }

  // Light and dark: the colours are read again when the reader's scheme changes.
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => { if (shown && typeof Chart !== "undefined") draw(); });

  (async () => {
    if (embedded) filters.hidden = true;
    try {
      const { data, sources } = await load();
      if (!embedded) fillFilters(data, sources);
      render(data);
      if (embedded) document.documentElement.dataset.gaps = "true";
      else await gapsLater(figures.querySelector("[data-list=gaps]"));
    } catch (error) {
      showStatus(`The insights could not be read: ${error.message}`);
      figures.setAttribute("aria-busy", "false");
    }
  })();
})();
