// The real window with the real built-in model (issue 38): a question is
// answered in written sentences that appear as they are written, after the
// passages they read, and each finished sentence carries Carrel's citation
// or "not found in your documents". The app runs with CARREL_ANSWERER=local
// (`make e2e` sets extractive for the other journeys), so this file runs
// its own tauri-driver, on other ports. Run by `make e2e`. While it writes,
// the match panel answers what is typed next.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { openSession, removeWhenQuiet, startDriver, stopProcess, until as harnessUntil } from "./harness.mjs";

const repo = resolve(import.meta.dirname, "../../..");
const app = process.env.CARREL_APP_BIN;
const driverBin = process.env.TAURI_DRIVER ?? "tauri-driver";
const shots = process.env.CARREL_SCREENSHOTS ?? join(repo, "target/e2e-screens");
assert.ok(app, "CARREL_APP_BIN must name the built app");

const PORT = 4448;
const home = mkdtempSync(join(tmpdir(), "carrel-e2e-model-"));
let driver, browser;

const $t = (id) => browser.$(`[data-testid="${id}"]`);

const until = (what, fn, timeout) => harnessUntil(browser, join(home, "data", "app.carrel"), what, fn, timeout);

before(async () => {
  mkdirSync(shots, { recursive: true });
  mkdirSync(join(home, "one"));
  cpSync(join(repo, "fixtures/docs/sourdough-starter.md"), join(home, "one", "sourdough-starter.md"));
  driver = await startDriver(driverBin, PORT, {
    ...process.env,
    CARREL_LIBRARY: join(home, "library"),
    XDG_DATA_HOME: join(home, "data"),
    CARREL_ANSWERER: "local",
  }, join(shots, "model-driver.log"));
  browser = await openSession(PORT, app);
});

after(async () => {
  await browser?.deleteSession().catch(() => {});
  await stopProcess(driver);
  await removeWhenQuiet(home);
});

test("the built-in model's answer appears as it is written, after its passages, and each sentence is cited by Carrel or not found", async () => {
  await (await $t("source-input")).setValue(join(home, "one", "sourdough-starter.md"));
  await browser.keys("Enter");
  await until("the sourdough document", async () => /Sourdough/i.test(await (await $t("doc-table")).getText()), 240000);

  await (await browser.$('[data-nav="chat"]')).click();
  const box = await $t("composer");
  await box.waitForDisplayed();
  // What the page shows while the answer is written, recorded as it changes:
  // whether the passages were listed, and the longest written text seen.
  await browser.execute(() => {
    const seen = { passagesFirst: false, text: "" };
    window.__live = seen;
    new MutationObserver(() => {
      const writing = document.querySelector('[data-testid="answer-writing"]');
      if (!writing) return;
      const text = writing.querySelector('[data-testid="live-text"]')?.textContent ?? "";
      if (!text && /Reading \d+ passage/.test(writing.textContent)) seen.passagesFirst = true;
      if (text.length > seen.text.length) seen.text = text;
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await box.click();
  await box.addValue("What is the grey liquid on top of a starter called?");
  await (await $t("send")).click();
  const answer = await $t("answer");
  await answer.waitForDisplayed({ timeout: 120000 });
  await browser.saveScreenshot(join(shots, "m01-answer-from-the-built-in-model.png"));

  const live = await browser.execute(() => window.__live);
  assert.ok(live.passagesFirst, "the passages were listed before a word was written");
  assert.ok(live.text.replace("▍", "").trim().length > 0, "written text was shown before the answer was done");
  assert.equal(await answer.getAttribute("data-outcome"), "answered", await answer.getText());
  const text = await answer.getText();
  assert.match(text, /local:qwen2\.5-coder-0\.5b-instruct/);
  // Every sentence that claims something ends in Carrel's mark: a
  // citation when a passage holds it, else "not found", never both.
  const statements = await answer.$$(".statement");
  assert.ok(statements.length > 0, text);
  for (const s of statements) {
    const check = await s.getAttribute("data-check");
    const cited = (await s.$$('[data-testid="citation"]')).length > 0;
    const notFound = (await s.$$('[data-testid="not-found"]')).length > 0;
    const said = `${check}: ${await s.getText()}`;
    if (check === "verified" || check === "supported") assert.ok(cited && !notFound, said);
    else if (check === "unsupported") assert.ok(notFound && !cited, said);
    else assert.equal(check, "no_claim", said);
  }
});

test("while the model writes, the match panel answers what is typed next", async () => {
  const box = await $t("composer");
  await box.click();
  await box.addValue("How should I feed a sourdough starter?");
  await (await $t("send")).click();
  const writing = async () => (await browser.$$('[data-testid="answer-writing"]')).length > 0;
  await until("the answer being written", writing, 60000);
  // The library is not held while the model writes: what is typed next is
  // matched at once, the answer still being written beside it.
  await box.click();
  await box.addValue("hooch on a starter");
  await until("the panel on what was typed", async () => /“hooch on a starter”/.test(await (await $t("match-query")).getText()), 60000);
  const stillWriting = await writing();
  await browser.saveScreenshot(join(shots, "m02-panel-while-the-model-writes.png"));
  assert.ok(stillWriting, "the match panel answered only after the model had finished");
  await until("the answer written", async () => !(await writing()), 180000);
});
