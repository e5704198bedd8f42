"""Where a stage runs: the ``scale:`` config with per-stage overrides, and the in-process default."""

from forge.scale.ray_pool import RayPlacement, configured_placement, map_calls, shards_of

SCALE = {
    "ray_address": "ray://head:10001",
    "actors": 2,
    "num_cpus": 1,
    "num_gpus": 0,
    "shard_frames": 32,
    "stages": {
        "frame_hashes": {"shard_frames": 256},
        "transcripts": {"num_gpus": 1, "actors": 1},
        "frames": {"ray": False},
    },
}


def test_stage_overrides_only_its_own_fields():
    assert configured_placement("frame_hashes", SCALE) == RayPlacement("ray://head:10001", 2, 1.0, 0.0, 256)
    assert configured_placement("transcripts", SCALE) == RayPlacement("ray://head:10001", 1, 1.0, 1.0, 32)
    assert configured_placement("detections", SCALE) == RayPlacement("ray://head:10001", 2, 1.0, 0.0, 32)
    assert not configured_placement("frames", SCALE).enabled  # ray: false keeps it in the step


def test_env_address_wins_and_empty_means_in_process(monkeypatch):
    monkeypatch.delenv("SUBTEXT_RAY_ADDRESS", raising=False)
    assert not configured_placement("frames").enabled  # the shipped default is in-process
    monkeypatch.setenv("SUBTEXT_RAY_ADDRESS", "auto")
    assert configured_placement("frame_hashes").address == "auto"


def test_in_process_map_calls_runs_in_order_without_ray():
    calls = [(i, 10) for i in range(5)]
    assert list(map_calls(RayPlacement(), divmod, calls)) == [divmod(i, 10) for i in range(5)]
    assert shards_of(list(range(5)), 2) == [[0, 1], [2, 3], [4]]


def test_ray_work_keeps_opencv_to_the_cpus_it_declared(monkeypatch):
    """Ray sets OMP_NUM_THREADS to a task's num_cpus; OpenCV's pool is held to it too (it ignores
    that variable), so a 1-CPU frame task does not resize and encode on every core of its node."""
    import cv2

    from forge.scale.ray_pool import keep_to_declared_cpus

    before = cv2.getNumThreads()
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        assert keep_to_declared_cpus() == 1 and cv2.getNumThreads() == 1
        cv2.setNumThreads(before)
        for unset in ("", "0", "auto"):
            monkeypatch.setenv("OMP_NUM_THREADS", unset)
            assert keep_to_declared_cpus() is None and cv2.getNumThreads() == before
    finally:
        cv2.setNumThreads(before)


def test_detection_setup_on_ray_follows_the_replicas_gpus():
    """The detections cache key names the replicas' setup: device ``auto`` on Ray is CUDA only
    when the replicas are given GPUs, whatever the driver has; an explicit device stays."""
    from resources.detector import DetectorResource

    gpu = DetectorResource(engine="auto", ray_address="ray://head:10001", ray_num_gpus=1).expected_setup()
    assert gpu == {"engine": "tensor", "device": "cuda", "fp16": True, "device_decode": True}
    cpu = DetectorResource(engine="auto", ray_address="ray://head:10001", ray_num_gpus=0).expected_setup()
    assert cpu == {"engine": "onnx", "device": "cpu", "fp16": False, "device_decode": False}
    pinned = DetectorResource(engine="tensor", device="cpu", ray_address="local", ray_num_gpus=1)
    assert pinned.expected_setup()["device"] == "cpu"


def test_the_pool_knows_no_stage():
    """forge/scale is a generic actor pool: no import of a stage's module, at any depth (the
    stages declare their workers next to their logic and hand the pool a factory)."""
    import ast
    from pathlib import Path

    import forge.scale

    stages = ("forge.media", "forge.vision", "forge.llm", "assets", "resources")
    for path in Path(forge.scale.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.startswith(stages)], f"{path.name} imports a stage: {names}"


def test_a_pool_is_named_after_its_workers_factory():
    from functools import partial

    from forge.media.text_boxes import OCRWorker
    from forge.scale.ray_pool import worker_name
    from forge.vision.tag_worker import TaggingWorker

    assert worker_name(partial(OCRWorker, (("en",), None, False, "torch"))) == "OCRWorker"
    assert worker_name(TaggingWorker) == "TaggingWorker"
