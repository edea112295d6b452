// What pgcite's own pages share (app.js, insights.js; the widget stays one file for other sites):
// elements built without parsing HTML, links that can only be http(s), and the API key kept in this
// browser. Loaded before each page's script.
"use strict";
(() => {
  const KEY = "pgcite.key"; // one key per browser, for every page of the server

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

  // Only http(s) links ever become an href.
  function safeUrl(url) {
    if (typeof url !== "string" || !/^https?:\/\//i.test(url)) return null;
    try { const parsed = new URL(url); return /^https?:$/.test(parsed.protocol) ? parsed.href : null; }
    catch (_) { return null; }
  }

  const oneLine = (text) => String(text).replace(/\s+/g, " ").trim();

  const savedKey = Object.freeze({
    get: () => { try { return localStorage.getItem(KEY); } catch (_) { return null; } },
    set: (value) => { try { localStorage.setItem(KEY, value); } catch (_) { /* storage is off */ } },
    clear: () => { try { localStorage.removeItem(KEY); } catch (_) { /* storage is off */ } },
  });

  window.pgciteShared = Object.freeze({ el, safeUrl, oneLine, savedKey });
})();
