#!/usr/bin/env python3
"""Writes what a labeller reads: shards.py ANSWERS.jsonl OUT_DIR N

N Markdown shards of the answered questions: the question, the context
passages as the model saw them, and the sentences, numbered. No measure,
mark or citation of Carrel's is shown (LABELLING.md)."""
import json
import os
import sys


def main():
    answers, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    recs = [json.loads(l) for l in open(answers) if l.strip()]
    # The model's sentences are labelled; the extractive answerer's quotes
    # (records with "answerer": "extractive") are verbatim by construction.
    recs = [r for r in recs if r["sentences"] and r.get("answerer", "local").startswith("local")]
    for k in range(n):
        with open(os.path.join(out, f"shard-{k}.md"), "w") as f:
            for r in recs[k::n]:
                f.write(f"## question {r['id']}: {r['question']}\n\n")
                for p in r["context"]:
                    f.write(f"### passage [{p['n']}] ({p['title']}; {p['heading']})\n\n{p['text']}\n\n")
                f.write("### sentences\n\n")
                for i, s in enumerate(r["sentences"]):
                    f.write(f"- i={i}: {s['text']}\n")
                f.write("\n")


if __name__ == "__main__":
    main()
