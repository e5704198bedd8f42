#!/usr/bin/env bash
# Debian's chromium + chromedriver for the UI tests (tests/ops/test_ui_browser.py).
# Installed by `make test`; a test tool's own browser download cannot work offline.
# Fails loudly when it cannot install: a skipped UI test would pass for a tested UI.
# SUBTEXT_SKIP_BROWSER_TESTS=1 opts out on purpose (the browser tests then skip, saying so).
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then exit 0; fi
if [ "${SUBTEXT_SKIP_BROWSER_TESTS:-}" = 1 ]; then
  echo "ensure_chromium: SUBTEXT_SKIP_BROWSER_TESTS=1: browser tests will be skipped" >&2; exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "ensure_chromium: chromium/chromedriver missing and this is not root with apt-get." >&2
  echo "  install Debian's chromium + chromium-driver, or run with SUBTEXT_SKIP_BROWSER_TESTS=1" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || true
if ! apt-get install -y -qq chromium chromium-driver >/dev/null; then
  echo "ensure_chromium: apt-get install chromium chromium-driver failed (see above);" >&2
  echo "  fix the package source, or run with SUBTEXT_SKIP_BROWSER_TESTS=1 to skip the browser tests" >&2
  exit 1
fi
