"""The command-line shell: typer commands and their rendering."""
