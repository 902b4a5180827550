// `make bench-startup`: the release app's cold start, first answered query
// and memory, in a real window (tauri-driver + WebKitWebDriver under Xvfb),
// RUNS times (5 by default). Each run starts the app on a fresh copy of a
// library of fixtures/docs made with the CLI beside the app, after dropping
// the kernel's page cache where this process may (root), so that the binary,
// WebKit and the models are read from disk as on a first launch.
//
// Per run:
//   first paint      the app's own figure: process start to the first frame
//                    painted after the library list loaded (its log line)
//   window ready     launch request to the chat page answering WebDriver
//   answer           Send to the answer shown, the question asked as soon
//                    as the chat page is ready (this loads the embedder and
//                    the cross-encoder: the first query of a process)
//   first answer     window ready + answer: launch to the first answered
//                    query, the time the question takes to type left out
//   idle RSS         a second launch, the same way: resident memory 5 s
//                    after first paint, of the app process, and the
//                    proportional set size (PSS) of the app with WebKit's
//                    processes under it
//   RSS after query  the same, once that launch's first answer is shown
// Prints a table (median, min, max) and writes the runs as JSON to argv[2].
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { openSession, removeWhenQuiet, startDriver, stopProcess } from "../test/e2e/harness.mjs";

const repo = resolve(import.meta.dirname, "../..");
const app = process.env.CARREL_APP_BIN;
const driverBin = process.env.TAURI_DRIVER ?? "tauri-driver";
const runs = Number(process.env.RUNS ?? 5);
const out = process.argv[2];
if (!app || !process.env.CARREL_MODELS || !out) {
  console.error("usage: CARREL_APP_BIN=… CARREL_MODELS=… TAURI_DRIVER=… node bench/startup.mjs OUT.json");
  process.exit(2);
}
const QUESTION = "how often should I feed my sourdough starter";
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

// One library, made once with the CLI; each run gets its own copy.
const work = mkdtempSync(join(tmpdir(), "carrel-startup-"));
const template = join(work, "template");
const cli = join(dirname(app), "carrel");
execFileSync(cli, ["add", join(repo, "fixtures/docs")], {
  env: { ...process.env, CARREL_LIBRARY: join(template, "library"), XDG_DATA_HOME: join(template, "data") },
  stdio: "ignore",
});

/** Drops the page cache; false where this process may not. */
function dropCaches() {
  try {
    execFileSync("sync");
    writeFileSync("/proc/sys/vm/drop_caches", "3");
    return true;
  } catch {
    return false;
  }
}

/** The newest process named `name`, with its descendants. */
function processTree(name) {
  const procs = readdirSync("/proc").filter((p) => /^\d+$/.test(p)).map((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      return { pid: Number(pid), ppid, comm };
    } catch {
      return null;
    }
  }).filter(Boolean);
  const root = procs.filter((p) => p.comm === name).sort((a, b) => b.pid - a.pid)[0];
  if (!root) throw new Error(`no ${name} process`);
  const tree = [root.pid];
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of procs) if (tree.includes(p.ppid) && !tree.includes(p.pid)) tree.push(p.pid), (grew = true);
  }
  return tree;
}

/** {appRss, treePss} in MB for the app and the processes under it. */
function memory() {
  const [appPid, ...rest] = processTree("carrel-app");
  const field = (pid, file, key) => {
    try {
      const m = readFileSync(`/proc/${pid}/${file}`, "utf8").match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"));
      return m ? Number(m[1]) / 1024 : 0;
    } catch {
      return 0;
    }
  };
  let treePss = 0;
  for (const pid of [appPid, ...rest]) treePss += field(pid, "smaps_rollup", "Pss");
  return { appRss: field(appPid, "status", "VmRSS"), treePss, processes: 1 + rest.length };
}

function firstPaintFromLog(home) {
  const log = readFileSync(join(home, "data", "app.carrel", "carrel.log"), "utf8");
  const m = [...log.matchAll(/first paint.*?ms[=:]\s*([\d.]+)|ms[=:]\s*([\d.]+).*?first paint/g)].at(-1);
  if (!m) throw new Error(`no first-paint line in the app's log:\n${log.slice(-2000)}`);
  return Number(m[1] ?? m[2]);
}

const driverLog = join(work, "driver.log");
writeFileSync(driverLog, "");
let cold = false;

/**
 * Launches the app on a fresh copy of the library, from a dropped page
 * cache, and hands `use` the session and the time of the launch request.
 * (tauri-driver passes its own environment to the app, so each launch has a
 * driver of its own, started before the clock.)
 */
async function launch(i, use) {
  const home = join(work, `run-${i}`);
  cpSync(template, home, { recursive: true });
  const env = { ...process.env, CARREL_LIBRARY: join(home, "library"), XDG_DATA_HOME: join(home, "data") };
  const driver = await startDriver(driverBin, 4544, env, driverLog);
  cold = dropCaches();
  const t0 = performance.now();
  const browser = await openSession(4544, app);
  try {
    await (await browser.$('[data-nav="chat"]')).waitForDisplayed({ timeout: 120000 });
    const ready = performance.now() - t0;
    await browser.waitUntil(() => {
      try {
        return firstPaintFromLog(home) > 0;
      } catch {
        return false;
      }
    }, { timeout: 60000, interval: 100 });
    return await use(browser, { ready, firstPaint: firstPaintFromLog(home) });
  } finally {
    await browser.deleteSession().catch(() => {});
    await stopProcess(driver);
    await removeWhenQuiet(home);
  }
}

/** Asks QUESTION in the chat; the time from Send to the answer shown. */
async function ask(browser) {
  const $t = (id) => browser.$(`[data-testid="${id}"]`);
  await (await browser.$('[data-nav="chat"]')).click();
  const box = await $t("composer");
  await box.waitForDisplayed();
  await box.click();
  await box.addValue(QUESTION);
  const sent = performance.now();
  await (await $t("send")).click();
  const answer = await $t("answer");
  await answer.waitForDisplayed({ timeout: 120000 });
  return { ms: performance.now() - sent, outcome: await answer.getAttribute("data-outcome") };
}

const results = [];
for (let i = 0; i < runs; i++) {
  // Timed: the question is asked as soon as the chat page is ready.
  const timed = await launch(i, async (browser, start) => ({ ...start, answer: await ask(browser) }));
  // Memory: idle for 5 s after first paint, then the same question.
  const mem = await launch(i, async (browser) => {
    await pause(5000);
    const idle = memory();
    const answer = await ask(browser);
    return { idle, after: memory(), outcome: answer.outcome };
  });
  results.push({
    run: i + 1, cold_page_cache: cold, first_paint_ms: timed.firstPaint, window_ready_ms: timed.ready,
    answer_ms: timed.answer.ms, first_answer_ms: timed.ready + timed.answer.ms,
    outcome: timed.answer.outcome === mem.outcome ? timed.answer.outcome : `${timed.answer.outcome}/${mem.outcome}`,
    idle_app_rss_mb: mem.idle.appRss, idle_tree_pss_mb: mem.idle.treePss,
    query_app_rss_mb: mem.after.appRss, query_tree_pss_mb: mem.after.treePss, processes: mem.after.processes,
  });
  console.error(`run ${i + 1}: ${JSON.stringify(results.at(-1))}`);
}
await removeWhenQuiet(work);
writeFileSync(out, JSON.stringify({ app, runs: results }, null, 2) + "\n");

const stat = (key) => {
  const v = results.map((r) => r[key]).sort((a, b) => a - b);
  return { median: v[Math.floor(v.length / 2)], min: v[0], max: v.at(-1) };
};
const rows = [
  ["cold start to first paint (app's own figure)", "first_paint_ms", "ms"],
  ["launch to chat page ready (WebDriver)", "window_ready_ms", "ms"],
  ["launch to first answered query (typing left out)", "first_answer_ms", "ms"],
  ["first query: Send to answer shown", "answer_ms", "ms"],
  ["idle RSS, app process", "idle_app_rss_mb", "MB"],
  ["idle PSS, app + WebKit processes", "idle_tree_pss_mb", "MB"],
  ["RSS after first query, app process", "query_app_rss_mb", "MB"],
  ["PSS after first query, app + WebKit", "query_tree_pss_mb", "MB"],
];
console.log(`startup: ${results.length} runs, page cache ${cold ? "dropped before each launch" : "NOT dropped (not root)"}; outcomes: ${[...new Set(results.map((r) => r.outcome))].join(", ")}`);
console.log("| measure | median | min | max |\n|---|---:|---:|---:|");
for (const [label, key, unit] of rows) {
  const s = stat(key);
  console.log(`| ${label} | ${s.median.toFixed(0)} ${unit} | ${s.min.toFixed(0)} | ${s.max.toFixed(0)} |`);
}
rmSync(work, { recursive: true, force: true });
