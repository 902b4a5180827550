// Real-window journeys through faults (issue 13): a settings file that does
// not parse, a watched folder of hostile files, an LLM that takes its time,
// and a watcher that dies. The app is launched with its own environment
// (a loopback LLM, then a fault point), so this file runs its own
// tauri-driver, on other ports than app.test.mjs. Run by `make e2e`.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { appLog as harnessLog, openSession, removeWhenQuiet, startDriver, stopProcess, until as harnessUntil } from "./harness.mjs";

const repo = resolve(import.meta.dirname, "../../..");
const app = process.env.CARREL_APP_BIN;
const driverBin = process.env.TAURI_DRIVER ?? "tauri-driver";
const shots = process.env.CARREL_SCREENSHOTS ?? join(repo, "target/e2e-screens");
assert.ok(app, "CARREL_APP_BIN must name the built app");
// The installed package's app finds its own models (make package-test).
assert.ok(process.env.CARREL_MODELS || process.env.CARREL_INSTALLED, "CARREL_MODELS must name the installed models (make models)");

const PORT = 4446;
const home = mkdtempSync(join(tmpdir(), "carrel-e2e-faults-"));
const dataDir = join(home, "data", "app.carrel");
const hostile = join(home, "hostile");
/** A settings file cut off mid-write. */
const BAD_SETTINGS = '{\n  "library_dir": null,\n  "threads": 1,\n';
let driver, browser, llm;

const $t = (id) => browser.$(`[data-testid="${id}"]`);
/** Whether the last question in Chat still shows that it waits for its answer. */
const waiting = () =>
  browser.execute(() => [...document.querySelectorAll(".turn")].at(-1)?.querySelector('[data-testid="answer-writing"]') != null);

async function shot(name) {
  await browser.saveScreenshot(join(shots, `${name}.png`));
}

const appLog = (lines) => harnessLog(dataDir, lines);
const until = (what, fn, timeout) => harnessUntil(browser, dataDir, what, fn, timeout);

/**
 * A loopback OpenAI-compatible server that answers POST /v1/chat/completions
 * with fixtures/llm/cited.json, but only once the test releases it (or after
 * 90 s): the test decides how long the answer is pending, not a clock.
 */
async function slowLlm() {
  const reply = readFileSync(join(repo, "fixtures/llm/cited.json"));
  const state = { requests: [], answered: 0 };
  let release;
  const released = new Promise((r) => (release = r));
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404).end();
        return;
      }
      state.requests.push(JSON.parse(body));
      await Promise.race([released, new Promise((r) => setTimeout(r, 90000))]);
      res.writeHead(200, { "content-type": "application/json" }).end(reply);
      state.answered++;
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { state, server, release, url: `http://127.0.0.1:${server.address().port}/v1` };
}

/** tauri-driver with `env` on top of ours: the app it starts inherits it. */
function driverWith(env) {
  return startDriver(driverBin, PORT, {
    ...process.env,
    CARREL_LIBRARY: join(home, "library"),
    XDG_DATA_HOME: join(home, "data"),
    NO_PROXY: "127.0.0.1,localhost",
    ...env,
  }, join(shots, "faults-driver.log"));
}

function launchApp() {
  return openSession(PORT, app);
}

async function stopApp() {
  await browser?.deleteSession().catch(() => {});
  browser = null;
  await stopProcess(driver);
  driver = null;
}

before(async () => {
  mkdirSync(shots, { recursive: true });
  writeFileSync(join(shots, "faults-driver.log"), "");
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(dataDir, "settings.json"), BAD_SETTINGS);
  cpSync(join(repo, "fixtures/hostile"), hostile, { recursive: true });
  execFileSync("mkfifo", [join(hostile, "named-pipe.md")]);
  mkdirSync(join(home, "one"));
  cpSync(join(repo, "fixtures/docs/sourdough-starter.md"), join(home, "one", "sourdough-starter.md"));
  llm = await slowLlm();
  driver = await driverWith({ CARREL_LLM_URL: llm.url, CARREL_LLM_MODEL: "qwen2.5-0.5b-instruct" });
  browser = await launchApp();
});

after(async () => {
  await stopApp();
  llm?.release();
  llm?.server.close();
  writeFileSync(join(shots, "faults-app.log"), appLog(100000));
  await removeWhenQuiet(home);
});

test("a corrupt settings.json is shown as an error and kept aside as settings.json.bad", async () => {
  const box = await $t("settings-problem");
  await box.waitForDisplayed({ timeout: 30000 });
  const text = await box.getText();
  assert.match(text, /settings could not be read, so Carrel started with the default settings/);
  assert.match(text, /settings\.json: EOF while parsing .* at line \d+ column \d+/);
  const bad = join(dataDir, "settings.json.bad");
  assert.match(await (await $t("settings-kept-at")).getText(), /kept as .*app\.carrel\/settings\.json\.bad/);
  assert.equal(readFileSync(bad, "utf8"), BAD_SETTINGS, "the bad copy is the user's file, unchanged");
  assert.ok(!existsSync(join(dataDir, "settings.json")), "nothing can save over it");
  await (await $t("empty-library")).waitForDisplayed({ timeout: 30000 });
  await shot("f01-settings-unreadable");
});

test("a watched folder of hostile files: every file is listed, indexed or broken with its reason, and the app stays up", async () => {
  assert.equal(await (await $t("keep-in-sync")).isSelected(), true, "Keep in sync is on");
  await (await $t("source-input")).setValue(hostile);
  await browser.keys("Enter");
  await (await $t("ingest-report")).waitForDisplayed({ timeout: 240000 });
  const names = readdirSync(hostile);
  const rows = await browser.execute(() =>
    [...document.querySelectorAll("tbody tr[data-doc]")].map((r) => ({ state: r.dataset.state, text: r.textContent })),
  );
  assert.equal(rows.length, names.length, `every file is listed: ${JSON.stringify(rows)}`);
  for (const name of names) {
    const row = rows.find((r) => r.text.includes(name));
    assert.ok(row, `${name} is listed`);
    if (row.state === "broken") {
      const reason = await browser.execute(
        (n) => [...document.querySelectorAll('tr[data-state="broken"]')]
          .find((r) => r.textContent.includes(n))?.querySelector('[data-testid="state-detail"]')?.textContent ?? "",
        name,
      );
      assert.ok(reason.trim().length > 0, `${name} is broken with a reason`);
    } else {
      assert.match(row.state, /^(indexed|truncated)$/, `${name}: ${row.text}`);
    }
  }
  assert.match(rows.find((r) => r.text.includes("decompression-bomb.pdf")).text, /decompression bomb/);
  assert.match(rows.find((r) => r.text.includes("named-pipe.md")).text, /FIFO/);
  assert.equal(rows.find((r) => r.text.includes("ordinary.md")).state, "indexed");
  assert.match(await (await $t("watches")).getText(), /Kept in sync: 1 source/);
  await shot("f02-library-hostile");

  // The watcher has walked the hostile folder too, and still follows it.
  writeFileSync(join(hostile, "after-the-hostile-ones.md"), "# Written after the hostile files\n\nThe watcher is still alive.\n");
  await until("the watcher to list a file saved after the hostile ones", async () =>
    /Written after the hostile files/.test(await (await $t("doc-table")).getText()), 60000);
  // And the window still answers: another page, the engine's own check.
  await (await browser.$('[data-nav="settings"]')).click();
  await until("the database check", async () => /integrity ok/.test(await (await $t("doctor")).getText()), 30000);
  await (await browser.$('[data-nav="library"]')).click();
  await (await $t("doc-table")).waitForDisplayed();
});

test("while an LLM writes the answer, a document opens and the match panel answers; then the answer comes, cited", async () => {
  await (await $t("source-input")).setValue(join(home, "one", "sourdough-starter.md"));
  await browser.keys("Enter");
  await until("the sourdough document", async () => /Sourdough/i.test(await (await $t("doc-table")).getText()), 240000);

  await (await browser.$('[data-nav="chat"]')).click();
  const box = await $t("composer");
  await box.waitForDisplayed();
  await box.click();
  await box.addValue("@sourdough");
  await until("a mention option", async () => (await browser.$$(".mention-option")).length > 0, 10000);
  await browser.keys("Enter");
  await (await $t("mention-chip")).waitForDisplayed({ timeout: 5000 });
  await box.addValue("how do I feed my starter?");
  await (await $t("send")).click();
  await until("the question to reach the LLM", async () => llm.state.requests.length > 0, 60000);
  const asked = llm.state.requests[0];
  assert.equal(asked.model, "qwen2.5-0.5b-instruct");
  assert.match(JSON.stringify(asked.messages), /\[2\]/, "the passages went with the question");
  assert.ok(await waiting(), "the question waits for its answer");

  // A document opens and shows its text meanwhile.
  await (await browser.$('[data-nav="library"]')).click();
  await (await $t("doc-search")).setValue("sourdough");
  const title = await browser.$("tbody tr[data-doc] button.title");
  await title.waitForDisplayed({ timeout: 10000 });
  await title.click();
  const text = await $t("doc-text");
  await text.waitForDisplayed({ timeout: 10000 });
  assert.match(await text.getText(), /starter/i);
  assert.equal(llm.state.answered, 0, "the document opened before the answer came");
  await shot("f03-document-while-answering");

  // The match panel answers typing meanwhile.
  await (await browser.$('[data-nav="chat"]')).click();
  await (await $t("composer")).click();
  await (await $t("composer")).addValue("feeding schedule for a starter");
  await until("the panel to match what was typed", async () =>
    /feeding schedule for a starter/.test(await (await $t("match-query")).getText().catch(() => "")), 30000);
  assert.match(await (await $t("subject-state")).getText(), /^(ready|weak|unavailable|failed)/);
  assert.match(await (await $t("topic-state")).getText(), /^(ready|weak|unavailable|failed)/);
  await until("the sourdough document in a lane", async () =>
    /Sourdough/i.test(await (await $t("match-panel")).getText()), 30000);
  assert.ok(await waiting(), "the question still waits for the LLM");
  assert.equal(llm.state.answered, 0, "the panel answered before the LLM did");
  await shot("f04-match-panel-while-answering");

  llm.release();
  const answer = await $t("answer");
  await answer.waitForDisplayed({ timeout: 60000 });
  assert.equal(llm.state.answered, 1);
  assert.equal(await answer.getAttribute("data-outcome"), "answered");
  const cites = await browser.$$('[data-testid="citation"]');
  assert.ok(cites.length >= 2, "each statement shows its citation mark");
  assert.equal(await cites[0].getText(), "[2]");
  assert.match(await answer.getText(), /discard half of it and feed it again with equal weights of flour and water/);
  assert.match(await answer.getText(), /llm:qwen2\.5-0\.5b-instruct at http:\/\/127\.0\.0\.1:/);
  await shot("f05-answer-from-llm");
});

test("a watcher that dies shows on the Library page, with its reason and what to do", async () => {
  await stopApp();
  // The same library, started again with the watcher's event channel
  // closing at a fault point, as when notify's own thread dies.
  driver = await driverWith({ FAILPOINTS: "watch::events_lost=return" });
  browser = await launchApp();
  const stopped = await $t("watcher-stopped");
  await stopped.waitForDisplayed({ timeout: 60000 });
  const text = await stopped.getText();
  assert.match(text, /no longer kept in sync/);
  assert.match(text, /The watcher stopped: watching failed: the file watcher stopped/);
  assert.match(text, /restart Carrel/);
  assert.match(await (await $t("watches")).getText(), /not syncing: the watcher stopped/);
  // The app started on its library of hostile files, and the set-aside
  // settings stay where they were (settings.json is gone, so no new banner).
  assert.ok((await browser.$$("tbody tr[data-doc]")).length >= 6);
  assert.ok(existsSync(join(dataDir, "settings.json.bad")));
  assert.equal((await browser.$$('[data-testid="settings-problem"]')).length, 0);
  await shot("f06-watcher-stopped");
});
