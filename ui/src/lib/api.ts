// The one bridge to the engine: unwraps the generated bindings' Result into
// a value or a thrown AppError, so every page shows the engine's own
// sentence on failure and never turns an error into an empty list.
import type { AppError } from "../bindings";

/** The shape every generated command resolves to. */
export type Result<T, E> = { status: "ok"; data: T } | { status: "error"; error: E };

export async function call<T>(p: Promise<Result<T, AppError>>): Promise<T> {
  const r = await p;
  if (r.status === "ok") return r.data;
  throw r.error;
}

export function isAppError(e: unknown): e is AppError {
  return typeof e === "object" && e !== null && "kind" in e && "message" in e;
}

/** A sentence for any failure, for an error box. */
export function errorText(e: unknown): string {
  if (isAppError(e)) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

/** What to do next, by error kind. */
export function errorHint(e: unknown): string | null {
  if (!isAppError(e)) return null;
  switch (e.kind) {
    case "models":
      return "Open Settings to see which model or runtime is missing; `make models` installs them.";
    case "storage":
      return "Open Settings and run the check; the library database may need attention.";
    case "not_found":
      return "The list may be out of date: it has been reloaded.";
    default:
      return null;
  }
}
