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

Then every answerer of the run (the built-in model and the extractive one,
asked the same questions in one `carrel-answers` run) is scored with the
chosen rule: how many sentences it shows, how many carry a citation, how
many of those point to a relevant document, and how many say "not found".
Only the model's sentences are labelled; an extractive sentence is a quote,
verbatim in the passage it cites by construction.
"""
import hashlib
import json
import sys

PRECISION_GOAL = 0.90
MEASURES = ["stem_pct", "trigram_pct", "bigram_pct"]
# The measure in force (src/answer/marks.rs): content-word pairs.
IN_FORCE = "bigram_pct"
BUILT_IN = "local:qwen2.5-coder-0.5b-instruct"


def answerer(rec):
    """Records written before answerers were named are the model's."""
    return rec.get("answerer", BUILT_IN)


def records(answers_path):
    with open(answers_path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_labels(labels_path):
    """Each labelled sentence by (question id, sentence index)."""
    return {(r["id"], r["i"]): r for r in records(labels_path)}


def held_out(qid):
    return hashlib.sha256(qid.encode()).digest()[0] % 2 == 1


def load(answers_path, labels_path):
    labels = read_labels(labels_path)
    rows = []
    for rec in records(answers_path):
        if answerer(rec) != BUILT_IN:
            continue
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


def by_answerer(answers_path, labels_path, line):
    """Each answerer of the run, scored with the rule in force at `line`:
    per half, the index-term questions it answered, its sentences, how many
    are supported (labelled so for the model; verbatim for a quote), how
    many carry a citation and how many of those point to a relevant
    document, how many say "not found"; and on the noise questions, how
    many sentences and citations it showed (the goal is none)."""
    labels = read_labels(labels_path)
    table = {}
    for rec in records(answers_path):
        half = "noise" if rec["kind"] == "noise" else (
            "held_out" if held_out(rec["id"]) else "tune")
        t = table.setdefault(answerer(rec), {}).setdefault(half, {
            "questions": 0, "answered": 0, "sentences": 0, "supported": 0,
            "labelled": 0, "cited": 0, "cited_right": 0, "cited_relevant": 0,
            "not_found": 0})
        t["questions"] += 1
        t["answered"] += rec["outcome"] == "answered"
        docs = {p["n"]: p["doc"] for p in rec["context"]}
        for i, s in enumerate(rec["sentences"]):
            lab = labels.get((rec["id"], i)) if answerer(rec) == BUILT_IN else None
            if lab and lab["label"] == "no_claim":
                continue  # as in the rule's table: nothing to cite
            t["sentences"] += 1
            if answerer(rec) == BUILT_IN:
                by = set(lab.get("supported_by", [])) if lab else None
            else:
                by = {a["n"] for a in s["against"] if a["verbatim"]}
            if by is not None:
                t["labelled"] += 1
                t["supported"] += bool(by)
            n = cite({"sentence": s}, IN_FORCE, line)
            if n is None:
                t["not_found"] += 1
            else:
                t["cited"] += 1
                t["cited_right"] += by is not None and n in by
                t["cited_relevant"] += docs.get(n) in set(rec["relevant"])
    return table


def print_answerers(table):
    pct = lambda a, b: "-" if not b else f"{100 * a / b:.1f}%"
    print("| answerer | half | answered | sentences | supported | cited | cited right | cited to a relevant doc | shown not found |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, halves in sorted(table.items()):
        for half in ("tune", "held_out", "noise"):
            t = halves.get(half)
            if t is None:
                continue
            print(f"| {name} | {half} | {t['answered']}/{t['questions']} | {t['sentences']} | "
                  f"{t['supported']}/{t['labelled']} ({pct(t['supported'], t['labelled'])}) | "
                  f"{t['cited']} | {t['cited_right']} ({pct(t['cited_right'], t['cited'])}) | "
                  f"{t['cited_relevant']} ({pct(t['cited_relevant'], t['cited'])}) | "
                  f"{t['not_found']} |")


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
    in_force = next(r["line"] for r in report["rules"] if r["measure"] == IN_FORCE)
    report["answerers"] = by_answerer(answers, labels, in_force)
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
    print()
    print(f"Every answerer of the run, the rule in force ({IN_FORCE} >= {in_force}):")
    print_answerers(report["answerers"])


if __name__ == "__main__":
    main()
