// Small display helpers shared by the pages. A document's state is not
// derived here: the engine sends it (`Listed.shown`).

export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB"];
  let v = bytes / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function ago(unixSeconds: number, now = Date.now() / 1000): string {
  const s = Math.max(0, Math.round(now - unixSeconds));
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** Seconds as people read them: "42 s", "3 min 5 s", "1 h 12 min". */
export function duration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function fileName(source: string): string {
  const parts = source.split(/[\\/]/);
  return parts[parts.length - 1] || source;
}

export function score(n: number | null | undefined, digits = 3): string {
  return n === null || n === undefined ? "–" : n.toFixed(digits);
}

/** A count with its noun: "1 passage", "3 passages", "2 libraries". */
export function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A document's language as stored ("ru", "und"), in words: "Russian (ru)";
 *  "language not told" where its text did not tell. */
export function language(code: string): string {
  if (code === "und") return "language not told";
  let name: string | undefined;
  try {
    name = new Intl.DisplayNames(["en"], { type: "language" }).of(code);
  } catch {
    name = undefined;
  }
  return name && name !== code ? `${name} (${code})` : code;
}
