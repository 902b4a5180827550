"""When may the subject lane fire? Recomputes the lane's firing rule, and the
alternatives to it, from one `carrel eval --json` run per set: every card the
lane scored is in `per_query[*].subject_candidates` (cosine, and the
cross-encoder's logit where it was run), so no rule needs a rerun.

    carrel eval SET --json > SET.json
    python3 tools/calibration/subject_rules.py SET.json SET/qrels.tsv [MORE.json MORE/qrels.tsv ...]

For each rule and set: the relevant queries it fires on, the share of those
whose first hit is relevant, and the noise queries it fires on; a set whose
queries.jsonl (beside its qrels) names kinds of query (the calibration set's
index terms and titles) is split by kind, each with all the noise. The first
rule is the lane's own (`lanes::subject::first_card`: agreed at
`RERANK_FLOOR`, or the cross-encoder alone at `RERANK_SURE`); its figures
must equal what `carrel eval` printed for the set. The last line
gives, on the first set, the rule that fires on most relevant queries while
it stays right on at least 90% of them and admits no noise.
"""

import csv
import json
import os
import sys

LANE_FLOOR = -0.3  # lanes::subject::RERANK_FLOOR
LANE_SURE = 2.75  # lanes::subject::RERANK_SURE


def load(run_path, qrels_path):
    relevant = {}
    with open(qrels_path, encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if float(row["score"]) > 0:
                relevant.setdefault(row["query-id"], set()).add(row["corpus-id"])
    with open(run_path, encoding="utf-8") as f:
        run = json.load(f)
    run["dataset"] = os.path.basename(run["dataset"].rstrip("/"))
    kinds = {}
    queries = os.path.join(os.path.dirname(qrels_path), "queries.jsonl")
    if os.path.exists(queries):
        with open(queries, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    q = json.loads(line)
                    kinds[q["_id"]] = q.get("kind")
    by_kind = {}
    for qid, q in run["per_query"].items():
        scored = [c for c in q["subject_candidates"] if c["rerank"] is not None]
        noise = q.get("noise", False)
        by_kind.setdefault(None if noise else kinds.get(qid), []).append((noise, scored, relevant.get(qid, set())))
    noise_rows = by_kind.pop(None, [])
    if len(by_kind) <= 1:
        return [(run["dataset"], [r for rows in by_kind.values() for r in rows] + noise_rows)]
    return [("%s, %s" % (run["dataset"], kind), rows + noise_rows) for kind, rows in sorted(by_kind.items())]


def first(scored, key):
    """Index of the best card by `key`, ties to the earlier (cosine order)."""
    return max(range(len(scored)), key=lambda i: (scored[i][key], -i))


def agreed_or_alone(floor, alone):
    """The lane's rule (both scorers' first card, at `floor`), or the
    cross-encoder's first card alone at `alone` and above."""
    def rule(scored):
        ce = first(scored, "rerank")
        top = scored[ce]["rerank"]
        if (ce == first(scored, "cosine") and top >= floor) or top >= alone:
            return scored[ce]["doc"]
        return None
    return rule


def within_cosine_rank(floor, rank):
    """The cross-encoder's first card, if cosine puts it in its first `rank`."""
    def rule(scored):
        ce = first(scored, "rerank")
        by_cosine = sorted(range(len(scored)), key=lambda i: (-scored[i]["cosine"], i))
        if by_cosine.index(ce) < rank and scored[ce]["rerank"] >= floor:
            return scored[ce]["doc"]
        return None
    return rule


def measure(rows, rule):
    relevant = fired = right = noise = 0
    for is_noise, scored, rel in rows:
        hit = rule(scored) if scored else None
        if is_noise:
            noise += hit is not None
        else:
            relevant += 1
            fired += hit is not None
            right += hit in rel
    return relevant, fired, right, noise


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        sys.exit(__doc__)
    sets = [part for i in range(0, len(argv), 2) for part in load(argv[i], argv[i + 1])]
    rules = [("the lane's: agreed at %.1f, or the cross-encoder alone at %.2f" % (LANE_FLOOR, LANE_SURE),
              agreed_or_alone(LANE_FLOOR, LANE_SURE))]
    rules += [("agreed, floor %.1f (the lane before titles were asked)" % LANE_FLOOR,
               agreed_or_alone(LANE_FLOOR, float("inf")))]
    rules += [("agreed, floor %.1f" % f, agreed_or_alone(f, float("inf"))) for f in (-1.0, -0.5, 0.0, 1.0)]
    rules += [("agreed at %.1f, or the cross-encoder alone at %.2f" % (LANE_FLOOR, a), agreed_or_alone(LANE_FLOOR, a))
              for a in (1.0, 2.0, 2.5, 3.0)]
    rules += [("cosine's first %d, floor %.1f" % (r, f), within_cosine_rank(f, r))
              for r in (2, 3) for f in (-0.3, 0.0, 0.5, 1.0)]
    print("| rule | " + " | ".join("%s: fires on, right, noise" % name for name, _ in sets) + " |")
    print("|---|" + "---:|" * len(sets))
    best = None
    for name, rule in rules:
        cells = []
        for k, (_, rows) in enumerate(sets):
            n, fired, right, noise = measure(rows, rule)
            cells.append("%d of %d (%.0f%%), %.1f%%, %d" % (fired, n, 100 * fired / n, 100 * right / max(fired, 1), noise))
            if k == 0 and noise == 0 and right >= 0.9 * fired and (best is None or fired > best[1]):
                best = (name, fired, n)
        print("| %s | %s |" % (name, " | ".join(cells)))
    if best:
        print("\nmost fired at >= 90%% right and 0 noise on %s: %s, %d of %d (%.0f%%)"
              % (sets[0][0], best[0], best[1], best[2], 100 * best[1] / best[2]))


if __name__ == "__main__":
    main(sys.argv[1:])
