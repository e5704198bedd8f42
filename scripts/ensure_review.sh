#!/usr/bin/env bash
# Label Studio in a virtual environment of its own (.venv-review/): its pins (Django, pandas,
# numpy, openai, ...) clash with the project's. Installed once from the pinned registry package
# (set-up time only; nothing downloads at run time); `make test` and `make review` call this.
# A stamp names the pinned version, so a changed pin reinstalls. Fails loudly when it cannot
# install (skipped review tests would pass for a tested review); SUBTEXT_SKIP_REVIEW_TESTS=1 opts
# out on purpose (tests/review then skips, saying so).
set -euo pipefail
cd "$(dirname "$0")/.."
LS_VERSION="${LABEL_STUDIO_VERSION:-1.23.2}"
VENV="${REVIEW_VENV:-.venv-review}"
STAMP="$VENV/.installed-label-studio-$LS_VERSION"
PYTHON="${PYTHON:-python3}"
if [ -f "$STAMP" ] && [ -x "$VENV/bin/label-studio" ]; then exit 0; fi
if [ "${SUBTEXT_SKIP_REVIEW_TESTS:-}" = 1 ]; then
  echo "ensure_review: SUBTEXT_SKIP_REVIEW_TESTS=1: Label Studio not installed, review tests will be skipped" >&2; exit 0
fi
t0=$(date +%s)
echo "ensure_review: installing label-studio==$LS_VERSION into $VENV (about 5 minutes, once)" >&2
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade "pip>=25.1" || true
if ! "$VENV/bin/python" -m pip install -q "label-studio==$LS_VERSION"; then
  echo "ensure_review: pip install label-studio==$LS_VERSION into $VENV failed (see above);" >&2
  echo "  fix the package source, or run with SUBTEXT_SKIP_REVIEW_TESTS=1 to skip the review tests" >&2
  exit 1
fi
rm -f "$VENV"/.installed-label-studio-*; touch "$STAMP"
echo "ensure_review: installed label-studio $LS_VERSION in $(( $(date +%s) - t0 ))s" >&2
