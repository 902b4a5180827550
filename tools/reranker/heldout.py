"""Held-out corpora for a cross-encoder: "is its first card relevant more
often than cosine's first?", on BEIR sets that neither its training nor the
lanes' floors saw (Cranfield, CISI, the cross-lingual manual pages).

Two steps:

  heldout.py files BEIR_DIR FOLDER
      one Markdown file per document ("# title", then the text), for
      `carrel-cards FOLDER --out CARDS` to build the cards the lane serves;

  heldout.py score --set NAME BEIR_DIR CARDS ... --e5 E5_DIR
                   --ce NAME DIR ... [--minilm] --out JSON
      per set and embedder: each query's ten nearest cards by the
      embedder's cosine (the cards a lane would put before the model; the
      lane's floors are not applied), then, over the queries that have a
      relevant card among them, how often the first card is relevant by
      cosine and by each cross-encoder, and each scorer's AUC over those
      (query, card) pairs. MiniLM's cosine is the card vector carrel-cards
      wrote; e5's is computed here from the same weights Carrel's e5
      embedder is converted from (`query: ` / `passage: ` prefixes).

A cross-encoder folder is either a trained HuggingFace folder
(model.safetensors: scored with torch) or an exported one (model.onnx:
scored with ONNX Runtime, as Carrel runs it). A cross-encoder that reads
English only (`--ce-english NAME`) is not asked about a set whose
documents are not English: the lane says unavailable there, and so does
the report.

This is the lane's candidate choice without its floors: a figure for
comparing scorers on cards nobody tuned on, not the lane's fire rate.
"""

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from metrics import auc  # noqa: E402

TOP = 10


def files(beir, folder):
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for line in open(beir / "corpus.jsonl"):
        d = json.loads(line)
        title = (d.get("title") or "").strip() or f"Document {d['_id']}"
        (folder / f"{d['_id']}.md").write_text(f"# {title}\n\n{d['text'].strip()}\n", encoding="utf-8")
        n += 1
    print(f"heldout: {n} documents into {folder}")


def load_set(beir, cards_path):
    cards = [json.loads(line) for line in open(cards_path)]
    cards = [c for c in cards if c["card"].strip()]
    ids = [Path(c["source"]).stem for c in cards]
    queries = {}
    for line in open(beir / "queries.jsonl"):
        q = json.loads(line)
        if q.get("kind") != "noise":
            queries[q["_id"]] = q["text"]
    rel = defaultdict(set)
    with open(beir / "qrels.tsv") as f:
        next(f)
        for line in f:
            qid, did, score = line.rstrip("\n").split("\t")[:3]
            if int(score) > 0:
                rel[qid].add(did)
    queries = {k: v for k, v in queries.items() if rel[k]}
    return cards, ids, queries, rel


class E5:
    def __init__(self, path):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).eval()

    def embed(self, texts, prefix, size=32):
        out = []
        with self.torch.no_grad():
            for b in range(0, len(texts), size):
                e = self.tok([prefix + t for t in texts[b : b + size]], truncation=True, max_length=512,
                             padding=True, return_tensors="pt")
                h = self.model(**e).last_hidden_state
                m = e["attention_mask"].unsqueeze(-1).float()
                v = (h * m).sum(1) / m.sum(1)
                out.append(self.torch.nn.functional.normalize(v, dim=-1).numpy())
        return np.concatenate(out)


class CrossEncoder:
    def __init__(self, path, max_length=256):
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path)
        self.max_length = max_length
        if (Path(path) / "model.onnx").exists():
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 2
            self.session = ort.InferenceSession(str(Path(path) / "model.onnx"), opts)
            self.inputs = {i.name for i in self.session.get_inputs()}
            self.model = None
        else:
            import torch
            from transformers import AutoModelForSequenceClassification

            self.torch = torch
            self.model = AutoModelForSequenceClassification.from_pretrained(path).eval()

    def score(self, query, texts):
        e = self.tok([query] * len(texts), texts, truncation="longest_first", max_length=self.max_length,
                     padding=True, return_tensors="np" if self.model is None else "pt")
        if self.model is None:
            feed = {k: v.astype(np.int64) for k, v in e.items() if k in self.inputs}
            if "token_type_ids" in self.inputs and "token_type_ids" not in feed:
                feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
            return self.session.run(["logits"], feed)[0][:, 0].tolist()
        with self.torch.no_grad():
            return self.model(**e).logits[:, 0].tolist()


def score(args):
    e5 = E5(args.e5)
    ces = {name: CrossEncoder(path) for name, path in args.ce}
    english_only = set(args.ce_english or [])
    report = []
    for name, beir, cards_path, language in args.set:
        cards, ids, queries, rel = load_set(Path(beir), cards_path)
        qids = sorted(queries)
        texts = [c["card"] for c in cards]
        embedders = {"multilingual-e5-small": (e5.embed([queries[q] for q in qids], "query: "),
                                               e5.embed(texts, "passage: "))}
        if args.minilm and language == "en":
            from encode import embed

            embedders["all-MiniLM-L6-v2"] = (embed(args.minilm, [queries[q] for q in qids]).numpy(),
                                             np.array([c["card_vector"] for c in cards], dtype=np.float32))
        for embedder, (qv, cv) in embedders.items():
            row = {"set": name, "language": language, "embedder": embedder, "queries": 0, "cosine_first": 0,
                   "scorers": {}}
            pairs = {"cosine": ([], [])}
            firsts = defaultdict(int)
            for k, qid in enumerate(qids):
                sims = cv @ qv[k]
                top = np.argsort(-sims)[:TOP]
                labels = [int(ids[j] in rel[qid]) for j in top]
                if not any(labels):
                    continue
                row["queries"] += 1
                row["cosine_first"] += labels[0]
                pairs["cosine"][0].extend(sims[top].tolist())
                pairs["cosine"][1].extend(labels)
                for ce_name, ce in ces.items():
                    if ce_name in english_only and language != "en":
                        continue
                    logits = ce.score(queries[qid], [texts[j] for j in top])
                    firsts[ce_name] += labels[int(np.argmax(logits))]
                    pairs.setdefault(ce_name, ([], []))[0].extend(logits)
                    pairs[ce_name][1].extend(labels)
            for scorer, (s, y) in pairs.items():
                row["scorers"][scorer] = {"auc": round(auc(s, y), 4)}
                if scorer != "cosine":
                    row["scorers"][scorer]["first_relevant"] = firsts[scorer]
            for ce_name in ces:
                if ce_name not in row["scorers"]:
                    row["scorers"][ce_name] = {"unavailable": f"{ce_name} reads English; this set is {language}"}
            report.append(row)
            print(json.dumps(row, ensure_ascii=False), flush=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2, ensure_ascii=False)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "files":
        return files(Path(sys.argv[2]), Path(sys.argv[3]))
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["score"])
    ap.add_argument("--set", nargs=4, action="append", required=True, metavar=("NAME", "BEIR", "CARDS", "LANG"))
    ap.add_argument("--e5", required=True)
    ap.add_argument("--minilm")
    ap.add_argument("--ce", nargs=2, action="append", required=True, metavar=("NAME", "DIR"))
    ap.add_argument("--ce-english", action="append")
    ap.add_argument("--out", required=True)
    score(ap.parse_args())


if __name__ == "__main__":
    main()
