"""Where coding agents ask: the MCP server (tools.py), over stdio for `pgcite mcp` and at `/mcp` on
`pgcite serve` (http.py). Imports the core, the shapes and access; the shells import it."""
