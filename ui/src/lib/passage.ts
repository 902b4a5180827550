// Finding a cited passage inside a section's text, to show it highlighted.
// Whitespace may differ between a chunk and its section (chunking joins
// lines), so the match is on words, not bytes.

export interface Split {
  before: string;
  match: string;
  after: string;
}

/** Splits `text` around the first occurrence of `passage`, or null. */
export function splitAt(text: string, passage: string): Split | null {
  const words = passage.trim().split(/\s+/).filter(Boolean).slice(0, 60);
  if (words.length === 0) return null;
  const esc = (w: string) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  // Try the whole passage, then its opening words (a chunk may straddle
  // two sections).
  for (const n of [words.length, Math.min(words.length, 12), Math.min(words.length, 6)]) {
    const re = new RegExp(words.slice(0, n).map(esc).join("\\s+"));
    const m = re.exec(text);
    if (m) {
      return {
        before: text.slice(0, m.index),
        match: m[0],
        after: text.slice(m.index + m[0].length),
      };
    }
  }
  return null;
}
