"""Pages read back whole for readers (MCP's read_page, llms.txt, a page's Markdown copy), and the
llms.txt format. Imports the store and the shared words only; core mixes in its operations."""
