"""What the answers teach: the answer log, its operations and the report of what the docs are missing.
May import answer and everything below it; only the core and the shells import it."""
