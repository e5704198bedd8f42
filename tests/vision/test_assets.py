"""The vision group materialized by Dagster on a temp data dir with fixture upstream tables.

Model: YOLO11n from yolo11n.yaml (random weights) at conf=1e-5 so its untrained head emits
boxes and every table (indicators included) gets rows; their content means nothing.
"""

from __future__ import annotations

import hashlib
import shutil

import dagster as dg
import pandas as pd
import pytest
from PIL import Image

from assets.vision.assets import defs as vision_defs
from forge.storage import TableStore, open_catalog
from forge.storage.contracts import load_contract
from resources.detector import DetectorResource
from resources.storage import StorageResource
from resources.tagger import TaggerResource

BATCH = "demo-0000"


def _frame(fid, path, w, h, kind="image", clip=None, idx=0):
    return {
        "frame_id": fid,
        "batch": BATCH,
        "source": "demo",
        "item_id": fid,
        "clip_id": clip,
        "kind": kind,
        "frame_index": idx,
        "timestamp_s": float(idx) if clip else None,
        "path": path,
        "width": w,
        "height": h,
        "blur_var": 100.0,
        "caption": None,
        "sha256": hashlib.sha256(path.encode()).hexdigest(),
    }


@pytest.fixture
def data_dir(tmp_path, photos):
    store = TableStore(tmp_path / "data")
    media = store.media_dir / "frames" / BATCH
    media.mkdir(parents=True)
    shutil.copy(photos["bus"], media / "clipA_f000.jpg")
    shutil.copy(photos["bus"], media / "clipA_f001.jpg")  # a duplicate, dropped by dedup
    shutil.copy(photos["astronaut"], media / "clipA_f002.png")
    shutil.copy(photos["coffee"], media / "img_coffee.png")
    Image.open(photos["coffee"]).convert("L").save(media / "img_gray.png")
    Image.open(photos["astronaut"]).convert("CMYK").save(media / "img_cmyk.jpg")
    (media / "img_broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    rel = f"media/frames/{BATCH}"
    frames = pd.DataFrame(
        [
            _frame("clipA_f000", f"{rel}/clipA_f000.jpg", 810, 1080, "clip_frame", "clipA", 0),
            _frame("clipA_f001", f"{rel}/clipA_f001.jpg", 810, 1080, "clip_frame", "clipA", 1),
            _frame("clipA_f002", f"{rel}/clipA_f002.png", 512, 512, "clip_frame", "clipA", 2),
            _frame("img_coffee", f"{rel}/img_coffee.png", 600, 400),
            _frame("img_gray", f"{rel}/img_gray.png", 600, 400),
            _frame("img_cmyk", f"{rel}/img_cmyk.jpg", 512, 512),
            _frame("img_broken", f"{rel}/img_broken.jpg", 10, 10),
        ]
    )
    fc = load_contract("frames")
    store.write("frames", fc.conform(frames), BATCH, schema=fc.arrow_schema())
    store.write(
        "duplicates",
        pd.DataFrame(
            {
                "frame_id": ["clipA_f000", "clipA_f001"],
                "batch": [BATCH] * 2,
                "group_id": ["g1", "g1"],
                "kept_frame_id": ["clipA_f000"] * 2,
                "is_kept": [True, False],
                "distance": [0, 0],
            }
        ),
        BATCH,
    )
    store.write(
        "text_ratio",
        pd.DataFrame(
            {
                "frame_id": ["clipA_f000", "img_coffee"],
                "batch": [BATCH] * 2,
                "ratio": [0.1, 0.0],
                "n_boxes": [2, 0],
                "text": ["NO 1 LINE", ""],
                "passes": [True, True],
            }
        ),
        BATCH,
    )
    store.write(
        "clips",
        pd.DataFrame(
            {"clip_id": ["clipA"], "batch": [BATCH], "transcript": [None], "transcript_status": ["no_subtitles"]}
        ),
        BATCH,
    )
    return store.data_dir


def _materialize(assets, data_dir, instance, **engine) -> dg.ExecuteInProcessResult:
    """``assets`` on the fixture batch with the small random-weights detector (engine options)."""
    return dg.materialize(
        assets,
        instance=instance,
        partition_key=BATCH,
        resources={
            "storage": StorageResource(data_dir=str(data_dir)),
            "detector": DetectorResource(
                weights="yolo11n.yaml", conf=1e-5, imgsz=320, batch_size=4, decode_workers=2, **engine
            ),
            "tagger": TaggerResource(backend="yolo"),
        },
    )


@pytest.mark.parametrize(
    "engine_kwargs",
    [{}, {"engine": "tensor", "device_decode": True}],
    ids=["default-engine", "tensor-device-decode"],  # the GPU decode path, with torchvision's CPU decoder
)
def test_vision_group_materializes(data_dir, engine_kwargs):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    res = _materialize(list(vision_defs.assets), data_dir, instance, **engine_kwargs)
    assert res.success
    [mat] = [m for m in res.asset_materializations_for_node("detections") if "decode" in m.metadata]
    assert mat.metadata["decode"].value == ("device" if engine_kwargs else "cpu")
    phases = mat.metadata["phase_seconds"].value  # where the stage's time went, for the UI
    assert phases["rows"] >= 0 and ({"decode", "letterbox", "network"} <= set(phases) if engine_kwargs else True)
    checks = res.get_asset_check_evaluations()
    assert len(checks) == 5 and all(c.passed for c in checks), [
        (c.check_name, c.metadata) for c in checks if not c.passed
    ]

    store = TableStore(data_dir)
    det = store.read("detections", parts=[BATCH])
    seen = set(det.frame_id)
    assert "clipA_f001" not in seen  # dropped duplicate never reaches the model
    assert seen <= {"clipA_f000", "clipA_f002", "img_coffee", "img_gray", "img_cmyk"}
    assert (det.weights_kind == "random_init").all() and det.weights_sha256.isna().all()
    bus = det[det.frame_id == "clipA_f000"]
    assert ((bus.x2 <= 810) & (bus.y2 <= 1080) & (bus.nx2 <= 1)).all()

    rej = store.read("rejects", parts=[f"detections__{BATCH}"])
    assert list(rej.item_id) == ["img_broken"] and list(rej.reason) == ["undecodable"]

    ind = store.read("person_indicators", parts=[BATCH])
    persons = det[det.class_name == "person"]
    # The untrained head scores all classes almost equally and ties resolve to class 0, so
    # at conf=1e-5 it emits "person" boxes: the indicator path runs on them.
    assert len(persons) > 0
    assert len(ind) == len(persons)
    for _, g in ind.groupby("frame_id"):
        assert list(g.sort_values("person_index").label) == [f"person{i}" for i in range(1, len(g) + 1)]
        assert (data_dir / g.annotated_path.iloc[0]).is_file()

    tags = store.read("tags", parts=[BATCH])
    assert set(tags.frame_id) == set(det.frame_id) and (tags.backend == "yolo").all()
    assert tags.model_version.str.contains("random-init").all()

    rich = store.read("rich_scenes", parts=[BATCH])
    assert set(rich.frame_id) == {"clipA_f000", "clipA_f002", "img_coffee", "img_gray", "img_cmyk"}
    assert sorted(rich["rank"]) == [1, 2, 3, 4, 5]
    assert rich.selected.all()  # the demo rule in config/vision.yaml is permissive

    ev = store.read("evidence", parts=[BATCH]).set_index(["unit", "unit_id"])
    assert ("clip", "clipA") in ev.index and ("frame", "img_broken") not in ev.index
    clip = ev.loc[("clip", "clipA")]
    assert list(clip.frame_ids) == ["clipA_f000", "clipA_f002"]
    assert clip.transcript_status == "no_subtitles" and clip.ocr_text == "NO 1 LINE"
    assert ev.loc[("frame", "img_coffee"), "transcript_status"] == "no_audio_image"

    # The DuckDB catalog sees the new tables.
    with open_catalog(data_dir) as con:
        assert con.execute("select count(*) from evidence").fetchone()[0] == len(ev)


def test_detections_reuse_only_rows_of_the_setup_that_runs(data_dir, monkeypatch):
    """Detection engines agree within rounding, not bit for bit, so cached rows are keyed by the
    setup (engine, device kind, fp16, decode path): another engine recomputes, the same engine
    again reuses; an ``auto`` engine that falls back at load time (ONNX export fails) says what
    ran (``setup_ran``) and caches nothing under ``auto``'s key."""
    import resources.detector as rd
    from assets.vision.assets import detections

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])

    def run(**engine):
        res = _materialize([detections], data_dir, instance, **engine)
        assert res.success
        md = res.get_asset_materialization_events()[0].materialization.metadata
        return md["reused"].value, md["computed"].value, md

    reused, computed, md = run(engine="ultralytics")
    assert reused == 0 and computed > 0 and md["setup"].value["engine"] == "ultralytics"
    again = run(engine="ultralytics")
    assert again[0] > 0  # the same setup: reused
    r, c, md = run(engine="tensor")
    assert (r, c) == (0, computed)  # another engine: nothing reused
    assert md["setup"].value == {"engine": "tensor", "device": "cpu", "fp16": False, "device_decode": False}
    assert md["engine"].value == "tensor" and "setup_ran" not in md
    assert run(engine="tensor")[:2] == again[:2]

    def no_onnx(*a, **k):
        raise RuntimeError("exporter cannot trace (simulated)")

    monkeypatch.setattr(rd, "_CACHE", {})  # a fresh load, not a model built by another test
    monkeypatch.setattr("forge.vision.fast_detect.OnnxModule", no_onnx)
    for _ in range(2):  # nothing cached under auto's key: computed both times
        r, c, md = run(engine="auto")
        assert (r, c) == (0, computed)
        assert md["setup"].value["engine"] == "onnx" and md["setup_ran"].value["engine"] == "ultralytics"
        assert md["engine"].value == "ultralytics"
