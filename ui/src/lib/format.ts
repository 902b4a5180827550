// Small display helpers shared by the pages.
import type { DocumentRow } from "../bindings";

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

export function fileName(source: string): string {
  const parts = source.split(/[\\/]/);
  return parts[parts.length - 1] || source;
}

/** The state a user sees for a document, one word plus detail. */
export type DocState = "indexed" | "broken" | "truncated" | "stale" | "re-embedding" | "missing";

/** `ingesting`: a job is running, and it re-embeds stale documents first. */
export function docState(d: DocumentRow, ingesting = false): { state: DocState; detail: string } {
  if (d.state === "broken") return { state: "broken", detail: d.broken_reason ?? "broken" };
  if (d.source_missing) return { state: "missing", detail: "the source file is gone" };
  if (d.state === "stale" && ingesting)
    return { state: "re-embedding", detail: "vectors from another model are being replaced" };
  if (d.state === "stale")
    return { state: "stale", detail: "vectors from another model; re-embedded on the next add" };
  if (d.truncated_at_chunk !== null)
    return { state: "truncated", detail: `cut at chunk ${d.truncated_at_chunk} (size cap)` };
  return { state: "indexed", detail: "" };
}

export function score(n: number | null | undefined, digits = 3): string {
  return n === null || n === undefined ? "–" : n.toFixed(digits);
}
