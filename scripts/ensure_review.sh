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
NAME=ensure_review
source scripts/venv_tool.sh
venv_tool_due "$STAMP" "$VENV/bin/label-studio" SUBTEXT_SKIP_REVIEW_TESTS \
  "Label Studio not installed, review tests will be skipped"
echo "ensure_review: installing label-studio==$LS_VERSION into $VENV (about 5 minutes, once)" >&2
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade "pip>=25.1" || true
if ! "$VENV/bin/python" -m pip install -q "label-studio==$LS_VERSION"; then
  venv_tool_failed "label-studio==$LS_VERSION" "$VENV" SUBTEXT_SKIP_REVIEW_TESTS "review tests"
fi
venv_tool_done "$VENV" ".installed-label-studio-*" "$STAMP" "label-studio $LS_VERSION"
