// What the real-window test files share: starting tauri-driver and cleaning
// up after the app. Imported, never run as a test file of its own.
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { connect } from "node:net";

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * tauri-driver on `port` (WebKitWebDriver on `port + 1`, which it starts
 * first), its app inheriting `env`; resolves once both accept connections
 * (up to 60 s).
 */
export async function startDriver(bin, port, env) {
  const d = spawn(bin, ["--port", String(port), "--native-port", String(port + 1)], {
    stdio: ["ignore", "inherit", "inherit"],
    env,
  });
  for (let tries = 0; ; tries++) {
    if ((await accepts(port + 1)) && (await accepts(port))) return d;
    if (d.exitCode !== null) throw new Error(`tauri-driver exited with ${d.exitCode}`);
    if (tries >= 300) throw new Error(`tauri-driver did not listen on port ${port} within 60 s`);
    await pause(200);
  }
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
