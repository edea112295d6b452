"""What the answers teach: the answer log and the report of what the docs are missing."""
