"""Released videos as the frames the recipes' items show (MAIA's 32, ViMU's clip frames)."""

from __future__ import annotations

import json
from pathlib import Path

from forge.media.download import ProbeError, probe_video
from forge.media.frames import encode_jpeg, sample_at, uniform_times, write_bytes_atomic
from forge.releases.records import VIDEO_SUFFIXES, ParsedRelease


def sample_frames(parsed: ParsedRelease, data_dir: Path, k: int = 32, jpeg_quality: int = 92) -> int:
    """Replace each item's video by ``k`` uniformly sampled frames (MAIA's 32, what the recipe's
    items show), written once per video beside it; an undecodable video rejects its items
    (``video_unreadable``). Returns the videos sampled now."""
    items = parsed.items
    if items.empty:
        return 0
    frames_of: dict[str, list[str]] = {}
    bad: dict[str, str] = {}
    done = 0
    for rel in sorted({p for ps in items["media_paths"] for p in ps if p.lower().endswith(VIDEO_SUFFIXES)}):
        folder = f"{rel.rsplit('.', 1)[0]}_frames"
        paths = [f"{folder}/f{i:03d}.jpg" for i in range(k)]
        if all((data_dir / p).is_file() for p in paths):
            frames_of[rel] = paths
            continue
        try:
            probe = probe_video(data_dir / rel)
            shots = sample_at(data_dir / rel, uniform_times(0.0, probe.duration_s, k))
        except (ProbeError, OSError, ValueError) as e:  # PyAV errors are OSError / ValueError subclasses
            bad[rel] = f"{type(e).__name__}: {e}"
            continue
        if not shots:
            bad[rel] = "no decodable frame"
            continue
        paths = [f"{folder}/f{i:03d}.jpg" for i in range(len(shots))]
        for p, shot in zip(paths, shots):
            write_bytes_atomic(data_dir / p, encode_jpeg(shot.image, jpeg_quality))
        frames_of[rel] = paths
        done += 1
    keep = []
    for i, r in enumerate(items.to_dict("records")):
        media = list(r["media_paths"])
        broken = [p for p in media if p in bad]
        if broken:
            parsed.reject(r["item_id"], "video_unreadable", bad[broken[0]])
            continue
        extra = json.loads(r["extra"]) | {"videos": [p for p in media if p in frames_of]}
        items.at[items.index[i], "media_paths"] = [f for p in media for f in frames_of.get(p, [p])]
        items.at[items.index[i], "extra"] = json.dumps(extra, ensure_ascii=False)
        keep.append(items.index[i])
    parsed.items = items.loc[keep].reset_index(drop=True)
    return done
