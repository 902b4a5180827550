#!/usr/bin/env python3
"""Lists the longest Rust functions outside tests (`make longest`), so that
drift shows in review. Lines from a `fn` to its closing brace; braces in
strings, chars and comments do not count; `#[cfg(test)]` modules and the
tests/ folder are skipped. Not a gate: a flat table or a flat match may be
long, and the README's architecture section names those.

usage: longest-functions.py [--over N] [PATH ...]   (default: src/, over 80)
"""

import argparse
import re
from pathlib import Path

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+|extern\s+\"[^\"]*\"\s+)*fn\s+(\w+)")


def code_only(text: str) -> str:
    """The text with strings, chars and comments blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = '"' + hashes
            j = text.find(end, i + 2 + len(hashes))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or text.startswith("'\\u{", i):
            j = text.find("'", i + 1 if text[i + 1] != "\\" else i + 2)
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path: Path):
    lines = code_only(path.read_text(encoding="utf-8")).split("\n")
    skip_until = -1
    for k, line in enumerate(lines):
        if k <= skip_until:
            continue
        if line.strip() == "#[cfg(test)]" and k + 1 < len(lines) and re.match(r"\s*(pub\s+)?mod\s", lines[k + 1]):
            skip_until = block_end(lines, k + 1)
            continue
        m = FN.match(line)
        if m:
            end = block_end(lines, k)
            if end is not None:
                yield m.group(1), k + 1, end - k + 1


def block_end(lines, start):
    """The line where the block opened at or after `start` closes; none for a
    declaration without a body."""
    depth, opened = 0, False
    for k in range(start, len(lines)):
        for c in lines[k]:
            if c == "{":
                depth, opened = depth + 1, True
            elif c == "}":
                depth -= 1
                if opened and depth == 0:
                    return k
            elif c == ";" and not opened and depth == 0:
                return None
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", default=["src"])
    ap.add_argument("--over", type=int, default=80)
    args = ap.parse_args()
    found = []
    for root in args.paths:
        for path in sorted(Path(root).rglob("*.rs")) if Path(root).is_dir() else [Path(root)]:
            found += [(n, str(path), line, name) for name, line, n in functions(path) if n > args.over]
    for n, path, line, name in sorted(found, reverse=True):
        print(f"{n:5}  {path}:{line}  {name}")
    print(f"{len(found)} functions over {args.over} lines")


if __name__ == "__main__":
    main()
