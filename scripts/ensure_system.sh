#!/usr/bin/env bash
# The Debian packages the test run needs, fetched in ONE apt-get update and ONE install (each
# ensure_*.sh below used to run its own update: three index downloads on a fresh CI machine):
# chromium + chromium-driver (browser tests), postgresql (the Postgres instance test), strace (the
# offline trace test), wordnet-base (METEOR). Only what is missing, only as root with apt-get, and
# never fatal here: the per-tool scripts that `make test` runs next (ensure_chromium.sh, ...)
# decide what a missing tool means and say so. `make test` runs this beside the two pip installs
# (Makefile `test-deps`), so its downloads overlap theirs; the dpkg lock is waited for, not raced.
set -uo pipefail
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || exit 0
want=()
if [ "${SUBTEXT_SKIP_BROWSER_TESTS:-}" != 1 ] && ! { command -v chromium && command -v chromedriver; } >/dev/null; then
  want+=(chromium chromium-driver)
fi
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || want+=(postgresql)
[ "${SUBTEXT_SKIP_TRACE_TESTS:-}" = 1 ] || command -v strace >/dev/null || want+=(strace)
[ -f /usr/share/wordnet/data.noun ] || want+=(wordnet-base)
[ ${#want[@]} -gt 0 ] || exit 0
export DEBIAN_FRONTEND=noninteractive
t0=$(date +%s)
lock=(-o DPkg::Lock::Timeout=600)
apt-get "${lock[@]}" update -qq >/dev/null || true
apt-get "${lock[@]}" install -y -qq "${want[@]}" >/dev/null \
  || echo "ensure_system: apt-get install ${want[*]} failed; the per-tool checks below say what that costs" >&2
echo "ensure_system: ${want[*]} in $(( $(date +%s) - t0 ))s" >&2
exit 0
