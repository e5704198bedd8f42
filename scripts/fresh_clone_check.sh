#!/usr/bin/env bash
# Fresh-clone check (issue #22): the project stands alone.
#
# Clones the current commit into a new temporary folder (nothing named `shared` beside it),
# with SUBTEXT_MODELS_DIR and every other SUBTEXT_* setting unset, and runs the README's
# `make demo` there restricted to the part of the graph that needs the OCR weights: `sources`
# (the whole demo config, yt-dlp listing of the loopback server included), then frames of the
# image batches → frame_hashes → duplicates → text_ratio. Videos and clips are left out: their
# OCR is the same code on more frames and would double the step's time on CI's 2 cores. Then
# checks that OCR really ran with the registry weights: non-zero text ratios and recognised
# words on the text-heavy sample images, and no `ocr_error` rejects.
#
# The clone reuses this checkout's installed venv through a symlink (`make test` has just
# run `make setup` with the same pyproject.toml; installing 6 GB again would not fit CI's
# budget), so `make` is told not to rebuild the venv stamp.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$(readlink -f "$REPO/.venv")"
[ -x "$VENV/bin/python" ] || { echo "fresh_clone_check: no venv at $REPO/.venv (run make setup)" >&2; exit 1; }
SHA="$(git -C "$REPO" rev-parse HEAD)"
git -C "$REPO" diff --quiet HEAD -- || echo "fresh_clone_check: note: uncommitted changes are not part of the clone ($SHA)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/subtext-fresh-clone.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
DEST="$WORK/subtext-forge"
git clone --quiet --no-local --no-checkout "$REPO" "$DEST"
git -C "$DEST" checkout --quiet "$SHA"
[ ! -e "$WORK/shared" ] || { echo "fresh_clone_check: $WORK/shared exists beside the clone" >&2; exit 1; }
ln -s "$VENV" "$DEST/.venv"
STAMP=".venv/.installed-$(sha1sum "$DEST/pyproject.toml" | cut -c1-12)"

# A user's shell: none of this checkout's settings leak in (models dir, data dir, instance, make's own).
unset_vars=(-u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u DAGSTER_HOME)
while IFS='=' read -r name _; do
  case "$name" in SUBTEXT_*|YOLO_*|HF_*|TRANSFORMERS_*|EASYOCR_*|MODULE_PATH) unset_vars+=(-u "$name") ;; esac
done < <(env)

SELECT="sources frames frame_hashes duplicates text_ratio"
start=$(date +%s)
env "${unset_vars[@]}" make -C "$DEST" --no-print-directory -o "$STAMP" demo SELECT="$SELECT"
echo "fresh_clone_check: make demo (ingest + OCR) took $(( $(date +%s) - start )) s"

env "${unset_vars[@]}" "$DEST/.venv/bin/python" - "$DEST/data" <<'PY'
import sys
from pathlib import Path

import duckdb

data = Path(sys.argv[1])
con = duckdb.connect()
tables = data / "tables"
rows = con.execute(f"""
    select regexp_extract(s.path, '[^/]+$') as file, t.ratio, t.text
    from read_parquet('{tables}/text_ratio/*.parquet') t
    join read_parquet('{tables}/source_items/*.parquet') s using (item_id)
    where s.path like '%/text_meme.png' or s.path like '%/text_poster.png' or s.path like '%/deadline.png'
""").fetchall()
errors = con.execute(f"""
    select item_id, detail from read_parquet('{tables}/rejects/*.parquet')
    where reason = 'ocr_error' or stage = 'text_ratio' and reason like '%error%'
""").fetchall()
n = con.execute(f"select count(*), count(*) filter (where ratio > 0) from read_parquet('{tables}/text_ratio/*.parquet')").fetchone()
print(f"fresh_clone_check: {n[0]} frames OCR'd, {n[1]} with text; text-heavy samples: "
      + "; ".join(f"{f} ratio {r:.3f} {t[:40]!r}" for f, r, t in rows))
problems = []
if len(rows) < 3:
    problems.append(f"expected the 3 text-heavy sample images in text_ratio, found {len(rows)}")
problems += [f"{f}: text ratio {r} / text {t!r}" for f, r, t in rows if not r > 0 or not t.strip()]
problems += [f"ocr_error reject {i}: {d}" for i, d in errors]
if problems:
    sys.exit("fresh_clone_check FAILED:\n  " + "\n  ".join(problems))
print("fresh_clone_check: ok (OCR ran from the registry weights, no shared folder beside the clone, SUBTEXT_MODELS_DIR unset)")
PY
