#!/usr/bin/env python3
"""How much of each HTML page Carrel keeps: `carrel probe`'s characters
against the page's whole visible text by Python's html.parser (everything
outside <script>, <style> and <head>, whitespace folded). A reader that drops
articles shows as a low ratio; chrome that Carrel drops (navigation, footers)
keeps the ratio a little under 1.

Usage: bench/html-yield.py CARREL_BINARY FOLDER_OR_FILE...
"""
import json
import statistics
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path


class Text(HTMLParser):
    HIDDEN = {"script", "style", "head", "template", "noscript"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.parts = []

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in self.HIDDEN and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth:
            self.parts.append(data)


def visible_chars(path):
    p = Text()
    p.feed(path.read_text(errors="replace"))
    return len(" ".join(" ".join(p.parts).split()))


def carrel_chars(carrel, path):
    out = subprocess.run([carrel, "probe", "--json", str(path)], capture_output=True, text=True)
    return json.loads(out.stdout)["chars"] if out.returncode == 0 else 0


def main():
    carrel, targets = sys.argv[1], [Path(a) for a in sys.argv[2:]]
    files = sorted(f for t in targets for f in ([t] if t.is_file() else t.rglob("*.htm*")))
    rows = []
    for f in files:
        full = visible_chars(f)
        if full:
            rows.append((carrel_chars(carrel, f) / full, f))
    ratios = [r for r, _ in rows]
    print(f"html-yield: {len(rows)} pages; Carrel's characters / html.parser's visible text:")
    print(f"  median {statistics.median(ratios):.3f}, mean {statistics.mean(ratios):.3f}, "
          f"min {min(ratios):.3f}, pages under 0.5: {sum(r < 0.5 for r in ratios)}")
    for r, f in sorted(rows)[:5]:
        print(f"  lowest: {r:.3f} {f.name}")


if __name__ == "__main__":
    main()
