"""The tensor detection engine (forge.vision.fast_detect) against Ultralytics' own predict, with
the network run by PyTorch (engine ``tensor``) and by ONNX Runtime (engine ``onnx``, CPU).

Model: the architecture from ``yolo11n.yaml`` with a fixed seed. Random weights detect nothing
(default init fades to zero, the head's class bias starts near -10), so the convolutions are
re-drawn (He-normal) from a seeded generator: scores then vary across anchors and classes, and
NMS has real work. Inputs: fixed photos.
Tolerance: every detection of one path has a partner in the other with the same class, box
corners within BOX_TOL original pixels (bilinear resize in torch vs OpenCV on uint8) and
confidence within CONF_TOL; at most MISS_TOL of the detections may lack one (a score at the
threshold or an NMS tie can flip).
"""

import numpy as np
import pytest
import torch

from forge.vision.detector import YoloDetector
from forge.vision.fast_detect import TensorDetector, letterbox_geometry
from forge.vision.images import load_image

BOX_TOL, CONF_TOL, MISS_TOL = 3.0, 2e-4, 0.03


def _seeded(device: str) -> YoloDetector:
    torch.manual_seed(0)
    det = YoloDetector(weights="yolo11n.yaml", device=device, conf=0.019, iou=0.45, batch_size=4)
    g = torch.Generator().manual_seed(0)
    for mod in det.model.model.modules():  # He-normal: the default init fades to zero over 100 layers
        if isinstance(mod, torch.nn.Conv2d):
            w = torch.randn(mod.weight.shape, generator=g) * (2 / mod.weight[0].numel()) ** 0.5
            mod.weight.data = w.to(mod.weight.device)
    for seq in det.model.model.model[-1].cv3:
        seq[-1].bias.data[:] = -4.0  # class scores ~0.017-0.022; conf keeps the top ~0.1 %
    return det


@pytest.fixture(scope="module")
def seeded_detector():
    return _seeded("cpu")


def _unmatched(a, b, conf_tol: float = CONF_TOL) -> int:
    used, missing = set(), 0
    for d in a:
        best = None
        for j, e in enumerate(b):
            if j in used or e.class_id != d.class_id or abs(e.confidence - d.confidence) > conf_tol:
                continue
            err = max(abs(e.x1 - d.x1), abs(e.y1 - d.y1), abs(e.x2 - d.x2), abs(e.y2 - d.y2))
            if err <= BOX_TOL and (best is None or err < best[0]):
                best = (err, j)
        if best is None:
            missing += 1
        else:
            used.add(best[1])
    return missing


def _compare(ref, got, conf_tol: float = CONF_TOL):
    n = sum(len(r) for r in ref)
    assert n > 20, "the seeded model must produce detections, or the comparison proves nothing"
    missing = sum(_unmatched(r, g, conf_tol) for r, g in zip(ref, got)) + sum(
        _unmatched(g, r, conf_tol) for r, g in zip(ref, got)
    )
    assert missing <= MISS_TOL * 2 * n, (missing, n)


def test_letterbox_geometry_matches_library():
    from forge.vision.offline import import_ultralytics

    import_ultralytics()
    from ultralytics.data.augment import LetterBox

    for h, w in [(1080, 810), (512, 512), (240, 320), (37, 1900)]:
        for rect in (True, False):
            img = np.zeros((h, w, 3), np.uint8)
            out = LetterBox(640, auto=rect, stride=32)(image=img)
            nh, nw, top, bottom, left, right, _ = letterbox_geometry(h, w, 640, 32, rect)
            assert out.shape[:2] == (nh + top + bottom, nw + left + right)


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
def test_mixed_sizes_match_library_predict(seeded_detector, photos, runtime):
    ims = [load_image(p, max_side=640) for p in photos.values()]
    assert len({im.rgb.shape for im in ims}) > 1  # square letterbox path
    fast = TensorDetector(seeded_detector, runtime=runtime)
    _compare(seeded_detector.detect(ims), fast.detect(ims))


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
def test_same_size_batch_matches_library_predict(seeded_detector, photos, runtime):
    ims = [load_image(photos["bus"], max_side=640)] * 3  # one shape: the stride-rounded rectangle
    fast = TensorDetector(seeded_detector, runtime=runtime)
    got = fast.detect(ims)
    _compare(seeded_detector.detect(ims), got)
    assert [len(g) for g in got] == [len(got[0])] * 3  # batching does not change an image's result


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
def test_stream_keeps_order_and_tags(seeded_detector, photos, runtime):
    ims = [load_image(p, max_side=640) for p in photos.values()]
    fast = TensorDetector(seeded_detector, runtime=runtime)
    direct = [fast.detect([im])[0] for im in ims]
    streamed = list(fast.detect_stream([(k, [im]) for k, im in enumerate(ims)] + [("empty", [])]))
    assert [t for t, _ in streamed] == [0, 1, 2, "empty"]
    for (_tag, dets), ref in zip(streamed, direct):
        assert [(d.class_id, round(d.x1, 3), round(d.confidence, 5)) for d in dets[0]] == [
            (d.class_id, round(d.x1, 3), round(d.confidence, 5)) for d in ref
        ]
    assert streamed[-1] == ("empty", [])


def test_engine_choice_by_device(seeded_detector):
    from forge.vision.fast_detect import with_engine

    assert with_engine(seeded_detector, "auto").engine == "onnx"  # CPU: ONNX Runtime measured fastest
    assert with_engine(seeded_detector, "tensor").engine == "tensor"
    assert with_engine(seeded_detector, "tensor").device_decode is False  # CPU: decode threads
    assert with_engine(seeded_detector, "tensor", device_decode=True).device_decode is True
    with pytest.raises(ValueError, match="torch runtime"):
        TensorDetector(seeded_detector, runtime="onnx", device_decode=True)
    assert with_engine(seeded_detector, "ultralytics") is seeded_detector
    with pytest.raises(ValueError, match="one of"):
        with_engine(seeded_detector, "tensorrt")


def test_device_decode_by_name_needs_torchvisions_decoder(seeded_detector, monkeypatch):
    import torchvision.io

    monkeypatch.delattr(torchvision.io, "decode_jpeg")  # a torchvision that dropped its decoders
    with pytest.raises(ImportError, match="decode_jpeg"):
        TensorDetector(seeded_detector, device_decode=True)
    assert TensorDetector(seeded_detector).device_decode is False  # CPU default: decode threads


def test_auto_falls_back_to_the_library_when_onnx_cannot_run(seeded_detector, monkeypatch, caplog):
    import forge.vision.fast_detect as fd

    def broken(*a, **k):
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(fd, "OnnxModule", broken)
    with caplog.at_level("WARNING", logger="forge.vision.fast_detect"):
        assert fd.with_engine(seeded_detector, "auto") is seeded_detector  # the library's predict
    assert "onnxruntime" in caplog.text
    with pytest.raises(ImportError):  # asked for by name: no silent substitute
        fd.with_engine(seeded_detector, "onnx")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (run on a GPU machine)")
def test_cuda_fp16_path_matches_library_predict_on_cuda(photos, tmp_path):
    """The GPU image path (upload uint8, letterbox on the device, fp16 forward, one batched NMS)
    against the library's own fp16 predict on the same card: the same tolerance, with the
    confidence tolerance widened to fp16's resolution."""
    cuda = _seeded("cuda:0")
    assert cuda.half  # fp16 on CUDA by default
    ims = [load_image(p, max_side=640) for p in photos.values()]
    fast = TensorDetector(cuda)
    assert fast.dtype == torch.float16 and fast.dev.type == "cuda"
    fp16_tol = 2e-3  # fp16 scores near 0.02 step by ~1e-5; sums in another order differ more
    _compare(cuda.detect(ims), fast.detect(ims), fp16_tol)
    same = [ims[0]] * 3
    _compare(cuda.detect(same), fast.detect(same), fp16_tol)
    # nvjpeg: JPEG bytes decoded on the card, letterboxed from full size
    from forge.vision.images import DeviceImage, read_for_device

    jpgs = list(_jpeg_frames(photos, tmp_path).values())
    assert fast.device_decode
    decoded = fast.decode([read_for_device(p) for p in jpgs])
    assert all(isinstance(d, DeviceImage) and d.tensor.is_cuda for d in decoded)
    full = [load_image(p, max_side=10_000) for p in jpgs]
    _compare(cuda.detect(full), fast.detect([read_for_device(p) for p in jpgs]), fp16_tol)


def _jpeg_frames(photos, tmp_path):
    """bus.jpg as shipped, astronaut and coffee re-encoded as JPEG (mixed sizes)."""
    from PIL import Image

    out = {"bus": photos["bus"]}
    for name in ("astronaut", "coffee"):
        Image.open(photos[name]).convert("RGB").save(tmp_path / f"{name}.jpg", quality=92)
        out[name] = tmp_path / f"{name}.jpg"
    return out


def test_device_decode_matches_library_predict_on_full_size_frames(seeded_detector, photos, tmp_path):
    """JPEG bytes decoded by torchvision's decoder on the model's device (here the CPU, nvjpeg on
    CUDA) and letterboxed from full size, against the library's predict on the same full-size
    frames (OpenCV letterbox)."""
    from forge.vision.images import DeviceImage, EncodedJPEG, read_for_device

    jpgs = _jpeg_frames(photos, tmp_path)
    encoded = [read_for_device(p) for p in jpgs.values()]
    assert all(isinstance(e, EncodedJPEG) for e in encoded)
    fast = TensorDetector(seeded_detector, device_decode=True)
    decoded = fast.decode(encoded)
    assert all(isinstance(d, DeviceImage) and d.hw == (e.orig_height, e.orig_width) for d, e in zip(decoded, encoded))
    full = [load_image(p, max_side=10_000) for p in jpgs.values()]  # full size, CPU decoder
    for d, f in zip(decoded, full):  # the same pixels, whichever decoder (both libjpeg-turbo here)
        assert np.abs(d.tensor.permute(1, 2, 0).numpy().astype(int) - f.rgb.astype(int)).mean() < 1.0
    _compare(seeded_detector.detect(full), fast.detect(encoded))


def test_device_decode_stage_takes_the_cpu_path_or_rejects_what_it_cannot_decode(
    seeded_detector, photos, tmp_path, monkeypatch
):
    """In the stage: PNGs, EXIF-rotated and truncated JPEGs take the CPU decoder; a JPEG the
    device decoder refuses (simulated: nvjpeg cannot run here) falls back to the CPU decoder and
    gets the CPU path's rows; a corrupt one is rejected with its reason; the rest get rows."""
    import io
    import shutil

    import pandas as pd
    import torchvision.io
    from PIL import Image

    from forge.vision.images import EncodedJPEG, LoadedImage, LoadError, read_for_device
    from forge.vision.pipeline import DecodeOptions, run_detection

    jpgs = _jpeg_frames(photos, tmp_path)
    data = jpgs["astronaut"].read_bytes()
    (tmp_path / "truncated.jpg").write_bytes(data[: len(data) // 2])
    (tmp_path / "bad_scan.jpg").write_bytes(data[:600] + bytes(50) + data[650:])  # broken tables
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90
    Image.open(photos["coffee"]).convert("RGB").save(tmp_path / "rotated.jpg", exif=exif)
    buf = io.BytesIO()
    Image.open(photos["coffee"]).save(buf, "PNG")
    (tmp_path / "coffee.png").write_bytes(buf.getvalue())
    shutil.copy(photos["bus"], tmp_path / "bus.jpg")
    assert isinstance(read_for_device(tmp_path / "truncated.jpg"), LoadError)  # no end marker: CPU rejects
    assert isinstance(read_for_device(tmp_path / "rotated.jpg"), LoadedImage)
    assert isinstance(read_for_device(tmp_path / "coffee.png"), LoadedImage)
    assert isinstance(read_for_device(tmp_path / "coffee.jpg"), EncodedJPEG)
    huge = read_for_device(tmp_path / "coffee.jpg", max_side=320, device_max_pixels=100 * 100)
    assert isinstance(huge, LoadedImage) and max(huge.rgb.shape) == 320  # too big for the device: CPU, scaled
    for limits, reason in [({"min_side": 10_000}, "too_small"), ({"max_pixels": 100}, "too_large")]:
        out = read_for_device(tmp_path / "coffee.jpg", **limits)  # the CPU path's reasons
        assert isinstance(out, LoadError) and out.reason == reason

    refused = (tmp_path / "coffee.jpg").read_bytes()
    real_decode = torchvision.io.decode_jpeg

    def device_decoder(inp, *a, **k):  # refuses one file, as nvjpeg refuses some encodings
        for t in inp if isinstance(inp, list) else [inp]:
            if bytes(t.numpy()) == refused:
                raise RuntimeError("nvjpeg: unsupported encoding (simulated)")
        return real_decode(inp, *a, **k)

    names = ["bus", "astronaut", "truncated", "bad_scan", "rotated", "coffee_png", "coffee"]
    files = {n: f"{n}.jpg" for n in names} | {"coffee_png": "coffee.png"}
    frames = pd.DataFrame({"frame_id": names, "batch": "b0", "path": [files[n] for n in names]})

    def run(device_decode: bool):
        rejects: list = []
        det = TensorDetector(seeded_detector, device_decode=device_decode)
        df, stats = run_detection(frames, tmp_path, det, lambda *a: rejects.append(a), DecodeOptions(workers=2))
        return df, stats, rejects

    ref, _, ref_rejects = run(False)  # the CPU decoder throughout
    monkeypatch.setattr(torchvision.io, "decode_jpeg", device_decoder)
    df, stats, rejects = run(True)
    expected = [("bad_scan", "undecodable"), ("truncated", "undecodable")]
    assert sorted((r[0], r[1]) for r in rejects) == sorted((r[0], r[1]) for r in ref_rejects) == expected
    assert (stats.processed, stats.rejected) == (5, 2)
    cpu_path = ["rotated", "coffee_png", "coffee"]  # the CPU decoder either way: identical rows
    got, want = (d[d.frame_id.isin(cpu_path)].reset_index(drop=True) for d in (df, ref))
    pd.testing.assert_frame_equal(got, want)
    assert set(got.frame_id) == set(cpu_path)
    assert set(df.frame_id) >= {"bus", "astronaut"}  # decoded by the device decoder


def test_grouped_letterbox_equals_one_frame_at_a_time(seeded_detector, photos, tmp_path):
    """On CUDA frames of one shape are letterboxed together (one resize per group); the batch
    tensor is the one that letterboxing each frame alone gives, bit for bit, whatever the order of
    shapes (groups not contiguous in the batch), the chunking of a group, and whether frames come
    decoded on the CPU or on the device. Same code on the CPU, grouping switched on by its knob."""
    from forge.vision.fast_detect import LETTERBOX_CHUNK_PIXELS, _hw
    from forge.vision.images import read_for_device

    jpgs = _jpeg_frames(photos, tmp_path)
    fast = TensorDetector(seeded_detector, device_decode=True)
    assert fast.letterbox_chunk_pixels == 0  # CPU default: one frame per call
    device = fast.decode([read_for_device(p) for p in jpgs.values()])  # full-size, torch tensors
    cpu = [load_image(p, max_side=640) for p in jpgs.values()]
    mixed = [cpu[0], device[1], cpu[1], cpu[0], device[1], device[0], cpu[2], cpu[0], cpu[0]]
    assert len({(_hw(im), type(im)) for im in mixed}) >= 4
    for frames in (mixed, [cpu[0]] * 3):  # square letterbox; one shape (the stride rectangle)
        alone, meta_alone = fast.preprocess(frames)
        for budget in (LETTERBOX_CHUNK_PIXELS, 2 * 640 * 480):  # whole groups; chunks of 2 frames
            fast.letterbox_chunk_pixels = budget
            grouped, meta = fast.preprocess(frames)
            fast.letterbox_chunk_pixels = 0
            assert grouped.shape == alone.shape and meta == meta_alone
            assert torch.equal(grouped, alone)
    mixed_batch, _ = fast.preprocess(mixed)
    for i, im in enumerate(mixed):  # and each slot of the square batch holds its own frame
        other = next(o for o in cpu if _hw(o) != _hw(im))
        one, _ = fast.preprocess([im, other])
        assert torch.equal(mixed_batch[i], one[0])


def test_max_det_keeps_each_frames_best_boxes(seeded_detector, photos):
    """``max_det`` caps every frame of a batch at its highest-scoring boxes, independently."""
    ims = [load_image(p, max_side=640) for p in photos.values()]
    fast = TensorDetector(seeded_detector)
    full = fast.detect(ims)
    assert all(len(d) > 5 for d in full)
    old = seeded_detector.max_det
    try:
        seeded_detector.max_det = 5
        capped = fast.detect(ims)
    finally:
        seeded_detector.max_det = old
    for a, b in zip(full, capped):
        top = sorted(a, key=lambda d: -d.confidence)[:5]
        assert sorted((d.class_id, d.confidence) for d in b) == sorted((d.class_id, d.confidence) for d in top)


def test_stage_reports_where_its_time_went(seeded_detector, random_detector, photos, tmp_path):
    """``run_detection`` returns seconds per phase: the tensor engine's own (decode, letterbox,
    network, boxes) plus rows and waiting on the main thread; the library's predict has no
    phases of its own, so the rest of its main thread is ``model_and_waiting``."""
    import pandas as pd

    from forge.vision.pipeline import DecodeOptions, add_phases, run_detection

    jpgs = _jpeg_frames(photos, tmp_path)
    frames = pd.DataFrame({"frame_id": list(jpgs), "batch": "b0", "path": [p.name for p in jpgs.values()]})
    fast = TensorDetector(seeded_detector, device_decode=True)
    _, stats = run_detection(frames, tmp_path, fast, lambda *a: None, DecodeOptions(workers=2))
    ph = stats.extra["phase_seconds"]
    assert set(ph) == {"decode", "letterbox", "network", "boxes", "rows", "waiting"}
    assert ph["decode"] > 0 and ph["letterbox"] > 0 and ph["network"] > 0
    assert ph["network"] + ph["boxes"] + ph["rows"] <= stats.model_seconds + 1e-3
    _, again = run_detection(frames, tmp_path, fast, lambda *a: None, DecodeOptions(workers=2))
    # per call, not running totals: the two calls' phases add up to the detector's totals
    assert fast.phase_seconds["network"] == pytest.approx(
        ph["network"] + again.extra["phase_seconds"]["network"], abs=1e-3
    )
    assert add_phases(dict(ph), again.extra["phase_seconds"])["network"] == round(
        ph["network"] + again.extra["phase_seconds"]["network"], 4
    )
    _, lib = run_detection(frames, tmp_path, random_detector, lambda *a: None, DecodeOptions(workers=2))
    assert set(lib.extra["phase_seconds"]) == {"rows", "model_and_waiting"}


@pytest.mark.parametrize("engine", ["auto", "tensor", "onnx", "ultralytics"])
@pytest.mark.parametrize("device_decode", [None, True, False])
def test_expected_setup_is_what_with_engine_builds(seeded_detector, engine, device_decode):
    """The setup the cache key names before loading is the one the loaded detector reports."""
    from forge.vision.fast_detect import actual_setup, expected_setup, with_engine

    if engine == "onnx" and device_decode:
        pytest.skip("onnx cannot decode on the device (refused by name: test_engine_choice_by_device)")
    built = with_engine(seeded_detector, engine, device_decode)
    assert expected_setup(engine, "cpu", None, device_decode) == actual_setup(built)


def test_expected_setup_on_cuda_without_a_gpu():
    from forge.vision.fast_detect import expected_setup

    assert expected_setup("auto", "cuda:1", None, None) == {
        "engine": "tensor",
        "device": "cuda",
        "fp16": True,
        "device_decode": True,
    }
    assert expected_setup("ultralytics", "cuda", False, True) == {
        "engine": "ultralytics",
        "device": "cuda",
        "fp16": False,
        "device_decode": False,
    }


@pytest.mark.parametrize("prefetch", [True, False])
def test_stream_pipeline_order_and_bounded_lookahead(seeded_detector, photos, prefetch):
    """decode -> letterbox -> network run in three threads; results come back in input order,
    equal to one batch at a time, and at most two batches are prepared ahead of the one in the
    network (one with ``prefetch_batches`` off): decoded full-size frames hold device memory."""
    ims = [load_image(p, max_side=640) for p in photos.values()]
    chunks = [(k, [ims[k % 3], ims[(k + 1) % 3]] if k % 4 != 2 else []) for k in range(9)]
    fast = TensorDetector(seeded_detector, prefetch_batches=prefetch)
    decoded, ran = [], []
    real_decode, real_run = fast.decode, fast._run

    def decode(images):
        decoded.append(len(ran))  # batches through the network when this one started decoding
        return real_decode(images)

    def run(*a):
        ran.append(len(decoded))
        return real_run(*a)

    fast.decode, fast._run = decode, run
    got = list(fast.detect_stream(chunks))
    in_stream = list(ran)
    assert len(in_stream) == 7 and [t for t, _ in got] == list(range(9))
    for (_tag, dets), (_, batch) in zip(got, chunks):
        ref = fast.detect(batch) if batch else []
        assert [[(d.class_id, d.x1, d.confidence) for d in r] for r in dets] == [
            [(d.class_id, d.x1, d.confidence) for d in r] for r in ref
        ]
    ahead = 2 if prefetch else 0
    assert all(n_decoded <= i + 1 + ahead for i, n_decoded in enumerate(in_stream)), in_stream


def test_prepared_batches_hold_no_decoded_pixels(seeded_detector, photos, tmp_path):
    """Once letterboxed, a batch waiting for the network keeps only each frame's geometry: the
    full-size decoded frames (device memory on CUDA) are not held by the pipeline."""
    import gc
    import weakref

    from forge.vision.images import DeviceImage, LoadedImage, read_for_device

    fast = TensorDetector(seeded_detector, device_decode=True)
    decoded = fast.decode([read_for_device(p) for p in _jpeg_frames(photos, tmp_path).values()])
    refs = [weakref.ref(d.tensor) for d in decoded]
    frames, (batch, _meta) = fast._letterbox(decoded)
    del decoded
    gc.collect()
    assert not any(isinstance(f, (DeviceImage, LoadedImage)) for f in frames)
    assert all(r() is None for r in refs) and batch.shape[0] == 3
