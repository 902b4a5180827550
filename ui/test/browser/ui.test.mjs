// Engine replies are written inline in each test: they are serialised into
// the page, so they cannot refer to anything outside themselves.
// Browser-level tests of the UI with the engine mocked at the IPC seam
// (@tauri-apps/api mockIPC), in Debian's chromium. The real engine behind
// the same commands is driven by test/e2e/ in the real window.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { doc, launch, open, serve } from "./harness.mjs";

let browser, server, url;
before(async () => {
  ({ server, url } = await serve());
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

const library = {
  list_documents: () => [
    {
      id: 1, title: "Sourdough starter", kind: "markdown", source: "/docs/sourdough.md", bytes: 4096,
      chunks: 6, content_hash: "a", state: "indexed", broken_reason: null, broken_code: null,
      truncated_at_chunk: null, card_state: "ready", added_at: 1, synced_at: 1, source_missing: false,
      shown: { state: "indexed", detail: "" },
    },
    {
      id: 2, title: "Starter homes and mortgages", kind: "html", source: "/docs/homes.html", bytes: 9000,
      chunks: 9, content_hash: "b", state: "indexed", broken_reason: null, broken_code: null,
      truncated_at_chunk: null, card_state: "ready", added_at: 2, synced_at: 2, source_missing: false,
      shown: { state: "indexed", detail: "" },
    },
    {
      id: 3, title: "corrupt.pdf", kind: "pdf", source: "/docs/corrupt.pdf", bytes: 512, chunks: 0,
      content_hash: null, state: "broken", broken_reason: "not a readable PDF: invalid file header",
      broken_code: "unreadable", truncated_at_chunk: null, card_state: "none", added_at: 3, synced_at: 3,
      source_missing: false,
      shown: { state: "broken", detail: "not a readable PDF: invalid file header" },
    },
  ],
  first_paint: () => 1,
};

test("first run shows an empty state that says what to do", async () => {
  const { page, errors } = await open(browser, url, { list_documents: () => [], first_paint: () => 1 });
  const empty = page.getByTestId("empty-library");
  await empty.waitFor();
  const text = await empty.innerText();
  assert.match(text, /library is empty/i);
  assert.match(text, /Drag files or folders/);
  assert.match(text, /Add files…/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a library that cannot be read is an error with the engine's sentence, not an empty list", async () => {
  const { page } = await open(browser, url, {
    list_documents: () => {
      throw { kind: "storage", message: "the library database at /x failed: disk I/O error" };
    },
    first_paint: () => 1,
  });
  const alert = page.getByRole("alert");
  await alert.waitFor();
  assert.match(await alert.innerText(), /disk I\/O error/);
  assert.equal(await page.getByTestId("empty-library").count(), 0);
  await page.close();
});

test("the list shows state with the broken reason, and search and filter narrow it", async () => {
  const { page } = await open(browser, url, library);
  await page.getByTestId("doc-table").waitFor();
  assert.equal(await page.locator("tbody tr").count(), 3);
  const broken = page.locator('tr[data-state="broken"]');
  assert.match(await broken.innerText(), /not a readable PDF: invalid file header/);
  await page.getByTestId("doc-search").fill("starter");
  assert.equal(await page.locator("tbody tr[data-doc]").count(), 2);
  await page.getByTestId("doc-search").fill("");
  await page.getByRole("radio", { name: /Broken/ }).click();
  assert.deepEqual(await page.locator("tbody tr[data-doc]").evaluateAll((r) => r.map((x) => x.dataset.doc)), ["3"]);
  await page.close();
});

test("a document's state is the engine's: re-embedding shows while the engine says so, and the list follows an ingest", async () => {
  // The mock's functions run in the page: the row is built there.
  const { page } = await open(browser, url, {
    first_paint: () => 1,
    // The engine answers "stale" at first, "re-embedding" once the job runs.
    list_documents: () => [{
      id: 1, title: "Doc 1", kind: "markdown", source: "/docs/doc-1.md", bytes: 2048, chunks: 4,
      content_hash: "h1", state: "stale", broken_reason: null, broken_code: null, truncated_at_chunk: null,
      card_state: "stale", added_at: 1, synced_at: 1, source_missing: false,
      shown: window.__reembedding
        ? { state: "re-embedding", detail: "vectors from another model are being replaced" }
        : { state: "stale", detail: "vectors from another model; re-embedded on the next add" },
    }],
    add_sources: async (args) => {
      window.__reembedding = true;
      args.onProgress.onmessage({ done: 0, total: 1, current: "re-embedding", failed: 0 });
      await new Promise((r) => setTimeout(r, 1500));
      return { added: 0, unchanged: 0, failed: [], skipped: [], documents: [] };
    },
  });
  const row = page.locator('tr[data-doc="1"]');
  await row.waitFor();
  assert.equal(await row.getAttribute("data-state"), "stale");
  assert.match(await row.innerText(), /re-embedded on the next add/);
  await page.getByTestId("source-input").fill("/in");
  await page.getByTestId("source-input").press("Enter");
  await page.locator('tr[data-doc="1"][data-state="re-embedding"]').waitFor();
  assert.match(await row.innerText(), /being replaced/);
  // The job ends; the engine still re-embeds (the watcher took over): the
  // page says what the engine says, not what its own job did.
  await page.getByTestId("ingest-progress").waitFor({ state: "detached" });
  assert.equal(await row.getAttribute("data-state"), "re-embedding");
  await page.close();
});

test("ingest shows live progress, then failures by name and reason", async () => {
  const { page } = await open(browser, url, {
    ...library,
    add_sources: async (args) => {
      const ch = args.onProgress;
      for (let i = 0; i <= 3; i++) {
        ch.onmessage({ done: i, total: 3, current: `/in/file${i}.md`, failed: i > 1 ? 1 : 0 });
        await new Promise((r) => setTimeout(r, 150));
      }
      return { added: 2, unchanged: 0, failed: [{ source: "/in/empty.txt", reason: "empty file (0 bytes)" }], skipped: [{ source: "/in/ls.1.gz", reason: "compressed (.gz); Carrel does not unpack files, unpack it and add what is inside" }], documents: [] };
    },
  });
  await page.getByTestId("source-input").fill("/in");
  await page.getByTestId("source-input").press("Enter");
  const progress = page.getByTestId("ingest-progress");
  await progress.waitFor();
  await page.waitForFunction(() => /Adding \d of 3/.test(document.body.innerText));
  const failures = page.getByTestId("ingest-failures");
  await failures.waitFor();
  assert.match(await failures.innerText(), /empty\.txt: empty file \(0 bytes\)/);
  const skipped = page.getByTestId("ingest-skipped");
  assert.match(await skipped.innerText(), /1 not added from the folders/);
  await skipped.locator("summary").click();
  assert.match(await skipped.innerText(), /ls\.1\.gz: compressed \(\.gz\)/);
  assert.equal(await progress.count(), 0, "the bar goes away when the job ends");
  const call = await page.evaluate(() => window.__CALLS__.find(([c]) => c === "add_sources")[1].inputs);
  assert.deepEqual(call, ["/in"]);
  await page.close();
});

test("an import shows its rate and time left, and Cancel stops it with what was added kept", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    add_sources: async (args) => {
      const ch = args.onProgress;
      for (let i = 0; i < 100 && !window.__cancelled; i++) {
        ch.onmessage({ done: i, total: 100, current: `/in/file${i}.md`, failed: 0, chunks: 12 * i,
          elapsed_s: i / 2, docs_per_s: 2, chunks_per_s: 24, eta_s: (100 - i) / 2 });
        await new Promise((r) => setTimeout(r, 100));
      }
      return { added: 7, unchanged: 0, failed: [], skipped: [], documents: [], cancelled: 93 };
    },
    cancel_import: () => { window.__cancelled = true; return true; },
  });
  await page.getByTestId("source-input").fill("/in");
  await page.getByTestId("source-input").press("Enter");
  const rate = page.getByTestId("ingest-rate");
  await rate.waitFor();
  await page.waitForFunction(() => /2\.0 docs\/s, 24 chunks\/s, about \d+ s left/.test(document.querySelector('[data-testid="ingest-rate"]')?.textContent ?? ""));
  await page.getByTestId("ingest-cancel").click();
  const cancelled = page.getByTestId("ingest-cancelled");
  await cancelled.waitFor();
  assert.match(await cancelled.innerText(), /Cancelled: 93 not reached\. What was added stays/);
  assert.equal(await page.getByTestId("ingest-progress").count(), 0, "the bar goes away when the job stops");
  assert.ok(await page.evaluate(() => window.__CALLS__.some(([c]) => c === "cancel_import")));
  assert.deepEqual(errors, []);
  await page.close();
});

test("kept-in-sync sources: the toggle reaches add_sources and is remembered; a failing watch says why; stop syncing", async () => {
  const { page } = await open(browser, url, {
    ...library,
    list_watches: () => {
      const all = [
        { id: 1, target: "/home/ana/notes", kind: "folder", interval_s: 3600, include: [], exclude: [],
          allow_private: false, created_at: 1, synced_at: Math.floor(Date.now() / 1000) - 180, last_error: null },
        { id: 2, target: "/mnt/usb/papers", kind: "folder", interval_s: 3600, include: [], exclude: [],
          allow_private: false, created_at: 1, synced_at: 5, last_error: "source missing: the folder is not there (its documents are kept)" },
      ];
      return all.filter((w) => !(window.__removed ?? []).includes(w.id));
    },
    remove_watch: (args) => {
      window.__removed = [...(window.__removed ?? []), args.id];
      return null;
    },
    add_sources: () => ({ added: 0, unchanged: 3, failed: [], skipped: [], documents: [] }),
  });
  const watches = page.getByTestId("watches");
  await watches.waitFor();
  assert.match(await watches.locator("summary").innerText(), /Kept in sync: 2 sources · 1 failing/);
  // A failing watch opens the panel by itself.
  assert.match(await page.getByTestId("watch-error").innerText(), /failed: source missing: the folder is not there/);
  assert.match(await watches.locator("li[data-watch='1']").innerText(), /synced 3 min ago/);

  const toggle = page.getByTestId("keep-in-sync");
  assert.equal(await toggle.isChecked(), true, "on by default");
  await page.getByTestId("source-input").fill("/in");
  await page.getByTestId("source-input").press("Enter");
  await page.getByTestId("ingest-report").waitFor();
  await toggle.uncheck();
  await page.getByTestId("source-input").fill("/once");
  await page.getByTestId("source-input").press("Enter");
  await page.waitForFunction(() => window.__CALLS__.filter(([c]) => c === "add_sources").length === 2);
  const sent = await page.evaluate(() =>
    window.__CALLS__.filter(([c]) => c === "add_sources").map(([, a]) => [a.inputs[0], a.keepInSync]),
  );
  assert.deepEqual(sent, [["/in", true], ["/once", false]]);

  await watches.locator("li[data-watch='2']").getByRole("button", { name: "Stop syncing" }).click();
  await page.waitForFunction(() => document.querySelectorAll("[data-watch]").length === 1);
  assert.deepEqual(await page.evaluate(() => window.__removed), [2]);
  const summary = await watches.locator("summary").innerText();
  assert.match(summary, /Kept in sync: 1 source/);
  assert.doesNotMatch(summary, /failing/);

  await page.reload();
  await page.getByTestId("keep-in-sync").waitFor();
  assert.equal(await page.getByTestId("keep-in-sync").isChecked(), false, "the choice is remembered");
  await page.close();
});

test("the kept chat comes back with its answers, errors and what could not be read; clearing asks first", async () => {
  const { page } = await open(browser, url, {
    ...library,
    complete_mention: () => [],
    check_mentions: () => [],
    chat_history: () =>
      window.__cleared
        ? []
        : [
            {
              id: 4, asked_at: 1, message: "@doc:1 how often to feed it",
              reply: {
                kind: "answer",
                answer: {
                  question: "how often to feed it", answerer: "extractive",
                  mentions: [{ token: "@doc:1", doc: 1, title: "Sourdough starter" }],
                  context: [{
                    n: 1, doc: 1, title: "Sourdough starter", source: "/docs/sourdough.md", chunk: 3,
                    heading_path: ["Feeding"], page: null, text: "Feed the starter twice a day.",
                    found: { by: "mention", token: "@doc:1" }, cosine: 0.7, scorer: "cosine:m@1", whole_document: false,
                  }],
                  notes: [],
                  outcome: {
                    state: "answered",
                    statements: [{ text: "Feed the starter twice a day.", citations: [1], check: { status: "verified" } }],
                    check: { statements: 1, verified: 1, supported: 0, cited: 0, unsupported: 0, uncited: 0, invalid: 0 },
                  },
                },
              },
            },
            { id: 5, asked_at: 2, message: "what about rye", reply: { kind: "error", message: "the embedding model failed: test" } },
            { id: 6, asked_at: 3, message: "old one", reply: { kind: "unreadable", reason: "this answer was kept by another version of Carrel and cannot be shown" } },
          ],
    clear_chat: () => {
      window.__cleared = true;
      return 3;
    },
  });
  await page.getByRole("button", { name: "Chat" }).click();
  const first = page.locator("[data-turn='4']");
  await first.waitFor();
  assert.match(await first.locator(".question").innerText(), /@Sourdough starter\s+how often to feed it/);
  assert.match(await first.getByTestId("answer").innerText(), /Feed the starter twice a day\./);
  // One statement and one passage are counted as one, not "all 1 statements", "1 passages".
  assert.match(await first.getByTestId("answer").innerText(), /the statement is quoted verbatim from its passage/);
  assert.match(await first.locator(".passages summary").innerText(), /^1 passage$/);
  assert.equal(await first.getByTestId("answer").getAttribute("data-outcome"), "answered");
  assert.match(await page.locator("[data-turn='5']").innerText(), /embedding model failed: test/);
  assert.match(await page.locator("[data-turn='6']").innerText(), /kept by another version of Carrel/);

  await page.getByTestId("clear-chat").click();
  assert.equal(await page.locator("[data-turn]").count(), 3, "nothing goes before the second click");
  await page.getByTestId("clear-chat-confirm").click();
  await page.getByText("Ask your library").waitFor();
  assert.equal(await page.locator("[data-turn]").count(), 0);
  assert.ok(await page.evaluate(() => window.__cleared));
  await page.close();
});

test("the newest turn is brought into view: the kept chat opens at its last turn, and a question sent scrolls to it", async () => {
  const { page } = await open(browser, url, {
    ...library,
    complete_mention: () => [],
    check_mentions: () => [],
    chat_history: () =>
      Array.from({ length: 8 }, (_, i) => ({
        id: i + 1, asked_at: i + 1, message: `question ${i + 1}`,
        reply: { kind: "error", message: `${"the embedding model failed: test. ".repeat(12)}(${i + 1})` },
      })),
    ask: (args) => ({
      question: args.message, answerer: "extractive", mentions: [], context: [], notes: [],
      outcome: { state: "no_context", reason: "nothing in the library matched" },
    }),
  });
  await page.setViewportSize({ width: 1100, height: 600 });
  await page.getByRole("button", { name: "Chat" }).click();
  await page.locator("[data-turn='8']").waitFor();
  // Whether a turn (the first or the last) starts inside the transcript's visible box.
  const inView = (which) => page.evaluate((which) => {
    const box = document.querySelector('[data-testid="turns"]').getBoundingClientRect();
    const turns = document.querySelectorAll("[data-turn]");
    const r = turns[which === "first" ? 0 : turns.length - 1].getBoundingClientRect();
    return r.top >= box.top - 1 && r.top < box.bottom;
  }, which);
  await page.waitForFunction(() => document.querySelector('[data-testid="turns"]').scrollTop > 0);
  assert.ok(await inView("last"), "the last kept turn is shown");
  assert.ok(!(await inView("first")), "the transcript is long enough to scroll");
  await page.evaluate(() => { document.querySelector('[data-testid="turns"]').scrollTop = 0; });
  const box = page.getByTestId("composer");
  await box.fill("a new question");
  await box.press("Enter");
  const sent = page.locator(".turn", { hasText: "a new question" });
  await sent.waitFor();
  await page.waitForFunction(() => document.querySelector('[data-testid="turns"]').scrollTop > 0);
  assert.ok(await inView("last"), "the question just sent is shown");
  await page.close();
});

test("ingested text is rendered as text, never as HTML", async () => {
  const { page, errors } = await open(browser, url, {
    first_paint: () => 1,
    list_documents: () => [
      {
        id: 7, title: '<img src=x onerror="window.__pwned=1">Title', kind: "html", source: "/x.html",
        bytes: 10, chunks: 1, content_hash: "c", state: "indexed", broken_reason: null, broken_code: null,
        truncated_at_chunk: null, card_state: "ready", added_at: 1, synced_at: 1, source_missing: false,
        shown: { state: "indexed", detail: "" },
      },
    ],
    read_document: () => ({
      document: {
        id: 7, title: '<img src=x onerror="window.__pwned=1">Title', kind: "html", source: "/x.html",
        bytes: 10, chunks: 1, content_hash: "c", state: "indexed", broken_reason: null, broken_code: null,
        truncated_at_chunk: null, card_state: "ready", added_at: 1, synced_at: 1, source_missing: false,
      },
      card: { title: "t", what: "<script>window.__pwned=2</script>", outline: [], key_terms: [] },
      sections: [{ heading_path: ["<b>h</b>"], text: '<script>window.__pwned=3</script><img src=x onerror="window.__pwned=4">' }],
    }),
  });
  await page.locator("tr[data-doc='7'] button.title").click();
  const text = page.getByTestId("doc-text");
  await text.waitFor();
  assert.match(await text.innerText(), /<script>window.__pwned=3<\/script>/);
  assert.match(await page.getByTestId("doc-title").innerText(), /^<img src=x/);
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator("main img, main script, main b").count(), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test("@ opens the autocomplete with each card's what line; arrows and Enter pick a chip; Esc closes", async () => {
  const { page } = await open(browser, url, {
    ...library,
    complete_mention: () => [
      { doc: 1, title: "Sourdough starter", source: "/docs/sourdough.md", token: "@doc:1", what: "Keeping a sourdough starter alive: feeding, hydration, discard.", state: "indexed" },
      { doc: 2, title: "Starter homes and mortgages", source: "/docs/homes.html", token: "@doc:2", what: "Buying a first home: deposits, fixed and variable mortgages.", state: "indexed" },
    ],
    check_mentions: () => [],
    match_query: () => { throw { kind: "models", message: "not needed here" }; },
  });
  await page.getByRole("button", { name: "Chat" }).click();
  const box = page.getByTestId("composer");
  await box.click();
  await box.pressSequentially("how often do I feed @sta");
  const menu = page.getByTestId("mention-menu");
  await menu.waitFor();
  assert.match(await menu.innerText(), /feeding, hydration, discard/);
  const partial = await page.evaluate(() => window.__CALLS__.filter(([c]) => c === "complete_mention").at(-1)[1].partial);
  assert.equal(partial, "sta");
  await box.press("ArrowDown");
  await box.press("ArrowUp");
  await box.press("ArrowDown");
  await box.press("Enter");
  const chip = page.getByTestId("mention-chip");
  await chip.waitFor();
  assert.match(await chip.innerText(), /Starter homes and mortgages/);
  assert.equal(await box.inputValue(), "how often do I feed ");
  await box.pressSequentially("@s");
  await menu.waitFor();
  await box.press("Escape");
  await menu.waitFor({ state: "detached" });
  await page.close();
});

test("an unknown mention is an inline error with did-you-mean that fixes it", async () => {
  const { page } = await open(browser, url, {
    ...library,
    complete_mention: () => [],
    check_mentions: (args) =>
      args.message.includes("@doc:sourdogh")
        ? [{
            mention: { token: "@doc:sourdogh", key: "sourdogh", start: 0, end: 13 },
            resolution: { status: "unknown", did_you_mean: [{ doc: 1, title: "Sourdough starter", source: "/docs/sourdough.md", token: "@doc:1" }] },
            message: "@doc:sourdogh matches no document; did you mean @doc:1 (Sourdough starter, sourdough.md)?",
          }]
        : [],
    match_query: () => { throw { kind: "models", message: "the embedding model failed: test" }; },
  });
  await page.getByRole("button", { name: "Chat" }).click();
  const box = page.getByTestId("composer");
  await box.fill("@doc:sourdogh feeding");
  await box.dispatchEvent("input");
  const problems = page.getByTestId("mention-problems");
  await problems.waitFor();
  assert.match(await problems.innerText(), /did you mean/);
  assert.ok(await page.getByTestId("send").isDisabled(), "a message with a broken mention is not sent");
  await problems.getByRole("button", { name: "Sourdough starter" }).click();
  await page.getByTestId("mention-chip").waitFor();
  await problems.waitFor({ state: "detached" });
  assert.equal((await box.inputValue()).trim(), "feeding");
  // The match panel shows the engine's failure as such.
  await page.getByTestId("match-panel").getByRole("alert").waitFor();
  assert.match(await page.getByTestId("match-panel").innerText(), /embedding model failed/);
  await page.close();
});

test("a message sent before the typing pause is checked first, and the panel explains it, not the words typed before", async () => {
  const { page } = await open(browser, url, {
    ...library,
    complete_mention: () => [],
    check_mentions: (args) =>
      args.message.includes("@doc:sourdogh")
        ? [{
            mention: { token: "@doc:sourdogh", key: "sourdogh", start: 0, end: 13 },
            resolution: { status: "unknown", did_you_mean: [] },
            message: "@doc:sourdogh matches no document",
          }]
        : [],
    match_query: (args) => ({
      query: args.query,
      subject: { state: "weak", reason: null, hits: [], below_floor: [] },
      topic: { state: "weak", reason: null, hits: [], below_floor: [] },
      topic_vetoed: 0,
      explain: {
        subject: [], topic: [], reranker_skipped_by_gate: false, vetoed: 0, cosine_scorer: "cosine:m@1",
        rerank_scorer: null, rerank_calibrated: false, embed_ms: 1, subject_ms: 1, topic_ms: 1,
        topic_search: { kind: "exact" },
      },
    }),
    ask: (args) => {
      window.__asked = (window.__asked ?? []).concat(args.message);
      return {
        question: args.message, answerer: "extractive", mentions: [], context: [], notes: [],
        outcome: { state: "no_context", reason: "nothing in the library matched" },
      };
    },
  });
  await page.getByRole("button", { name: "Chat" }).click();
  const box = page.getByTestId("composer");
  await box.fill("how do I keep");
  await box.dispatchEvent("input");
  await page.waitForFunction(() => /how do I keep/.test(document.querySelector('[data-testid="match-query"]')?.textContent ?? ""));
  // Typed on and sent at once, inside the 250 ms pause.
  await box.fill("how do I keep a starter alive");
  await box.dispatchEvent("input");
  await box.press("Enter");
  await page.waitForFunction(() => (window.__asked ?? []).length === 1);
  assert.deepEqual(await page.evaluate(() => window.__asked), ["how do I keep a starter alive"]);
  await page.waitForFunction(() => /a starter alive/.test(document.querySelector('[data-testid="match-query"]')?.textContent ?? ""));
  // A broken mention sent at once is refused, as it is after the pause.
  await box.fill("@doc:sourdogh feeding");
  await box.dispatchEvent("input");
  await box.press("Enter");
  await page.getByTestId("mention-problems").waitFor();
  assert.deepEqual(await page.evaluate(() => window.__asked), ["how do I keep a starter alive"], "the broken mention was not sent");
  assert.equal(await box.inputValue(), "@doc:sourdogh feeding", "the text stays to be fixed");
  await page.close();
});

test("the match panel shows both lanes apart with their states; the debug pane shows scorers and decisions", async () => {
  const { page } = await open(browser, url, {
    ...library,
    complete_mention: () => [],
    check_mentions: () => [],
    match_query: (args) => ({
      query: args.query,
      subject: { state: "unavailable", reason: "no cross-encoder is installed (looked for /m/carrel-ce-v1)", hits: [], below_floor: [] },
      topic: {
        state: "ready", reason: null,
        hits: [{ doc: 1, title: "Sourdough starter", locations: [], chunk: 11, heading_path: ["Feeding"], passage: "Feed the starter twice a day.", page: null, cosine: 0.71, scorer: "cosine:all-MiniLM-L6-v2@abc" }],
        below_floor: [],
      },
      topic_vetoed: 1,
      explain: {
        subject: [{ doc: 1, title: "Sourdough starter", cosine: 0.62, rerank: null, heading_path: null, keyword_rank: null, decision: "reranker_unavailable" }],
        topic: [
          { doc: 1, title: "Sourdough starter", cosine: 0.71, rerank: null, heading_path: ["Feeding"], keyword_rank: 2, decision: "admitted" },
          { doc: 2, title: "Starter homes and mortgages", cosine: 0.52, rerank: null, heading_path: ["Deposits"], keyword_rank: null, decision: "vetoed" },
        ],
        reranker_skipped_by_gate: false, vetoed: 1, cosine_scorer: "cosine:all-MiniLM-L6-v2@abc",
        rerank_scorer: null, rerank_calibrated: false, embed_ms: 9.5, subject_ms: 0.4, topic_ms: 3.2,
        topic_search: { kind: "signs", rescored: 1000, of: 120000 },
      },
    }),
  });
  await page.getByRole("button", { name: "Chat" }).click();
  await page.getByTestId("composer").fill("how often to feed a starter");
  await page.getByTestId("composer").dispatchEvent("input");
  const panel = page.getByTestId("match-panel");
  await panel.locator('[data-lane="topic"] .hit').waitFor();
  assert.match(await page.getByTestId("subject-state").innerText(), /unavailable: no cross-encoder is installed/);
  assert.match(await page.getByTestId("topic-state").innerText(), /^ready/);
  assert.equal(await panel.locator('[data-lane="subject"] .hit').count(), 0, "an unavailable lane shows no hits");
  assert.equal(await page.getByTestId("debug-pane").count(), 0);
  await page.getByTestId("debug-toggle").check();
  const debug = page.getByTestId("debug-pane");
  await debug.waitFor();
  assert.match(await page.getByTestId("cosine-scorer").innerText(), /cosine:all-MiniLM-L6-v2@abc/);
  assert.match(await page.getByTestId("rerank-scorer").innerText(), /not loaded/);
  assert.match(await page.getByTestId("topic-search").innerText(), /sign bits of 120,000 chunk vectors compared, the nearest 1,000 scored by exact cosine; with the best keyword matches/);
  assert.deepEqual(await debug.getByTestId("keyword-rank").allInnerTexts(), ["#2", "–"], "the topic lane's keyword ranks, one per candidate");
  assert.match(await debug.innerText(), /vetoed: headings do not mention the query/);
  assert.match(await debug.innerText(), /suppressed: cross-encoder unavailable/);
  assert.match(await debug.innerText(), /Deposits/);
  assert.match(await panel.getByTestId("hit-scorer").innerText(), /cosine:all-MiniLM-L6-v2@abc/);
  await page.close();
});

test("a ready lane keeps its below-the-floor tail apart from its hits, collapsed until opened", async () => {
  const { page } = await open(browser, url, {
    ...library,
    complete_mention: () => [],
    check_mentions: () => [],
    match_query: (args) => {
      const topic = (doc, title, cosine) => ({
        doc, title, locations: [], chunk: doc * 10, heading_path: ["Feeding"], passage: `${title}: feed it.`,
        page: null, cosine, scorer: "cosine:all-MiniLM-L6-v2@abc",
      });
      return {
        query: args.query,
        subject: {
          state: "ready", reason: null, hits: [],
          below_floor: [{
            doc: 2, title: "Starter homes and mortgages", locations: [], cosine: 0.41, rerank: null,
            scorer: "cosine:all-MiniLM-L6-v2@abc", calibrated: false, why: "buying a first home",
          }],
        },
        topic: {
          state: "ready", reason: null,
          hits: [topic(1, "Sourdough starter", 0.71)],
          below_floor: [topic(2, "Starter homes and mortgages", 0.44), topic(4, "Rye bread", 0.39)],
        },
        topic_vetoed: 0,
      };
    },
  });
  await page.getByRole("button", { name: "Chat" }).click();
  await page.getByTestId("composer").fill("how often to feed a starter");
  await page.getByTestId("composer").dispatchEvent("input");
  const panel = page.getByTestId("match-panel");
  await panel.locator('[data-lane="topic"] .hit').waitFor();
  assert.equal(await panel.locator('[data-lane="topic"] .hit').count(), 1, "the tail is not among the hits");

  const tail = page.getByTestId("topic-below-floor");
  assert.match(await tail.locator("summary").innerText(), /Below the floor \(2\)/);
  const rye = tail.getByRole("button", { name: /Rye bread/ });
  assert.equal(await rye.isVisible(), false, "the tail starts collapsed");
  // Opened from the keyboard, as a summary is.
  await tail.locator("summary").focus();
  await page.keyboard.press("Enter");
  await rye.waitFor();
  assert.match(await rye.innerText(), /0\.390/);
  assert.match(await tail.innerText(), /Starter homes and mortgages/);

  // A lane with nothing over its floor says so, and still shows its tail.
  assert.match(await page.getByTestId("subject-state").innerText(), /nothing passed the floor/);
  assert.match(await page.getByTestId("subject-below-floor").locator("summary").innerText(), /Below the floor \(1\)/);
  await page.close();
});

test("a topic lane that held back says why, and its passage waits in the tail", async () => {
  const held = "no passage of this library uses “martian” or “beehives”, 2 of the query's 4 words, so none is taken to discuss it";
  const { page } = await open(browser, url, {
    ...library,
    complete_mention: () => [],
    check_mentions: () => [],
    match_query: (args) => ({
      query: args.query,
      subject: { state: "ready", reason: null, hits: [], below_floor: [] },
      topic: {
        state: "ready", reason: null, hits: [],
        below_floor: [{
          doc: 13, title: "Keeping Bees Through Winter", locations: [], chunk: 47, heading_path: ["Varroa mites"],
          passage: "Treat for varroa after the honey harvest.", page: null, cosine: 0.644,
          scorer: "cosine:all-MiniLM-L6-v2@abc",
        }],
      },
      topic_vetoed: 12,
      // Mocks run in the page, so the sentence is written out here.
      topic_held_back: "no passage of this library uses “martian” or “beehives”, 2 of the query's 4 words, so none is taken to discuss it",
    }),
  });
  await page.getByRole("button", { name: "Chat" }).click();
  await page.getByTestId("composer").fill("varroa mites in Martian beehives");
  await page.getByTestId("composer").dispatchEvent("input");
  const why = page.getByTestId("topic-held-back");
  await why.waitFor();
  assert.equal(await why.innerText(), `Held back: ${held}.`);
  assert.equal(await page.getByTestId("topic-state").innerText(), "ready · held back");
  // A tail over the floor is not read as under it: the summary says why.
  assert.match(await page.getByTestId("topic-below-floor").locator("summary").innerText(), /Below the floor \(1\) · under this lane's floor, or held back/);
  await page.close();
});

test("files dropped on the window are added, and a watch's change reloads the list", async () => {
  const { page } = await open(browser, url, {
    first_paint: () => 1,
    list_documents: () => (window.__listed = (window.__listed ?? 0) + 1) > 1
      ? [{
          id: 5, title: "Dropped notes", kind: "text", source: "/drop/notes.txt", bytes: 10, chunks: 1,
          content_hash: "d", state: "indexed", broken_reason: null, broken_code: null, truncated_at_chunk: null,
          card_state: "ready", added_at: 1, synced_at: 1, source_missing: false,
          shown: { state: "indexed", detail: "" },
        }]
      : [],
    add_sources: () => ({ added: 1, unchanged: 0, failed: [], skipped: [], documents: [] }),
  });
  await page.getByTestId("empty-library").waitFor();
  await page.evaluate(() => window.__CARREL_EMIT__("drop-hover", { active: true }));
  await page.getByText("Drop files or folders to add them").waitFor();
  await page.evaluate(() => window.__CARREL_EMIT__("files-dropped", { paths: ["/drop/notes.txt", "/drop/more"] }));
  await page.locator("tr[data-doc='5']").waitFor();
  const added = await page.evaluate(() => window.__CALLS__.find(([c]) => c === "add_sources")[1].inputs);
  assert.deepEqual(added, ["/drop/notes.txt", "/drop/more"]);
  assert.equal(await page.getByText("Drop files or folders to add them").count(), 0, "the overlay goes away");
  await page.evaluate(() => window.__CARREL_EMIT__("library-changed", { added: 0, removed: 0, error: "source missing: /mnt/usb/notes" }));
  await page.getByRole("status").filter({ hasText: "could not be read: source missing" }).waitFor();
  await page.close();
});

test("a settings file that could not be read is shown with the parser's words and where the bad copy is", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    settings_problem: () => ({
      path: "/home/ana/.local/share/app.carrel/settings.json",
      error: "expected `,` or `}` at line 3 column 1",
      kept_at: "/home/ana/.local/share/app.carrel/settings.json.bad",
    }),
    get_settings: () => ({
      settings: { library_dir: null, threads: 1, jobs: null, worker_memory_mb: 2048 }, library_dir: "/home/ana/.local/share/app.carrel/library",
      library_from_env: false, models_dir: "/m", answerer: "extractive", version: "0.1.0", default_jobs: 1,
    }),
  });
  const banner = page.getByTestId("settings-problem");
  await banner.waitFor();
  const text = await banner.innerText();
  assert.match(text, /settings could not be read, so Carrel started with the default settings/);
  assert.match(text, /settings\.json: expected `,` or `}` at line 3 column 1/);
  assert.match(await page.getByTestId("settings-kept-at").innerText(), /kept as \/home\/ana\/\.local\/share\/app\.carrel\/settings\.json\.bad/);
  assert.equal(await page.getByTestId("doc-table").count(), 1, "the app works on the defaults meanwhile");
  await banner.getByRole("button", { name: "Dismiss" }).click();
  assert.equal(await page.getByTestId("settings-problem").count(), 0);
  // The Settings page keeps saying it, where the settings are chosen again.
  await page.locator('[data-nav="settings"]').click();
  await page.getByTestId("settings-problem").waitFor();
  assert.match(await page.getByTestId("settings-problem").innerText(), /settings\.json\.bad/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a watcher that stopped shows in Kept in sync with its reason, and starts again", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    list_watches: () => [
      { id: 1, target: "/home/ana/notes", kind: "folder", interval_s: 3600, include: [], exclude: [],
        allow_private: false, created_at: 1, synced_at: Math.floor(Date.now() / 1000) - 60, last_error: null },
    ],
    // Stopped before the page listened: the page asks, not only listens.
    watcher_health: () => (window.__restarted
      ? { state: "running" }
      : { state: "stopped", reason: "watching failed: the file watcher stopped" }),
    restart_watcher: () => {
      window.__restarted = true;
      return { state: "running" };
    },
  });
  const stopped = page.getByTestId("watcher-stopped");
  await stopped.waitFor();
  const text = await stopped.innerText();
  assert.match(text, /no longer kept in sync/);
  assert.match(text, /The watcher stopped: watching failed: the file watcher stopped/);
  assert.match(text, /restart Carrel/);
  assert.match(await page.getByTestId("watches").locator("summary").innerText(), /not syncing: the watcher stopped/);
  await page.getByTestId("restart-watcher").click();
  await page.waitForFunction(() => !document.querySelector('[data-testid="watcher-stopped"]'));
  assert.ok(await page.evaluate(() => window.__CALLS__.some(([c]) => c === "restart_watcher")));

  // A watcher that dies while the page is open says so by its event.
  await page.evaluate(() => window.__CARREL_EMIT__("watcher-stopped", { reason: "the watcher crashed: inotify went away" }));
  await stopped.waitFor();
  assert.match(await stopped.innerText(), /The watcher stopped: the watcher crashed: inotify went away/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("an answer across libraries shows the route and whose library each quote came from; the shelf lists them", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    complete_mention: () => [],
    check_mentions: () => [],
    explain_across: (args) => {
      if (!args.message.includes("@kb:")) return null;
      const lane = (hits) => ({ state: "ready", reason: null, hits, below_floor: [] });
      return {
        query: "who killed William",
        libraries: [
          { route: { kb: "skeptics", owner: "Ben Okafor", state: "answered", ms: 98 },
            lanes: { at: "here", view: {
              query: "who killed William", topic_vetoed: 0, topic_held_back: null,
              subject: lane([]),
              topic: lane([{ doc: 1, title: "Frankenstein: the creature is the monster", locations: [], chunk: 0,
                heading_path: ["Who is responsible"], passage: "The creature strangles William.", page: null,
                cosine: 0.61, scorer: "cosine:all-MiniLM-L6-v2@e89566ed498f" }]),
            } } },
          { route: { kb: "archive", owner: null, state: "failed", ms: 3,
            reason: "the hub at http://old-hub:7311/mcp could not be reached" }, lanes: null },
        ],
      };
    },
    list_libraries: () => [
      { dir: "/d/admirers", in_use: true, state: "ready", documents: 5,
        identity: { kb: "admirers", title: "Admirers' notes", owner: "Ada Moreau", description: "" } },
      { dir: "/d/skeptics", in_use: false, state: "ready", documents: 5,
        identity: { kb: "skeptics", title: "Skeptics' notes", owner: "Ben Okafor", description: "" } },
      { dir: "/d/gone", in_use: false, state: "unavailable", reason: "no library at /d/gone: the folder was moved or deleted" },
    ],
    chat_history: () => [{
      id: 9, asked_at: 1, message: "@kb:admirers @kb:skeptics Frankenstein",
      reply: {
        kind: "answer",
        answer: {
          question: "Frankenstein", answerer: "extractive", mentions: [], notes: [],
          route: [
            { kb: "admirers", owner: "Ada Moreau", state: "answered", ms: 120.4 },
            { kb: "skeptics", owner: "Ben Okafor", state: "answered", ms: 98.2 },
          ],
          context: [
            { n: 1, doc: 1, title: "Frankenstein: the creator is the monster", source: "/a/frankenstein.md", chunk: 2,
              heading_path: [], page: null, text: "Victor's neglect makes the murders.", found: { by: "topic_lane" },
              cosine: 0.6, scorer: "cosine:m@1", whole_document: false, kb: "admirers", owner: "Ada Moreau" },
            { n: 2, doc: 1, title: "Frankenstein: the creature chose to kill", source: "/s/frankenstein.md", chunk: 1,
              heading_path: [], page: null, text: "The creature knows exactly what murder is.", found: { by: "subject_lane" },
              cosine: 0.5, scorer: "cosine:m@1", whole_document: false, kb: "skeptics", owner: "Ben Okafor" },
          ],
          outcome: {
            state: "answered",
            statements: [
              { text: "Victor's neglect makes the murders.", citations: [1], check: { status: "verified" } },
              { text: "The creature knows exactly what murder is.", citations: [2], check: { status: "verified" } },
            ],
            check: { statements: 2, verified: 2, supported: 0, cited: 0, unsupported: 0, uncited: 0, invalid: 0 },
          },
        },
      },
    }],
  });
  // The Library page: whose library this is, and the others on the shelf.
  await page.getByTestId("library-name").waitFor();
  assert.match(await page.getByTestId("library-name").innerText(), /Admirers' notes · kept by Ada Moreau/);
  const shelf = page.getByTestId("shelf");
  assert.match(await shelf.locator("summary").innerText(), /3 libraries on the shelf · these documents are in admirers · 1 unavailable/);
  await shelf.locator("summary").click();
  assert.match(await shelf.locator("[data-kb='skeptics']").innerText(), /@kb:skeptics\s+Skeptics' notes\s+kept by Ben Okafor · 5 documents/);
  assert.match(await shelf.getByTestId("shelf-unavailable").innerText(), /unavailable: no library at \/d\/gone/);

  await page.getByRole("button", { name: "Chat" }).click();
  const turn = page.locator("[data-turn='9']");
  await turn.waitFor();
  assert.match(await turn.getByTestId("route").innerText(), /Asked: admirers \(Ada Moreau\): 120 ms · skeptics \(Ben Okafor\): 98 ms/);
  const from = await turn.getByTestId("from-library").allInnerTexts();
  assert.deepEqual(from, ["From admirers (owner: Ada Moreau)", "From skeptics (owner: Ben Okafor)"]);
  assert.deepEqual(await turn.getByTestId("passage-library").allInnerTexts(), ["admirers · Ada Moreau", "skeptics · Ben Okafor"]);
  // A passage of the library in use opens; one of another library is never
  // opened as the same id in this one.
  assert.equal(await turn.getByTestId("passage-link").count(), 1);
  assert.match(await turn.getByTestId("passage-elsewhere").getAttribute("title"), /in library skeptics/);
  assert.ok(await turn.getByTestId("citation").nth(1).isDisabled());
  // Typing a scoped question: the panel explains it library by library, as
  // the engine's parser and lanes said, and never runs the library in use's
  // lanes on it; a hit of another library does not open as the same id here.
  await page.getByTestId("composer").fill("@kb:skeptics @kb:archive who killed William");
  const asked = page.getByTestId("across-library");
  await asked.nth(1).waitFor();
  assert.deepEqual((await page.getByTestId("across-route").allInnerTexts()).map((t) => t.replace(/\s+/g, " ")), [
    "@kb:skeptics kept by Ben Okafor · answered in 98 ms",
    "@kb:archive owner not known · failed: the hub at http://old-hub:7311/mcp could not be reached",
  ]);
  assert.match(await asked.nth(0).getByTestId("topic-state").innerText(), /^ready$/);
  assert.match(await asked.nth(0).locator(".hit").first().innerText(), /Frankenstein: the creature is the monster/);
  assert.ok(await asked.nth(0).locator(".hit").first().isDisabled());
  assert.equal(await asked.nth(1).locator(".lane").count(), 0, "a library that failed shows no lanes");
  assert.match(await page.getByTestId("match-query").innerText(), /for “who killed William” in 2 libraries, each asked on its own/);
  assert.equal(await page.evaluate(() => window.__CALLS__.filter(([c]) => c === "match_query").length), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a library another machine shares is added by URL, name and token; a hub that is down shows unreachable and when it last answered", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    list_libraries: () => [
      { dir: "/d/lib", in_use: true, state: "ready", documents: 3,
        identity: { kb: "default", title: "Default library", owner: null, description: "" } },
      { url: "http://old-hub:7311/mcp", in_use: false, state: "unreachable", kb: "archive",
        reason: "the hub at http://old-hub:7311/mcp could not be reached: connection refused",
        last_ok: Math.floor(Date.now() / 1000) - 7200 },
    ],
    add_remote_library: (args) => {
      window.__remote = (window.__remote ?? []).concat([args]);
      if (args.token !== "carrel_good") {
        throw { kind: "engine", message: "the hub at http://ben:7311/mcp answered: it refused the read token (HTTP 401): ask the library's owner for a token that opens it" };
      }
      return [
        { dir: "/d/lib", in_use: true, state: "ready", documents: 3,
          identity: { kb: "default", title: "Default library", owner: null, description: "" } },
        { url: "http://ben:7311/mcp", in_use: false, state: "ready", documents: 5,
          identity: { kb: "skeptics", title: "Skeptics' notes", owner: "Ben Okafor", description: "" } },
      ];
    },
  });
  const shelf = page.getByTestId("shelf");
  await shelf.waitFor();
  // Open by itself: a library on the shelf cannot be reached.
  assert.match(await shelf.getByTestId("shelf-unreachable").innerText(),
    /unreachable \(it last answered 2 h ago\): the hub at http:\/\/old-hub:7311\/mcp could not be reached: connection refused/);
  await page.getByTestId("remote-url").fill("http://ben:7311/mcp");
  await page.getByTestId("remote-kb").fill("skeptics");
  await page.getByTestId("remote-token").fill("carrel_wrong");
  await page.getByTestId("remote-add").click();
  await page.getByText("The library was not added").waitFor();
  assert.match(await shelf.innerText(), /refused the read token \(HTTP 401\)/);
  assert.equal(await page.getByTestId("remote-url").inputValue(), "http://ben:7311/mcp", "nothing typed is lost");
  await page.getByTestId("remote-token").fill("carrel_good");
  await page.getByTestId("remote-add").click();
  await shelf.locator("[data-kb='skeptics']").waitFor();
  assert.match(await shelf.locator("[data-kb='skeptics']").innerText(), /@kb:skeptics\s+Skeptics' notes\s+kept by Ben Okafor · 5 documents\s+on ben:7311/);
  assert.equal(await page.getByText("The library was not added").count(), 0);
  assert.deepEqual(await page.evaluate(() => window.__remote.map((a) => [a.url, a.kb])),
    [["http://ben:7311/mcp", "skeptics"], ["http://ben:7311/mcp", "skeptics"]]);
  assert.deepEqual(errors, []);
  await page.close();
});

test("a team library on a PostgreSQL server shows its server; one whose server is down is unreachable, named as when it last answered", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    list_libraries: () => [
      { dir: "/d/lib", server: null, in_use: true, state: "ready", documents: 3,
        identity: { kb: "default", title: "Default library", owner: null, description: "" } },
      { dir: "/d/team", server: "db.example:5432/team", in_use: false, state: "ready", documents: 412,
        embedder: "all-MiniLM-L6-v2", identity: { kb: "team", title: "Team notes", owner: "Ana", description: "" } },
      { dir: "/d/ops", server: "ops-db:5432/ops", in_use: false, state: "unreachable", kb: "ops",
        reason: "the PostgreSQL library at ops-db:5432/ops failed: error connecting to server: Connection refused",
        last_ok: Math.floor(Date.now() / 1000) - 3 * 86400 },
    ],
  });
  const shelf = page.getByTestId("shelf");
  await shelf.waitFor();
  assert.match(await shelf.locator("[data-kb='team']").innerText(),
    /@kb:team\s+Team notes\s+kept by Ana · 412 documents · all-MiniLM-L6-v2\s+PostgreSQL db.example:5432\/team/);
  const ops = shelf.locator("[data-state='unreachable']");
  assert.match(await ops.innerText(),
    /@kb:ops\s+unreachable \(it last answered 3 d(ays)? ago\): the PostgreSQL library at ops-db:5432\/ops failed: .*Connection refused\s+PostgreSQL ops-db:5432\/ops/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("additions go into the library chosen on the shelf, remembered; another library's folders are added once, never watched", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    list_libraries: () => [
      { dir: "/d/lib", in_use: true, state: "ready", documents: 3,
        identity: { kb: "default", title: "Default library", owner: null, description: "" } },
      { dir: "/d/research", in_use: false, state: "ready", documents: 0,
        identity: { kb: "research", title: "Research", owner: "Ada", description: "" } },
      { url: "http://ben:7311/mcp", in_use: false, state: "ready", documents: 5,
        identity: { kb: "skeptics", title: "Skeptics' notes", owner: "Ben Okafor", description: "" } },
    ],
    add_sources: (args) => ({ added: 2, unchanged: 0, failed: [], skipped: [], documents: [], cancelled: null }),
  });
  const into = page.getByTestId("add-into");
  await into.waitFor();
  // Libraries on this machine only: a library on another hub takes no files.
  assert.deepEqual(await into.locator("option").allInnerTexts(), ["default (in use)", "research"]);
  await into.selectOption("research");
  await page.getByTestId("source-input").fill("/papers");
  await page.getByTestId("source-input").press("Enter");
  await page.getByTestId("added-into").waitFor();
  assert.match(await page.getByTestId("ingest-report").innerText(), /Added 2 to research \(not listed here/);
  const sent = await page.evaluate(() => window.__CALLS__.filter(([c]) => c === "add_sources").map(([, a]) => [a.inputs, a.into]));
  assert.deepEqual(sent, [[["/papers"], "research"]]);
  // Remembered: after a reload the choice stands.
  await page.reload();
  await page.getByTestId("add-into").waitFor();
  assert.equal(await page.getByTestId("add-into").inputValue(), "research");
  await page.getByTestId("add-into").selectOption("");
  await page.getByTestId("source-input").fill("/more");
  await page.getByTestId("source-input").press("Enter");
  await page.getByTestId("ingest-report").waitFor();
  assert.equal(await page.getByTestId("added-into").count(), 0);
  const last = await page.evaluate(() => window.__CALLS__.filter(([c]) => c === "add_sources").map(([, a]) => a.into));
  assert.deepEqual(last, [null]);
  assert.deepEqual(errors, []);
  await page.close();
});

test("Settings → Sources shows each source's skip reason as the engine words it, refuses with its sentence, and asks for the exact acknowledgement", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    get_settings: () => ({
      settings: { library_dir: null, threads: 1, jobs: null, worker_memory_mb: 2048 }, library_dir: "/l",
      library_from_env: false, models_dir: "/m", answerer: "extractive", version: "0.1.0", default_jobs: 1,
    }),
    doctor: () => { throw { kind: "internal", message: "not under test" }; },
    list_foreign_sources: () => ({
      limit_labels: [
        { store: "chroma", metric: "cosine", label: "Maximum distance" },
        { store: "pgvector", metric: "cosine", label: "Maximum distance" },
        { store: "pgvector", metric: "inner_product", label: "Minimum score" },
      ],
      note: null,
      sources: [{
        name: "crm", at: { kind: "chroma", url: "http://127.0.0.1:8000", tenant: "t", database: "d", collection: "notes" },
        declared: { metric: "cosine", dimensions: 384, text_key: "#document", scope: null, limit: 0.6, embedder: "all-MiniLM-L6-v2" },
        enabled: true,
        discovery: { metric: "cosine", dimensions: 384, keys: ["#document", "client"], points: 4, read_at: 1 },
        acknowledgement: null, last_used: null,
        skip_reason: { gate: "no_cross_encoder", why: "no cross-encoder is installed" },
        status: "skipped: no cross-encoder is installed; a foreign hit is never admitted unranked, so the source is not asked",
        change: "`make models` installs carrel-ce-v2 into the models folder",
        limit_label: "Maximum distance",
        acknowledge_sentence: "Source crm has no scope: any of its points may be quoted to anyone who asks this library. I accept this.",
      }],
    }),
    acknowledge_foreign_source: ({ name, by }) => { throw { kind: "internal", message: `ack ${name} by ${by}` }; },
    about: () => ({
      version: "0.1.0", commit: "4d1d7da0b2c3", models_dir: "/usr/lib/Carrel/models", models_from: "installed",
      models_found: "installed with the package",
      files: [
        { what: "onnx runtime", path: "/usr/lib/Carrel/models/onnxruntime/libonnxruntime.so.1.24.4", sha256_12: "0f1e2d3c4b5a", error: null },
        { what: "embedder", path: "/usr/lib/Carrel/models/all-MiniLM-L6-v2/model.onnx", sha256_12: "8199be6f699a", error: null },
        { what: "cross-encoder", path: "/usr/lib/Carrel/models/carrel-ce-v2/model.onnx", sha256_12: null, error: "No such file or directory (os error 2)" },
      ],
    }),
  });
  await page.locator('[data-nav="settings"]').click();
  const row = page.locator('[data-testid="source"][data-name="crm"]');
  await row.waitFor();
  // Enabled, and still not read: the row says so in the engine's words.
  assert.equal(await row.getAttribute("data-read"), "false");
  assert.equal(
    await row.getByTestId("source-status").innerText(),
    "skipped: no cross-encoder is installed; a foreign hit is never admitted unranked, so the source is not asked",
  );
  assert.equal(await row.getByTestId("source-change").innerText(), "To change it: `make models` installs carrel-ce-v2 into the models folder");
  assert.equal(await row.getByTestId("limit-label").innerText(), "Maximum distance");
  assert.match(await row.getByTestId("discovered").innerText(), /keys #document, client/);
  // The acknowledgement dialog states exactly what is accepted.
  await row.getByTestId("acknowledge").click();
  assert.equal(
    await page.getByTestId("ack-sentence").innerText(),
    "Source crm has no scope: any of its points may be quoted to anyone who asks this library. I accept this.",
  );
  await page.locator("#ack-by").fill("Ana");
  await page.getByRole("button", { name: "I accept" }).click();
  await page.getByRole("alert").filter({ hasText: "ack crm by Ana" }).waitFor();
  // About: the version, the commit, where the models were found, and each
  // model file's fingerprint, or why it could not be read.
  const about = page.getByTestId("about");
  await about.getByTestId("about-version").waitFor();
  assert.equal(await about.getByTestId("about-version").innerText(), "Carrel 0.1.0 (commit 4d1d7da0b2c3)");
  const aboutText = await about.innerText();
  assert.match(aboutText, /installed with the package/);
  assert.match(aboutText, /sha256 8199be6f699a/);
  assert.match(aboutText, /unreadable: No such file/);
  // The add form's limit is labelled as the engine names it for the store
  // and metric chosen: a pgvector inner product is a minimum score.
  await page.getByTestId("add-source").click();
  assert.match(await page.locator('label[for="src-limit"]').innerText(), /^Maximum distance/);
  await page.locator("#src-store").selectOption("pgvector");
  assert.equal(await page.locator("#src-collection").count(), 0);
  await page.locator("#src-table").waitFor();
  assert.match(await page.locator("#src-url").inputValue(), /^postgresql:/);
  assert.match(await page.locator('label[for="src-limit"]').innerText(), /^Maximum distance/);
  await page.locator("#src-metric").selectOption("inner_product");
  assert.match(await page.locator('label[for="src-limit"]').innerText(), /^Minimum score/);
  assert.deepEqual(errors, []);
  await page.close();
});

test("the match panel lists the foreign sources' hits under Elsewhere, apart from the lanes, with each source's outcome in the engine's words", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    complete_mention: () => [],
    check_mentions: () => [],
    match_query: (args) => ({
      query: args.query,
      subject: { state: "ready", reason: null, hits: [], below_floor: [] },
      topic: { state: "ready", reason: null, hits: [], below_floor: [] },
      topic_vetoed: 0,
      explain: null,
    }),
    ask_elsewhere: () => ({
      floor: 1.0, ms: 140,
      hits: [{
        source: "crm", scope: { key: "client", value: "acme" }, point: "acme-1",
        text: "Feeding a sourdough starter: discard half, then feed equal weights of flour and water.",
        own_score: 0.21, metric: "cosine", direction: "lower_is_closer", rerank: 3.12,
        scorer: "cross-encoder:carrel-ce-v2@5a2511219333",
      }],
      sources: [
        { source: "crm", scope: { key: "client", value: "acme" }, outcome: { state: "read", returned: 10, within_limit: 10, admitted: 1, ms: 95 },
          status: "read in 95 ms: 10 points, 10 within the limit, 1 admitted" },
        { source: "wiki", scope: null, outcome: { state: "unavailable", reason: "the server did not answer in time" },
          status: "unavailable: the server did not answer in time" },
      ],
    }),
  });
  await page.getByRole("button", { name: "Chat" }).click();
  const box = page.getByTestId("composer");
  await box.fill("how do I feed a starter");
  await box.dispatchEvent("input");
  const elsewhere = page.getByTestId("elsewhere");
  await elsewhere.waitFor();
  assert.equal(await page.locator("[data-lane]").count(), 2, "the two lanes stay two; Elsewhere is its own list");
  const hit = elsewhere.getByTestId("elsewhere-hit");
  assert.match(await hit.innerText(), /crm · client=acme/);
  assert.match(await hit.innerText(), /ce 3\.12 · its own cosine distance 0\.210/);
  const sources = elsewhere.getByTestId("elsewhere-source");
  assert.equal(await sources.nth(0).innerText(), "crm: read in 95 ms: 10 points, 10 within the limit, 1 admitted");
  assert.equal(await sources.nth(1).innerText(), "wiki: unavailable: the server did not answer in time");
  assert.deepEqual(errors, []);
  await page.close();
});

test("Settings → Answers: a server is chosen with its URL and model, saved as typed, and one without them is refused with its reason", async () => {
  const { page, errors } = await open(browser, url, {
    ...library,
    get_settings: () => ({
      settings: { library_dir: null, threads: 1, jobs: null, worker_memory_mb: 2048, answerer: "auto", llm_url: null, llm_model: null, llm_api_key: null },
      library_dir: "/l", library_from_env: false, models_dir: "/m", answerer: "local:qwen2.5-coder-0.5b-instruct", version: "0.1.0", default_jobs: 1,
    }),
    set_settings: ({ settings }) => {
      if (settings.answerer === "server" && !settings.llm_model) {
        throw { kind: "bad_input", message: "a server answers only with its URL (http:// or https://, up to the API version, e.g. http://localhost:8080/v1) and a model name" };
      }
      return {
        settings, library_dir: "/l", library_from_env: false, models_dir: "/m",
        answerer: `llm:${settings.llm_model} at ${settings.llm_url}`, version: "0.1.0", default_jobs: 1,
      };
    },
    doctor: () => { throw { kind: "internal", message: "not under test" }; },
    about: () => { throw { kind: "internal", message: "not under test" }; },
    list_foreign_sources: () => ({ limit_labels: [], note: null, sources: [] }),
  });
  await page.locator('[data-nav="settings"]').click();
  await page.getByTestId("answerer-in-use").waitFor();
  assert.equal(await page.getByTestId("answerer-in-use").innerText(), "local:qwen2.5-coder-0.5b-instruct");
  // The server's fields appear only when a server is chosen.
  assert.equal(await page.getByTestId("llm-url").count(), 0);
  await page.getByTestId("answerer").selectOption("server");
  await page.getByTestId("llm-url").fill("http://localhost:8080/v1");
  await page.getByRole("button", { name: "Save and reopen" }).click();
  await page.getByText("Not saved").waitFor();
  assert.match(await page.locator(".settings-form").first().innerText(), /a server answers only with its URL/);
  await page.getByTestId("llm-model").fill("qwen2.5-7b");
  await page.getByTestId("llm-key").fill("sk-local");
  await page.getByRole("button", { name: "Save and reopen" }).click();
  await page.getByText("Saved.").waitFor();
  const saved = (await page.evaluate(() => window.__CALLS__))
    .filter(([cmd]) => cmd === "set_settings").map(([, a]) => a.settings);
  assert.deepEqual(
    saved.at(-1),
    { library_dir: null, threads: 1, jobs: null, worker_memory_mb: 2048, answerer: "server", llm_url: "http://localhost:8080/v1", llm_model: "qwen2.5-7b", llm_api_key: "sk-local" },
  );
  assert.equal(await page.getByTestId("answerer-in-use").innerText(), "llm:qwen2.5-7b at http://localhost:8080/v1");
  assert.deepEqual(errors, []);
  await page.close();
});
