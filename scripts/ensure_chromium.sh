#!/usr/bin/env bash
# Debian's chromium + chromedriver for the UI test (tests/ops/test_ui_browser.py).
# Installed by `make test`; a test tool's own browser download cannot work offline.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "ensure_chromium: not root or no apt-get; the browser test will be skipped" >&2; exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || true
apt-get install -y -qq chromium chromium-driver >/dev/null || echo "ensure_chromium: install failed; the browser test will be skipped" >&2
