"""The command-line shell: typer commands, one module per group, and their rendering.
The top of the layers: may import anything in pgcite; nothing imports it but __main__."""
