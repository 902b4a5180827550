"""Training corpora for carrel-ce-v2 with the queries people really type:
back-of-book index terms and FAQ questions, from GNU-style info manuals in
Debian packages (fetched by name with apt-get download).

None of these is in the calibration set (tools/calibration, 13 GNU manuals),
and neither the PostgreSQL manual nor the Debian FAQ is here: those three stay
out of training. The info parsing, the node-to-Markdown cleaning and the
"about" rule are the calibration build's (imported, one owner), so an index
term here is selected exactly as a calibration query is.

Writes:
  OUT/corpus/<manual>/<node>.md    one info node per document
  OUT/queries.jsonl                {"query", "doc", "kind", "corpus"}; doc is
                                   the path under corpus/, kind is index-term,
                                   faq or title
Deterministic: no randomness; caps choose by the SHA-256 of the query.
"""

import argparse
import collections
import hashlib
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calibration"))
import build as calib  # noqa: E402  (the calibration set's info parser and about rule)

# (corpus, Debian package, info file stem, kind). Kind "faq" reads node names
# that are questions as queries; "manual" reads the index.
CORPORA = [
    ("texinfo", "texinfo", "texinfo", "manual"),
    ("libtool", "libtool-doc", "libtool", "manual"),
    ("flex", "flex", "flex", "manual"),
    ("gperf", "gperf", "gperf", "manual"),
    ("indent", "indent", "indent", "manual"),
    ("mtools", "mtools", "mtools", "manual"),
    ("units", "units", "units", "manual"),
    ("time", "time", "time", "manual"),
    ("wdiff", "wdiff", "wdiff", "manual"),
    ("datamash", "datamash", "datamash", "manual"),
    ("recutils", "recutils", "recutils", "manual"),
    ("sharutils", "sharutils", "sharutils", "manual"),
    ("parted", "parted-doc", "parted", "manual"),
    ("binutils", "binutils-doc", "binutils", "manual"),
    ("ld", "binutils-doc", "ld", "manual"),
    ("as", "binutils-doc", "as", "manual"),
    ("gprof", "binutils-doc", "gprof", "manual"),
    ("zsh", "zsh-doc", "zsh", "manual"),
    ("guile", "guile-3.0-doc", "guile", "manual"),
    ("r-intro", "r-doc-info", "R-intro", "manual"),
    ("r-lang", "r-doc-info", "R-lang", "manual"),
    ("r-exts", "r-doc-info", "R-exts", "manual"),
    ("r-admin", "r-doc-info", "R-admin", "manual"),
    ("r-data", "r-doc-info", "R-data", "manual"),
    ("nettle", "nettle-dev", "nettle", "manual"),
    ("mpfr", "libmpfr-doc", "mpfr", "manual"),
    ("gcrypt", "libgcrypt20-doc", "gcrypt", "manual"),
    ("gsasl", "gsasl-doc", "gsasl", "manual"),
    ("libidn2", "libidn2-doc", "libidn2", "manual"),
    ("aspell", "aspell-doc", "aspell", "manual"),
    ("magit", "elpa-magit", "magit", "manual"),
    ("r-faq", "r-doc-info", "R-FAQ", "faq"),
    ("efaq", "emacs-common", "efaq", "faq"),
]

# Index-term queries kept per node and per corpus (a 1,000-node manual must
# not outweigh the rest).
MAX_PER_NODE = 3
MAX_PER_CORPUS = 220


def question(name):
    """A FAQ node name as a person would ask it: numbering off; None if the
    node is not a question."""
    q = re.sub(r"^\d+(\.\d+)*\s+", "", name).strip()
    return q if q.endswith("?") and len(calib.content_words(q)) >= 2 else None


def corpus_nodes(texts):
    """(nodes: name -> (doc text, (name, heading, lead)), index entries)."""
    nodes, entries = collections.OrderedDict(), []
    for name, body in calib.parse_nodes(texts):
        if calib.INDEX_MARK in body:
            entries.extend(calib.index_entries(body))
            continue
        if calib.SKIP_NODES.match(name):
            continue
        heading, text = calib.clean_body(body)
        prose = "\n".join(l for l in text.split("\n") if not re.match(r"^(#+ |- )", l))
        if len(re.sub(r"\s+", " ", prose).strip()) < calib.MIN_DOC_CHARS:
            continue
        lead = re.sub(r"^#+ .*$", "", text, count=1, flags=re.M).strip()[: calib.LEAD_CHARS]
        nodes[name] = ("# %s\n\n%s\n" % (calib.md_escape(name), text), (name, heading, lead))
    return nodes, entries


def index_queries(nodes, entries):
    """Index terms that pass the calibration set's about rule, capped."""
    info = {n: v[1] for n, v in nodes.items()}
    targets = collections.OrderedDict()
    for term, node in entries:
        key = re.sub(r"\s+", " ", term.strip().lower())
        tl = targets.setdefault(key, (term, []))[1]
        if node not in tl:
            tl.append(node)
    by_node = collections.defaultdict(list)
    for key, (term, tl) in targets.items():
        if calib.about_verdict(term, tl, info) == "keep":
            by_node[tl[0]].append(term)
    out = []
    for node, terms in by_node.items():
        terms.sort(key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        out += [(t, node) for t in terms[:MAX_PER_NODE]]
    out.sort(key=lambda tn: hashlib.sha256(tn[0].encode()).hexdigest())
    return out[:MAX_PER_CORPUS]


def cached(cache, pkg):
    """The package's .deb files in the cache, oldest version first."""
    return sorted(f for f in os.listdir(cache) if f.startswith(pkg + "_") and f.endswith(".deb"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--cache", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "carrel-training", "debs"))
    args = ap.parse_args()

    os.makedirs(args.cache, exist_ok=True)
    debs = {}
    for corpus, pkg, stem, kind in CORPORA:
        if pkg not in debs:
            if not cached(args.cache, pkg):
                subprocess.run(["apt-get", "download", pkg], cwd=args.cache, check=True,
                               stdout=subprocess.DEVNULL)
            debs[pkg] = os.path.join(args.cache, cached(args.cache, pkg)[-1])

    os.makedirs(os.path.join(args.out, "corpus"), exist_ok=True)
    queries, counts = [], []
    for corpus, pkg, stem, kind in CORPORA:
        nodes, entries = corpus_nodes(calib.info_files(debs[pkg], stem))
        ids, used = {}, set()
        for name, (text, _) in nodes.items():
            base = calib.slug(name)
            fid, k = base, 2
            while fid in used:
                fid, k = "%s-%d" % (base, k), k + 1
            used.add(fid)
            ids[name] = "%s/%s.md" % (corpus, fid)
            path = os.path.join(args.out, "corpus", ids[name])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        n0 = len(queries)
        if kind == "faq":
            for name in nodes:
                q = question(name)
                if q:
                    queries.append({"query": q, "doc": ids[name], "kind": "faq", "corpus": corpus})
        else:
            for term, node in index_queries(nodes, entries):
                queries.append({"query": term, "doc": ids[node], "kind": "index-term", "corpus": corpus})
        counts.append((corpus, len(nodes), len(queries) - n0))
    with open(os.path.join(args.out, "queries.jsonl"), "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print("manuals: %d documents, %d queries" % (sum(c[1] for c in counts), len(queries)))
    for c in counts:
        print("  %-10s %5d docs %4d queries" % c)


if __name__ == "__main__":
    main()
