"""Every kind of bad input found so far, in one folder and one zip, for the reliability suite
(tests/test_reliability.py) and for bench/bad_input.py, which measures the run's time and peak
memory. Each entry gives the start of the line a user sees for it; None means the file is
ingested."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path



def laughs(key: str, anchor: str = "a") -> str:
    """YAML whose `key` is ten levels of ten aliases each: 10^9 strings when expanded. Anchors are
    named `anchor`0 to `anchor`9 (any characters but spaces and brackets may name one)."""
    return f"{anchor}0: &{anchor}0 lol\n" + "".join(
        f"{anchor}{n}: &{anchor}{n} [{', '.join([f'*{anchor}{n - 1}'] * 10)}]\n" for n in range(1, 10)
    ) + f"{key}: *{anchor}9\n"


# A title of ten levels of ten YAML aliases each.
BILLION_LAUGHS = f"---\n{laughs('title')}---\n# Laughs\n\nText.\n"
NON_UTF8_NAME = b"caf\xe9.md"


def write_bad_folder(folder: Path, *, max_file_bytes: int = 5_000_000) -> dict[str, str | None]:
    """A folder of two good pages and one file of each bad kind; returns path -> skip reason."""
    folder.mkdir(parents=True)
    pages: dict[str, bytes] = {
        "guide.md": b"# Guide\n\n## Setup\n\nThe quokka setting is 7.\n",
        "faq.md": b"# FAQ\n\n## Limits\n\nA wombat holds 12 items.\n",
        "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
        "utf16.md": "# Hi\n\nText.\n".encode("utf-16"),
        "latin1.md": "# Café crème\n".encode("latin-1"),
        "empty.md": b"",
        "huge.md": b"# Huge\n\n" + b"lorem ipsum " * (max_file_bytes // 12 + 1),
        "late-nul.md": b"# Late\n\n" + b"word " * 2000 + b"\x00 tail\n",
        "laughs.md": BILLION_LAUGHS.encode(),
        "nested.md": ("---\ntitle: " + "[" * 10_000 + "]" * 10_000 + "\n---\n# Nested\n\nText about otters.\n").encode(),
        "toml-nested.md": ("+++\ntitle = " + "[" * 10_000 + "]" * 10_000 + "\n+++\n# Toml\n\nText about seals.\n").encode(),
        "word.md": b"# One word\n\n" + "".join(f"{n:06d}" for n in range(50_000)).encode() + b"\n",  # 300 KB
        "deep-list.md": b"# Deep\n\n" + b"".join(b"  " * n + b"- item\n" for n in range(500)),
    }
    for name, data in pages.items():
        (folder / name).write_bytes(data)
    with open(os.path.join(os.fsencode(folder), NON_UTF8_NAME), "wb") as f:
        f.write(b"# Cafe\n\nText.\n")
    (folder / "escape.md").symlink_to("/etc/passwd")
    (folder / "broken.md").symlink_to(folder / "nowhere.md")
    (folder / "loop").symlink_to(folder)
    os.mkfifo(folder / "fifo.md")
    return {
        "guide.md": None, "faq.md": None, "laughs.md": None, "nested.md": None, "toml-nested.md": None,
        "word.md": None, "deep-list.md": None,
        "binary.md": "binary file, not Markdown text",
        "utf16.md": "UTF-16 text, not UTF-8: save it as UTF-8",
        "latin1.md": "not UTF-8 text (invalid byte at offset 5): save it as UTF-8",
        "empty.md": "empty file",
        "huge.md": "file is",
        "late-nul.md": "a NUL byte at offset 10008",
        "caf\\xe9.md": "file name is not valid UTF-8: rename it",
        "escape.md": "symlink leads outside the source folder",
        "broken.md": "broken symlink",
        "loop": "symlink loop",
        "fifo.md": "not a regular file",
    }


def write_bad_zip(path: Path) -> dict[str, str | None]:
    """A zip with a good page, a zip slip, an absolute path and a member that expands 1000x."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("docs/index.md", "# Home\n\nThe heron setting is 3.\n")
        z.writestr("../evil.md", "# Escape\n")
        z.writestr("/abs.md", "# Absolute\n")
        z.writestr("docs/bomb.md", b"0" * 100_000_000)
    return {
        "docs/index.md": None,
        "../evil.md": "unsafe path in zip (absolute or '..')",
        "/abs.md": "unsafe path in zip (absolute or '..')",
        "docs/bomb.md": "compressed 1029x, over the 200x limit (possible zip bomb)",
    }
