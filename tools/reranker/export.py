"""Exports the fine-tuned cross-encoder to ONNX (inputs input_ids,
attention_mask, token_type_ids; output logits [batch, 1]), quantizes it to
int8 (dynamic, per channel), stores its weights as uint8 (u8.py) and checks it against the training framework on
the held-out pairs: max abs logit difference, Spearman, and how often the two
order a query's candidates alike. Writes the model folder Carrel loads.
"""

import argparse
import hashlib
import json
import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from transformers import AutoModelForSequenceClassification, AutoTokenizer
from u8 import to_u8

from metrics import auc, order_agreement, pairwise_accuracy

# The tokenizer is the base model's, unchanged (the files Carrel's embedder
# already loads); config.json is the fine-tuned one (one label).
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]


def spearman(a, b):
    ra = np.argsort(np.argsort(a))
    rb = np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trained")
    ap.add_argument("pairs")
    ap.add_argument("--base", required=True, help="the base model folder, for its tokenizer files")
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-length", type=int, default=192)
    args = ap.parse_args()

    tok = AutoTokenizer.from_pretrained(args.trained)
    model = AutoModelForSequenceClassification.from_pretrained(args.trained).eval()
    os.makedirs(args.out, exist_ok=True)
    fp32 = os.path.join(args.out, "model.fp32.onnx")
    sample = tok(["a query"], ["a card"], return_tensors="pt")
    torch.onnx.export(
        model,
        (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
        fp32,
        dynamo=False,
        opset_version=17,
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logits"],
        dynamic_axes={n: {0: "batch", 1: "sequence"} for n in ("input_ids", "attention_mask", "token_type_ids")}
        | {"logits": {0: "batch"}},
    )
    int8 = os.path.join(args.out, "model.onnx")
    quantize_dynamic(fp32, int8, weight_type=QuantType.QInt8, per_channel=True)
    os.remove(fp32)
    # uint8 weights, the same values: every CPU then computes the same logits
    # (u8.py says why).
    quantized = onnx.load(int8)
    to_u8(quantized)
    onnx.save(quantized, int8)
    for name in TOKENIZER_FILES:
        shutil.copy(os.path.join(args.base, name), os.path.join(args.out, name))
    shutil.copy(os.path.join(args.trained, "config.json"), os.path.join(args.out, "config.json"))

    held = [json.loads(line) for line in open(args.pairs)]
    held = [r for r in held if r["split"] == "heldout"]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(int8, opts, providers=["CPUExecutionProvider"])
    torch_logits, onnx_logits = [], []
    with torch.no_grad():
        for b in range(0, len(held), 64):
            part = held[b : b + 64]
            enc = tok([r["query"] for r in part], [r["text"] for r in part], truncation="only_second",
                      max_length=args.max_length, padding=True, return_tensors="pt")
            torch_logits += model(**enc).logits[:, 0].tolist()
            feed = {k: enc[k].numpy().astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
            onnx_logits += sess.run(["logits"], feed)[0][:, 0].tolist()
    labels = [r["label"] for r in held]
    groups = [r["group"] for r in held]
    diff = np.abs(np.array(torch_logits) - np.array(onnx_logits))
    parity = {
        "heldout_pairs": len(held),
        "max_abs_logit_diff": float(diff.max()),
        "mean_abs_logit_diff": float(diff.mean()),
        "spearman": spearman(torch_logits, onnx_logits),
        "order_agreement": order_agreement(torch_logits, onnx_logits, groups),
        "auc_torch": auc(torch_logits, labels),
        "auc_int8": auc(onnx_logits, labels),
        "pairwise_accuracy_int8": pairwise_accuracy(onnx_logits, labels, groups),
    }
    with open(int8, "rb") as f:
        parity["sha256"] = hashlib.sha256(f.read()).hexdigest()
    parity["size_bytes"] = os.path.getsize(int8)
    with open(os.path.join(args.trained, "export_parity.json"), "w") as f:
        json.dump(parity, f, indent=2)
    np.save(os.path.join(args.trained, "heldout_int8_logits.npy"), np.array(onnx_logits, dtype=np.float32))
    print(json.dumps(parity, indent=2))


if __name__ == "__main__":
    main()
