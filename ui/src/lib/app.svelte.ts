// App-wide state: which page is open, the document list, the ingest job.
// Pages read and call these; only this file talks to the library list.
import { Channel } from "@tauri-apps/api/core";
import { commands, type AddReport, type DocumentRow, type Progress } from "../bindings";
import { call, errorText } from "./api";

export type Page =
  | { name: "library" }
  | { name: "document"; id: number; passage?: string; back: "library" | "chat" }
  | { name: "chat" }
  | { name: "settings" };

class AppState {
  page = $state<Page>({ name: "library" });
  documents = $state<DocumentRow[]>([]);
  loaded = $state(false);
  listError = $state<string | null>(null);
  progress = $state<Progress | null>(null);
  report = $state<AddReport | null>(null);
  ingestError = $state<string | null>(null);
  busy = $state(false);
  debug = $state(false);
  /** Milliseconds from process start to the first painted frame. */
  firstPaintMs = $state<number | null>(null);

  go(page: Page) {
    this.page = page;
  }

  async reload() {
    try {
      this.documents = await call(commands.listDocuments());
      this.listError = null;
    } catch (e) {
      this.listError = errorText(e);
    } finally {
      this.loaded = true;
    }
  }

  /** Adds files, folders or URLs, with live progress; one job at a time. */
  async add(inputs: string[]) {
    const clean = inputs.map((s) => s.trim()).filter((s) => s.length > 0);
    if (clean.length === 0 || this.busy) return;
    this.busy = true;
    this.report = null;
    this.ingestError = null;
    this.progress = { done: 0, total: 0, current: clean.join(", "), failed: 0 };
    const channel = new Channel<Progress>();
    channel.onmessage = (p) => {
      this.progress = p;
    };
    try {
      this.report = await call(commands.addSources(clean, channel));
    } catch (e) {
      this.ingestError = errorText(e);
    } finally {
      this.busy = false;
      this.progress = null;
      await this.reload();
    }
  }
}

export const app = new AppState();
