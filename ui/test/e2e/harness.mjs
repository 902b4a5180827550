// What the real-window test files share: starting tauri-driver and cleaning
// up after the app. Imported, never run as a test file of its own.
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { connect } from "node:net";
import { remote } from "webdriverio";

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * tauri-driver on `port` (WebKitWebDriver on `port + 1`, which it starts
 * first), its app inheriting `env`; resolves once both accept connections
 * (up to 60 s). What the driver, the app and WebKit's helper processes print
 * is appended to `log`, never to this test file's own stdout and stderr:
 * node's test runner waits for every holder of those pipes to close them, so
 * a helper process that outlives the app would hold `make e2e` until its
 * timeout after every test had passed.
 */
export async function startDriver(bin, port, env, log) {
  const out = openSync(log, "a");
  const d = spawn(bin, ["--port", String(port), "--native-port", String(port + 1)], {
    stdio: ["ignore", out, out],
    env,
  });
  closeSync(out);
  for (let tries = 0; ; tries++) {
    if ((await accepts(port + 1)) && (await accepts(port))) return d;
    if (d.exitCode !== null) throw new Error(`tauri-driver exited with ${d.exitCode}`);
    if (tries >= 300) throw new Error(`tauri-driver did not listen on port ${port} within 60 s`);
    await pause(200);
  }
}

/**
 * A WebDriver session on the tauri-driver at `port`: the driver starts the
 * app `application` for it (with the driver's own environment), and ends
 * the app with it.
 */
export function openSession(port, application) {
  return remote({
    hostname: "127.0.0.1",
    port,
    logLevel: "warn",
    capabilities: {
      "wdio:enforceWebDriverClassic": true,
      "tauri:options": { application },
    },
  });
}

function accepts(port) {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/**
 * Ends a process the tests started and waits until it has exited. SIGTERM
 * lets tauri-driver end WebKitWebDriver first; a server whose graceful
 * shutdown may wait on its clients is given SIGKILL.
 */
export async function stopProcess(child, signal = "SIGTERM") {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  await gone;
}

/**
 * Removes the app's home once nothing writes into it any more: the app's
 * WebKit helper processes outlive its window for a moment (up to 60 s).
 */
export async function removeWhenQuiet(dir) {
  for (let tries = 0; ; tries++) {
    try {
      rmSync(dir, { recursive: true, force: true });
      return;
    } catch (e) {
      if (tries >= 300) throw e;
      await pause(200);
    }
  }
}

/** The end of the app's log file in its data folder `dataDir` (the app
 * logs there, not to the test's process). */
export function appLog(dataDir, lines = 40) {
  try {
    return readFileSync(join(dataDir, "carrel.log"), "utf8").split("\n").slice(-lines).join("\n");
  } catch (e) {
    return `(no app log: ${e.message})`;
  }
}

/** Waits until `fn` holds in `browser`; a timeout says what was awaited
 * and ends with the app's log (from `dataDir`). */
export async function until(browser, dataDir, what, fn, timeout = 60000) {
  try {
    await browser.waitUntil(fn, { timeout, interval: 200 });
  } catch {
    throw new Error(`timed out waiting for ${what}; the app's log ends:\n${appLog(dataDir)}`);
  }
}
