# A small MyST project for pgcite's tests: read, never run.
project = "Spindle"
extensions = ["sphinx.ext.autodoc", "myst_parser"]
