#!/usr/bin/env python3
"""The cross-lingual table: each direction (en-en, ru-ru, en-ru) with each
embedder, from `carrel eval --json` runs (tools/crosslingual/eval.sh).

Fails when multilingual-e5-small's English → Russian recall@10 is under 0.9
of its English → English, in the topic lane or by best passage cosine
alone, or when a noise query reaches an answer across languages (where the
lexical checks cannot judge, only the floors keep noise out). Both are
checked because the lane's two directions are not judged alike: across
languages the heading veto cannot judge and does not veto, while within
English it vetoes a page whose title ("epoll(7)") and headings
("Description") do not say what the query asks; cosine alone compares the
embedder with itself.

usage: report.py JSON_DIR
"""

import json
import sys
from pathlib import Path

EMBEDDERS = ["all-MiniLM-L6-v2", "multilingual-e5-small"]
DIRECTIONS = [("en-en", "EN → EN"), ("ru-ru", "RU → RU"), ("en-ru", "EN → RU")]
GOAL = 0.9


def main() -> int:
    runs = Path(sys.argv[1])
    report = {
        (d, e): json.loads((runs / f"{d}-{e}.json").read_text())
        for d, _ in DIRECTIONS
        for e in EMBEDDERS
    }
    any_run = next(iter(report.values()))
    print(f"cross-lingual sets: {any_run['documents']} manual pages a language, "
          f"{any_run['relevant_queries']} queries a direction (their NAME lines)")
    print("| direction | embedder | topic nDCG@10 | topic recall@10 | fires on | "
          "best passage by cosine only, recall@10 | bm25 recall@10 | noise admitted |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for d, label in DIRECTIONS:
        for e in EMBEDDERS:
            r = report[(d, e)]
            t, dense, bm25 = r["topic"], r["topic_dense"], r["bm25"]
            noise = f"{t['noise_leaks']} of {r['noise_queries']}" if r["noise_queries"] else "–"
            print(f"| {label} | {e} | {t['ndcg_at_10']:.3f} | {t['recall_at_10']:.3f} | "
                  f"{100 * t['fires_on']:.0f}% | {dense['recall_at_10']:.3f} | "
                  f"{bm25['recall_at_10']:.3f} | {noise} |")
    e5 = "multilingual-e5-small"
    failed = []
    for lane, label in [("topic", "topic lane"), ("topic_dense", "best passage by cosine only")]:
        same = report[("en-en", e5)][lane]["recall_at_10"]
        cross = report[("en-ru", e5)][lane]["recall_at_10"]
        ratio = cross / same if same else 0.0
        print(f"{e5}, {label}: EN → RU recall@10 is {ratio:.2f} of EN → EN "
              f"({cross:.3f} / {same:.3f}; goal ≥ {GOAL})")
        if ratio < GOAL:
            failed.append(f"{label}: EN → RU recall@10 is {ratio:.2f} of EN → EN, under {GOAL}")
    for e in EMBEDDERS:
        leaks = report[("en-ru", e)]["topic"]["noise_leaks"]
        if leaks:
            failed.append(f"{e}: {leaks} English noise queries answered from Russian pages")
    for f in failed:
        print(f"cross-lingual: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
