"""Ranking metrics shared by training and export checks."""

from collections import defaultdict


def auc(scores, labels):
    """Probability that a random positive outscores a random negative (ties half)."""
    pos = [s for s, y in zip(scores, labels) if y == 1]
    neg = sorted(s for s, y in zip(scores, labels) if y == 0)
    if not pos or not neg:
        return float("nan")
    import bisect

    total = 0.0
    for p in pos:
        lo = bisect.bisect_left(neg, p)
        hi = bisect.bisect_right(neg, p)
        total += lo + 0.5 * (hi - lo)
    return total / (len(pos) * len(neg))


def pairwise_accuracy(scores, labels, groups):
    """Within each query, the share of (positive, negative) pairs ordered right."""
    by = defaultdict(lambda: ([], []))
    for s, y, g in zip(scores, labels, groups):
        by[g][0 if y == 1 else 1].append(s)
    right = total = 0
    for pos, neg in by.values():
        for p in pos:
            for n in neg:
                total += 1
                right += p > n
    return right / total if total else float("nan")


def order_agreement(a, b, groups):
    """Within each query, the share of candidate pairs that a and b order alike."""
    by = defaultdict(list)
    for x, y, g in zip(a, b, groups):
        by[g].append((x, y))
    same = total = 0
    for items in by.values():
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                total += 1
                same += (items[i][0] - items[j][0]) * (items[i][1] - items[j][1]) > 0
    return same / total if total else float("nan")


def recall_at_fpr(scores, labels, fpr):
    """Share of positives above the threshold that lets through `fpr` of the
    negatives: how much a floor that keeps noise out still admits."""
    neg = sorted((s for s, y in zip(scores, labels) if y == 0), reverse=True)
    pos = [s for s, y in zip(scores, labels) if y == 1]
    if not neg or not pos:
        return float("nan")
    t = neg[min(len(neg) - 1, int(len(neg) * fpr))]
    return sum(p > t for p in pos) / len(pos)


def p_at_1(scores, labels, groups):
    """Share of queries whose best-scored candidate is a positive."""
    best = {}
    for s, y, g in zip(scores, labels, groups):
        if g not in best or s > best[g][0]:
            best[g] = (s, y)
    return sum(y for _, y in best.values()) / len(best) if best else float("nan")


def breakdown(scores, labels, groups, keys):
    """AUC, recall at 1% false positives and P@1, per key (query kind or corpus)."""
    out = {}
    for key in sorted(set(keys)):
        idx = [i for i, k in enumerate(keys) if k == key]
        s = [scores[i] for i in idx]
        y = [labels[i] for i in idx]
        g = [groups[i] for i in idx]
        out[key] = {"queries": len(set(g)), "pairs": len(idx), "auc": auc(s, y),
                    "recall_at_fpr_0.01": recall_at_fpr(s, y, 0.01), "p_at_1": p_at_1(s, y, g)}
    return out
