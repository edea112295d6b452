"""Trains the reader: a cross-encoder that reads a question with a section and scores whether the
section answers it, started from the bundled all-MiniLM-L6-v2 and trained on build_data.py's pairs.

    .venv/bin/python train/reader/train.py --work /work/reader-work       # train (resumes)
    .venv/bin/python train/reader/train.py --work W --only sent --sentences   # sentence.py's pairs
    .venv/bin/python train/reader/export.py --work /work/reader-work      # write src/pgcite/data/reader.*

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
# --sentences: units of one or two sentences (sentences.py), about a third of a section's tokens
SENTENCE_SHAPE = {"max_tokens": 96, "groups_per_batch": 8, "negatives": 3}  # 8 x (1 + 3) = 32 pairs
LEARNING_RATE = 4e-5
WARMUP = 0.06
CHECKPOINT = 250
DROP_BREADCRUMB = 0.3  # a share of groups read without their headings, so bodies are read too
DEV_SITES = ("httpx", "helix", "rollup", "strawberry")  # held out of training to choose and check
DEV_ARTICLES = ("squad-immune-system", "squad-warsaw")  # people.py's pairs held out the same way
DEV_SENTENCES = ("sent-alps", "sent-antibiotics", "sent-architecture")  # and sentences.py's
DEV = DEV_SITES + DEV_ARTICLES + DEV_SENTENCES


class Reader(nn.Module):
    def __init__(self, model_dir: Path, start: Path | None = None) -> None:
        super().__init__()
        from transformers import BertModel

        self.bert = BertModel.from_pretrained(str(model_dir), add_pooling_layer=False)
        self.bert.embeddings.word_embeddings.weight.requires_grad_(False)
        self.head = nn.Linear(self.bert.config.hidden_size, 1)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)
        if start is not None:  # an exported reader (export.py's names, fp16) to go on from
            from safetensors.torch import load_file

            saved = {(k if k.startswith("head.") else f"bert.{k}"): v.float() for k, v in load_file(str(start)).items()}
            missing = set(self.state_dict()) - set(saved) - {"bert.embeddings.word_embeddings.weight"}
            if {m for m in missing if not m.endswith("position_ids")}:
                raise SystemExit(f"{start} is not a reader export: it lacks {sorted(missing)[:3]}")
            self.load_state_dict(saved, strict=False)

    def forward(self, ids, types, mask):
        hidden = self.bert(input_ids=ids, token_type_ids=types, attention_mask=mask).last_hidden_state
        real = mask.unsqueeze(-1).float()
        pooled = (hidden * real).sum(1) / real.sum(1).clamp(min=1e-9)
        return self.head(pooled).squeeze(-1)


def load_groups(work: Path, only: str = "", negatives: int = NEGATIVES) -> dict[str, list[dict]]:
    """Each question's pairs, the section that answers it (if one does) first, by site (or SQuAD
    article); `only`: the files whose name starts with it."""
    by_site: dict[str, list[dict]] = {}
    for file in sorted((work / "pairs").glob(f"{only}*.jsonl")):
        groups: dict[str, dict] = {}
        for line in file.read_text().splitlines():
            row = json.loads(line)
            group = groups.setdefault(row["question"], {"question": row["question"], "texts": [], "labels": []})
            if row["label"] or len(group["labels"]) - sum(group["labels"]) < negatives:
                group["texts"].append(row["text"])
                group["labels"].append(row["label"])
        # A group with one answer is ranked and scored; one with none (a question its section does not
        # answer) is only scored.
        by_site[file.stem] = [
            g for g in groups.values() if sum(g["labels"]) == 0 or (sum(g["labels"]) == 1 and len(g["labels"]) > 1)
        ]
    return by_site


def encode(tokenizer, question: str, texts: list[str], max_tokens: int = MAX_TOKENS):
    batch = tokenizer(
        [question] * len(texts),
        texts,
        truncation="only_second",
        max_length=max_tokens,
        padding=True,
        return_tensors="pt",
    )
    return batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]


def without_breadcrumb(text: str) -> str:
    return text.split("\n", 1)[1] if "\n" in text else text


def batch_tensors(tokenizer, groups: list[dict], rng: random.Random, max_tokens: int):
    questions, texts, labels, sizes = [], [], [], []
    for g in groups:
        drop = rng.random() < DROP_BREADCRUMB
        for text, label in zip(g["texts"], g["labels"], strict=True):
            questions.append(g["question"])
            texts.append(without_breadcrumb(text) if drop else text)
            labels.append(label)
        sizes.append(len(g["texts"]))
    batch = tokenizer(
        questions, texts, truncation="only_second", max_length=max_tokens, padding=True, return_tensors="pt"
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


def auc_of(pos: list[float], neg: list[float]) -> float:
    """P(a positive scores above a negative), ties half, as the benches count it."""
    p, n = np.array(pos), np.array(neg)
    if not len(p) or not len(n):
        return float("nan")
    return float((p[:, None] > n[None, :]).mean() + 0.5 * (p[:, None] == n[None, :]).mean())


@torch.no_grad()
def evaluate(model, tokenizer, groups: list[dict], max_tokens: int) -> dict:
    """The answering section's rank among its group; how well scores separate answers from the other
    candidates (auc) and from the passages of questions they do not answer (auc_unanswered)."""
    model.eval()
    first, ranked, positives, negatives, unanswered = 0, 0, [], [], []
    for g in groups:
        ids, types, mask = encode(tokenizer, g["question"], g["texts"], max_tokens)
        scores = model(ids, types, mask).numpy()
        labels = np.array(g["labels"])
        if not labels.any():
            unanswered += scores.tolist()
            continue
        ranked += 1
        first += int(scores.argmax() == labels.argmax())
        positives += scores[labels == 1].tolist()
        negatives += scores[labels == 0].tolist()
    model.train()
    return {
        "top1": first / max(ranked, 1),
        "auc": auc_of(positives, negatives),
        "auc_unanswered": auc_of(positives, unanswered),
        "groups": len(groups),
    }


def train(
    work: Path,
    epochs: float,
    only: str = "",
    start: Path | None = None,
    threads: int = 2,
    shape: dict | None = None,
    most_steps: int | None = None,
) -> None:
    """shape: max_tokens, groups_per_batch and negatives (the passage recipe's unless given);
    most_steps: a cap on the schedule's length, so a run is sized to the hours at hand."""
    from transformers import AutoTokenizer

    torch.manual_seed(SEED)
    torch.set_num_threads(threads)
    rng = random.Random(SEED)
    model_dir = bundled_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    shape = shape or {"max_tokens": MAX_TOKENS, "groups_per_batch": GROUPS_PER_BATCH, "negatives": NEGATIVES}
    per_batch, max_tokens = shape["groups_per_batch"], shape["max_tokens"]
    by_site = load_groups(work, only, shape["negatives"])
    train_groups = [g for site, gs in sorted(by_site.items()) if site not in DEV for g in gs]
    dev_groups = [g for site in DEV for g in by_site.get(site, [])]
    rng.shuffle(train_groups)
    # At most 120 ranked questions and 120 unanswered ones.
    dev_rng = random.Random(SEED)
    dev_groups = [
        g
        for answered in (True, False)
        for kept in [[g for g in dev_groups if any(g["labels"]) == answered]]
        for g in dev_rng.sample(kept, min(120, len(kept)))
    ]
    steps = int(len(train_groups) * epochs / per_batch)
    if most_steps:
        steps = min(steps, most_steps)
    model = Reader(model_dir, start)
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
        state["log"].append({"step": 0, **evaluate(model, tokenizer, dev_groups, max_tokens)})
        print(state["log"][-1], file=sys.stderr)
    print(f"{len(train_groups)} training questions, {len(dev_groups)} dev; {steps} steps", file=sys.stderr)
    model.train()
    started, losses = time.process_time(), []
    while state["step"] < steps:
        s = state["step"]
        index = (s * per_batch) % len(train_groups)
        groups = train_groups[index : index + per_batch]
        ids, types, mask, labels, sizes = batch_tensors(tokenizer, groups, rng, max_tokens)
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
                {
                    "step": state["step"],
                    "loss": float(np.mean(losses)),
                    **evaluate(model, tokenizer, dev_groups, max_tokens),
                }
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
    (work / "train_log.json").write_text(json.dumps(state | {"steps": steps, "seed": SEED, "shape": shape}, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--only", default="", help="train on the pair files whose name starts with this")
    parser.add_argument("--start", type=Path, help="an exported reader.safetensors to go on from")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sentences", action="store_true", help="units of a sentence or two (sentences.py's pairs)")
    parser.add_argument("--most-steps", type=int, help="stop the schedule at this many steps")
    args = parser.parse_args()
    shape = SENTENCE_SHAPE if args.sentences else None
    train(args.work, args.epochs, args.only, args.start, args.threads, shape, args.most_steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
