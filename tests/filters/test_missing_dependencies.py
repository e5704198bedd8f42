"""Missing weights or binaries fail the step with one clear message (issue 14, point 7), instead
of one reject row per item on a green run."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest
from PIL import Image

from assets.ingest.filters import text_ratio
from forge.media.batch import clips_for_batch
from forge.media.clips import ClipSettings
from forge.models.dependencies import MissingDependency, require_binary
from forge.storage import RejectLog, TableStore
from forge.storage.contracts import load_contract
from resources.ocr import OCRResource
from resources.storage import StorageResource


def test_missing_ffmpeg_fails_once(tmp_path):
    store = TableStore(tmp_path / "data")
    store.write(
        "videos",
        pd.DataFrame([{"video_id": "v1", "batch": "b", "path": "media/v1.mp4", "has_audio": False, "duration_s": 3.0}]),
        "b",
    )
    log = RejectLog("clips", "b")
    with pytest.raises(MissingDependency, match="ffmpeg not found"):
        clips_for_batch(store, "b", str(tmp_path / "no-ffmpeg"), ClipSettings(), log)
    assert len(log) == 0
    assert require_binary("sh", "sh")


def test_missing_ocr_weights_fail_the_step(tmp_path):
    store = TableStore(tmp_path / "data")
    rows = []
    for i in range(3):
        rel = f"media/f{i}.png"
        (store.data_dir / "media").mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (32, 24), (i * 60, 0, 0)).save(store.data_dir / rel)
        rows.append(
            {
                "frame_id": f"f{i}",
                "batch": "b",
                "source": "s",
                "item_id": f"i{i}",
                "clip_id": None,
                "kind": "image",
                "frame_index": 0,
                "timestamp_s": None,
                "path": rel,
                "width": 32,
                "height": 24,
                "blur_var": 1.0,
                "caption": None,
                "sha256": str(i),
            }
        )
    c = load_contract("frames")
    store.write("frames", c.conform(pd.DataFrame(rows)), "b", schema=c.arrow_schema())
    store.write("duplicates", pd.DataFrame({"frame_id": [r["frame_id"] for r in rows], "batch": "b", "is_kept": True}))
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", ["b"])
    ocr = OCRResource(model_dir=str(tmp_path / "no-weights"))
    res = dg.materialize(
        [text_ratio],
        partition_key="b",
        instance=instance,
        raise_on_error=False,
        resources={"storage": StorageResource(data_dir=str(store.data_dir)), "ocr": ocr},
    )
    assert not res.success
    msg = next(e for e in res.all_events if e.is_step_failure).event_specific_data.error.to_string()
    assert "EasyOCR could not load its weights" in msg and "SUBTEXT_MODELS_DIR" in msg
    assert not store.exists("rejects") or store.read("rejects").empty
