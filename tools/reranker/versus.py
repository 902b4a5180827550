"""Scores the held-out pairs of one pairs file with several exported
cross-encoders (int8 ONNX, as Carrel serves them) and prints, per query kind
and per corpus, AUC, recall at 1% false positives and P@1 among each
query's candidates: `versus.py PAIRS MODEL_DIR...`. Used to put carrel-ce-v2
and carrel-ce-v1 side by side on the same unseen queries."""

import argparse
import json
import os

from compare import logits
from metrics import breakdown


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.pairs)]
    rows = [r for r in rows if r["split"] == "heldout"]
    labels = [r["label"] for r in rows]
    groups = [r["group"] for r in rows]
    scores = {os.path.basename(m.rstrip("/")): logits(m, rows).tolist() for m in args.models}
    for field in ("qkind", "corpus"):
        keys = [r[field] for r in rows]
        tables = {name: breakdown(s, labels, groups, keys) for name, s in scores.items()}
        names = list(tables)
        print(f"\n| {field} | queries | " + " | ".join(f"AUC {n} | R@1%FP {n} | P@1 {n}" for n in names) + " |")
        print("|---|---:|" + "---:|" * (3 * len(names)))
        for key in sorted(set(keys)):
            cells = []
            for n in names:
                t = tables[n][key]
                cells += [f"{t['auc']:.3f}", f"{t['recall_at_fpr_0.01']:.2f}", f"{t['p_at_1']:.2f}"]
            print(f"| {key} | {tables[names[0]][key]['queries']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
