# A Sphinx configuration as projects write them: literal settings, and some computed ones that
# pgcite must not run.
import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "Gearbox"
extensions = ["sphinx.ext.autodoc", "myst_parser"]
html_baseurl = "https://gearbox.readthedocs.io/en/latest/"
exclude_patterns = ["_includes/*", "drafts/*"]
language = "en"
release = __import__("gearbox").__version__
