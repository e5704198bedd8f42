"""What ``test_offline_trace.py`` runs under strace: ``python -m tests.security.offline_workload``.

The demo's media and vision stages through the project's CLI (``cli.build`` over a tiny corpus
made beforehand by ``make_corpus``: one captioned video, one text image, one EXIF-rotated photo),
with the detectors' default CPU engines (EasyOCR's text detector and YOLO both on ONNX Runtime),
then the local Ray path (a private cluster: frame hashing in a task, OCR in an actor that builds
its own ONNX session). The caller sets HOME, TMPDIR, SUBTEXT_DATA_DIR, DAGSTER_HOME and
SUBTEXT_SOURCES; nothing here sets an opt-out: the entry points must.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

# Long enough for a telemetry timer to fire: ONNX Runtime's resolves its events host ~8 s after
# the first session. The traced process lives at least this long after its last model ran.
LINGER_S = 15.0
STAGES = ["sources", "videos", "clips", "frames", "frame_hashes", "duplicates", "text_ratio", "detections"]


def make_corpus(root: Path) -> Path:
    """The corpus and a sources file naming it; returns the sources file."""
    from forge.media.sample_corpus import render_scene_video, render_text_image

    videos, images = root / "videos", root / "images"
    videos.mkdir(parents=True, exist_ok=True)
    images.mkdir(parents=True, exist_ok=True)
    render_scene_video(videos / "scenes.mp4", seconds=4, fps=6)
    render_text_image(images / "sign.png", ["NOTHING PHONES HOME", "offline"], size=(320, 240))
    photo = np.zeros((120, 200, 3), np.uint8)
    photo[:, :, 1] = np.linspace(40, 220, 200, dtype=np.uint8)[None, :]
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(photo).save(images / "rotated.jpg", exif=exif)
    sources = root / "sources.yaml"
    sources.write_text(
        "sources:\n"
        f"  - {{name: clips, type: folder, path: '{videos}', media: video, license: test}}\n"
        f"  - {{name: photos, type: folder, path: '{images}', media: image}}\n"
    )
    return sources


def ray_path(data_dir: Path) -> None:
    """Frame hashing in a Ray task and OCR in a Ray actor, on a private local cluster."""
    from forge.media.hashing import hash_paths
    from forge.media.text_boxes import ocr_on_ray, ocr_reader_args
    from forge.scale.ray_pool import RayPlacement, shutdown
    from forge.storage import TableStore
    from resources.ocr import OCRResource

    frames = TableStore(data_dir).read("frames")
    placement = RayPlacement("local", actors=1, num_cpus=1, shard_frames=64)
    try:
        hashes = hash_paths(str(data_dir), [str(p) for p in frames["path"]], placement=placement)
        assert not [h for h in hashes if isinstance(h, BaseException)], hashes
        engines: set[tuple[str, str]] = set()
        ocr = OCRResource()
        got = ocr_on_ray(placement, ocr_reader_args(ocr), frames.head(2), data_dir, 480, 2, "none", 1.0, engines)
        assert all(err is None for _, err in got), got
        assert {e for e, _ in engines} == {"onnx"}, engines  # the default CPU engine ran on Ray
    finally:
        shutdown()


def main() -> int:
    from cli.build import main as build

    if build(["--select", *STAGES]) != 0:
        print("offline_workload: the build failed", file=sys.stderr)
        return 1
    done = time.monotonic()
    ray_path(Path(os.environ["SUBTEXT_DATA_DIR"]))
    time.sleep(max(0.0, LINGER_S - (time.monotonic() - done)))
    print("offline_workload: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
