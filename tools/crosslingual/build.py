#!/usr/bin/env python3
"""Builds the cross-lingual sets from Debian's English and Russian manual
pages (`manpages`, `manpages-ru`: the same Linux man-pages, the Russian ones
translated by manpages-l10n).

Each page found in both packages becomes one English and one Russian
document: its rendered text less its NAME section, titled by the page's
name ("epoll(7)"). Its NAME line's description, which the document no longer
holds, is the query: "I/O event notification facility" in English,
"средство уведомления о событиях ввода-вывода" in Russian. Three sets
(BEIR layout, read by `carrel eval`):

  en-en  English queries, English documents
  ru-ru  Russian queries, Russian documents
  en-ru  English queries, Russian documents

en-en and en-ru also carry English noise queries (the calibration set's
lexical collisions, tools/calibration/noise.jsonl): the lexical checks
cannot judge across languages, so only the floors keep noise out there.

usage: build.py EN_ROOT RU_ROOT NOISE_JSONL OUT
"""

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

# A document keeps its first sections after NAME up to this many characters,
# and at most PAGES pages (spread evenly over the names in order) with
# NOISE_QUERIES noise queries are kept, so that the six runs (three
# directions, two embedders) stay within a few minutes of `make test`.
# English and Russian are cut by the same rule.
MAX_CHARS = 2000
PAGES = 100
NOISE_QUERIES = 20


def render(page: Path) -> str | None:
    """The page as plain UTF-8 text, one line per paragraph; none for a
    page that only points at another (`.so`)."""
    source = gzip.decompress(page.read_bytes())
    if source.lstrip().startswith(b".so "):
        return None
    out = subprocess.run(
        ["groff", "-k", "-man", "-Tutf8", "-P-cbou", "-rLL=2000n", "-rHY=0"],
        input=source,
        capture_output=True,
        check=True,
    )
    return out.stdout.decode("utf-8")


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) pairs: a heading is a line at the left margin, the
    running header and footer (the page's name at both ends) left out."""
    lines = text.splitlines()
    if lines:
        lines = lines[1:-1]
    out: list[tuple[str, list[str]]] = []
    for line in lines:
        if line and not line[0].isspace():
            out.append((line.strip(), []))
        elif out and line.strip():
            out[-1][1].append(re.sub(r"\s+", " ", line.strip()))
    return [(h, "\n\n".join(b)) for h, b in out]


def name_line(body: str) -> str | None:
    """The description of a NAME section: "epoll - I/O event ..." → "I/O
    event ..."."""
    parts = re.split(r"\s+[-—–]\s+", body.replace("\n", " "), maxsplit=1)
    if len(parts) != 2:
        return None
    description = parts[1].strip().rstrip(".")
    return description if len(description.split()) >= 2 else None


def document(page: Path) -> tuple[str, str] | None:
    """(query, Markdown text) of a page; none for one without a NAME line."""
    text = render(page)
    if text is None:
        return None
    parts = sections(text)
    if len(parts) < 2:
        return None
    query = name_line(parts[0][1])
    if query is None:
        return None
    body, size = [], 0
    for heading, text in parts[1:]:
        if size >= MAX_CHARS or not text:
            continue
        text = text[: MAX_CHARS - size]
        body.append(f"## {heading.capitalize()}\n\n{text}")
        size += len(text)
    return query, "\n\n".join(body)


def pages(root: Path) -> dict[str, Path]:
    return {
        p.name.removesuffix(".gz"): p
        for p in root.glob("man[0-9]/*.gz")
    }


def write_set(out: Path, docs, queries) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "corpus.jsonl", "w") as f:
        for doc_id, title, text in docs:
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}, ensure_ascii=False) + "\n")
    with open(out / "queries.jsonl", "w") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    with open(out / "qrels.tsv", "w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q in queries:
            if q["kind"] != "noise":
                f.write(f"{q['_id']}\t{q['_id']}\t1\n")


def main() -> None:
    en_root, ru_root, noise_path, out = map(Path, sys.argv[1:5])
    en, ru = pages(en_root), pages(ru_root)
    rows = []
    for name in sorted(set(en) & set(ru)):
        e, r = document(en[name]), document(ru[name])
        if e is None or r is None:
            continue
        stem, section = name.rsplit(".", 1)
        rows.append((name, f"{stem}({section})", e, r))
    # A description two pages share ("... - overview") names neither.
    seen: dict[str, int] = {}
    for _, _, (eq, _), _ in rows:
        seen[eq.lower()] = seen.get(eq.lower(), 0) + 1
    rows = [row for row in rows if seen[row[2][0].lower()] == 1]
    if len(rows) > PAGES:
        rows = [rows[i * len(rows) // PAGES] for i in range(PAGES)]
    noise = [json.loads(l) for l in open(noise_path) if l.strip()]
    noise = noise[:: max(1, len(noise) // NOISE_QUERIES)][:NOISE_QUERIES]
    noise = [{"_id": n["_id"], "text": n["text"], "kind": "noise"} for n in noise]
    english = [{"_id": n, "text": e[0], "kind": "title"} for n, _, e, _ in rows]
    russian = [{"_id": n, "text": r[0], "kind": "title"} for n, _, _, r in rows]
    en_docs = [(n, t, e[1]) for n, t, e, _ in rows]
    ru_docs = [(n, t, r[1]) for n, t, _, r in rows]
    write_set(out / "en-en", en_docs, english + noise)
    write_set(out / "ru-ru", ru_docs, russian)
    write_set(out / "en-ru", ru_docs, english + noise)
    print(f"cross-lingual sets: {len(rows)} pages in both languages, {len(noise)} noise queries, in {out}")


if __name__ == "__main__":
    main()
