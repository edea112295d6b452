"""The HTTP shell: the app, one module per route group, jobs, webhooks, limits, the web page."""
