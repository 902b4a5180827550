// The browser-test entry: the real app behind @tauri-apps/api's mockIPC.
// A test defines `window.__CARREL_MOCK__(cmd, args)` before the page loads
// (playwright's addInitScript) and drives the UI in Debian's chromium.
import { mockIPC } from "@tauri-apps/api/mocks";
import { emit } from "@tauri-apps/api/event";

type Handler = (cmd: string, args: Record<string, unknown>) => unknown;
const w = window as unknown as { __CARREL_MOCK__?: Handler; __CARREL_EMIT__?: typeof emit };
const handler = w.__CARREL_MOCK__;
if (!handler) throw new Error("mock.html needs window.__CARREL_MOCK__");
mockIPC((cmd, args) => handler(cmd, (args ?? {}) as Record<string, unknown>), { shouldMockEvents: true });
w.__CARREL_EMIT__ = emit;
await import("./main");
