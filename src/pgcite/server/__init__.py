"""The HTTP shell: the app, one module per route group, jobs, webhooks, limits, the web page.
May import the core and everything below it (docs/architecture.md); only the cli imports it."""
