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
# An empty database with every migration of this Label Studio applied, made once here: a new
# instance starts from a copy (forge/people/server.py, seed_database) instead of running its ~400
# migrations (about 22 s of CPU per instance; `make review` starts two, the test suite two).
TEMPLATE="$VENV/empty-database/label_studio.sqlite3"
source scripts/venv_tool.sh

make_template() {
  local tmp; tmp=$(mktemp -d)
  # Label Studio's own start-up (label_studio/server.py) and Django's migrate; offline, no telemetry
  LABEL_STUDIO_BASE_DATA_DIR="$tmp" SECRET_KEY=empty-database-only SENTRY_DSN= FRONTEND_SENTRY_DSN= \
    LABEL_STUDIO_SENTRY_DSN= LABEL_STUDIO_FRONTEND_SENTRY_DSN= LABEL_STUDIO_COLLECT_ANALYTICS=false \
    LABEL_STUDIO_LATEST_VERSION_CHECK=false "$VENV/bin/python" -c \
    'from label_studio import server; server._setup_env(); from django.core.management import call_command; call_command("migrate", "--no-color", verbosity=0)' \
    >"$tmp/migrate.log" 2>&1 || { cat "$tmp/migrate.log" >&2; rm -rf "$tmp"; echo "$NAME: the empty database was not made (instances migrate at start)" >&2; return 0; }
  mkdir -p "$(dirname "$TEMPLATE")"
  mv "$tmp/label_studio.sqlite3" "$TEMPLATE.tmp" && mv "$TEMPLATE.tmp" "$TEMPLATE"
  rm -rf "$tmp"
}

if [ -f "$STAMP" ] && [ -x "$VENV/bin/label-studio" ] && [ ! -f "$TEMPLATE" ]; then
  make_template  # installed before the empty database was made here
fi
venv_tool_due "$STAMP" "$VENV/bin/label-studio" SUBTEXT_SKIP_REVIEW_TESTS \
  "Label Studio not installed, review tests will be skipped"
echo "ensure_review: installing label-studio==$LS_VERSION into $VENV (about 5 minutes, once)" >&2
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade "pip>=25.1" || true
if ! "$VENV/bin/python" -m pip install -q "label-studio==$LS_VERSION"; then
  venv_tool_failed "label-studio==$LS_VERSION" "$VENV" SUBTEXT_SKIP_REVIEW_TESTS "review tests"
fi
make_template
venv_tool_done "$VENV" ".installed-label-studio-*" "$STAMP" "label-studio $LS_VERSION"
