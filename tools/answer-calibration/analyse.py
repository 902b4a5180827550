#!/usr/bin/env python3
"""Chooses the support rule's line from labelled sentences, and reports it.

    analyse.py ANSWERS.jsonl LABELS.jsonl [--json]

ANSWERS.jsonl is what `carrel-answers` wrote (README.md here); LABELS.jsonl
holds one line per sentence, {"id", "i", "label", "supported_by"}, written
by reading (LABELLING.md). Questions are split by the SHA-256 of their id:
an even first byte is the tuning half, odd the held-out half. Each rule
(a measure, the passage that maximises it, and a line) is chosen on the
tuning half alone: the lowest line whose precision there reaches 90%
(the issue's goal), i.e. the most recall for that precision. Both halves
are reported; the held-out figures are the honest ones.
"""
import hashlib
import json
import sys

PRECISION_GOAL = 0.90
MEASURES = ["stem_pct", "trigram_pct", "bigram_pct"]


def held_out(qid):
    return hashlib.sha256(qid.encode()).digest()[0] % 2 == 1


def load(answers_path, labels_path):
    labels = {}
    with open(labels_path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                labels[(r["id"], r["i"])] = r
    rows = []
    with open(answers_path) as f:
        for line in f:
            rec = json.loads(line)
            for i, s in enumerate(rec["sentences"]):
                lab = labels.get((rec["id"], i))
                if lab is None or lab.get("text", s["text"]) != s["text"]:
                    # Unlabelled, or the model wrote otherwise this time
                    # (another CPU, another build): a label holds for the
                    # sentence it was written for.
                    continue
                rows.append({
                    "id": rec["id"],
                    "held_out": held_out(rec["id"]),
                    "relevant": set(rec["relevant"]),
                    "docs": {p["n"]: p["doc"] for p in rec["context"]},
                    "sentence": s,
                    "label": lab["label"],
                    "supported_by": set(lab.get("supported_by", [])),
                })
    return rows


def cite(row, measure, line):
    """The passage the rule cites, or None: verbatim first, else the
    passage with the highest measure (earliest on a tie) if it reaches line."""
    against = row["sentence"]["against"]
    for a in against:
        if a["verbatim"]:
            return a["n"]
    if not against:
        return None
    best = max(against, key=lambda a: (a[measure], -a["n"]))
    return best["n"] if best[measure] >= line else None


def score(rows, measure, line):
    claims = [r for r in rows if r["label"] != "no_claim"]
    cited = correct = supported = found = relevant_doc = 0
    for r in claims:
        n = cite(r, measure, line)
        ok = n is not None and n in r["supported_by"]
        if n is not None:
            cited += 1
            correct += ok
            relevant_doc += r["docs"].get(n) in r["relevant"]
        if r["supported_by"]:
            supported += 1
            found += ok
    return {
        "measure": measure,
        "line": line,
        "sentences": len(claims),
        "labelled_supported": supported,
        "cited": cited,
        "precision": correct / cited if cited else None,
        "recall": found / supported if supported else None,
        "shown_unsupported": len(claims) - cited,
        "cited_to_relevant_doc": relevant_doc / cited if cited else None,
    }


def choose(tune, measure):
    for line in range(0, 101):
        s = score(tune, measure, line)
        if s["precision"] is not None and s["precision"] >= PRECISION_GOAL:
            return line
    return 101


def main():
    answers, labels = sys.argv[1], sys.argv[2]
    rows = load(answers, labels)
    tune = [r for r in rows if not r["held_out"]]
    held = [r for r in rows if r["held_out"]]
    report = {"sentences": len(rows), "tune": len(tune), "held_out": len(held),
              "labels": {}, "rules": []}
    for r in rows:
        report["labels"][r["label"]] = report["labels"].get(r["label"], 0) + 1
    for m in MEASURES:
        line = choose(tune, m)
        report["rules"].append({"measure": m, "line": line,
                                "tune": score(tune, m, line),
                                "held_out": score(held, m, line)})
    # The line in force before calibration (50% of stems), for comparison.
    report["before"] = {"tune": score(tune, "stem_pct", 50),
                        "held_out": score(held, "stem_pct", 50)}
    sweep = []
    for line in range(0, 101, 5):
        sweep.append({"line": line, **{h: score(part, "stem_pct", line)
                                       for h, part in (("tune", tune), ("held_out", held))}})
    report["stem_sweep"] = sweep
    if "--json" in sys.argv:
        print(json.dumps(report, indent=1))
        return
    fmt = lambda x: "-" if x is None else f"{100 * x:.1f}%"
    print(f"{report['sentences']} labelled sentences ({report['tune']} tuning, "
          f"{report['held_out']} held out); labels {report['labels']}")
    print("| rule | half | cited | precision | recall | shown unsupported | cited to a relevant doc |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for rule in report["rules"] + [{"measure": "stem_pct (before)", "line": 50, **report["before"]}]:
        for half in ("tune", "held_out"):
            s = rule[half]
            print(f"| {rule['measure']} >= {rule['line']} | {half} | {s['cited']}/{s['sentences']} | "
                  f"{fmt(s['precision'])} | {fmt(s['recall'])} | {s['shown_unsupported']} | "
                  f"{fmt(s['cited_to_relevant_doc'])} |")


if __name__ == "__main__":
    main()
