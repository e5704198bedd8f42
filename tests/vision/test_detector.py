"""YOLO detector: weights resolution and hash checks, batching, box parsing, offline proof."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from forge.vision.detector import (
    WeightsError,
    detection_rows,
    parse_boxes,
    parse_result,
    reference_weights,
    resolve_weights,
)
from forge.vision.images import load_image

REPO = Path(__file__).resolve().parents[2]


def test_architecture_yaml_is_random_init():
    spec = resolve_weights("yolo11n.yaml")
    assert (spec.kind, spec.model_name, spec.sha256) == ("random_init", "yolo11n", None)


def test_weights_must_be_an_existing_absolute_path(tmp_path):
    with pytest.raises(WeightsError, match="absolute"):
        resolve_weights("models/yolo11n.pt")
    with pytest.raises(WeightsError, match="does not exist"):
        resolve_weights(str(tmp_path / "yolo11n.pt"))
    with pytest.raises(WeightsError, match="allow_download"):
        resolve_weights("yolo11n.pt")
    assert resolve_weights("yolo11n.pt", allow_download=True).kind == "download"


def test_reference_named_file_with_wrong_hash_is_refused(tmp_path):
    fake = tmp_path / "yolo11n.pt"
    fake.write_bytes(b"version https://git-lfs.github.com/spec/v1\n")  # an LFS pointer, as found online
    with pytest.raises(WeightsError, match="refusing"):
        resolve_weights(str(fake))


def test_unpinned_checkpoint_is_refused_before_unpickling(tmp_path):
    # A .pt is a pickle: it may run code when loaded. Unknown bytes are never handed to torch.
    f = tmp_path / "custom-people.pt"
    f.write_bytes(b"abc")
    with pytest.raises(WeightsError, match="not pinned"):
        resolve_weights(str(f))


def test_checkpoint_pinned_in_the_user_manifest_is_hashed_and_accepted(tmp_path, monkeypatch):
    f = tmp_path / "custom-people.pt"
    f.write_bytes(b"abc")
    sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    manifest = tmp_path / "weights.yaml"
    manifest.write_text(
        f"weights:\n  mine:\n    file: custom-people.pt\n    status: optional\n"
        f"    source: my lab\n    licence: internal\n    sha256: {sha}\n"
    )
    monkeypatch.setenv("SUBTEXT_WEIGHTS_MANIFEST", str(manifest))
    spec = resolve_weights(str(f))
    assert spec.kind == "file" and spec.sha256 == sha


def test_random_model_loads_on_cpu_with_coco_names(random_detector):
    d = random_detector
    assert d.device == "cpu" and d.half is False
    assert d.names[0] == "person" and d.names[5] == "bus" and len(d.names) == 80
    assert d.person_class == 0


def test_prediction_is_batched(random_detector, photos, monkeypatch):
    sizes = []
    real = random_detector.model.predict

    def spy(source, **kw):
        sizes.append((len(source), kw["batch"]))
        return real(source, **kw)

    monkeypatch.setattr(random_detector.model, "predict", spy)
    ims = [load_image(p) for p in photos.values()] + [load_image(photos["bus"])] * 2
    out = random_detector.detect(ims)
    assert len(out) == 5
    assert sizes == [(2, 2), (2, 2), (1, 1)]  # batch_size=2: one forward per chunk, not per image
    for dets, im in zip(out, ims):
        for d in dets:  # whatever the random head emits, boxes lie in the original image
            assert 0 <= d.x1 < d.x2 <= im.orig_width and 0 <= d.y1 < d.y2 <= im.orig_height


def test_parse_result_maps_boxes_back_to_original_pixels():
    from ultralytics.engine.results import Results

    orig = np.zeros((50, 100, 3), dtype=np.uint8)  # the decoded (half-size) image
    boxes = torch.tensor(
        [
            [10.0, 5.0, 30.0, 45.0, 0.9, 0.0],  # person
            [60.0, -3.0, 120.0, 20.0, 0.5, 5.0],  # bus, spills over the right and top edges
            [40.0, 40.0, 40.2, 49.0, 0.7, 0.0],  # degenerate (0.4 px wide at full size)
        ]
    )
    res = Results(orig, path="x.jpg", names={0: "person", 5: "bus"}, boxes=boxes)
    dets = parse_result(res, scale=2.0, width=200, height=100, names={0: "person", 5: "bus"})
    assert [(d.class_name, round(d.x1), round(d.y1), round(d.x2), round(d.y2)) for d in dets] == [
        ("person", 20, 10, 60, 90),
        ("bus", 120, 0, 200, 40),
    ]
    rows = detection_rows("f1", "b-0000", dets, 200, 100, resolve_weights("yolo11n.yaml"))
    assert [r["det_index"] for r in rows] == [0, 1]
    assert rows[1]["nx2"] == 1.0 and rows[0]["nx1"] == pytest.approx(0.1) and rows[0]["ny2"] == pytest.approx(0.9)
    assert rows[0]["weights_kind"] == "random_init" and rows[0]["weights_sha256"] is None


def test_parse_boxes_drops_empty():
    assert parse_boxes(np.zeros((0, 4)), [], [], 10, 10, {}) == []


def test_nothing_touches_the_network(tmp_path):
    """In a fresh interpreter (so import-time probes count), with every socket operation
    raising: import, load from yolo11n.yaml, batched predict, Results.plot (cv2) and our
    person indicators. The audit hook records any attempt; the test fails on the first."""
    script = textwrap.dedent(f"""
        import os, sys, socket
        attempts = []
        def hook(event, args):
            if event.startswith(("socket.", "urllib.Request", "http.client")) and event not in ("socket.__new__", "socket.bind"):
                attempts.append((event, repr(args)[:200]))
                raise OSError("network disabled in test: " + event)
        sys.addaudithook(hook)
        for k in ("YOLO_OFFLINE", "YOLO_AUTOINSTALL", "YOLO_CONFIG_DIR"):
            os.environ.pop(k, None)  # prove our own switches suffice
        sys.path.insert(0, {str(REPO)!r})
        from forge.vision.offline import ensure_offline_env
        ensure_offline_env({str(tmp_path / "cfg")!r})
        import numpy as np
        from forge.vision.detector import YoloDetector
        from forge.vision.images import load_image
        from forge.vision.indicators import Box, annotate
        import ultralytics, pathlib
        bus = load_image(pathlib.Path(ultralytics.__file__).parent / "assets" / "bus.jpg")
        det = YoloDetector(weights="yolo11n.yaml", conf=1e-5, max_det=3, batch_size=2, imgsz=320)
        res = det.predict_arrays([bus.bgr, bus.bgr])
        plotted = res[0].plot()  # cv2 drawing, no font download
        assert plotted.shape[2] == 3
        annotate(bus.rgb, [Box(10, 10, 200, 400), Box(300, 50, 500, 600)], bus.scale, pathlib.Path({str(tmp_path / "a.jpg")!r}))
        print("ATTEMPTS", len(attempts), attempts)
        sys.exit(1 if attempts else 0)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ATTEMPTS 0 []" in proc.stdout
    assert (tmp_path / "a.jpg").exists()


def test_reference_table_comes_from_the_weights_manifest():
    # The COCO files' published sizes / sha256 (Ultralytics assets release), pinned in config/weights.yaml.
    assert reference_weights() == {
        "yolo11n.pt": (5_613_764, "0ebbc80d4a7680d14987a577cd21342b65ecfd94632bd9a8da63ae6417644ee1"),
        "yolov8n.pt": (6_534_387, "31e20dde3def09e2cf938c7be6fe23d9150bbbe503982af13345706515f2ef95"),
    }


def test_prediction_leaves_torch_threads_as_they_were(random_detector, photos):
    import cv2
    import torch

    torch.set_num_threads(2)  # ultralytics would drop it to cpu_count-1 (1 on CI's 2 cores)
    random_detector.predict_arrays([cv2.imread(str(photos["bus"]))])
    assert torch.get_num_threads() == 2
