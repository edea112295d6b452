// pgcite's web page: ask, read the streamed answer, open what it cites, rate it.
// Document and answer text is only ever set with textContent / text nodes, never parsed as HTML.
"use strict";
(() => {
  const { el, safeUrl, oneLine, savedKey: saved } = window.pgciteShared; // shared.js
  const $ = (selector) => document.querySelector(selector);
  const askForm = $("#ask"), input = $("#question"), picker = $("#source"), thread = $("#thread");
  const statusLine = $("#status"), keyForm = $("#key");
  let openPanel = null; // {node, opener, turn}
  let serial = 0;

  const uid = (prefix) => `${prefix}-${++serial}`;
  const errorText = (body, status) =>
    oneLine((body && body.error && body.error.message) || `the server answered HTTP ${status}`);
  const crumbs = (hit) => (hit.breadcrumb || hit.title || hit.path || "").split(" > ").filter(Boolean);

  const showStatus = (message) => { statusLine.textContent = message || ""; statusLine.hidden = !message; };

  // ---- requests, with a read key when the server wants one ----------------------------------
  let keyWanted = null; // one form for every request that met a 401

  function askForKey(message) {
    keyWanted = keyWanted || new Promise((resolve) => {
      const field = $("#key-input");
      $("#key-message").textContent = message;
      keyForm.hidden = false;
      field.value = "";
      field.focus();
      keyForm.onsubmit = (event) => {
        event.preventDefault();
        if (!field.value.trim()) return;
        saved.set(field.value.trim());
        keyForm.hidden = true;
        keyWanted = null;
        resolve();
      };
    });
    return keyWanted;
  }

  async function request(path, init) {
    for (;;) {
      const headers = new Headers((init && init.headers) || {});
      const key = saved.get();
      if (key) headers.set("Authorization", "Bearer " + key);
      const response = await fetch(path, { ...init, headers });
      if (response.status !== 401) return response;
      if (key) saved.clear();
      await askForKey(key ? "That API key was not accepted; enter another one."
        : "This server needs an API key to read the documents.");
    }
  }

  async function getJson(path, init) {
    const response = await request(path, init);
    const body = await response.json().catch(() => null);
    if (!response.ok) throw new Error(errorText(body, response.status));
    return body;
  }

  // Server-Sent Events from a fetch() body: onEvent(name, data) for each, onChunk() after each read.
  async function readEvents(response, onEvent, onChunk) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
        const blocks = buffer.split(/\r?\n\r?\n/);
        buffer = done ? "" : blocks.pop();
        for (const block of blocks) {
          let name = "message";
          const data = [];
          for (const line of block.split(/\r?\n/)) {
            if (line.startsWith("event:")) name = line.slice(6).trim();
            else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
          }
          if (data.length) onEvent(name, JSON.parse(data.join("\n")));
        }
        onChunk();
        if (done) return;
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  // ---- light Markdown: paragraphs, lists, `code`, **bold**, fenced code, [n] citations ---------
  const FENCE = /^\s*(`{3,}|~{3,})\s*([\w+.-]*)/;
  const ITEM = /^\s*(?:([-*+])|\d+[.)])\s+/; // group 1: a bullet (else numbered)
  const HEADING = /^#{1,6}\s+/;
  const CITES = /\[[1-9]\d*(?:\s*,\s*[1-9]\d*)*\]/g;
  // `code`, **strong**, [text](link) (in a section, shown as its text: a document's links are data) and [n].
  const INLINE = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|\[([^\]\n]+)\]\(([^)\s]*)\)|\[([1-9]\d*(?:\s*,\s*[1-9]\d*)*)\]/g;
  // CommonMark's backslash escapes (`\<NAME>`, `\*`): the character, as a Markdown renderer shows it.
  const ESCAPED = /\\([!-\/:-@[-`{-~])/g;
  const startsBlock = (line) => FENCE.test(line) || ITEM.test(line) || HEADING.test(line);

  // ctx: {cite(n) -> node, marks: [{sentence, note, found}]}; without cite, [n] stays text.
  function markdown(text, ctx) {
    const lines = String(text || "").replace(/\r\n?/g, "\n").split("\n");
    const blocks = [];
    for (let i = 0; i < lines.length;) {
      const line = lines[i], fence = line.match(FENCE);
      if (fence) {
        const body = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
        i++;
        blocks.push(el("pre", {}, el("code", { text: body.join("\n"), "data-lang": fence[2] || null })));
      } else if (!line.trim()) {
        i++;
      } else if (ITEM.test(line)) {
        const bullet = Boolean(line.match(ITEM)[1]);
        const list = el(bullet ? "ul" : "ol");
        for (; i < lines.length && ITEM.test(lines[i]) && Boolean(lines[i].match(ITEM)[1]) === bullet; i++) {
          list.append(el("li", {}, inline(lines[i].replace(ITEM, ""), ctx)));
        }
        blocks.push(list);
      } else if (HEADING.test(line)) {
        blocks.push(el("p", { class: "md-heading" }, inline(line.replace(HEADING, ""), ctx)));
        i++;
      } else {
        const para = [];
        for (; i < lines.length && lines[i].trim() && !startsBlock(lines[i]); i++) para.push(lines[i]);
        const raw = para.join("\n"), previous = blocks[blocks.length - 1];
        if (ctx.cite && !raw.replace(CITES, "").trim() && previous && previous.tagName === "PRE") {
          // The citations of a code block: in its corner.
          blocks[blocks.length - 1] = el("div", { class: "code-block" }, previous, el("span", { class: "code-cites" }, inline(raw, ctx)));
        } else {
          blocks.push(el("p", {}, inline(raw, ctx)));
        }
      }
    }
    return blocks;
  }

  // Where `sentence` (its [n] markers removed, as the checks give it) is in `raw`, as [start, end)
  // taking in the citations right after it; null if it is not there. Whitespace runs match one space.
  function locate(raw, sentence, withCites) {
    let flat = "";
    const at = []; // raw index of each character of flat
    const skips = withCites ? [...raw.matchAll(CITES)] : [];
    for (let i = 0, k = 0; i < raw.length; i++) {
      if (k < skips.length && skips[k].index === i) { i += skips[k++][0].length - 1; continue; }
      if (!/\s/.test(raw[i])) { flat += raw[i]; at.push(i); }
      else if (flat && !flat.endsWith(" ")) { flat += " "; at.push(i); }
    }
    const wanted = oneLine(sentence);
    const found = wanted ? flat.indexOf(wanted) : -1;
    if (found < 0) return null;
    let end = at[found + wanted.length - 1] + 1;
    const tail = withCites && raw.slice(end).match(/^(?:\s*\[[1-9]\d*(?:\s*,\s*[1-9]\d*)*\])+/);
    if (tail) end += tail[0].length;
    return { start: at[found], end };
  }

  // A link's text as Markdown writes it: [`name`](...) is code.
  const linkText = (value) => /^`[^`]+`$/.test(value) ? el("code", { text: value.slice(1, -1) }) : document.createTextNode(value);

  function inline(raw, ctx) {
    const ranges = [];
    for (const mark of ctx.marks || []) {
      const range = !mark.found && locate(raw, mark.sentence, Boolean(ctx.cite));
      if (range && !ranges.some((r) => range.start < r.end && r.start < range.end)) {
        mark.found = true;
        ranges.push({ ...range, mark });
      }
    }
    // Tokens; plain text is cut where a marked range starts or ends.
    const cuts = ranges.flatMap((r) => [r.start, r.end]).sort((a, b) => a - b);
    const tokens = [];
    const addText = (from, to) => {
      const points = [from, ...cuts.filter((c) => c > from && c < to), to];
      for (let j = 0; j + 1 < points.length; j++) tokens.push({ kind: "text", start: points[j], end: points[j + 1] });
    };
    let last = 0;
    for (const m of raw.matchAll(INLINE)) {
      const kind = m[1] != null ? "code" : m[2] != null ? "strong" : m[3] != null ? "link" : "cite";
      if (kind === "cite" && !ctx.cite) continue;
      if (kind === "link" && ctx.cite) continue; // in an answer a link stays as written, its target in sight
      addText(last, m.index);
      tokens.push({ kind, start: m.index, value: m[1] ?? m[2] ?? m[3] ?? m[5], target: m[4] });
      last = m.index + m[0].length;
    }
    addText(last, raw.length);

    const nodes = [];
    let group = null; // the <mark> being filled, and its range
    const closeGroup = () => { if (group) nodes.push(group.node, warnNote(group.range.mark.note)); group = null; };
    for (const token of tokens) {
      if (token.kind === "text" && token.start === token.end) continue;
      const range = ranges.find((r) => token.start >= r.start && token.start < r.end) || null;
      if (group && group.range !== range) closeGroup();
      if (range && !group) group = { range, node: el("mark", { class: "flagged" }) };
      const made = token.kind === "text" ? [document.createTextNode(raw.slice(token.start, token.end).replace(ESCAPED, "$1"))]
        : token.kind === "code" ? [el("code", { text: token.value })]
        : token.kind === "strong" ? [el("strong", { text: token.value })]
        : token.kind === "link" ? [el("span", { class: "doc-link", title: token.target }, linkText(token.value))]
        : token.value.split(",").map((n) => ctx.cite(Number(n.trim())));
      if (group) group.node.append(...made);
      else nodes.push(...made);
    }
    closeGroup();
    return nodes;
  }

  const warnNote = (note) => el("span", { class: "warn-note" }, el("span", { "aria-hidden": "true", text: "⚠ " }), note);

  // ---- one question and its answer ------------------------------------------------------------
  function citeButton(turn, number) {
    const passage = turn.passages.find((p) => p.number === number);
    const button = el("button", {
      type: "button", class: "cite", text: String(number), disabled: !passage, "aria-expanded": "false",
      "aria-label": passage ? `Source ${number}: ${crumbs(passage).join(", ")}` : `Source ${number}`,
      title: passage ? crumbs(passage).join(" › ") : null,
    });
    if (passage) button.addEventListener("click", () => showSection(turn, passage, button));
    return button;
  }

  function renderAnswer(turn, text, marks) {
    turn.answer.replaceChildren(...markdown(text, { cite: (n) => citeButton(turn, n), marks }));
    if (turn.node.dataset.state !== "streaming") return;
    let end = turn.answer.lastElementChild || turn.answer; // the caret goes after the last word
    if (/^(UL|OL)$/.test(end.tagName)) end = end.lastElementChild;
    end.append(el("span", { class: "caret", "aria-hidden": "true" }));
  }

  function newTurn(question, source, waiting) {
    closeSection(false);
    showStatus("");
    document.body.classList.add("asked");
    const turn = { source, passages: [], dropped: [], answer: el("div", { class: "answer" }) };
    turn.node = el("article", { class: "turn", "data-state": "streaming", "aria-busy": "true" },
      el("header", { class: "turn-head" }, el("h2", { class: "question", text: question }),
        source ? el("span", { class: "tag", text: source }) : null),
      turn.answer);
    turn.answer.append(el("p", { class: "muted thinking", text: waiting }));
    thread.prepend(turn.node);
    return turn;
  }

  function failed(turn, message, text) {
    turn.node.dataset.state = "error";
    turn.node.removeAttribute("aria-busy");
    if (text) renderAnswer(turn, text);
    else turn.answer.replaceChildren();
    turn.answer.append(el("p", { class: "error-line", role: "alert", text: oneLine(message) }));
  }

  async function ask(question, source) {
    const turn = newTurn(question, source, "Searching the documents…");
    let text = "", answer = null, fresh = false;
    try {
      const response = await request("v1/ask", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-Pgcite-Client": "page" },
        body: JSON.stringify({ question, source, stream: true }),
      });
      if (!response.ok) throw new Error(errorText(await response.json().catch(() => null), response.status));
      await readEvents(response, (name, data) => {
        if (name === "sources") { turn.passages = data.sources || []; turn.dropped = data.dropped || []; }
        else if (name === "delta") { text += data.text || ""; fresh = true; }
        else if (name === "answer") answer = data;
        else if (name === "error") throw new Error(errorText(data, "error"));
      }, () => { if (fresh && !answer) renderAnswer(turn, text); fresh = false; });
      if (!answer) throw new Error("the answer stopped before it was complete; ask again");
      finish(turn, answer);
    } catch (error) {
      failed(turn, `Could not answer: ${error.message}`, text);
    }
  }

  // An answer opened from its link (?answer=ID), as the log has it, each section as the docs read now.
  async function reopen(id) {
    const turn = newTurn("Answer " + id.slice(0, 8), null, "Opening the answer…");
    try {
      const answer = await getJson(`v1/answers/${encodeURIComponent(id)}`);
      turn.source = answer.source;
      turn.node.querySelector(".question").textContent = answer.question;
      finish(turn, answer);
      const asked = new Date(answer.asked_at);
      turn.answer.before(el("p", { class: "muted small asked-at", text: `Asked ${asked.toLocaleString()}` }));
      if (answer.stale) {
        turn.answer.before(el("div", { class: "warnings stale-note", role: "note" },
          el("p", { class: "warnings-title", text: "⚠ This answer cited a section that has since changed" }),
          el("p", {}, "The documents may say something else now. ",
            el("button", { type: "button", class: "primary small-button", text: "Ask again",
              onclick: () => ask(answer.question, answer.source) }))));
      }
    } catch (error) {
      failed(turn, `Could not open this answer: ${error.message}`);
    }
  }

  function finish(turn, answer) {
    turn.passages = answer.sources || [];
    turn.dropped = answer.dropped || [];
    turn.node.dataset.state = answer.refused ? "refused" : "done";
    turn.node.removeAttribute("aria-busy");
    if (answer.refused) {
      turn.answer.className = "refusal";
      turn.answer.setAttribute("role", "status");
      turn.answer.replaceChildren(el("p", { class: "refusal-title", text: answer.answer || "Not in the documents." }),
        el("p", { class: "refusal-text", text: "No section of the documents answers this, so pgcite does not guess." }),
        answer.note ? el("p", { class: "muted small", text: `Why: ${oneLine(answer.note)}` }) : null);
      closestMatches(turn, answer);
    } else {
      const checks = answer.checks || {};
      // An uncited claim no source supports is in both lists: marked once, as unsupported.
      const nowhere = new Set((checks.unsupported || []).filter((u) => !(u.sources || []).length).map((u) => u.sentence));
      const marks = [
        ...(checks.uncited_sentences || []).filter((s) => !nowhere.has(s))
          .map((s) => ({ sentence: s, note: "No citation for this sentence" })),
        ...(checks.unsupported || []).map((u) => ({ sentence: u.sentence,
          note: `${(u.sources || []).length ? `Not supported by ${u.sources.map((n) => `[${n}]`).join("")}`
            : "No citation, and no source supports it"} (support ${Number(u.support).toFixed(2)})` })),
      ];
      renderAnswer(turn, answer.answer, marks);
      const warnings = [
        ...marks.filter((m) => !m.found).map((m) => [`${m.note}: `, el("q", { text: m.sentence })]),
        ...(checks.invalid_citations || []).map((n) => [`Removed citation [${n}]: there is no source ${n}.`]),
        ...(checks.foreign_links || []).map((link) => ["Link found in no source (do not trust it): ", el("code", { text: link })]),
        ...(checks.offsite_links || []).map((link) => ["Link to another site than the docs' own (check it before you follow it): ", el("code", { text: link })]),
        ...[...turn.passages, ...turn.dropped].filter((h) => h.flags && h.flags.length)
          .map((h) => [`Flagged section “${crumbs(h).join(" › ")}”: ${h.flags.join(", ")}`]),
      ];
      if (warnings.length) {
        turn.node.append(el("div", { class: "warnings", role: "note" },
          el("p", { class: "warnings-title", text: "⚠ Check before relying on this answer" }),
          el("ul", {}, warnings.map((parts) => el("li", {}, parts)))));
      }
      turn.node.append(sourcesList(turn));
    }
    if (answer.id != null) {
      turn.node.append(feedback(answer.id));
      turn.node.append(el("p", { class: "permalink" }, el("a", { href: `./?answer=${encodeURIComponent(answer.id)}`,
        text: "Link to this answer", title: "Open this answer again later, or share it" })));
    }
  }

  // A reopened answer's sections, as the docs read now.
  const NOW = { changed: "changed since this answer", removed: "removed from the documents since this answer" };

  function hitItem(turn, hit, label) {
    const flagged = hit.flags && hit.flags.length;
    return el("li", { class: "hit" },
      label ? el("span", { class: "hit-num", text: label }) : null,
      el("button", { type: "button", class: "hit-open", onclick: (e) => showSection(turn, hit, e.currentTarget) },
        el("span", { class: "hit-title", text: crumbs(hit).join(" › ") }),
        el("span", { class: "hit-path", text: [hit.source, hit.path].filter(Boolean).join(" · ") })),
      el("span", { class: "hit-score", title: "Relevance score", text: Number(hit.score).toFixed(2) }),
      hit.reason ? el("span", { class: "hit-note", text: hit.reason }) : null,
      NOW[hit.now] ? el("span", { class: "hit-note hit-flag", text: NOW[hit.now] }) : null,
      flagged ? el("span", { class: "hit-note hit-flag", text: "⚠ flagged: " + hit.flags.join(", ") }) : null);
  }

  function sourcesList(turn) {
    const section = el("section", { class: "sources", "aria-label": "Sources" }, el("h3", { text: "Sources" }),
      el("ol", { class: "hits" }, turn.passages.map((p) => hitItem(turn, p, String(p.number)))));
    const count = turn.dropped.length;
    if (count) {
      section.append(el("details", { class: "dropped" },
        el("summary", { text: `${count} more relevant section${count > 1 ? "s" : ""} left out` }),
        el("ul", { class: "hits" }, turn.dropped.map((d) => hitItem(turn, d)))));
    }
    return section;
  }

  async function closestMatches(turn, answer) {
    const box = el("section", { class: "closest", "aria-label": "Closest matches" }, el("h3", { text: "Closest matches" }));
    turn.answer.append(box);
    let hits = turn.dropped;
    if (!hits.length) {
      const wait = el("p", { class: "muted small", text: "Looking for the nearest sections…" });
      box.append(wait);
      try {
        const source = turn.source ? `&source=${encodeURIComponent(turn.source)}` : "";
        hits = (await getJson(`v1/search?q=${encodeURIComponent(answer.question)}&k=3${source}`)).results || [];
        wait.remove();
      } catch (error) {
        wait.className = "error-line";
        wait.textContent = `Could not search: ${oneLine(error.message)}`;
        return;
      }
    }
    box.append(hits.length ? el("ul", { class: "hits" }, hits.map((h) => hitItem(turn, h)))
      : el("p", { class: "muted small", text: "No section comes close." }));
  }

  function feedback(id) {
    const box = $("#feedback-template").content.firstElementChild.cloneNode(true);
    const extra = box.querySelector(".feedback-extra"), comment = box.querySelector("textarea");
    const send = box.querySelector(".send"), result = box.querySelector(".feedback-result");
    let rating = null;
    for (const thumb of box.querySelectorAll(".thumb")) {
      thumb.addEventListener("click", () => {
        rating = thumb.dataset.rating;
        for (const other of box.querySelectorAll(".thumb")) other.setAttribute("aria-pressed", String(other === thumb));
        extra.hidden = false;
        comment.focus();
      });
    }
    send.addEventListener("click", async () => {
      send.disabled = true;
      result.textContent = "";
      try {
        const body = { rating, ...(comment.value.trim() ? { comment: comment.value.trim() } : {}) };
        await getJson(`v1/answers/${encodeURIComponent(id)}/feedback`,
          { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
        box.replaceChildren(el("p", { class: "feedback-thanks", role: "status", text: "Thanks for the feedback." }));
      } catch (error) {
        result.className = "feedback-result error-line";
        result.textContent = `Could not send: ${oneLine(error.message)}`;
        send.disabled = false;
      }
    });
    return box;
  }

  // ---- the section panel: beside the answer, below it on a narrow screen ----------------------
  function showSection(turn, hit, opener) {
    closeSection(false);
    const node = $("#panel-template").content.firstElementChild.cloneNode(true);
    const part = (selector) => node.querySelector(selector);
    const title = part(".panel-title"), link = safeUrl(hit.url);
    part(".panel-label").textContent = [hit.number ? `Source ${hit.number}` : "Section", hit.source].filter(Boolean).join(" · ");
    part(".close").addEventListener("click", () => closeSection(true));
    title.id = uid("section-title");
    title.textContent = hit.title || hit.path;
    node.setAttribute("aria-labelledby", title.id);
    part(".crumbs").append(...crumbs(hit).map((c) => el("li", { text: c })));
    if (NOW[hit.now]) part(".section-text").append(el("p", { class: "warn-note", text: hit.now === "changed"
      ? "This section has changed since the answer cited it; it now reads:" : "This section has since been removed." }));
    part(".section-text").append(...markdown(hit.content, {}));
    if (link) part(".open-page").href = link;
    else part(".no-page").textContent = hit.url ? `Published at ${hit.url}` : "No published page.";
    part(link ? ".no-page" : ".open-page").remove();
    turn.answer.after(node);
    turn.node.classList.add("has-panel");
    document.body.classList.add("panel-open");
    opener.setAttribute("aria-expanded", "true");
    opener.classList.add("active");
    openPanel = { node, opener, turn };
    node.focus({ preventScroll: true });
    node.scrollIntoView({ block: "nearest" });
  }

  function closeSection(refocus) {
    if (!openPanel) return;
    const { node, opener, turn } = openPanel;
    openPanel = null;
    node.remove();
    turn.node.classList.remove("has-panel");
    document.body.classList.remove("panel-open");
    opener.setAttribute("aria-expanded", "false");
    opener.classList.remove("active");
    if (refocus && opener.isConnected) opener.focus();
  }

  // ---- start ----------------------------------------------------------------------------------
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && openPanel) { event.preventDefault(); closeSection(true); }
  });

  askForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (question) ask(question, picker.value || null);
  });

  async function loadSources() {
    try {
      const sources = (await getJson("v1/sources")).sources || [];
      for (const s of sources) {
        picker.append(el("option", { value: s.name, text: `${s.name} (${s.documents} page${s.documents === 1 ? "" : "s"})` }));
      }
      $("#picker").hidden = sources.length < 2;
      if (!sources.length) showStatus("No documents yet: ingest a folder with `pgcite ingest` first.");
    } catch (error) {
      showStatus(`Could not list the sources: ${oneLine(error.message)}`);
    }
  }

  loadSources();
  const opened = new URLSearchParams(location.search).get("answer");
  if (opened) reopen(opened);
  input.focus();
})();
