"""Text ratio from EasyOCR's detector alone (forge.media.text_boxes) vs the full readtext path.

Tolerance: per frame |ratio difference| <= RATIO_TOL (0.5 % of the image) and at most one
box more or fewer. Same image and settings give the same boxes; only batching (several frames
in one forward pass) can move a score across a threshold. On this corpus the two agree exactly.
"""

import numpy as np
import pytest

from forge.media.ocr import load_rgb, ocr_frame
from forge.media.text_boxes import detect_batch, measure_frames
from tests.filters.conftest import text_render

RATIO_TOL = 0.005
MAX_SIDE = 640  # under the resource default (960): the two paths agree at any size, and CPU cost goes with pixels


def test_detect_batch_refuses_mixed_sizes():
    a, b = np.zeros((40, 60, 3), np.uint8), np.zeros((60, 40, 3), np.uint8)
    with pytest.raises(ValueError, match="one shape"):
        detect_batch(None, [a, b], [1.0, 1.0], [(60, 40), (40, 60)])


@pytest.mark.slow
def test_detector_ratio_equals_readtext_ratio(ocr_resource, media, tmp_path):
    reader = ocr_resource.reader()
    # Three same-sized renders go through the detector in ONE batch; the photos alone.
    for k, lines in enumerate([("SALE TODAY", "50 PERCENT"), ("NO TEXT HERE?",), ("A", "B C D")]):
        text_render(lines).save(tmp_path / f"same{k}.png")
    paths = [
        media["text_render"],
        media["text_heavy"],
        media["hopper"],
        media["bus"],
        *(tmp_path / f"same{k}.png" for k in range(3)),
    ]
    got = {m.key: m for m in measure_frames(reader, [(str(p), p) for p in paths], MAX_SIDE, batch_size=4)}
    assert list(got) == [str(p) for p in paths]  # input order kept
    for p in paths:
        ref = ocr_frame(reader, load_rgb(p), max_side=MAX_SIDE)
        res = got[str(p)].result
        assert res is not None, got[str(p)].error
        assert abs(res.ratio - ref.ratio) <= RATIO_TOL, (p.name, res.ratio, ref.ratio)
        assert abs(res.n_boxes - ref.n_boxes) <= 1, (p.name, res.n_boxes, ref.n_boxes)
        assert (res.width, res.height) == (ref.width, ref.height)
        assert res.text == ""  # not recognised: nobody asked for the text
    assert got[str(media["text_heavy"])].result.ratio > 0.3  # the filter still sees a text-heavy frame
    assert got[str(media["hopper"])].result.ratio < 0.05


@pytest.mark.slow
def test_recognition_only_for_frames_that_need_text(ocr_resource, media):
    reader = ocr_resource.reader()
    paths = [media["text_render"], media["text_heavy"], media["truncated"]]
    wanted = str(media["text_render"])
    out = list(
        measure_frames(
            reader, [(str(p), p) for p in paths], MAX_SIDE, batch_size=2, needs_text=lambda key, res: key == wanted
        )
    )
    assert [m.key for m in out] == [str(p) for p in paths]
    read, skipped, broken = out
    full = ocr_frame(reader, load_rgb(media["text_render"]), max_side=MAX_SIDE)
    assert read.result.text == full.text and "HELLO" in read.result.text.upper()
    assert read.result.ratio == pytest.approx(full.ratio, abs=RATIO_TOL)
    assert all(b["conf"] is not None for b in read.result.boxes)
    assert skipped.result.text == "" and skipped.result.n_boxes >= 2
    assert broken.result is None and broken.error is not None  # recorded, the others proceed


@pytest.mark.slow
def test_chunks_in_flight_give_the_same_results_in_order(ocr_resource, media, tmp_path):
    """detect_workers > 1 (the GPU default) runs chunks concurrently: same results, same order,
    a broken frame still recorded, recognition still only where asked."""
    from forge.media.text_boxes import auto_detect_workers

    reader = ocr_resource.reader()
    for k in range(4):  # four same-sized renders: two chunks of two in one shape group
        text_render((f"LINE {k}", "MORE WORDS")).save(tmp_path / f"r{k}.png")
    paths = [media["text_heavy"], *(tmp_path / f"r{k}.png" for k in range(4)), media["truncated"], media["hopper"]]
    items = [(str(p), p) for p in paths]
    wanted = str(tmp_path / "r1.png")

    def run(workers):
        return list(
            measure_frames(
                reader, items, MAX_SIDE, batch_size=2, detect_workers=workers, needs_text=lambda k, r: k == wanted
            )
        )

    one, three = run(1), run(3)
    assert [m.key for m in three] == [str(p) for p in paths]
    for a, b in zip(one, three):
        assert (a.result is None) == (b.result is None)
        if a.result is not None:
            assert (b.result.ratio, b.result.n_boxes, b.result.text) == (
                a.result.ratio,
                a.result.n_boxes,
                a.result.text,
            )
    assert three[5].result is None and three[5].error is not None  # the truncated file
    assert "LINE 1" in three[2].result.text.upper() and three[1].result.text == ""
    assert auto_detect_workers(reader) == 1  # CPU reader: one chunk at a time


def test_chunks_in_flight_follow_the_cpus_given_on_cuda(monkeypatch):
    from types import SimpleNamespace

    from forge.media.text_boxes import auto_detect_workers

    cuda, cpu = SimpleNamespace(device="cuda"), SimpleNamespace(device="cpu")
    for given, want in [("16", 8), ("32", 8), ("6", 3), ("1", 2)]:  # a Ray actor sets OMP_NUM_THREADS
        monkeypatch.setenv("OMP_NUM_THREADS", given)
        assert auto_detect_workers(cuda) == want
        assert auto_detect_workers(cpu) == 1


def test_detector_engine_choice():
    from forge.media.text_detector import resolve_detector_engine

    assert resolve_detector_engine("auto", gpu=False) == "onnx"
    assert resolve_detector_engine("auto", gpu=True) == "torch"
    assert resolve_detector_engine("torch", gpu=False) == "torch"
    assert resolve_detector_engine("onnx-int8", gpu=False) == "onnx-int8"  # opt-in only: auto never picks it
    for engine in ("onnx", "onnx-int8"):
        with pytest.raises(ValueError, match="runs on the CPU"):
            resolve_detector_engine(engine, gpu=True)
    with pytest.raises(ValueError, match="one of"):
        resolve_detector_engine("tensorrt", gpu=False)


@pytest.mark.slow
def test_onnx_detector_gives_the_torch_detectors_boxes(ocr_resource, media, tmp_path):
    """Same weights run by ONNX Runtime: score maps to ~1e-6, so the same boxes and ratios
    (tolerance as above), and the library's reader is left as it was."""
    import torch

    from forge.media.text_detector import detector_engine_of
    from resources.ocr import OCRResource

    torch_reader = ocr_resource.reader()
    onnx_res = OCRResource(model_dir=ocr_resource.model_dir, gpu=False, max_side=MAX_SIDE, detector_engine="onnx")
    fast = onnx_res.detect_reader()
    assert detector_engine_of(fast) == "onnx" and detector_engine_of(torch_reader) == "torch"
    assert fast.recognizer is torch_reader.recognizer  # only the detector is swapped
    assert onnx_res.detect_reader() is fast  # exported once per process
    # the raw network: random inputs of EasyOCR's shapes (multiples of 32), two in one batch
    x = torch.randn(2, 3, 96, 160, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = torch_reader.detector(x)
    got = fast.detector(x)
    for g, w in zip(got, want):
        assert g.shape == w.shape and float((g - w).abs().max()) < 1e-4
    text_render(("SALE TODAY", "50 PERCENT")).save(tmp_path / "same0.png")
    text_render(("A", "B C D")).save(tmp_path / "same1.png")
    paths = [media["text_render"], media["text_heavy"], media["hopper"], media["bus"], *sorted(tmp_path.glob("same*"))]
    items = [(str(p), p) for p in paths]
    ref = {m.key: m.result for m in measure_frames(torch_reader, items, MAX_SIDE, batch_size=4)}
    for m in measure_frames(fast, items, MAX_SIDE, batch_size=4):
        assert m.result is not None, m.error
        r = ref[m.key]
        assert abs(m.result.ratio - r.ratio) <= RATIO_TOL and abs(m.result.n_boxes - r.n_boxes) <= 1, m.key
    assert ref[str(media["text_heavy"])].ratio > 0.3


def test_ocr_auto_keeps_the_torch_detector_when_onnx_cannot_run(monkeypatch, caplog):
    from types import SimpleNamespace

    import forge.media.text_detector as td

    def broken(*a, **k):
        raise RuntimeError("exporter failed")

    monkeypatch.setattr(td, "OnnxCraft", broken)
    reader = SimpleNamespace(detector=object(), detect_network="craft")
    with caplog.at_level("WARNING", logger="forge.media.text_detector"):
        assert td.with_detector_engine(reader, "onnx", fallback=True) is reader
    assert "exporter failed" in caplog.text and td.detector_engine_of(reader) == "torch"
    with pytest.raises(RuntimeError):
        td.with_detector_engine(reader, "onnx")


INT8_RATIO_TOL = 0.01  # stated for onnx-int8 (docs/filters.md); on the sample corpus max 0.003-0.006
INT8_BOX_TOL = 2


@pytest.mark.slow
def test_int8_detector_is_quantised_and_stays_within_its_stated_tolerance(ocr_resource, media, tmp_path):
    """The opt-in int8 engine really runs int8 (its score maps are not the fp32 ones), its
    calibration inputs are EasyOCR's own pre-processed tensors, and its ratios stay within
    the tolerance it states of the library's detector."""
    import torch

    from forge.media.text_detector import calibration_inputs, detector_engine_of
    from resources.ocr import OCRResource

    torch_reader = ocr_resource.reader()
    res = OCRResource(model_dir=ocr_resource.model_dir, gpu=False, max_side=MAX_SIDE, detector_engine="onnx-int8")
    q = res.detect_reader()
    assert detector_engine_of(q) == "onnx-int8" and res.detector_engine_used() == "onnx-int8"
    assert len(q.detector.sha256) == 64  # the graph's digest, for the asset metadata
    assert res.detector_graph_sha256() == q.detector.sha256
    assert q.recognizer is torch_reader.recognizer and detector_engine_of(torch_reader) == "torch"
    inputs = calibration_inputs(torch_reader)
    assert len(inputs) == 8 and all(x.ndim == 4 and x.shape[2] % 32 == 0 and x.shape[3] % 32 == 0 for x in inputs)
    assert all(abs(float(x.mean())) < 3 for x in inputs)  # normalised (mean/variance), not raw 0-255 pixels

    x = torch.from_numpy(inputs[0])
    with torch.no_grad():
        want = torch_reader.detector(x)[0]
    got = q.detector(x)[0]
    diff = (got - want).abs()
    assert got.shape == want.shape
    assert float(diff.max()) > 1e-3  # quantised: not the fp32 network (that one is equal to ~1e-6)
    assert float(diff.mean()) < 0.02  # but close to it

    text_render(("SALE TODAY", "50 PERCENT")).save(tmp_path / "same0.png")
    paths = [media["text_render"], media["text_heavy"], media["hopper"], media["bus"], tmp_path / "same0.png"]
    items = [(str(p), p) for p in paths]
    ref = {m.key: m.result for m in measure_frames(torch_reader, items, MAX_SIDE, batch_size=4)}
    for m in measure_frames(q, items, MAX_SIDE, batch_size=4):
        assert m.result is not None, m.error
        r = ref[m.key]
        assert abs(m.result.ratio - r.ratio) <= INT8_RATIO_TOL, (m.key, m.result.ratio, r.ratio)
        assert abs(m.result.n_boxes - r.n_boxes) <= INT8_BOX_TOL, (m.key, m.result.n_boxes, r.n_boxes)
    assert ref[str(media["text_heavy"])].ratio > 0.3


def test_calibration_images_are_fixed_and_not_the_sample_corpus():
    import hashlib

    from forge.media.ocr_calibration import calibration_images

    def digest(images):
        return [(n, a.shape, hashlib.sha256(a.tobytes()).hexdigest()) for n, a in images]

    first = calibration_images()
    assert digest(first) == digest(calibration_images())  # the same inputs every build
    assert all(a.dtype == np.uint8 and a.ndim == 3 and a.shape[2] == 3 for _, a in first)
    corpus_photos = {"astronaut", "coffee", "page", "chelsea", "rocket", "grace_hopper", "bus"}
    assert not corpus_photos & {n for n, _ in first}


def test_int8_results_are_cached_apart_from_the_exact_engines():
    from assets.ingest.filters import ocr_cache_parts
    from resources.ocr import OCRResource

    def parts(engine, method="detect"):
        return ocr_cache_parts(OCRResource(detector_engine=engine), method, "w")

    assert parts("auto") == parts("onnx") == parts("torch")  # same boxes: shared entries
    assert parts("onnx-int8") != parts("auto")
    assert parts("onnx-int8", "readtext") == parts("auto", "readtext")  # readtext is the library's either way


def test_gpu_results_are_cached_apart_from_the_cpus(monkeypatch):
    """OCR on CUDA (cuDNN, TF32) is not shown equal to the CPU's: its results get keys of their
    own, here (a GPU torch sees) and on Ray (replicas given GPUs); CPU keys stay as they were."""
    import torch

    from assets.ingest.filters import ocr_cache_parts
    from forge.scale.ray_pool import RayPlacement
    from resources.ocr import OCRResource

    monkeypatch.delenv("SUBTEXT_RAY_ADDRESS", raising=False)
    cpu = ocr_cache_parts(OCRResource(gpu=False), "detect", "w")
    assert "cuda" not in cpu
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert ocr_cache_parts(OCRResource(gpu=False), "detect", "w") == cpu  # asked for the CPU
    on_gpu = ocr_cache_parts(OCRResource(gpu=None), "detect", "w")
    assert on_gpu == [*cpu, "cuda"] and ocr_cache_parts(OCRResource(gpu=True), "readtext", "w")[-1] == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the driver has none; replicas do
    ray = {"text_ratio": RayPlacement("ray://head:10001", actors=2, num_gpus=1)}
    monkeypatch.setattr("assets.ingest.filters.configured_placement", lambda stage: ray.get(stage, RayPlacement()))
    assert ocr_cache_parts(OCRResource(gpu=False), "detect", "w") == on_gpu
    ray["text_ratio"] = RayPlacement("ray://head:10001", actors=2, num_gpus=0)
    assert ocr_cache_parts(OCRResource(gpu=None), "detect", "w") == cpu


def test_the_detector_engine_comes_from_the_environment_for_cli_builds():
    import os
    import subprocess
    import sys

    code = "from resources.ocr import resources; print(resources()['ocr'].detector_engine)"
    env = {k: v for k, v in os.environ.items() if k != "SUBTEXT_OCR_DETECTOR_ENGINE"}
    for value, want in (("onnx-int8", "onnx-int8"), ("", "auto"), (None, "auto")):
        e = env if value is None else {**env, "SUBTEXT_OCR_DETECTOR_ENGINE": value}
        out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == want, out.stderr
