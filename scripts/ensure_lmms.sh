#!/usr/bin/env bash
# lmms-eval in a virtual environment of its own (.venv-lmms/): the harness the community evaluates
# with, run for real by tests/lmms (an export's task folder scores the same as `<paper>_eval`).
# Two of its pins clash with the project's (av<16, filelock<4: lmms-eval 0.7.3 patches
# filelock._api, which filelock 4 no longer has); those live in .venv-lmms and shadow the project's.
# Its heavy dependencies that the project already has at versions lmms-eval accepts (torch,
# torchvision, transformers, datasets, openai, ...) come from the project's .venv through a .pth
# file placed after .venv-lmms's own site-packages, so set-up takes seconds, not the ~5 minutes
# and 2.5 GB of a second torch. lmms-eval itself is installed --no-deps plus what its
# OpenAI-compatible model path and task loader import; the optional model backends (timm, peft,
# wandb, ...) are not installed (docs/evals.md, "lmms-eval"). From the registry, once; nothing
# downloads at run time. A stamp names the pinned version, so a changed pin reinstalls.
# SUBTEXT_SKIP_LMMS_TESTS=1 opts out on purpose (tests/lmms then skips, saying so).
set -euo pipefail
cd "$(dirname "$0")/.."
LMMS_VERSION="${LMMS_EVAL_VERSION:-0.7.3}"
VENV="${LMMS_VENV:-.venv-lmms}"
STAMP="$VENV/.installed-lmms-eval-$LMMS_VERSION-on-project-venv"
PYTHON="${PYTHON:-python3}"
NAME=ensure_lmms
source scripts/venv_tool.sh
venv_tool_due "$STAMP" "$VENV/bin/lmms-eval" SUBTEXT_SKIP_LMMS_TESTS "lmms-eval not installed, its tests will be skipped"
echo "ensure_lmms: installing lmms-eval==$LMMS_VERSION into $VENV (about 30 s, once)" >&2
MAIN_SITE="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
LMMS_SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$MAIN_SITE" > "$LMMS_SITE/zz_subtext_project_venv.pth"
if ! { "$VENV/bin/python" -m pip install -q --no-deps "lmms-eval==$LMMS_VERSION" &&
    "$VENV/bin/python" -m pip install -q "av<16" "filelock<4" evaluate jsonlines numexpr pytablewriter \
      tqdm-multiprocess loguru tenacity zss math-verify latex2sympy2; }; then
  venv_tool_failed "lmms-eval==$LMMS_VERSION" "$VENV" SUBTEXT_SKIP_LMMS_TESTS "lmms-eval tests"
fi
venv_tool_done "$VENV" ".installed-lmms-eval-*" "$STAMP" "lmms-eval $LMMS_VERSION ($(du -sh "$VENV" | cut -f1))"
