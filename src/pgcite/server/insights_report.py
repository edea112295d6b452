"""`pgcite insights --html`: the insights page as one self-contained file. Its stylesheets, Chart.js
(with its licence) and the page's script are inlined, and the figures are embedded as JSON, so it
opens offline, from a mail attachment or a CI artifact, and draws the same charts as /insights.

Its Content-Security-Policy allows only the inlined script and styles, by their SHA-256, and no
request at all: a question that slipped past the page's escaping could neither run nor call home."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re

from pgcite.server.web import read_static

_STYLES = ("app.css", "insights.css")
_SCRIPTS = ("chart.umd.min.js", "shared.js", "insights.js")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _script_text(name: str) -> str:
    text = read_static(name)
    # Inside <script>, only "</script" (any case) and "<!--" could end it early; neither file has them.
    if re.search(r"</script|<!--", text, flags=re.IGNORECASE):
        raise ValueError(f"{name} cannot be inlined: it holds </script or <!--")
    return text


def render(data: dict) -> str:
    """The report's HTML over `data`, the object of GET /v1/insights."""
    page = read_static("insights.html")
    styles = [read_static(name) for name in _STYLES]
    scripts = [_script_text(name) for name in _SCRIPTS]
    figures = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")  # JSON never holds a raw "<"
    csp = (
        f"default-src 'none'; script-src {' '.join(map(_sha256, scripts))}; "
        f"style-src {' '.join(map(_sha256, styles))}; img-src data:; base-uri 'none'; form-action 'none'"
    )
    styled = "".join(f"  <style>{s}</style>\n" for s in styles)
    # At the end of the body, as the served page's deferred scripts run: after the page is parsed.
    tail = f'  <script type="application/json" id="insights-data">{figures}</script>\n' + "".join(
        f"  <script>{s}</script>\n" for s in scripts
    )
    meta = f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp)}">'
    licence = read_static("chart.js-LICENSE.txt").replace("--", "- -")
    # The linked files give way to the inlined ones; links that lead back to the server go.
    page = re.sub(r'\s*<link rel="stylesheet"[^>]*>|\s*<script src="[^"]*" defer></script>', "", page)
    page = page.replace('<meta charset="utf-8">', '<meta charset="utf-8">\n  ' + meta, 1)
    page = page.replace("</head>", styled + "</head>", 1).replace("</body>", tail + "</body>", 1)
    page = page.replace('<a class="brand" href="./"', '<a class="brand"', 1)
    credit = 'Charts drawn by <a href="https://www.chartjs.org/">Chart.js</a> (MIT licence, at the end of this file).'
    page = re.sub(r"(?s)(<footer[^>]*>).*?(</footer>)", rf"\1{credit}\2", page)
    return page.replace("</html>", f"<!-- Chart.js's licence (it is inlined above):\n{licence}\n-->\n</html>", 1)
