#!/usr/bin/env bash
# Debian's strace for the offline trace test (tests/security/test_offline_trace.py): it records every
# name lookup, socket connect and file write of the demo's media, vision and Ray stages, native
# libraries included. Installed by `make test` when run as root; without root and without strace
# the test is skipped, saying why. As root, a failed install fails loudly (a skipped security test
# would pass for a checked one); SUBTEXT_SKIP_TRACE_TESTS=1 opts out on purpose.
set -euo pipefail
if command -v strace >/dev/null; then exit 0; fi
if [ "${SUBTEXT_SKIP_TRACE_TESTS:-}" = 1 ]; then
  echo "ensure_strace: SUBTEXT_SKIP_TRACE_TESTS=1: the offline trace test will be skipped" >&2; exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "ensure_strace: strace is missing and this is not root with apt-get: the offline trace test" >&2
  echo "  (tests/security/test_offline_trace.py) will be skipped; install Debian's strace to run it" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
t0=$(date +%s)
apt-get update -qq >/dev/null || true
if ! apt-get install -y -qq strace >/dev/null; then
  echo "ensure_strace: apt-get install strace failed (see above); fix the package source," >&2
  echo "  or run with SUBTEXT_SKIP_TRACE_TESTS=1 to skip the offline trace test" >&2
  exit 1
fi
echo "ensure_strace: installed strace in $(( $(date +%s) - t0 ))s" >&2
