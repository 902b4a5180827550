"""German and French training corpora for carrel-ce-v3: Debian's translated
manual pages (`manpages-de`, `manpages-fr`, manpages-l10n 4.18.1-1, fetched
by name and version with apt-get download).

Each page becomes one document, its text less its NAME section, titled by
the page's name; the NAME line's description, which the document no longer
holds, is its query ("Ein-/Ausgabe-Ereignisbenachrichtigungseinrichtung").
The rendering and the NAME rule are the cross-lingual set's
(tools/crosslingual/build.py, imported: one owner), so a query here is
chosen as a held-out query there is.

Held out, never written here: every page that `manpages-ru` translates (the
cross-lingual set is drawn from those pages, in English and Russian), so no
page of that set is seen in training in any language.

Writes, in manuals.py's layout (pairs.py --manuals reads both):
  OUT/corpus/manpages-<lang>/<page>.md
  OUT/queries.jsonl        {"query", "doc", "kind": "man-name", "corpus"}

usage: manpages.py DE_ROOT FR_ROOT RU_ROOT OUT
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crosslingual"))
import build as crosslingual  # noqa: E402  (the rendering and the NAME rule)


def main() -> None:
    de_root, fr_root, ru_root, out = map(Path, sys.argv[1:5])
    held_out = set(crosslingual.pages(ru_root))
    queries = []
    for lang, root in (("de", de_root), ("fr", fr_root)):
        corpus = f"manpages-{lang}"
        folder = out / "corpus" / corpus
        folder.mkdir(parents=True, exist_ok=True)
        pages = crosslingual.pages(root)
        kept = 0
        for name in sorted(set(pages) - held_out):
            try:
                doc = crosslingual.document(pages[name])
            except Exception as e:  # a page groff cannot render is skipped, said
                print(f"manpages: {corpus}/{name}: skipped ({e})", file=sys.stderr)
                continue
            if doc is None or not doc[1].strip():
                continue
            query, body = doc
            stem, section = name.rsplit(".", 1)
            (folder / f"{name}.md").write_text(f"# {stem}({section})\n\n{body}\n", encoding="utf-8")
            queries.append({"query": query, "doc": f"{corpus}/{name}.md", "kind": "man-name", "corpus": corpus})
            kept += 1
        print(f"manpages: {corpus}: {kept} pages ({len(set(pages) & held_out)} held out: manpages-ru has them)")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
