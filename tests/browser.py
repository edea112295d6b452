"""Debian's headless Chromium driven by Playwright, for the tests of the web page and the widget."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium")
# This machine has no internet: without these, Chromium keeps trying to reach Google.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "build" / "test-artifacts"


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM:
        pytest.skip("no `chromium` on PATH: the browser tests drive Debian's chromium package "
                    "(`make dev` installs it, or `apt-get install chromium`)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (`make dev`)")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def shot(page, folder: str, name: str, full_page: bool = True) -> Path:
    """A screenshot under build/test-artifacts/FOLDER/, to be looked at (its path is printed)."""
    path = ARTIFACTS / folder / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=full_page)
    print(f"screenshot: {path}")
    return path
