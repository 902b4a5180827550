#!/usr/bin/env bash
# What the desktop shell and its tests need on a fresh Debian machine:
# the WebKitGTK/GTK development packages Tauri builds against, Xvfb and
# WebKitWebDriver for the real-window tests, chromium for the browser tests,
# imagemagick for screenshots of the whole screen, desktop-file-utils and
# rofi to check the installed menu entry and show it as a launcher lists it; the readers Carrel calls
# as programs: poppler-utils (pdftotext, the second PDF reader, and pdftoppm)
# and Tesseract with English (OCR of scans and images); cmake and clang,
# which build llama.cpp (the built-in answerer) from the llama-cpp-sys-2 crate. Idempotent: installs only
# what is missing. tauri-driver comes from crates.io, pinned, into
# $CARGO_TARGET_DIR/tools (so CI's cached target dir keeps it).
set -euo pipefail

PACKAGES=(
  build-essential pkg-config libssl-dev file
  libwebkit2gtk-4.1-dev libjavascriptcoregtk-4.1-dev libsoup-3.0-dev libgtk-3-dev
  librsvg2-dev libxdo-dev libayatana-appindicator3-dev
  xvfb xauth webkit2gtk-driver chromium imagemagick fonts-dejavu-core rofi desktop-file-utils
  poppler-utils tesseract-ocr tesseract-ocr-eng
  cmake clang libclang-dev
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup-desktop: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

TAURI_DRIVER_VERSION=2.1.0
tools="${CARGO_TARGET_DIR:-target}/tools"
if ! "$tools/bin/tauri-driver" --help >/dev/null 2>&1; then
  echo "setup-desktop: installing tauri-driver $TAURI_DRIVER_VERSION"
  cargo install tauri-driver --locked --version "$TAURI_DRIVER_VERSION" --root "$tools" --quiet
fi
