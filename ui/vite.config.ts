import { defineConfig } from "vite";
import { svelte } from "@sveltejs/vite-plugin-svelte";
import { resolve } from "node:path";

// `vite build` makes the app's UI (ui/dist, embedded by Tauri).
// `vite build --mode mock` makes the browser-test build (ui/dist-mock): the
// same app behind @tauri-apps/api's mockIPC, driven by test/browser/.
export default defineConfig(({ mode }) => ({
  plugins: [svelte()],
  clearScreen: false,
  build: {
    outDir: mode === "mock" ? "dist-mock" : "dist",
    emptyOutDir: true,
    target: "es2022",
    rollupOptions: {
      input: resolve(import.meta.dirname, mode === "mock" ? "mock.html" : "index.html"),
    },
  },
}));
