// pgcite's Ask-AI widget, added to any page by one tag:
//   <script src="https://HOST/widget.js" data-source="docs" data-key="pgc_..." async></script>
// A button and a dialog in a shadow root (the page's styles do not reach in, ours do not leak out);
// answers stream from HOST's /v1/ask with a browser key (`pgcite keys create NAME --origins ...`).
// Document and answer text is only ever set with textContent / text nodes, never parsed as HTML.
"use strict";
(() => {
  const script = document.currentScript;
  if (!script || window.__pgciteWidget) return; // one widget per page, however often the tag appears
  window.__pgciteWidget = true;

  const config = script.dataset;
  const server = new URL(script.src, location.href).origin;
  const TITLE = config.title || "Ask AI";
  const MAC = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);

  // ---- the shortcut: Ctrl+I (⌘I on a Mac) unless data-shortcut says otherwise; never ⌘K/Ctrl+K,
  // which docs sites give their own search ----------------------------------------------------
  function parseShortcut(text) {
    if (/^(none|off)$/i.test(text)) return null;
    const parts = text.toLowerCase().split("+").map((p) => p.trim());
    const key = parts.pop();
    const shortcut = { key, mod: parts.includes("mod"), ctrl: parts.includes("ctrl"), meta: parts.includes("meta"),
                       alt: parts.includes("alt"), shift: parts.includes("shift") };
    const takesSearch = key === "k" && (shortcut.mod || shortcut.ctrl || shortcut.meta) && !shortcut.alt && !shortcut.shift;
    if (!key || key.length !== 1 || takesSearch) {
      console.warn(`pgcite widget: data-shortcut="${text}" is not used (⌘K/Ctrl+K belongs to the site's search); Ctrl/⌘+I instead`);
      return parseShortcut("mod+i");
    }
    return shortcut;
  }
  const shortcut = parseShortcut(config.shortcut || "mod+i");
  const shortcutLabel = shortcut
    ? [shortcut.mod ? (MAC ? "⌘" : "Ctrl") : "", shortcut.ctrl ? "Ctrl" : "", shortcut.meta ? "⌘" : "",
       shortcut.alt ? "Alt" : "", shortcut.shift ? "Shift" : "", shortcut.key.toUpperCase()].filter(Boolean).join("+")
    : "";
  function matches(event) {
    if (!shortcut || event.key.toLowerCase() !== shortcut.key) return false;
    const ctrl = shortcut.ctrl || (shortcut.mod && !MAC), meta = shortcut.meta || (shortcut.mod && MAC);
    return event.ctrlKey === ctrl && event.metaKey === meta && event.altKey === shortcut.alt && event.shiftKey === shortcut.shift;
  }

  // An element: props are attributes, except class, text (textContent) and on* (listeners).
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value == null || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : value);
    }
    for (const child of children.flat()) if (child != null && child !== false) node.append(child);
    return node;
  }
  const oneLine = (text) => String(text).replace(/\s+/g, " ").trim();
  const errorText = (body, status) =>
    oneLine((body && body.error && body.error.message) || `pgcite answered HTTP ${status}`);
  function safeUrl(url) { // only http(s) links ever become an href
    try { const parsed = new URL(url); return /^https?:$/.test(parsed.protocol) ? parsed.href : null; }
    catch (_) { return null; }
  }

  // ---- the shadow root: button, dialog, styles --------------------------------------------------
  const host = el("pgcite-ask");
  const root = host.attachShadow({ mode: "open" });
  const style = el("style", { text: CSS() });
  if (config.color && window.CSS && CSS.supports("color", config.color)) host.style.setProperty("--accent", config.color);

  const launcher = el("button", { class: "launcher", type: "button", "aria-haspopup": "dialog",
    "aria-label": `${TITLE} about these docs` + (shortcutLabel ? ` (${shortcutLabel})` : ""), onclick: () => open() },
    el("span", { "aria-hidden": "true", text: "✦ " }), TITLE);
  const thread = el("div", { class: "thread", "aria-live": "polite" });
  const question = el("textarea", { id: "pgcite-question", rows: "2", maxlength: "4000",
    placeholder: "Ask a question about these docs", onkeydown: (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
    } });
  const send = el("button", { type: "submit", class: "send", text: "Ask" });
  const form = el("form", { onsubmit: (e) => { e.preventDefault(); submit(); } },
    el("label", { for: "pgcite-question", class: "sr", text: "Your question" }), question, send);
  const closer = el("button", { type: "button", class: "close", "aria-label": "Close", text: "×", onclick: () => close() });
  const clearer = el("button", { type: "button", class: "clear", hidden: true, text: "Clear",
    "aria-label": "Clear the conversation", onclick: () => clearThread() });
  const dialog = el("div", { class: "dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": "pgcite-title",
    onkeydown: onDialogKey },
    el("header", {}, el("h2", { id: "pgcite-title", text: TITLE }), clearer, closer),
    thread, form,
    el("p", { class: "note", text: "Answers come from these docs only; each [n] links to the section it cites." }));
  const backdrop = el("div", { class: "backdrop", hidden: true, onclick: (e) => { if (e.target === backdrop) close(); } }, dialog);
  root.append(style, launcher, backdrop);

  let opener = null; // what had the focus before the dialog opened: it gets it back
  let previous = null; // the question before, as pgcite asked it: a follow-up is asked with it
  let busy = false;

  function open() {
    if (!backdrop.hidden) return;
    opener = document.activeElement;
    backdrop.hidden = false;
    question.focus();
    checkRestored();
  }
  function close() {
    if (backdrop.hidden) return;
    backdrop.hidden = true;
    if (opener && typeof opener.focus === "function") opener.focus(); else launcher.focus();
  }
  function onDialogKey(event) {
    if (event.key === "Escape") { event.stopPropagation(); close(); return; }
    if (event.key !== "Tab") return;
    const stops = [...dialog.querySelectorAll("button, textarea, a[href], input")].filter((n) => !n.disabled && n.offsetParent);
    if (!stops.length) return;
    const first = stops[0], last = stops[stops.length - 1], at = root.activeElement;
    if (event.shiftKey && (at === first || !dialog.contains(at))) { event.preventDefault(); last.focus(); }
    else if (!event.shiftKey && (at === last || !dialog.contains(at))) { event.preventDefault(); first.focus(); }
  }
  document.addEventListener("keydown", (event) => {
    if (matches(event)) { event.preventDefault(); backdrop.hidden ? open() : close(); }
  });

  // ---- light or dark, as the host page is (or data-theme) ----------------------------------------
  const darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  function pageIsDark() {
    if (config.theme === "dark" || config.theme === "light") return config.theme === "dark";
    for (const node of [document.documentElement, document.body]) {
      if (!node) continue;
      if (node.classList.contains("dark")) return true; // VitePress, Tailwind
      const theme = node.getAttribute("data-theme") || node.getAttribute("data-bs-theme"); // Docusaurus, Starlight
      if (theme) return theme === "dark";
      const scheme = node.getAttribute("data-md-color-scheme"); // MkDocs Material
      if (scheme) return scheme === "slate";
    }
    return !!(darkQuery && darkQuery.matches);
  }
  const applyTheme = () => host.toggleAttribute("data-dark", pageIsDark());
  new MutationObserver(applyTheme).observe(document.documentElement, { attributes: true, subtree: false });
  if (darkQuery && darkQuery.addEventListener) darkQuery.addEventListener("change", applyTheme);

  // ---- asking: Server-Sent Events from /v1/ask ----------------------------------------------------
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
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
      if (done) return;
    }
  }

  function headers() {
    return { "Content-Type": "application/json", "X-Pgcite-Client": "widget",
             ...(config.key ? { Authorization: `Bearer ${config.key}` } : {}) };
  }

  async function submit() {
    const text = question.value.trim();
    if (!text || busy) return;
    busy = true; send.disabled = true; question.value = "";
    const turn = { answer: el("div", { class: "answer", "aria-busy": "true" }, el("p", { class: "muted", text: "Searching the docs…" })) };
    turn.node = el("section", { class: "turn" }, el("p", { class: "question", text }), turn.answer);
    thread.append(turn.node);
    turn.node.scrollIntoView({ block: "end" });
    try {
      const body = { question: text, stream: true, ...(config.source ? { source: config.source } : {}),
                     ...(previous ? { previous } : {}) };
      let response;
      try {
        response = await fetch(`${server}/v1/ask`, { method: "POST", headers: headers(), body: JSON.stringify(body) });
      } catch (_) {
        fail(turn, "pgcite could not be reached from this page: its server is down, or its key is not made for this site.");
        return;
      }
      if (!response.ok) {
        const failure = await response.json().catch(() => null);
        fail(turn, errorText(failure, response.status));
        return;
      }
      let streamed = "", sources = [];
      await readEvents(response, (name, data) => {
        if (name === "sources") sources = data.sources || [];
        else if (name === "delta") { streamed += data.text || ""; render(turn.answer, streamed, sources); }
        else if (name === "answer") { finish(turn, data); remember({ ...data, asked: text }); }
        else if (name === "error") fail(turn, errorText(data, 500));
      });
    } catch (_) {
      fail(turn, "the answer stopped before it ended; ask again.");
    } finally {
      busy = false; send.disabled = false; question.focus();
    }
  }

  // ---- the conversation outlives the page: a cited link opens in this tab, and the dialog on the
  // next page shows the same answers (sessionStorage: this tab only, gone when it closes) ----------
  const SAVED = `pgcite.widget:${server}:${config.source || ""}`;
  const KEEP = 10; // answers kept
  let saved = [];
  let unchecked = []; // restored turns whose sections may have changed since: checked on first open
  const store = (turns) => { try { sessionStorage.setItem(SAVED, JSON.stringify(turns)); } catch (_) { /* storage is off or full */ } };

  function remember(answer) {
    const keep = (s) => ({ number: s.number, url: s.url, breadcrumb: s.breadcrumb, title: s.title, path: s.path });
    const checks = answer.checks || {};
    saved = [...saved, { id: answer.id, question: answer.question, answer: answer.answer, refused: answer.refused,
      citations: answer.citations || [], sources: (answer.sources || []).map(keep),
      checks: { unsupported: checks.unsupported || [], invalid_citations: checks.invalid_citations || [] },
      asked: oneLine(answer.asked || answer.question) }].slice(-KEEP);
    store(saved);
    clearer.hidden = false;
  }

  function restore() {
    try { saved = JSON.parse(sessionStorage.getItem(SAVED) || "[]"); } catch (_) { saved = []; }
    if (!Array.isArray(saved)) saved = [];
    for (const answer of saved) {
      const turn = { answer: el("div", { class: "answer" }) };
      turn.node = el("section", { class: "turn" }, el("p", { class: "question", text: answer.asked }), turn.answer);
      thread.append(turn.node);
      finish(turn, answer);
      if (answer.id && !answer.refused) unchecked.push({ turn, answer });
    }
    clearer.hidden = !saved.length;
  }

  // An answer restored from an earlier page may cite sections that a docs update has changed since.
  async function checkRestored() {
    const pending = unchecked;
    unchecked = [];
    for (const { turn, answer } of pending) {
      try {
        const response = await fetch(`${server}/v1/answers/${encodeURIComponent(answer.id)}`, { headers: headers() });
        if (!response.ok || !(await response.json()).stale) continue;
      } catch (_) { continue; }
      turn.answer.prepend(el("p", { class: "stale", role: "note" },
        "This answer cited a section that has since changed. ",
        el("button", { type: "button", class: "thumb", text: "Ask again", onclick: () => {
          question.value = answer.asked; form.requestSubmit(); } })));
    }
  }

  function clearThread() {
    saved = []; unchecked = []; previous = null;
    store(saved);
    thread.replaceChildren();
    clearer.hidden = true;
    question.focus();
  }

  function fail(turn, message) {
    turn.answer.replaceChildren(el("p", { class: "error", role: "alert", text: message }));
    turn.answer.removeAttribute("aria-busy");
  }

  // Paragraphs, list items and fenced code; `code` and [n] inline, each [n] a link to its section.
  function render(into, text, sources) {
    const byNumber = new Map(sources.map((s) => [s.number, s]));
    const blocks = [];
    const parts = text.split(/^```[^\n]*\n?/m);
    parts.forEach((part, i) => {
      if (i % 2) { blocks.push(el("pre", {}, el("code", { text: part.replace(/\n$/, "") }))); return; }
      for (const para of part.split(/\n\s*\n/)) {
        const lines = para.split("\n").filter((l) => l.trim());
        if (!lines.length) continue;
        if (lines.every((l) => /^\s*(?:[-*+]|\d+[.)])\s+/.test(l))) {
          blocks.push(el("ul", {}, lines.map((l) => el("li", {}, inline(l.replace(/^\s*(?:[-*+]|\d+[.)])\s+/, ""), byNumber)))));
        } else blocks.push(el("p", {}, inline(lines.join(" "), byNumber)));
      }
    });
    into.replaceChildren(...blocks);
  }
  // CommonMark's backslash escapes (`\<NAME>`): the character, as a Markdown renderer shows it.
  const ESCAPED = /\\([!-\/:-@[-`{-~])/g;
  function inline(text, byNumber) {
    const out = [];
    let last = 0;
    for (const m of text.matchAll(/`([^`]+)`|\[([1-9]\d*)\]/g)) {
      out.push(text.slice(last, m.index).replace(ESCAPED, "$1"));
      if (m[1] != null) out.push(el("code", { text: m[1] }));
      else {
        const source = byNumber.get(Number(m[2]));
        const href = source && safeUrl(source.url);
        out.push(href ? el("a", { class: "cite", href, title: oneLine(source.breadcrumb || source.title || ""), text: `[${m[2]}]` })
                      : `[${m[2]}]`);
      }
      last = m.index + m[0].length;
    }
    out.push(text.slice(last).replace(ESCAPED, "$1"));
    return out;
  }

  function finish(turn, answer) {
    previous = answer.question;
    turn.answer.removeAttribute("aria-busy");
    if (answer.refused) {
      turn.answer.replaceChildren(el("p", { class: "refused", text: "The docs do not answer this." }));
    } else {
      render(turn.answer, answer.answer, answer.sources);
      const cited = new Set(answer.citations);
      const listed = answer.sources.filter((s) => cited.has(s.number));
      if (listed.length) {
        turn.answer.append(el("ol", { class: "sources", "aria-label": "Sources" }, listed.map((s) => {
          const href = safeUrl(s.url);
          const name = oneLine(s.breadcrumb || s.title || s.path);
          return el("li", { value: String(s.number) }, href ? el("a", { href, text: name }) : name);
        })));
      }
      const checks = answer.checks || {};
      // `passed` is false when a claim has no source that supports it (answers logged before it: the lists).
      if (checks.passed === false || (checks.unsupported || []).length || (checks.invalid_citations || []).length) {
        turn.answer.append(el("p", { class: "muted", text: "Some of this answer could not be matched to its sources: check them." }));
      }
    }
    if (answer.id) turn.answer.append(feedback(answer.id));
  }

  function feedback(id) {
    const box = el("div", { class: "feedback" });
    const rate = (rating) => {
      const comment = el("textarea", { rows: "2", maxlength: "2000", "aria-label": "What was wrong or missing? (optional)",
        placeholder: rating === "down" ? "What was wrong or missing? (optional)" : "Anything to add? (optional)" });
      const post = async () => {
        const body = { rating, ...(comment.value.trim() ? { comment: comment.value.trim() } : {}) };
        try {
          const response = await fetch(`${server}/v1/answers/${encodeURIComponent(id)}/feedback`,
            { method: "POST", headers: headers(), body: JSON.stringify(body) });
          box.replaceChildren(el("p", { class: "muted", role: "status",
            text: response.ok ? "Thanks: the docs team sees this." : errorText(await response.json().catch(() => null), response.status) }));
        } catch (_) {
          box.replaceChildren(el("p", { class: "error", role: "alert", text: "pgcite could not be reached; try again." }));
        }
      };
      box.replaceChildren(comment, el("button", { type: "button", class: "send", text: "Send", onclick: post }));
      comment.focus();
    };
    box.append(el("span", { class: "muted", text: "Helpful?" }),
      el("button", { type: "button", class: "thumb", "aria-label": "Helpful", text: "Yes", onclick: () => rate("up") }),
      el("button", { type: "button", class: "thumb", "aria-label": "Not helpful", text: "No", onclick: () => rate("down") }));
    return box;
  }

  function CSS() {
    return `
:host { all: initial; --accent: #4f46e5; --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); }
:host([data-dark]) { --bg: #161b22; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --soft: #0d1117; }
* { box-sizing: border-box; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
button { font: inherit; cursor: pointer; }
button:focus-visible, textarea:focus-visible, a:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
.launcher { position: fixed; right: 20px; bottom: 20px; z-index: 2147483000; border: 0; border-radius: 999px;
  padding: 10px 16px; background: var(--accent); color: #fff; box-shadow: 0 4px 14px rgba(0,0,0,.25); font-weight: 600; }
.backdrop { position: fixed; inset: 0; z-index: 2147483001; background: rgba(0,0,0,.35); display: flex;
  align-items: flex-end; justify-content: flex-end; padding: 16px; }
.backdrop[hidden] { display: none; }
.dialog { background: var(--bg); color: var(--fg); width: min(460px, 100%); max-height: min(680px, 100%);
  display: flex; flex-direction: column; border-radius: 12px; border: 1px solid var(--line);
  box-shadow: 0 12px 40px rgba(0,0,0,.3); overflow: hidden; }
header { display: flex; align-items: center; justify-content: space-between; padding: 10px 14px;
  border-bottom: 1px solid var(--line); }
h2 { font-size: 16px; margin: 0; }
.close { border: 0; background: none; color: var(--muted); font-size: 22px; line-height: 1; padding: 4px 8px; }
.clear { margin-left: auto; border: 0; background: none; color: var(--muted); font-size: 13px; padding: 4px 8px; }
.clear[hidden] { display: none; }
.stale { margin: 0 0 8px; padding: 6px 8px; border-radius: 6px; background: var(--soft); border-left: 3px solid #bf8700;
  font-size: 13px; }
.thread { overflow-y: auto; padding: 8px 14px; flex: 1; min-height: 80px; }
.turn { margin: 10px 0 16px; }
.question { margin: 0 0 6px; font-weight: 600; white-space: pre-wrap; overflow-wrap: anywhere; }
.answer p, .answer ul { margin: 0 0 8px; overflow-wrap: anywhere; }
.answer pre { background: var(--soft); padding: 8px; border-radius: 6px; overflow-x: auto; font-size: 13px; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; }
a { color: var(--accent); }
:host([data-dark]) a { color: #8fb3ff; }
.cite { text-decoration: none; font-weight: 600; }
.sources { margin: 6px 0 8px; padding-left: 24px; font-size: 13px; }
.muted, .note { color: var(--muted); font-size: 13px; }
.note { margin: 0; padding: 4px 14px 10px; }
.error { color: #cf222e; }
:host([data-dark]) .error { color: #ff7b72; }
.refused { font-style: italic; }
.feedback { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; }
.feedback textarea { flex: 1 1 100%; }
.thumb { border: 1px solid var(--line); background: var(--soft); border-radius: 6px; padding: 2px 8px; }
form { display: flex; gap: 8px; padding: 10px 14px; border-top: 1px solid var(--line); }
textarea { flex: 1; resize: none; font: inherit; color: var(--fg); background: var(--soft); border: 1px solid var(--line);
  border-radius: 8px; padding: 6px 8px; }
.send { border: 0; border-radius: 8px; background: var(--accent); color: #fff; padding: 6px 14px; font-weight: 600; }
.send:disabled { opacity: .6; }
@media (max-width: 480px) {
  .backdrop { padding: 0; }
  .dialog { width: 100%; height: 100%; max-height: 100%; border-radius: 0; }
  .launcher { right: 12px; bottom: 12px; }
}`;
  }

  applyTheme();
  restore();
  (document.body || document.documentElement).append(host);
})();
