"""Mines (query, text, label) pairs for the subject lane's cross-encoder.

Input: the JSON lines `carrel-cards` writes (card text built by Carrel's own
card builder, the card's vector from Carrel's embedder, extracted sections).
Output: JSON lines {group, split, kind, query, text, label}.

The question the model learns is the subject lane's: "is this document what
the query is ABOUT?". Positives pair a short topical query (page title, a
section heading, a shortened or paraphrased heading) with the card of its
page, plus some heading -> section text pairs. Negatives per query: a random
card, a hard negative (one of the nearest cards by the bi-encoder), and a
lexical collision (a card sharing a query word but not its subject).

Held out: every page whose name hashes to 0 mod 10. Its queries are paired
only with held-out cards, so no held-out text is seen in training.
Deterministic for a given input and seed.

carrel-ce-v2 (`--manuals QUERIES DOCS`) adds the queries people type: the
index terms and FAQ questions `manuals.py` selected, with their info nodes'
cards. Whole corpora are held out there (HELD_OUT_CORPORA: leave-corpus-out,
so held-out figures are on manuals the model never saw). Its negatives per
query: a random card; one card near the page's card; three of the ten cards
nearest the QUERY by the bi-encoder (`--base`), which are the cards the lane
makes the model rank against the right one; a lexical collision from
ANOTHER corpus (a card holding the query's rarest word in another sense or
domain); a passing mention (a card of the same corpus whose text holds that
word but is not the target). Manual queries come first, so the pair cap
trims the older title data.
"""

import argparse
import hashlib
import json
import os
import random
import re
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calibration"))
import build as calib  # noqa: E402  (the calibration set's relevance rule: one owner)

STOP = set(
    """a an the and or of to in on for with by from as at is are be this that
    it its into how what when why do does i my use using vs versus about""".split()
)


def words(s):
    return re.findall(r"[a-z0-9_]+", s.lower())


def content_words(s):
    return [w for w in words(s) if w not in STOP and len(w) > 2]


# Manuals whose queries and cards are never trained on (one per query kind:
# a texinfo manual's index, a shell manual's index, an FAQ).
HELD_OUT_CORPORA = {"texinfo", "zsh", "r-faq"}


def manual_id(source):
    """A manual node's path under manuals.py's corpus/: "<corpus>/<node>.md"."""
    return source.replace("\\", "/").split("/corpus/", 1)[1]


def held_out(source):
    name = source.rsplit("/", 1)[-1]
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % 10 == 0


def clean(h):
    h = h.replace("¶", "").strip()
    h = re.sub(r"^(Class|Event|Static method|Method|Property):\s*", "", h)
    h = re.sub(r"\(.*?\)", "", h)  # argument lists
    h = re.sub(r"[`'\"<>]", "", h)
    return re.sub(r"\s+", " ", h).strip(" .:-—")


def shorten(h, rng):
    cw = content_words(h)
    if len(cw) <= 3:
        return None
    k = rng.randint(2, 3)
    return " ".join(cw[:k])


PARAPHRASE = [
    "how do I {}",
    "{} explained",
    "what is {}",
    "guide to {}",
    "{} reference",
    "working with {}",
]


def family(source):
    for k in ("html", "markdown", "text"):
        if f"/{k}/" in source:
            return k
    return "other"


def title_queries(doc, rng):
    t = doc["title"]
    fam = family(doc["source"])
    out = []
    if fam == "text":  # "2020 donald j trump r"
        parts = t.split()
        if len(parts) >= 3 and parts[0].isdigit():
            year, name = parts[0], " ".join(parts[1:-1])
            last = parts[-2]
            out += [
                f"{name} state of the union {year}",
                f"{year} state of the union address",
                f"{last} {year} address to congress",
            ]
        return out
    t = clean(t)
    if " — " in doc["title"]:
        head, tail = [clean(x) for x in doc["title"].split(" — ", 1)]
        out += [head, tail]
    else:
        out.append(t)
    if fam == "html":
        out.append(f"python {out[0]}")
    elif fam == "markdown":
        out.append(f"node.js {out[0].lower()}")
    return [q for q in out if q]


HEADINGS_PER_PAGE = 16


def topical(h):
    """A heading a person might type as a subject: words, not an error code
    or an environment variable."""
    if not content_words(h) or len(h) > 80:
        return False
    if re.fullmatch(r"[A-Z0-9_]+(=.*)?", h) or h.startswith("ERR_"):
        return False
    return True


def short_name(doc):
    t = doc["title"]
    return clean(t.split(" — ", 1)[0]) if " — " in t else clean(t)


class Collisions:
    """Negatives that share the query's rarest word: from another corpus (the
    same surface word in another domain) and from the query's own corpus (a
    page that mentions it in passing)."""

    def __init__(self, docs):
        self.docs = docs
        self.df = defaultdict(int)
        self.holding = defaultdict(list)
        for i, d in enumerate(docs):
            ws = set(content_words(d["card"] + " " + " ".join(s["text"] for s in d["sections"])))
            for w in ws:
                self.df[w] += 1
                self.holding[w].append(i)

    def negatives(self, query, target, pool, rng):
        qw = [w for w in content_words(query) if self.df[w]]
        if not qw:
            return []
        rarest = min(qw, key=lambda w: (self.df[w], w))
        corpus = self.docs[target]["corpus"]
        title = self.docs[target]["title"]
        holders = [j for j in self.holding[rarest] if j in pool and j != target and self.docs[j]["title"] != title]
        out = []
        other = [j for j in holders if self.docs[j]["corpus"] != corpus]
        if other:
            out.append(("collision", rng.choice(other)))
        same = [j for j in holders if self.docs[j]["corpus"] == corpus]
        if same:
            out.append(("passing", rng.choice(same)))
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("docs")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--max-train-pairs", type=int, default=26000)
    ap.add_argument("--manuals", nargs=2, metavar=("QUERIES", "DOCS"),
                    help="manuals.py's queries.jsonl and carrel-cards of its corpus (carrel-ce-v2)")
    ap.add_argument("--base", help="the bi-encoder, to mine served negatives (carrel-ce-v2)")
    ap.add_argument("--spare-titled", action="store_true",
                    help="never take as a negative a card whose title names the whole query "
                         "(the calibration set's relevance rule; carrel-ce-v2-spared)")
    args = ap.parse_args()
    if args.manuals and not args.base:
        ap.error("--manuals needs --base (the bi-encoder that mines served negatives)")
    rng = random.Random(args.seed)

    docs = [json.loads(line) for line in open(args.docs)]
    docs = [d for d in docs if d["card"].strip()]
    n_bench = len(docs)
    for d in docs:
        d["corpus"] = family(d["source"])
    manual_queries = []
    if args.manuals:
        by_source = {}
        for line in open(args.manuals[1]):
            d = json.loads(line)
            if d["card"].strip():
                d["corpus"] = manual_id(d["source"]).split("/", 1)[0]
                by_source[manual_id(d["source"])] = len(docs)
                docs.append(d)
        manual_queries = [json.loads(line) for line in open(args.manuals[0])]
        manual_queries = [q for q in manual_queries if q["doc"] in by_source]
    vecs = np.array([d["card_vector"] for d in docs], dtype=np.float32)
    sims = vecs @ vecs.T
    split = [
        "heldout" if (held_out(d["source"]) if i < n_bench else d["corpus"] in HELD_OUT_CORPORA) else "train"
        for i, d in enumerate(docs)
    ]
    pools = {s: [i for i in range(len(docs)) if split[i] == s] for s in ("train", "heldout")}
    card_words = [set(content_words(d["card"])) for d in docs]

    # How many pages carry each heading: a heading shared by pages ("Error
    # handling") says nothing about which page, so it gets its page's name.
    heading_pages = defaultdict(set)
    for i, d in enumerate(docs[:n_bench]):
        for s in d["sections"]:
            if len(s["heading_path"]) > 1:
                heading_pages[clean(s["heading_path"][-1]).lower()].add(i)

    groups = []  # (split, kind, query, doc index, section text or None)
    for i, d in enumerate(docs[:n_bench]):
        for q in title_queries(d, rng):
            groups.append((split[i], "title", q, i, None))
        sections = [
            s
            for s in d["sections"]
            if len(s["heading_path"]) > 1 and topical(clean(s["heading_path"][-1]))
        ]
        # A page with hundreds of headings (the error-code list) must not
        # outweigh the rest of the corpus.
        for s in rng.sample(sections, min(len(sections), HEADINGS_PER_PAGE)):
            h = clean(s["heading_path"][-1])
            if len(heading_pages[h.lower()]) > 1:
                h = f"{short_name(d)} {h}"
            text = s["text"].strip()
            text = text if len(text) > 200 else None
            groups.append((split[i], "heading", h, i, text))
            # Half the headings also come as a person might type them.
            variant = shorten(h, rng) if rng.random() < 0.4 else None
            if variant:
                groups.append((split[i], "short", variant, i, None))
            elif rng.random() < 0.3:
                para = rng.choice(PARAPHRASE).format(h.lower())
                groups.append((split[i], "paraphrase", para, i, None))
    rng.shuffle(groups)
    collisions = None
    if args.manuals:
        mrng = random.Random(args.seed + 1)
        first = [(split[by_source[q["doc"]]], q["kind"], q["query"], by_source[q["doc"]], None)
                 for q in manual_queries]
        # A node's own name, as a title query, for a third of the nodes.
        first += [(split[i], "node-title", docs[i]["title"], i, None)
                  for i in range(n_bench, len(docs)) if mrng.random() < 0.3 and content_words(docs[i]["title"])]
        mrng.shuffle(first)
        groups = first + groups
        collisions = Collisions(docs)
        # The cards the lane would put in front of the model for each query:
        # its nearest cards by the query's own vector (the eligible set).
        from encode import embed

        qvecs = embed(args.base, [g[2] for g in groups]).numpy()
    pool_sets = {sp: set(p) for sp, p in pools.items()}

    def snippet(text):
        cut = text[:560]
        return cut[: cut.rfind(" ")] if len(text) > 560 and " " in cut else cut

    def heading(d):
        """A card's section heading under its title (an info node's `##`)."""
        paths = [s["heading_path"] for s in d["sections"] if len(s["heading_path"]) > 1]
        return paths[0][1] if paths else ""

    headings = [heading(d) for d in docs]

    def about_too(q, j):
        """The calibration set's rule for nodes other than an index's
        target: card j is about q too when its title names all of q."""
        return calib.titled(q, (docs[j]["title"], headings[j], ""))

    rows, n_train, spared = [], 0, 0
    for g, (sp, kind, q, i, section) in enumerate(groups):
        pool = pools[sp]
        out = [(kind, docs[i]["card"], 1)]
        others = [j for j in pool if j != i and docs[j]["title"] != docs[i]["title"]]
        if args.spare_titled:
            # Another manual's "Startup Files" is about "startup files" too:
            # as a negative it would teach the model to split hairs the
            # lane is judged without.
            kept = [j for j in others if not about_too(q, j)]
            spared += len(others) - len(kept)
            others = kept
        out.append(("random", docs[rng.choice(others)]["card"], 0))
        near = sorted(others, key=lambda j: -sims[i, j])[:8]
        if collisions is None:
            for j in rng.sample(near, min(2, len(near))):
                out.append(("hard", docs[j]["card"], 0))
            qw = set(content_words(q))
            lexical = [j for j in others if qw & card_words[j]]
            if lexical:
                out.append(("lexical", docs[rng.choice(lexical)]["card"], 0))
        else:
            # v2: one card-nearest negative, three of the ten cards nearest
            # the query (what serving ranks against the positive).
            out.append(("hard", docs[rng.choice(near)]["card"], 0))
            qs = vecs[others] @ qvecs[g]
            served = [others[k] for k in np.argsort(-qs)[:10]]
            for j in rng.sample(served, min(3, len(served))):
                out.append(("served", docs[j]["card"], 0))
            allowed = set(others) if args.spare_titled else pool_sets[sp]
            for k, j in collisions.negatives(q, i, allowed, rng):
                out.append((k, docs[j]["card"], 0))
        if section is not None and rng.random() < 0.25:
            out.append(("section", snippet(section), 1))
            j = rng.choice(others)
            secs = [s["text"] for s in docs[j]["sections"] if len(s["text"]) > 200]
            if secs:
                out.append(("section-neg", snippet(rng.choice(secs)), 0))
        if sp == "train":
            if n_train + len(out) > args.max_train_pairs:
                continue
            n_train += len(out)
        for k, text, label in out:
            rows.append({"group": g, "split": sp, "kind": k, "query": q, "text": text, "label": label,
                         "qkind": kind, "corpus": docs[i]["corpus"]})

    with open(args.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    counts = defaultdict(int)
    for r in rows:
        counts[(r["split"], r["label"])] += 1
    if args.spare_titled:
        print(f"pairs: {spared} (query, card) candidates spared as negatives: the card's title names the query")
    print(
        f"pairs: {len(docs)} pages ({len(pools['heldout'])} held out), {len(groups)} queries; "
        + ", ".join(f"{s} {'pos' if l else 'neg'} {n}" for (s, l), n in sorted(counts.items()))
    )


if __name__ == "__main__":
    main()
