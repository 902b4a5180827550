// Serves ui/dist-mock and opens it in Debian's chromium (playwright-core),
// with a mock engine installed before the app's code runs.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = fileURLToPath(new URL("../../dist-mock/", import.meta.url));
const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".png": "image/png" };

export async function serve() {
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
    const file = join(root, path === "/" ? "mock.html" : path);
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${server.address().port}/mock.html` };
}

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
}

/**
 * Opens the app with `engine` answering commands: an object of
 * `command_name: (args) => value` (throw `{kind, message}` for an error).
 * The functions are serialised into the page, so they must be self-contained.
 */
export async function open(browser, url, engine, { debug = false } = {}) {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const source = `{${Object.entries(engine)
    .map(([k, f]) => `${JSON.stringify(k)}: ${f.toString()}`)
    .join(",\n")}}`;
  await page.addInitScript(`
    window.__CALLS__ = [];
    // Every load of the Library and Chat pages lists the watches and the kept
    // chat, and asks whether the watcher runs and the settings were usable
    // (and every match, the foreign sources), and the empty Library page
    // says which kinds Carrel reads;
    // a test that is not about them need not say all is well.
    const engine = {
      list_watches: () => [], chat_history: () => [],
      list_libraries: () => [{ dir: "/data/library", in_use: true, state: "ready", documents: 0,
        identity: { kb: "default", title: "Default library", owner: null, description: "" } }],
      watcher_health: () => ({ state: "running" }), settings_problem: () => null,
      readable_kinds: () => "PDF, HTML, Markdown and plain text",
      // A question that names no library with @kb: (the engine's parser).
      explain_across: () => null,
      // A library with no foreign source: nothing asked elsewhere.
      ask_elsewhere: () => ({ hits: [], sources: [], floor: null, ms: 0 }),
      ...${source}
    };
    window.__CARREL_MOCK__ = async (cmd, args) => {
      window.__CALLS__.push([cmd, args]);
      if (cmd.startsWith("plugin:event|")) return 0;
      const f = engine[cmd];
      if (!f) throw { kind: "internal", message: "mock has no " + cmd };
      return await f(args);
    };
    ${debug ? "localStorage.setItem('carrel-debug', '1');" : ""}
  `);
  await page.goto(url);
  return { page, errors };
}

export function doc(id, title, extra = {}) {
  return {
    id, title, kind: "markdown", reader: "native", source: `/docs/${title.toLowerCase().replace(/\W+/g, "-")}.md`,
    bytes: 2048, chunks: 4, content_hash: "h" + id, state: "indexed", broken_reason: null,
    broken_code: null, truncated_at_chunk: null, card_state: "ready", added_at: 1700000000,
    synced_at: Math.floor(Date.now() / 1000) - 120, source_missing: false,
    shown: { state: "indexed", detail: "" }, ...extra,
  };
}
