"""Hummus Naming / ImageLabel match thresholds for the embedder in use (docs/evals.md).

    python perf/calibrate_hummus_thresholds.py [MODEL_PATH]

Prints, per task, the cosine that best separates the hand-labelled match / no-match pairs of
assets/recipes/hummus/logic/similarity_calibration.yaml, its balanced accuracy, and the mean cosine
of each group. Put the thresholds into assets/recipes/hummus/evals.yaml (thresholds).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assets.recipes.hummus.logic.scoring import CALIBRATION_PAIRS
from forge.checks.embeddings import load_embedder
from forge.evals.calibration import calibrate_task, load_pairs


def main() -> None:
    emb = load_embedder(sys.argv[1] if len(sys.argv) > 1 else None)
    pairs = load_pairs(CALIBRATION_PAIRS)
    for task in ("naming", "image_label"):
        r = calibrate_task(emb, task, pairs)
        print(
            f"{task}: threshold {r['threshold']:.3f}  balanced accuracy {r['balanced_accuracy']:.3f}  "
            f"match mean {r['match_mean']:.3f}  no-match mean {r['no_match_mean']:.3f}  gap {r['gap']:.3f}"
        )


if __name__ == "__main__":
    main()
