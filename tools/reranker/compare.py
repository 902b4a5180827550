"""Checks a rebuilt cross-encoder against the committed one on the held-out
pairs: identical sha256, or logits within the stated tolerance with the same
ordering of each query's candidates. Exits non-zero otherwise."""

import argparse
import hashlib
import json
import sys

import numpy as np
import onnxruntime as ort
from transformers import AutoTokenizer

from metrics import order_agreement

TOLERANCE = 0.05  # max abs logit difference
MIN_AGREEMENT = 0.99


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def logits(model_dir, rows, max_length=192):
    tok = AutoTokenizer.from_pretrained(model_dir)
    sess = ort.InferenceSession(f"{model_dir}/model.onnx", providers=["CPUExecutionProvider"])
    out = []
    for b in range(0, len(rows), 64):
        part = rows[b : b + 64]
        enc = tok([r["query"] for r in part], [r["text"] for r in part], truncation="only_second",
                  max_length=max_length, padding=True, return_tensors="np")
        feed = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
        out += sess.run(["logits"], feed)[0][:, 0].tolist()
    return np.array(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("committed")
    ap.add_argument("rebuilt")
    ap.add_argument("pairs")
    args = ap.parse_args()
    a, b = sha(f"{args.committed}/model.onnx"), sha(f"{args.rebuilt}/model.onnx")
    if a == b:
        print(f"reranker: reproduced bit for bit (sha256 {a})")
        return
    rows = [json.loads(line) for line in open(args.pairs)]
    rows = [r for r in rows if r["split"] == "heldout"]
    x, y = logits(args.committed, rows), logits(args.rebuilt, rows)
    diff = float(np.abs(x - y).max())
    agree = order_agreement(x.tolist(), y.tolist(), [r["group"] for r in rows])
    ok = diff <= TOLERANCE and agree >= MIN_AGREEMENT
    print(f"reranker: sha256 differs ({a[:12]} committed, {b[:12]} rebuilt); on {len(rows)} held-out pairs "
          f"max abs logit diff {diff:.4f} (tolerance {TOLERANCE}), order agreement {agree:.4f} "
          f"(minimum {MIN_AGREEMENT}): {'within tolerance' if ok else 'NOT REPRODUCED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
