#!/usr/bin/env python3
"""Builds Carrel's calibration set for the retrieval floors from GNU info manuals.

Usage: build.py OUT_DIR [--cache DIR] [--offline]

Fetches the Debian packages named in PACKAGES with `apt-get download` into a
cache, reads their `.info.gz` manuals (via `dpkg-deb --fsys-tarfile`), writes
one Markdown document per info node, turns index entries that are "about" their
node into queries, asks each of up to MAX_TITLES_PER_MANUAL nodes a manual by
its own title (the title-like about queries), adds the hand-written noise queries from noise.jsonl, and
writes the set in the layout `carrel eval DIR` reads:

    OUT_DIR/corpus/<manual>/<node>.md   documents (relative path = id)
    OUT_DIR/queries.jsonl               {"_id", "text", "kind", "manual", ...}
    OUT_DIR/qrels.tsv                   query-id, corpus-id, score (1)
    OUT_DIR/selection.tsv               every index entry: kept or why dropped
    OUT_DIR/sources.tsv                 package, version, sha256 of the .deb

Python 3 standard library only. Same packages in, same bytes out.
"""

import argparse
import collections
import functools
import glob
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (manual short name, Debian package, pinned version, info file stem).
# The pinned version is tried first; if the archive no longer has it, the
# current candidate is fetched and a warning says the output may differ.
PACKAGES = [
    ("automake", "automake", "1:1.16.5-1.3", "automake-1.16"),
    ("bash", "bash-doc", "5.2.15-2", "bash"),
    ("bc", "bc", "1.07.1-3+b1", "bc"),
    ("coreutils", "coreutils", "9.1-1", "coreutils"),
    ("diffutils", "diffutils", "1:3.8-4", "diffutils"),
    ("ed", "ed", "1.19-1", "ed"),
    ("findutils", "findutils", "4.9.0-4", "find"),
    ("grep", "grep", "3.8-5", "grep"),
    ("gzip", "gzip", "1.12-1", "gzip"),
    ("m4", "m4", "1.4.19-3", "m4"),
    ("screen", "screen", "4.9.0-4", "screen"),
    ("sed", "sed", "4.9-1+deb12u1", "sed"),
    ("wget", "wget", "1.21.3-1+deb12u1", "wget"),
]

# Nodes that are not a manual's own subject matter (the same licence text
# appears in every manual and would only add duplicate documents).
SKIP_NODES = re.compile(
    r"^(GNU Free Documentation License|GNU General Public License|Copying This Manual|"
    r"Copying|GNU Free Documentation Licen[cs]e|History of This Manual)$",
    re.I,
)
# A document needs this much prose (headings and menu entries not counted)
# after cleaning, or it is dropped: menu-only nodes are signposts, not documents.
MIN_DOC_CHARS = 150
# About queries kept per manual at most (spread, so no manual dominates).
MAX_ABOUT_PER_MANUAL = 70
# Index terms that send the reader to more than this many nodes are dropped.
MAX_TARGETS = 1
# About queries kept per node at most.
MAX_PER_NODE = 2
# Title-like about queries: a node's own name, as a person asks for a page
# by what it is called ("Backup options", "ls invocation"), at most this
# many a manual (chosen by hash), one a wording.
MAX_TITLES_PER_MANUAL = 40
# The "first lines" of a node that the about-rule looks at.
LEAD_CHARS = 400

STOPWORDS = set(
    """a an and are as at be by can for from how in into is it its of on or
    the to with without when which what use using used does do not no your you
    this that these those via than then also all any other per vs versus
    about""".split()
)

INDEX_MARK = "\x00\x08[index\x00\x08]"
CONTROL_MARK = re.compile(r"\x00\x08\[[^\x00]*\x00\x08\]")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- fetching -------------------------------------------------------------


def deb_name(pkg, version):
    """The file name `apt-get download` gives pkg=version (arch globbed)."""
    return "%s_%s_*.deb" % (pkg, version.replace(":", "%3a"))


def fetch(cache, offline):
    """Makes sure every package's .deb is in `cache`; returns pkg -> path."""
    os.makedirs(cache, exist_ok=True)
    paths = {}
    for _, pkg, version, _ in PACKAGES:
        found = sorted(glob.glob(os.path.join(cache, deb_name(pkg, version))))
        if not found and not offline:
            r = subprocess.run(
                ["apt-get", "download", "%s=%s" % (pkg, version)],
                cwd=cache, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
            found = sorted(glob.glob(os.path.join(cache, deb_name(pkg, version))))
            if r.returncode != 0 or not found:
                log("warning: %s=%s is not in the archive (%s); fetching the current "
                    "candidate, so the set may differ from the documented one"
                    % (pkg, version, r.stderr.strip().splitlines()[-1:] or "no .deb"))
                subprocess.run(["apt-get", "download", pkg], cwd=cache, check=True,
                               stdout=subprocess.DEVNULL)
                found = sorted(glob.glob(os.path.join(cache, "%s_*.deb" % pkg)))
        if not found:
            found = sorted(glob.glob(os.path.join(cache, "%s_*.deb" % pkg)))
        if not found:
            sys.exit("error: no .deb for %s in %s (run without --offline, or "
                     "`apt-get download %s` there)" % (pkg, cache, pkg))
        paths[pkg] = found[-1]
    return paths


def deb_version(path):
    out = subprocess.run(["dpkg-deb", "-f", path, "Version"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.strip()


def info_files(deb, stem):
    """The manual's info text from the .deb: main file, then its -1, -2, … parts."""
    tar_bytes = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], check=True,
                               stdout=subprocess.PIPE).stdout
    parts = {}
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tf:
        for m in tf.getmembers():
            name = os.path.basename(m.name)
            if not m.isfile() or "/usr/share/info/" not in m.name:
                continue
            mm = re.fullmatch(re.escape(stem) + r"\.info(?:-(\d+))?\.gz", name)
            if mm:
                order = int(mm.group(1) or 0)
                raw = gzip.decompress(tf.extractfile(m).read())
                parts[order] = raw.decode("utf-8", "replace")
    if not parts:
        sys.exit("error: %s has no %s.info.gz" % (deb, stem))
    return [parts[k] for k in sorted(parts)]


# --- parsing info ---------------------------------------------------------


def parse_nodes(texts):
    """[(node name, body)] in manual order."""
    nodes = []
    for text in texts:
        for chunk in text.split("\x1f")[1:]:
            chunk = chunk.lstrip("\n")
            if not chunk.startswith("File:"):
                continue  # tag table, indirect table, local variables
            header, _, body = chunk.partition("\n")
            m = re.search(r"Node: (\x7f[^\x7f]*\x7f|[^,\t]+)", header)
            if m:
                nodes.append((m.group(1).strip("\x7f").strip(), body))
    return nodes


def index_entries(body):
    """(term, node) pairs of one index node's menu; `<N>` suffixes removed."""
    entries, cur = [], None
    for line in body.split("\n"):
        if line.startswith("* "):
            if cur:
                entries.append(cur)
            cur = line
        elif cur is not None and line.startswith(" ") and line.strip():
            cur += " " + line.strip()
        else:
            if cur:
                entries.append(cur)
            cur = None
    if cur:
        entries.append(cur)
    out = []
    for e in entries:
        if e.startswith("* Menu:"):
            continue
        m = re.match(
            r"^\* (\x7f[^\x7f]*\x7f|.+?):\s+(\x7f[^\x7f]*\x7f|.+?)\.\s+\(line\s+\d+\)\s*$", e)
        if not m:
            continue
        term = re.sub(r"\s*<\d+>$", "", m.group(1).strip("\x7f").strip())
        out.append((term, m.group(2).strip("\x7f").strip()))
    return out


HEADING_UNDERLINE = re.compile(r"^\s*([*=.\-])\1{2,}\s*$")


def clean_body(body):
    """Info node body → (section heading or "", Markdown text)."""
    body = CONTROL_MARK.sub("", body).replace("\x7f", "")
    lines = body.split("\n")
    out, heading = [], ""
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        nxt = lines[i + 1].rstrip() if i + 1 < len(lines) else ""
        if (line.strip() and HEADING_UNDERLINE.match(nxt)
                and abs(len(nxt.strip()) - len(line.strip())) <= 2):
            text = line.strip()
            if not heading and not any(o.strip() for o in out):
                heading = text
                out.append("## " + md_escape(text))
            else:
                out.append("### " + md_escape(text))
            i += 2
            continue
        if line.startswith("* Menu:"):
            i += 1
            continue
        m = re.match(r"^\* (.+?)::\s*(.*)$", line)
        if m:  # menu entry `* Node::  description`
            line = "- " + md_escape(m.group(1)) + (": " + md_escape(m.group(2)) if m.group(2) else "")
        elif len(line) - len(line.lstrip()) < 4:
            line = md_escape(line)
        out.append(line)
        i += 1
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n")
    return heading, text


def md_escape(line):
    """Keeps a text line literal in Markdown where it would otherwise vanish."""
    line = re.sub(r"<(?=[A-Za-z/!?])", r"\\<", line)
    line = re.sub(r"&(?=#?\w+;)", r"\\&", line)
    if re.match(r"^\s{0,3}#", line):
        line = line.replace("#", "\\#", 1)
    return line


def slug(name):
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return s or "node"


# --- the about rule -------------------------------------------------------


def words(text):
    return re.findall(r"[a-z][a-z0-9]*", text.lower())


def content_words(text):
    return [w for w in words(text) if len(w) >= 3 and w not in STOPWORDS]


def stem(w):
    """Crude stem: plural `s` off, then the first 5 letters."""
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w[:5]


@functools.lru_cache(maxsize=None)
def stems_of(text):
    """The stems of a text's words (cached: the about rule judges every node
    against every query)."""
    return frozenset(stem(w) for w in words(text))


def about_missing(term, info):
    """The term's content words found neither in the node's title nor its lead."""
    name, heading, lead = info
    hay = stems_of(name + " " + heading + " " + lead)
    return [w for w in content_words(term) if stem(w) not in hay]


@functools.lru_cache(maxsize=None)
def term_stems(term):
    return frozenset(stem(w) for w in content_words(term))


def titled(term, info):
    """Every content word of the term is in the node's name or heading."""
    name, heading, _ = info
    wanted = term_stems(term)
    return bool(wanted) and wanted <= stems_of(name + " " + heading)


def about_verdict(term, targets, node_info):
    """"keep" or the reason an index entry is not an about query for its node."""
    if len(targets) > MAX_TARGETS:
        return "points at %d nodes" % len(targets)
    target = targets[0]
    if target not in node_info:
        return "target node not in corpus"
    t = term.strip()
    if re.match(r"^[-+$@%.]", t) or not re.search(r"[A-Za-z]{3}", t):
        return "option flag or symbol"
    cws = content_words(t)
    if len(cws) < 2:
        return "fewer than 2 content words"
    if re.search(r"[_=()\[\]{}\\/|<>`:]", t):
        return "code-like"
    name, heading, lead = node_info[target]
    title = stems_of(name + " " + heading)
    if not any(stem(w) in title for w in cws):
        return "no content word in node title"
    missing = about_missing(t, node_info[target])
    if len(missing) > (1 if len(cws) >= 3 else 0):
        return "not in node title or first lines: " + " ".join(missing)
    return "keep"


def spread_pick(items, n):
    """Up to n items, chosen evenly by a fixed hash order (no randomness)."""
    if len(items) <= n:
        return list(items)
    ranked = sorted(items, key=lambda it: hashlib.sha256(it[0].encode()).hexdigest())
    return ranked[:n]


# --- main -----------------------------------------------------------------


def prepare_out(out):
    marker = os.path.join(out, ".carrel-calibration")
    if os.path.exists(out) and os.listdir(out) and not os.path.exists(marker):
        sys.exit("error: %s exists and is not a calibration set; give an empty "
                 "or new directory" % out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "corpus"))
    with open(marker, "w") as f:
        f.write("written by tools/calibration/build.py; rebuilt on every run\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--cache", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "carrel-calibration", "debs"))
    ap.add_argument("--offline", action="store_true",
                    help="use only .deb files already in the cache")
    args = ap.parse_args()
    t0 = time.time()

    debs = fetch(args.cache, args.offline)
    prepare_out(args.out)

    docs = {}  # corpus id -> text
    queries, qrels, selection, sources = [], [], [], []
    per_manual = collections.OrderedDict()
    manuals = {}  # manual -> (node_info, node_id)
    asked = set()  # content-stem sets of the about queries so far
    for manual, pkg, _, stem_ in PACKAGES:
        deb = debs[pkg]
        with open(deb, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        sources.append((manual, pkg, deb_version(deb), os.path.basename(deb), digest))
        nodes = parse_nodes(info_files(deb, stem_))

        entries = []  # (term, node) from every index node
        node_info = {}  # node name -> (name, heading, lead)
        node_id = {}
        used = set()
        n_docs = 0
        for name, body in nodes:
            if INDEX_MARK in body:
                entries.extend(index_entries(body))
                continue
            if SKIP_NODES.match(name):
                continue
            heading, text = clean_body(body)
            prose = "\n".join(l for l in text.split("\n") if not re.match(r"^(#+ |- )", l))
            if len(re.sub(r"\s+", " ", prose).strip()) < MIN_DOC_CHARS:
                continue
            base = slug(name)
            fid, k = base, 2
            while fid in used:
                fid, k = "%s-%d" % (base, k), k + 1
            used.add(fid)
            cid = "%s/%s.md" % (manual, fid)
            docs[cid] = "# %s\n\n%s\n" % (md_escape(name), text)
            lead = re.sub(r"^#+ .*$", "", text, count=1, flags=re.M).strip()[:LEAD_CHARS]
            node_info[name] = (name, heading, lead)
            node_id[name] = cid
            n_docs += 1

        # term -> distinct target nodes, in index order
        targets = collections.OrderedDict()
        for term, node in entries:
            key = re.sub(r"\s+", " ", term.strip().lower())
            tl = targets.setdefault(key, (term, []))[1]
            if node not in tl:
                tl.append(node)
        kept = []
        dropped = collections.Counter()
        for key, (term, tl) in targets.items():
            verdict = about_verdict(term, tl, node_info)
            selection.append((manual, term, " | ".join(tl), verdict))
            if verdict == "keep":
                kept.append((key, term, tl[0]))
            else:
                dropped[re.sub(r"\d+ nodes", "2+ nodes", verdict.split(":")[0])] += 1
        # One query per wording (same content stems = same query), at most
        # MAX_PER_NODE per node, preferring terms fully found in the node's lead.
        by_node = collections.OrderedDict()
        for key, term, node in kept:
            by_node.setdefault(node, []).append((key, term, node))
        spread = []
        for node, items in by_node.items():
            seen = set()
            items.sort(key=lambda it: (len(about_missing(it[1], node_info[node])),
                                       hashlib.sha256(it[0].encode()).hexdigest()))
            for it in items:
                stems = frozenset(stem(w) for w in content_words(it[1]))
                if stems in seen:
                    dropped["same wording as another term"] += 1
                    continue
                if len([1 for x in spread if x[2] == node]) >= MAX_PER_NODE:
                    dropped["node already has %d queries" % MAX_PER_NODE] += 1
                    continue
                seen.add(stems)
                spread.append(it)
        picked = spread_pick(spread, MAX_ABOUT_PER_MANUAL)
        dropped["over the per-manual cap"] += len(spread) - len(picked)
        picked.sort(key=lambda it: (node_id[it[2]], it[0]))
        # A wording another manual already asks (e.g. "exit status") is the
        # same query; the cross-manual qrels below give it every such node.
        fresh = []
        for it in picked:
            wording = frozenset(stem(w) for w in content_words(it[1]))
            if wording in asked:
                dropped["same wording as a query of another manual"] += 1
            else:
                asked.add(wording)
                fresh.append(it)
        for i, (_, term, node) in enumerate(fresh, 1):
            qid = "%s-%03d" % (manual, i)
            queries.append({"_id": qid, "text": term, "kind": "index-term",
                            "manual": manual, "node": node})
            qrels.append((qid, node_id[node]))
        manuals[manual] = (node_info, node_id)
        per_manual[manual] = {
            "docs": n_docs, "index_terms": len(targets), "about_rule_kept": len(kept),
            "about_queries": len(fresh), "title_queries": 0,
            "dropped": dict(sorted(dropped.items())),
        }

    # Title-like queries, once every manual's index terms are chosen (so
    # they change none): the nodes' own names, one a wording, none that an
    # index term already asks, at most MAX_TITLES_PER_MANUAL a manual.
    for manual, (node_info, node_id) in manuals.items():
        titles = []
        for name in node_info:
            wording = frozenset(stem(w) for w in content_words(name))
            if wording and wording not in asked:
                asked.add(wording)
                titles.append((name,))
        titles = spread_pick(titles, MAX_TITLES_PER_MANUAL)
        titles.sort(key=lambda it: node_id[it[0]])
        for i, (name,) in enumerate(titles, 1):
            qid = "%s-title-%03d" % (manual, i)
            queries.append({"_id": qid, "text": name, "kind": "title",
                            "manual": manual, "node": name})
            qrels.append((qid, node_id[name]))
        per_manual[manual]["title_queries"] = len(titles)

    # An index term names the one node its own index points at, but other
    # nodes can be about it too: grep's and sed's "Character Classes and
    # Bracket Expressions", bash's and screen's startup files. Without the
    # index's word for it, another node is about the term only when its title
    # names all of it: every content word of the term in the node's name or
    # section heading (the about rule's lead allowance is for the index's own
    # target; on other nodes it let "change SELinux context" reach diffutils'
    # "Context"). `qrels-index.tsv` keeps only the index's own targets.
    index_qrels = list(qrels)
    extra = []
    for q in queries:
        for manual, (node_info, node_id) in manuals.items():
            for name in node_info:
                if manual == q["manual"] and name == q["node"]:
                    continue
                if titled(q["text"], node_info[name]):
                    extra.append((q["_id"], node_id[name]))
    qrels = sorted(qrels + extra, key=lambda r: (r[0], r[1]))
    order = {q["_id"]: i for i, q in enumerate(queries)}
    qrels.sort(key=lambda r: (order[r[0]], r[1]))

    # Noise: hand-written, no relevant document. Each must share its word with the corpus.
    corpus_words = set()
    for text in docs.values():
        corpus_words.update(words(text))
    noise = []
    with open(os.path.join(HERE, "noise.jsonl")) as f:
        for line in f:
            if line.strip():
                noise.append(json.loads(line))
    absent = [n for n in noise if not set(words(n["collides_with"])) <= corpus_words]
    if absent:
        sys.exit("error: noise words not in the corpus: %s"
                 % ", ".join(sorted({n["collides_with"] for n in absent})))
    for n in noise:
        queries.append({"_id": n["_id"], "text": n["text"], "kind": "noise",
                        "collides_with": n["collides_with"]})

    ids = [q["_id"] for q in queries]
    assert len(ids) == len(set(ids)), "duplicate query ids"

    for cid in sorted(docs):
        path = os.path.join(args.out, "corpus", cid)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(docs[cid])
    with open(os.path.join(args.out, "queries.jsonl"), "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "qrels.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, cid in qrels:
            f.write("%s\t%s\t1\n" % (qid, cid))
    with open(os.path.join(args.out, "qrels-index.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, cid in index_qrels:
            f.write("%s\t%s\t1\n" % (qid, cid))
    with open(os.path.join(args.out, "selection.tsv"), "w", encoding="utf-8") as f:
        f.write("manual\tterm\ttarget-nodes\tverdict\n")
        for row in selection:
            f.write("\t".join(c.replace("\t", " ") for c in row) + "\n")
    with open(os.path.join(args.out, "sources.tsv"), "w", encoding="utf-8") as f:
        f.write("manual\tpackage\tversion\tdeb\tsha256\n")
        for row in sources:
            f.write("\t".join(row) + "\n")

    n_titles = sum(q["kind"] == "title" for q in queries)
    n_about = len(queries) - len(noise)
    print("calibration set written to %s in %.1fs" % (args.out, time.time() - t0))
    print("  documents:      %d" % len(docs))
    print("  about queries:  %d: %d index terms, %d titles (%d qrels; %d of them another node whose title names the query)"
          % (n_about, n_about - n_titles, n_titles, len(qrels), len(extra)))
    print("  noise queries:  %d (%d distinct collision words)"
          % (len(noise), len({n["collides_with"] for n in noise})))
    print("  %-10s %6s %8s %8s %7s %7s" % ("manual", "docs", "indexed", "rule-ok", "about", "titles"))
    for m, c in per_manual.items():
        print("  %-10s %6d %8d %8d %7d %7d" % (m, c["docs"], c["index_terms"],
                                              c["about_rule_kept"], c["about_queries"], c["title_queries"]))
    dropped = collections.Counter()
    for c in per_manual.values():
        dropped.update(c["dropped"])
    print("  index terms dropped by reason: %s" % ", ".join(
        "%s %d" % kv for kv in sorted(dropped.items())))


if __name__ == "__main__":
    main()
