#!/usr/bin/env bash
# lmms-eval in a virtual environment of its own (.venv-lmms/): the harness the community evaluates
# with, run for real by tests/lmms (an export's task folder scores the same as `<paper>_eval`).
# Its pins (torch, transformers, ...) are not the project's. Installed once from the registry
# (set-up time only; nothing downloads at run time); `make test` calls this. torch==2.13.0 is the
# CPU build pip takes from this machine's disk (lmms-eval would otherwise pull a CUDA build of
# several GB); duckdb, py3langid and cloudpickle are what the project's scorers import;
# filelock<4: lmms-eval 0.7.3 patches filelock._api, which filelock 4 no longer has.
# A stamp names the pinned version, so a changed pin reinstalls. SUBTEXT_SKIP_LMMS_TESTS=1 opts
# out on purpose (tests/lmms then skips, saying so).
set -euo pipefail
cd "$(dirname "$0")/.."
LMMS_VERSION="${LMMS_EVAL_VERSION:-0.7.3}"
VENV="${LMMS_VENV:-.venv-lmms}"
STAMP="$VENV/.installed-lmms-eval-$LMMS_VERSION"
PYTHON="${PYTHON:-python3}"
if [ -f "$STAMP" ] && [ -x "$VENV/bin/lmms-eval" ]; then exit 0; fi
if [ "${SUBTEXT_SKIP_LMMS_TESTS:-}" = 1 ]; then
  echo "ensure_lmms: SUBTEXT_SKIP_LMMS_TESTS=1: lmms-eval not installed, its tests will be skipped" >&2; exit 0
fi
t0=$(date +%s)
echo "ensure_lmms: installing lmms-eval==$LMMS_VERSION into $VENV (about 5 minutes, once)" >&2
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade "pip>=25.1" || true
if ! "$VENV/bin/python" -m pip install -q "lmms-eval==$LMMS_VERSION" "torch==2.13.0" \
    "duckdb>=1.3" "py3langid==0.4.0" cloudpickle "filelock<4"; then
  echo "ensure_lmms: pip install lmms-eval==$LMMS_VERSION into $VENV failed (see above);" >&2
  echo "  fix the package source, or run with SUBTEXT_SKIP_LMMS_TESTS=1 to skip the lmms-eval tests" >&2
  exit 1
fi
# PyPI's torchvision does not load beside that CPU torch ("operator torchvision::nms does not
# exist") and transformers imports it whenever it is present; the OpenAI-compatible model never
# uses it, so it goes.
"$VENV/bin/python" -m pip uninstall -y -q torchvision
rm -f "$VENV"/.installed-lmms-eval-*; touch "$STAMP"
echo "ensure_lmms: installed lmms-eval $LMMS_VERSION in $(( $(date +%s) - t0 ))s ($(du -sh "$VENV" | cut -f1))" >&2
