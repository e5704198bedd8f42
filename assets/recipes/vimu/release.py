"""ViMU's release (videos/ + metadata/<task>.jsonl, as its dataset card lays it out)."""

from assets.releases.factory import release_defs
from forge.releases.media import sample_frames

from .logic.release import parse_release

FRAMES = 16  # the evaluation's ViMU setting (config/evals.yaml)

defs = release_defs("vimu", parse_release, finish=lambda parsed, data_dir: sample_frames(parsed, data_dir, FRAMES))
