"""Trains the reader: a cross-encoder that reads a question with a section and scores whether the
section answers it, started from the bundled all-MiniLM-L6-v2 and trained on build_data.py's pairs.

    .venv/bin/python train/reader/train.py --work /work/reader-work            # train (resumes)
    .venv/bin/python train/reader/train.py --work /work/reader-work --export   # write src/pgcite/data/reader.*

The model is MiniLM's encoder, the question as segment A and the section as segment B, mean-pooled
(as MiniLM was trained) into one logit. Word embeddings stay frozen: they are MiniLM's own, which
pgcite already ships, so only the rest (about 11 M weights, fp16) is shipped with pgcite
(src/pgcite/data/reader.safetensors). Loss: each question's group (its section and the first
stage's best wrong candidates) as a softmax (ranking), plus each pair's own sigmoid (an absolute
score a refusal bar can be set on). Checkpoints every CHECKPOINT steps; a stopped run resumes."""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "src"))

from pgcite.embedding.models import bundled_model_dir  # noqa: E402

SEED = 41
MAX_TOKENS = 192  # question + section, [CLS] and two [SEP] included (about 150 tokens of the section)
GROUPS_PER_BATCH = 3  # 3 questions x (1 + 4 negatives) = 15 pairs
NEGATIVES = 4  # of the 6 built per question, the first stage's best
LEARNING_RATE = 4e-5
WARMUP = 0.06
CHECKPOINT = 250
DROP_BREADCRUMB = 0.3  # a share of groups read without their headings, so bodies are read too
DEV_SITES = ("httpx", "helix", "rollup", "strawberry")  # held out of training to choose and check


class Reader(nn.Module):
    def __init__(self, model_dir: Path) -> None:
        super().__init__()
        from transformers import BertModel

        self.bert = BertModel.from_pretrained(str(model_dir), add_pooling_layer=False)
        self.bert.embeddings.word_embeddings.weight.requires_grad_(False)
        self.head = nn.Linear(self.bert.config.hidden_size, 1)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    def forward(self, ids, types, mask):
        hidden = self.bert(input_ids=ids, token_type_ids=types, attention_mask=mask).last_hidden_state
        real = mask.unsqueeze(-1).float()
        pooled = (hidden * real).sum(1) / real.sum(1).clamp(min=1e-9)
        return self.head(pooled).squeeze(-1)


def load_groups(work: Path) -> dict[str, list[dict]]:
    """Each question's pairs, the section that answers it (if one does) first, by site."""
    by_site: dict[str, list[dict]] = {}
    for file in sorted((work / "pairs").glob("*.jsonl")):
        groups: dict[str, dict] = {}
        for line in file.read_text().splitlines():
            row = json.loads(line)
            group = groups.setdefault(row["question"], {"question": row["question"], "texts": [], "labels": []})
            if row["label"] or len(group["labels"]) - sum(group["labels"]) < NEGATIVES:
                group["texts"].append(row["text"])
                group["labels"].append(row["label"])
        # A group with one answer is ranked and scored; one with none (a question its section does not
        # answer) is only scored.
        by_site[file.stem] = [
            g for g in groups.values() if sum(g["labels"]) == 0 or (sum(g["labels"]) == 1 and len(g["labels"]) > 1)
        ]
    return by_site


def encode(tokenizer, question: str, texts: list[str]):
    batch = tokenizer(
        [question] * len(texts),
        texts,
        truncation="only_second",
        max_length=MAX_TOKENS,
        padding=True,
        return_tensors="pt",
    )
    return batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]


def without_breadcrumb(text: str) -> str:
    return text.split("\n", 1)[1] if "\n" in text else text


def batch_tensors(tokenizer, groups: list[dict], rng: random.Random):
    questions, texts, labels, sizes = [], [], [], []
    for g in groups:
        drop = rng.random() < DROP_BREADCRUMB
        for text, label in zip(g["texts"], g["labels"], strict=True):
            questions.append(g["question"])
            texts.append(without_breadcrumb(text) if drop else text)
            labels.append(label)
        sizes.append(len(g["texts"]))
    batch = tokenizer(
        questions, texts, truncation="only_second", max_length=MAX_TOKENS, padding=True, return_tensors="pt"
    )
    return batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], torch.tensor(labels).float(), sizes


def loss_of(logits, labels, sizes):
    bce = nn.functional.binary_cross_entropy_with_logits(logits, labels)
    ranking, start, ranked = 0.0, 0, 0
    for size in sizes:
        group, target = logits[start : start + size], labels[start : start + size]
        if target.max() > 0:
            ranking = ranking - torch.log_softmax(group, 0)[target.argmax()]
            ranked += 1
        start += size
    return bce + ranking / max(ranked, 1)


@torch.no_grad()
def evaluate(model, tokenizer, groups: list[dict]) -> dict:
    """The answering section's rank among its group, and how well scores separate answers from the rest
    (groups with an answer only)."""
    model.eval()
    first, positives, negatives = 0, [], []
    for g in groups:
        ids, types, mask = encode(tokenizer, g["question"], g["texts"])
        scores = model(ids, types, mask).numpy()
        labels = np.array(g["labels"])
        first += int(scores.argmax() == labels.argmax())
        positives += scores[labels == 1].tolist()
        negatives += scores[labels == 0].tolist()
    model.train()
    pos, neg = np.array(positives), np.array(negatives)
    auc = float((pos[:, None] > neg[None, :]).mean()) if len(pos) and len(neg) else float("nan")
    return {"top1": first / max(len(groups), 1), "auc": auc, "groups": len(groups)}


def train(work: Path, epochs: float) -> None:
    from transformers import AutoTokenizer

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = random.Random(SEED)
    model_dir = bundled_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    by_site = load_groups(work)
    train_groups = [g for site, gs in sorted(by_site.items()) if site not in DEV_SITES for g in gs]
    dev_groups = [g for site in DEV_SITES for g in by_site.get(site, []) if any(g["labels"])]
    rng.shuffle(train_groups)
    dev_groups = random.Random(SEED).sample(dev_groups, min(120, len(dev_groups)))
    steps = int(len(train_groups) * epochs / GROUPS_PER_BATCH)
    model = Reader(model_dir)
    optimiser = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=LEARNING_RATE, weight_decay=0.01
    )
    warmup = max(1, int(steps * WARMUP))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup)))
    )
    checkpoint = work / "checkpoint.pt"
    state = {"step": 0, "cpu_seconds": 0.0, "log": []}
    if checkpoint.is_file():
        saved = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(saved["model"])
        optimiser.load_state_dict(saved["optimiser"])
        schedule.load_state_dict(saved["schedule"])
        state = saved["state"]
        rng.setstate(saved["rng"])
        print(f"resumed at step {state['step']} of {steps}", file=sys.stderr)
    else:
        state["log"].append({"step": 0, **evaluate(model, tokenizer, dev_groups)})
        print(state["log"][-1], file=sys.stderr)
    print(f"{len(train_groups)} training questions, {len(dev_groups)} dev; {steps} steps", file=sys.stderr)
    model.train()
    started, losses = time.process_time(), []
    while state["step"] < steps:
        s = state["step"]
        index = (s * GROUPS_PER_BATCH) % len(train_groups)
        groups = train_groups[index : index + GROUPS_PER_BATCH]
        ids, types, mask, labels, sizes = batch_tensors(tokenizer, groups, rng)
        loss = loss_of(model(ids, types, mask), labels, sizes)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        losses.append(loss.item())
        state["step"] += 1
        if state["step"] % CHECKPOINT == 0 or state["step"] == steps:
            state["cpu_seconds"] += time.process_time() - started
            started = time.process_time()
            state["log"].append(
                {"step": state["step"], "loss": float(np.mean(losses)), **evaluate(model, tokenizer, dev_groups)}
            )
            losses = []
            print(state["log"][-1], f"{state['cpu_seconds'] / 3600:.2f} CPU h", file=sys.stderr, flush=True)
            tmp = checkpoint.with_suffix(".tmp")
            torch.save(
                {
                    "model": model.state_dict(),
                    "optimiser": optimiser.state_dict(),
                    "schedule": schedule.state_dict(),
                    "state": state,
                    "rng": rng.getstate(),
                },
                tmp,
            )
            tmp.replace(checkpoint)
    (work / "train_log.json").write_text(json.dumps(state | {"steps": steps, "seed": SEED}, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--export", action="store_true", help="write the trained reader into pgcite's data")
    args = parser.parse_args()
    if args.export:
        from export import export

        export(args.work)
    else:
        train(args.work, args.epochs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
