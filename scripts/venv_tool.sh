# Sourced by the scripts that install a pinned tool into a virtual environment of its own
# (ensure_review.sh, ensure_lmms.sh): the stamp check, the opt-out, the failure and the finish
# they share. Each caller sets NAME (its own name, the prefix of every line it prints) first.

# venv_tool_due STAMP EXE SKIP_VAR SKIPPED: exits 0 (nothing to do) when EXE and STAMP are there,
# or when SKIP_VAR=1 opts out (saying SKIPPED); otherwise starts the install's clock.
venv_tool_due() {
  if [ -f "$1" ] && [ -x "$2" ]; then exit 0; fi
  if [ "${!3:-}" = 1 ]; then
    echo "$NAME: $3=1: $4" >&2; exit 0
  fi
  VENV_TOOL_T0=$(date +%s)
}

# venv_tool_failed PIN VENV SKIP_VAR TESTS: a failed pip install fails loudly (a skipped test would
# pass for a tested tool), naming the opt-out.
venv_tool_failed() {
  echo "$NAME: pip install $1 into $2 failed (see above);" >&2
  echo "  fix the package source, or run with $3=1 to skip the $4" >&2
  exit 1
}

# venv_tool_done VENV STAMP_GLOB STAMP WHAT: the one stamp of this pin, and how long it took.
venv_tool_done() {
  rm -f "$1"/$2; touch "$3"
  echo "$NAME: installed $4 in $(( $(date +%s) - VENV_TOOL_T0 ))s" >&2
}
