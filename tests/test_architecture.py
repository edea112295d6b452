"""The layout's rules, checked the way CI checks them (docs/architecture.md): imports point one way
and close no circle (import-linter's contracts in pyproject.toml), and no module grows past 400 lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "pgcite"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
MAX_LINES = 400


def lint_imports(src: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}  # ahead of the editable install's path
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_contracts_hold_and_an_upward_import_breaks_them(tmp_path: Path):
    kept = lint_imports(ROOT / "src")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "Contracts: 2 kept, 0 broken." in kept.stdout

    # The same tree with the store importing the application object: a layer skipped upwards.
    shutil.copytree(PACKAGE, tmp_path / "pgcite", ignore=shutil.ignore_patterns("__pycache__"))
    schema = tmp_path / "pgcite" / "store" / "schema.py"
    schema.write_text(schema.read_text() + "\nfrom pgcite.core import Pgcite  # an upward import\n")
    broken = lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "pgcite.store is not allowed to import pgcite.core" in broken.stdout
    assert "pgcite.store.schema -> pgcite.core" in broken.stdout


def test_no_module_is_longer_than_the_limit():
    lengths = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}
