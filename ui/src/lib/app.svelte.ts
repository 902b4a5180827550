// App-wide state: which page is open, the document list, the watches, the
// ingest job. Pages read and call these; only this file talks to the
// library list.
import { Channel } from "@tauri-apps/api/core";
import {
  commands,
  type AddReport,
  type Listed,
  type Progress,
  type SettingsProblem,
  type Survey,
  type Watch,
  type WatcherHealth,
} from "../bindings";
import { call, errorText } from "./api";

export type Page =
  | { name: "library" }
  | { name: "document"; id: number; passage?: string; back: "library" | "chat" }
  | { name: "chat" }
  | { name: "settings" };

const KEEP_IN_SYNC = "carrel.keepInSync";
const ADD_INTO = "carrel.addInto";
/** How often the list is read again while an ingest reports progress. */
const LIST_DURING_INGEST_MS = 1000;

class AppState {
  page = $state<Page>({ name: "library" });
  /** Each document with the state the engine says to show for it. */
  documents = $state<Listed[]>([]);
  loaded = $state(false);
  listError = $state<string | null>(null);
  watches = $state<Watch[]>([]);
  watchError = $state<string | null>(null);
  /** The libraries on this machine's shelf, the one in use first. */
  libraries = $state<Survey>([]);
  librariesError = $state<string | null>(null);
  /** The library in use, as the shelf lists it. */
  inUse = $derived(this.libraries.find((x) => x.in_use));
  /** Why the last library from another hub was not added, if it was not. */
  remoteError = $state<string | null>(null);
  /** Its name, once it exists and was listed. */
  inUseKb = $derived(this.inUse?.state === "ready" ? this.inUse.identity.kb : null);
  /** Whether the watcher keeps the watches in sync; null until asked. */
  watcher = $state<WatcherHealth | null>(null);
  watcherError = $state<string | null>(null);
  /** settings.json could not be used at startup (the app runs on defaults). */
  settingsProblem = $state<SettingsProblem | null>(null);
  /** The library on the shelf additions go into (null: the one in use); remembered. */
  addInto = $state<string | null>(localStorage.getItem(ADD_INTO));
  /** Where the last import went, when not the library in use. */
  addedInto = $state<string | null>(null);
  /** Whether added folders and URLs become watches; remembered. */
  keepInSync = $state(localStorage.getItem(KEEP_IN_SYNC) !== "false");
  progress = $state<Progress | null>(null);
  /** A cancel was asked for and the import has not stopped yet. */
  cancelling = $state(false);
  report = $state<AddReport | null>(null);
  ingestError = $state<string | null>(null);
  busy = $state(false);
  debug = $state(false);
  /** Milliseconds from process start to the first painted frame. */
  firstPaintMs = $state<number | null>(null);

  go(page: Page) {
    this.page = page;
  }

  /** Reads the document list and the watches (their errors apart). */
  async reload() {
    await Promise.all([
      this.reloadDocuments(),
      (async () => {
        try {
          this.watches = await call(commands.listWatches());
          this.watchError = null;
        } catch (e) {
          this.watchError = errorText(e);
        }
      })(),
      this.checkWatcher(),
      (async () => {
        try {
          this.libraries = await call(commands.listLibraries());
          this.librariesError = null;
        } catch (e) {
          this.librariesError = errorText(e);
        }
      })(),
    ]);
  }

  /** Where additions go from now on (null: the library in use); remembered. */
  setAddInto(kb: string | null) {
    this.addInto = kb;
    if (kb === null) localStorage.removeItem(ADD_INTO);
    else localStorage.setItem(ADD_INTO, kb);
  }

  /** Puts a library another machine serves on the shelf; true when added. */
  async addRemote(url: string, kb: string, token: string): Promise<boolean> {
    try {
      this.libraries = await call(commands.addRemoteLibrary(url, kb, token));
      this.remoteError = null;
      return true;
    } catch (e) {
      this.remoteError = errorText(e);
      return false;
    }
  }

  /** Reads the document list: what it holds, and each one's state now. */
  async reloadDocuments() {
    try {
      this.documents = await call(commands.listDocuments());
      this.listError = null;
    } catch (e) {
      this.listError = errorText(e);
    } finally {
      this.loaded = true;
    }
  }

  /** Asks whether the watcher still runs (it may have stopped before the UI listened). */
  async checkWatcher() {
    try {
      this.watcher = await call(commands.watcherHealth());
      this.watcherError = null;
    } catch (e) {
      this.watcher = null;
      this.watcherError = errorText(e);
    }
  }

  /** Starts the watcher again after it stopped on its own. */
  async restartWatcher() {
    this.watcherError = null;
    try {
      this.watcher = await call(commands.restartWatcher());
    } catch (e) {
      this.watcherError = errorText(e);
    }
  }

  /** Asked once at startup: was settings.json unusable? */
  async loadSettingsProblem() {
    try {
      this.settingsProblem = await call(commands.settingsProblem());
    } catch (e) {
      // Not knowing is said too: the settings in use may not be the user's.
      this.settingsProblem = { path: "settings.json", error: `could not be checked: ${errorText(e)}`, kept_at: null };
    }
  }

  setKeepInSync(on: boolean) {
    this.keepInSync = on;
    localStorage.setItem(KEEP_IN_SYNC, String(on));
  }

  /** Stops keeping a folder or URL in sync; its documents stay. */
  async unwatch(id: number) {
    try {
      await call(commands.removeWatch(id));
    } catch (e) {
      this.watchError = errorText(e);
      return;
    }
    await this.reload();
  }

  /** Adds files, folders or URLs, with live progress; one job at a time. */
  async add(inputs: string[]) {
    const clean = inputs.map((s) => s.trim()).filter((s) => s.length > 0);
    if (clean.length === 0 || this.busy) return;
    this.busy = true;
    this.report = null;
    this.ingestError = null;
    this.cancelling = false;
    this.progress = {
      done: 0,
      total: 0,
      current: clean.join(", "),
      failed: 0,
      chunks: 0,
      elapsed_s: 0,
      docs_per_s: 0,
      chunks_per_s: 0,
      eta_s: null,
    };
    const channel = new Channel<Progress>();
    // The list follows the job (documents as they land, "re-embedding"
    // while stale vectors are replaced), read at most once a second.
    let listed = 0;
    channel.onmessage = (p) => {
      this.progress = p;
      if (Date.now() - listed >= LIST_DURING_INGEST_MS) {
        listed = Date.now();
        void this.reloadDocuments();
      }
    };
    try {
      // The choice stands only while that library is still on the shelf.
      const into = this.addInto !== null && this.addInto !== this.inUseKb && this.libraries.some((l) => l.state === "ready" && !l.url && l.identity.kb === this.addInto) ? this.addInto : null;
      this.report = await call(commands.addSources(clean, this.keepInSync, into, channel));
      this.addedInto = into;
    } catch (e) {
      this.ingestError = errorText(e);
    } finally {
      this.busy = false;
      this.cancelling = false;
      this.progress = null;
      await this.reload();
    }
  }

  /** Stops the running import after the document it is writing. */
  async cancelImport() {
    if (!this.busy || this.cancelling) return;
    this.cancelling = true;
    try {
      await call(commands.cancelImport());
    } catch (e) {
      this.cancelling = false;
      this.ingestError = errorText(e);
    }
  }
}

export const app = new AppState();
