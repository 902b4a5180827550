// The upgrade journeys of `make package-test`: the installed app, driven in a
// real window, on the user's default library location under a fresh HOME.
//   PHASE=before  the previous release's app: the user asks a question,
//                 saves a setting and picks the dark theme.
//   PHASE=after   this release's app, installed over it: the library, the
//                 chat, the setting and the theme are all still there.
// Each phase saves its screenshots in $CARREL_SCREENSHOTS.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openSession, startDriver, stopProcess } from "../e2e/harness.mjs";

const phase = process.env.PHASE;
const shots = process.env.CARREL_SCREENSHOTS;
const version = process.env.CARREL_VERSION;
assert.ok(phase === "before" || phase === "after", "PHASE must be before or after");
assert.ok(shots && version, "CARREL_SCREENSHOTS and CARREL_VERSION must be set");
const QUESTION = "how often should I feed my sourdough starter";
let driver, browser;

before(async () => {
  mkdirSync(shots, { recursive: true });
  const log = join(shots, `driver-${phase}.log`);
  writeFileSync(log, "");
  driver = await startDriver(process.env.TAURI_DRIVER, 4644, process.env, log);
  browser = await openSession(4644, "/usr/bin/carrel-app");
});

after(async () => {
  await browser?.deleteSession().catch(() => {});
  await stopProcess(driver);
});

const $t = (id) => browser.$(`[data-testid="${id}"]`);
const shot = (name) => browser.saveScreenshot(join(shots, `${phase}-${name}.png`));

async function settings() {
  await (await browser.$('[data-nav="settings"]')).click();
  const about = await $t("about-version");
  await about.waitForExist({ timeout: 30000 });
  await about.scrollIntoView({ block: "center" });
  return about;
}

test("the installed app says which version it is", async () => {
  await (await browser.$('[data-nav="chat"]')).waitForDisplayed({ timeout: 60000 });
  assert.match(await (await settings()).getText(), new RegExp(`^Carrel ${version.replaceAll(".", "\\.")} \\(commit [0-9a-f]{12}\\)`));
  await shot("about");
});

test("the library the CLI filled is listed", async () => {
  await (await browser.$('[data-nav="library"]')).click();
  await browser.waitUntil(async () => /Sourdough/i.test(await (await $t("doc-table")).getText()), { timeout: 30000 });
  await shot("library");
});

if (phase === "before") {
  test("the user saves a setting, picks the dark theme and asks a question", async () => {
    await settings();
    const jobs = await $t("jobs");
    await jobs.setValue("1");
    await (await browser.$("button=Save and reopen")).click();
    await (await browser.$('[role="status"]=Saved.')).waitForDisplayed({ timeout: 30000 });
    await (await browser.$('button[role="radio"]=dark')).click();
    await (await browser.$('[data-nav="chat"]')).click();
    const box = await $t("composer");
    await box.waitForDisplayed();
    await box.click();
    await box.addValue(QUESTION);
    await (await $t("send")).click();
    const answer = await $t("answer");
    await answer.waitForDisplayed({ timeout: 120000 });
    assert.equal(await answer.getAttribute("data-outcome"), "answered");
    await shot("chat");
  });
} else {
  test("the chat, the saved setting and the theme survived the upgrade", async () => {
    await (await browser.$('[data-nav="chat"]')).click();
    const turn = await browser.$(".turn .question");
    await turn.waitForDisplayed({ timeout: 30000 });
    assert.match(await turn.getText(), new RegExp(QUESTION));
    assert.equal(await (await $t("answer")).getAttribute("data-outcome"), "answered");
    assert.equal(await browser.execute(() => document.documentElement.dataset.theme), "dark");
    await shot("chat");
    await settings();
    assert.equal(await (await $t("jobs")).getValue(), "1");
  });
}
