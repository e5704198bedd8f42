"""Per-frame stages on a Ray cluster: actors that load their model once, shards of frames in.

The embedded default runs every stage in the Dagster step's process. With a Ray address
(``ray://head:10001`` for Ray Client, ``host:6379`` / ``auto`` for a cluster this machine is a
node of, ``local`` for a private cluster started on the spot), a stage splits its frames into
shards and sends them to a pool of actors. Each actor declares its CPUs/GPUs (Ray places it on a
node that has them), builds the model once in ``__init__`` and runs the SAME in-process function
on each shard, so the rows are the ones the in-process path writes, in the same order.

Frames are read by path: every node must see the data directory at the same path (a shared
volume or a mounted bucket; docs/operations.md).
"""

from __future__ import annotations

import os
import secrets
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from forge.offline_env import apply as apply_offline_env
from forge.offline_env import worker_env

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Shipped to the workers with the job (runtime_env py_modules): the logic, not the Dagster layer.
PY_MODULES = [str(PROJECT_ROOT / "forge"), str(PROJECT_ROOT / "resources")]
WORKER_ENV = {
    "YOLO_OFFLINE": "1",
    "YOLO_AUTOINSTALL": "false",
    "YOLO_VERBOSE": "false",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}

_LOCK = threading.Lock()
# What ran where (tests, logs): (node id, pid) of each replica of the last pool per worker class,
# and of each task of the last map_calls per function.
LAST_PLACEMENT: dict[str, list[tuple[str, int]]] = {}
POOLS_STARTED: Counter[str] = Counter()  # actor pools started per worker class (model loads = this x actors)


@dataclass(frozen=True)
class RayPlacement:
    """Where a stage runs. ``address=""``: in-process (no Ray at all)."""

    address: str = ""
    actors: int = 2  # model replicas (one per worker slot)
    num_cpus: float = 1.0  # declared per actor
    num_gpus: float = 0.0  # e.g. 1 (or 0.25 to pack four replicas on one GPU)
    shard_frames: int = 32  # frames per task

    @property
    def enabled(self) -> bool:
        return bool(self.address.strip())


def configured_scale() -> dict:
    """``scale:`` of config/vision.yaml; ``$SUBTEXT_RAY_ADDRESS`` overrides its address."""
    import yaml

    path = PROJECT_ROOT / "config" / "vision.yaml"
    scale = dict(((yaml.safe_load(path.read_text()) if path.exists() else None) or {}).get("scale") or {})
    if os.environ.get("SUBTEXT_RAY_ADDRESS"):
        scale["ray_address"] = os.environ["SUBTEXT_RAY_ADDRESS"]
    return scale


def configured_placement(stage: str | None = None, scale: dict | None = None) -> RayPlacement:
    """The ``scale:`` placement (``scale`` or config's), with ``scale.stages.<stage>`` overriding
    its fields for one stage (``ray: false`` there keeps that stage in-process)."""
    c = configured_scale() if scale is None else scale
    over = dict((c.get("stages") or {}).get(stage) or {}) if stage else {}
    if over.pop("ray", True) is False:
        return RayPlacement()
    c = {**c, **over}
    return RayPlacement(
        str(c.get("ray_address") or ""),
        int(c.get("actors", 2)),
        float(c.get("num_cpus", 1)),
        float(c.get("num_gpus", 0)),
        int(c.get("shard_frames", 32)),
    )


def connect(address: str) -> None:
    """Connect this process to the cluster once (idempotent)."""
    import ray

    with _LOCK:
        if ray.is_initialized():
            return
        _init(address)


def _init(address: str) -> None:
    # The opt-outs before Ray starts anything: a local cluster's head reads its usage-stats
    # switch from this process's environment; the workers get them in the runtime env.
    apply_offline_env()
    local = address == "local"
    with private_cluster_env() if local else nullcontext():
        import ray

        ray.init(
            address=None if local else address,
            runtime_env=worker_runtime_env(),
            ignore_reinit_error=True,
            log_to_driver=False,
            include_dashboard=False,
            configure_logging=False,
        )


def worker_runtime_env() -> dict[str, Any]:
    """The job's runtime env: the logic's modules, and for every worker (on any node, also of a
    remote cluster) the offline switches and the usage-reporting opt-outs as this process has them."""
    env = {k: os.environ[k] for k in ("SUBTEXT_MODELS_DIR",) if k in os.environ}
    return {"py_modules": PY_MODULES, "env_vars": {**WORKER_ENV, **worker_env(), **env}}


@contextmanager
def private_cluster_env() -> Iterator[None]:
    """The environment a private cluster (address ``local``) starts in, so that it stays on this
    machine and out of $HOME (its processes inherit it; docs/security.md):

    * loopback only: on Linux Ray gives its node the LAN address (found by aiming a UDP socket at
      8.8.8.8) and serves there; ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` makes it use 127.0.0.1,
      as on a laptop;
    * a token for Ray's token auth in the environment (kept: this process talks to the cluster
      with it), which Ray would otherwise generate and write to ``~/.ray/auth_token``;
    * ``ray_local_site`` on ``PYTHONPATH``: stops its dashboard process's cloud-metadata probe.

    An operator's explicit setting of any of these is kept. Only the token outlives the block."""
    from ray._private import ray_constants  # reads the switch at import: ray may be imported already

    apply_offline_env()  # the head reads its usage-stats switch from the environment it starts in
    if not any(k in os.environ for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")):
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    saved = {k: os.environ.get(k) for k in ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "PYTHONPATH")}
    site = str(Path(__file__).resolve().parent / "ray_local_site")
    paths = [p for p in (saved["PYTHONPATH"] or "").split(os.pathsep) if p and p != site]
    os.environ["PYTHONPATH"] = os.pathsep.join([site, *paths])
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    cluster = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"].lower() in ("1", "true")
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class DetectionWorker:
    """One YOLO replica; ``run`` = forge.vision.pipeline.run_detection on a shard."""

    def __init__(self, detector_kwargs: dict, engine: str, device_decode: bool | None = None) -> None:
        keep_to_declared_cpus()
        from forge.vision.detector import YoloDetector
        from forge.vision.fast_detect import with_engine

        self.det = with_engine(YoloDetector(**detector_kwargs), engine, device_decode)

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id) of this replica."""
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def run(self, frames: pd.DataFrame, data_dir: str, opts: dict) -> tuple[pd.DataFrame, list, dict]:
        from forge.vision.pipeline import DecodeOptions, run_detection

        rejects: list[tuple] = []
        df, stats = run_detection(frames, Path(data_dir), self.det, lambda *a: rejects.append(a), DecodeOptions(**opts))
        return (
            df,
            rejects,
            {
                "processed": stats.processed,
                "rejected": stats.rejected,
                "model_s": stats.model_seconds,
                "phases": stats.extra.get("phase_seconds", {}),
                "setup": stats.extra.get("setup", {}),
            },
        )


# Pools kept for the whole Dagster step (``step_pools``): key -> replicas. None outside a step scope.
_STEP_POOLS: ContextVar[dict[tuple, list[Any]] | None] = ContextVar("ray_step_pools", default=None)


@contextmanager
def step_pools() -> Iterator[None]:
    """Within it, ``actor_pool`` keeps each pool for the rest of the step: a partitioned backfill
    (one step, many partitions) loads each replica's model once, not once per partition. The
    replicas are killed when the step ends, so the next stage's replicas can be placed."""
    kept: dict[tuple, list[Any]] = {}
    token = _STEP_POOLS.set(kept)
    try:
        yield
    finally:
        _STEP_POOLS.reset(token)
        if kept:
            import ray

            for pool in kept.values():
                for a in pool:
                    ray.kill(a)


@contextmanager
def actor_pool(placement: RayPlacement, worker_cls: type, *args: Any) -> Iterator[list[Any]]:
    """``placement.actors`` replicas of ``worker_cls(*args)``, spread over the nodes, for one stage.

    The replicas are killed when the stage ends (when the ``step_pools`` scope ends, inside one):
    a pool kept alive would hold its CPUs/GPUs and the next stage's replicas could never be
    placed on a small cluster.
    """
    import ray

    kept = _STEP_POOLS.get()
    key = (worker_cls.__name__, placement, repr(args))
    if kept is not None and key in kept:
        yield kept[key]
        return
    connect(placement.address)
    remote = ray.remote(num_cpus=placement.num_cpus, num_gpus=placement.num_gpus)(worker_cls)
    pool = [remote.options(scheduling_strategy="SPREAD").remote(*args) for _ in range(max(1, placement.actors))]
    POOLS_STARTED[worker_cls.__name__] += 1
    try:
        LAST_PLACEMENT[worker_cls.__name__] = ray.get([a.where.remote() for a in pool])
    except BaseException:
        for a in pool:
            ray.kill(a)
        raise
    if kept is not None:
        kept[key] = pool
        yield pool
        return
    try:
        yield pool
    finally:
        for a in pool:
            ray.kill(a)


def shards_of(items: Any, shard: int) -> list[Any]:
    """Consecutive slices of ``shard`` items (DataFrame rows or a list)."""
    take = items.iloc if isinstance(items, pd.DataFrame) else items
    return [take[i : i + shard] for i in range(0, len(items), max(1, shard))]


def map_shards(pool: list[Any], frames: Any, shard: int, *args: Any) -> list[Any]:
    """Run ``actor.run(shard_frames, *args)`` over the shards, round robin; results in shard order."""
    import ray

    refs = [pool[k % len(pool)].run.remote(s, *args) for k, s in enumerate(shards_of(frames, shard))]
    return ray.get(refs)


def map_calls(placement: RayPlacement, fn: Any, calls: list[tuple]) -> Iterator[Any]:
    """``fn(*args)`` for each ``args`` of ``calls``, results yielded in call order.

    In-process when ``placement`` is not enabled; otherwise one Ray task per call, each declaring
    the placement's CPUs/GPUs, all submitted at once (Ray runs as many as the cluster has slots
    for). For stages without a model to keep loaded (frame extraction, hashing): a task is
    cheaper than an actor and lets Ray balance uneven calls (a long video next to a short one).
    ``fn`` must be importable by the workers (a module-level function under ``forge``).
    """
    if not placement.enabled:
        yield from (fn(*c) for c in calls)
        return
    if not calls:
        return
    import ray

    connect(placement.address)
    remote = ray.remote(num_cpus=placement.num_cpus, num_gpus=placement.num_gpus)(_traced)
    refs = [remote.options(scheduling_strategy="SPREAD").remote(fn, c) for c in calls]
    where = LAST_PLACEMENT[getattr(fn, "__name__", str(fn))] = []
    for r in refs:
        at, result = ray.get(r)
        where.append(at)
        yield result


def keep_to_declared_cpus() -> int | None:
    """Inside a Ray worker, keep OpenCV's thread pool to the CPUs the task or actor declared.

    Ray sets ``OMP_NUM_THREADS`` to the declared ``num_cpus`` (the video decoder follows it, see
    ``forge.media.frames.decode_threads``); OpenCV's own pool ignores it and would spread
    resize/Laplacian/JPEG encoding over every core of the node, so a 1-CPU task would compete
    with its neighbours. Returns the thread count set (None outside Ray or when unset)."""
    import cv2

    from forge.media.frames import decode_threads

    n = decode_threads()
    if n < 1:
        return None
    cv2.setNumThreads(n)
    return n


def _traced(fn: Any, args: tuple) -> tuple[tuple[str, int], Any]:
    """``fn(*args)`` in a Ray task, with the (node id, pid) it ran on."""
    import ray

    keep_to_declared_cpus()
    return (ray.get_runtime_context().get_node_id(), os.getpid()), fn(*args)


def shutdown() -> None:
    """Disconnect this process from the cluster (tests)."""
    import ray

    with _LOCK:
        if ray.is_initialized():
            ray.shutdown()


def placement_dict(p: RayPlacement) -> dict:
    return asdict(p)


class RemoteDetector:
    """What ``DetectorResource.get()`` returns when detection runs on Ray: same attributes the
    asset reports (spec, device, half, ...), the model itself lives in the actors."""

    def __init__(
        self, detector_kwargs: dict, engine: str, placement: RayPlacement, device_decode: bool | None = None
    ) -> None:
        from forge.vision.detector import resolve_weights

        self.kwargs, self.engine, self.placement = detector_kwargs, engine, placement
        self.device_decode = device_decode
        self.spec = resolve_weights(detector_kwargs["weights"], detector_kwargs.get("allow_download", False))
        self.device = f"ray[{placement.actors}x cpu={placement.num_cpus} gpu={placement.num_gpus}]"
        self.half = (
            bool(detector_kwargs.get("half")) if detector_kwargs.get("half") is not None else placement.num_gpus > 0
        )
        self.batch_size = int(detector_kwargs.get("batch_size") or 1)
        self.imgsz = int(detector_kwargs.get("imgsz", 640))
        self.load_seconds = 0.0

    def run_remote(self, frames: pd.DataFrame, data_dir: Path, reject, opts, progress=None):
        import time

        from forge.vision.pipeline import StageStats, add_phases

        t0 = time.perf_counter()
        stats = StageStats(frames=len(frames))
        parts = []
        if frames.empty:
            results = []
        else:
            with actor_pool(self.placement, DetectionWorker, self.kwargs, self.engine, self.device_decode) as pool:
                results = map_shards(
                    pool, frames.reset_index(drop=True), self.placement.shard_frames, str(data_dir), asdict(opts)
                )
        setups: dict[str, Any] = {}  # replicas on unlike nodes could resolve unlike setups
        for df, rejects, st in results:
            parts.append(df)
            for r in rejects:
                reject(*r)
            stats.processed += st["processed"]
            stats.rejected += st["rejected"]
            stats.model_seconds += st["model_s"]
            add_phases(stats.extra.setdefault("phase_seconds", {}), st.get("phases", {}))  # summed over replicas
            setups.setdefault(repr(st.get("setup")), st.get("setup"))
        if setups:
            stats.extra["setup"] = next(iter(setups.values())) if len(setups) == 1 else {"mixed": list(setups.values())}
        if progress:
            progress(len(frames))
        stats.wall_seconds = time.perf_counter() - t0
        from forge.vision.detector import DETECTION_COLUMNS

        non_empty = [p for p in parts if not p.empty]
        out = pd.concat(non_empty, ignore_index=True) if non_empty else pd.DataFrame(columns=DETECTION_COLUMNS)
        return out, stats


class OCRWorker:
    """One EasyOCR reader; ``run`` = forge.media.text_boxes.measure_frames on a shard."""

    def __init__(self, reader_args: tuple) -> None:
        keep_to_declared_cpus()
        from forge.media.ocr_reader import build_reader

        self.reader = build_reader(*reader_args)

    def where(self) -> tuple[str, int]:
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def engine(self) -> tuple[str, str]:
        """What runs this replica's text detector, and the digest of its ONNX graph ("" for torch)."""
        from forge.media.text_detector import detector_identity

        return detector_identity(self.reader)

    def run(
        self, frames: pd.DataFrame, data_dir: str, max_side: int, batch: int, recognise: str, max_ratio: float
    ) -> list[tuple[Any, Exception | None]]:
        from forge.media.text_boxes import measure_frames, text_needed

        wants = text_needed(recognise, max_ratio)
        kinds = list(frames["kind"])
        items = [(i, Path(data_dir) / p) for i, p in enumerate(frames["path"])]
        return [
            (m.result, m.error)
            for m in measure_frames(
                self.reader, items, max_side, batch, needs_text=wants and (lambda i, r: wants(kinds[i], r))
            )
        ]


def ocr_reader_args(ocr: Any) -> tuple:
    """``build_reader`` arguments of an OCRResource; the GPU flag follows the placement's GPUs.
    (The reader makes its own private network folder per process: forge/media/ocr_reader.py.)"""
    return tuple(ocr.languages), ocr.model_dir, bool(ocr.gpu), ocr.detector_engine


def ocr_on_ray(
    placement: RayPlacement,
    reader_args: tuple,
    frames: pd.DataFrame,
    data_dir: Path,
    max_side: int,
    batch: int,
    recognise: str,
    max_ratio: float,
    engines: set[tuple[str, str]] | None = None,
) -> list[tuple[Any, Exception | None]]:
    """(OCRResult | None, error | None) per frame, in frame order, measured by OCR actors.
    ``engines`` receives each replica's ``(detector engine, graph digest)``."""
    if frames.empty:
        return []
    args = (reader_args[0], reader_args[1], placement.num_gpus > 0 or reader_args[2], *reader_args[3:])
    out: list[tuple[Any, Exception | None]] = []
    with actor_pool(placement, OCRWorker, args) as pool:
        for part in map_shards(
            pool,
            frames.reset_index(drop=True)[["kind", "path"]],
            placement.shard_frames,
            str(data_dir),
            max_side,
            batch,
            recognise,
            max_ratio,
        ):
            out += part
        if engines is not None:
            import ray

            engines.update(ray.get([a.engine.remote() for a in pool]))
    return out


class TaggingWorker:
    """One Recognize-Anything (RAM/RAM++) replica; ``run`` = forge.vision.pipeline.run_ram on a shard."""

    def __init__(self, tagger_kwargs: dict) -> None:
        keep_to_declared_cpus()
        from forge.vision.tagger import RamTagger

        self.tagger = RamTagger(**tagger_kwargs)

    def where(self) -> tuple[str, int]:
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def run(self, frames: pd.DataFrame, data_dir: str, opts: dict) -> tuple[pd.DataFrame, list, str]:
        from forge.vision.pipeline import DecodeOptions, run_ram

        rejects: list[tuple] = []
        df = run_ram(frames, Path(data_dir), self.tagger, lambda *a: rejects.append(a), DecodeOptions(**opts))
        return df, rejects, self.tagger.model_version


def ram_on_ray(
    placement: RayPlacement, tagger_kwargs: dict, frames: pd.DataFrame, data_dir: Path, reject: Any, opts: Any
) -> tuple[pd.DataFrame, str | None]:
    """RAM tags of ``frames`` (rows in frame order, as ``run_ram`` writes them) from tagging
    actors, and the replicas' model version (None when there was nothing to tag). On a placement
    with GPUs the replicas' ``device: auto`` picks the GPU Ray gave them (fp16 there)."""
    from forge.vision.tagger import TAG_COLUMNS

    if frames.empty:
        return pd.DataFrame(columns=TAG_COLUMNS), None
    parts, version = [], None
    with actor_pool(placement, TaggingWorker, tagger_kwargs) as pool:
        for df, rejects, v in map_shards(
            pool, frames.reset_index(drop=True), placement.shard_frames, str(data_dir), asdict(opts)
        ):
            parts.append(df)
            version = v
            for r in rejects:
                reject(*r)
    non_empty = [p for p in parts if not p.empty]
    return (pd.concat(non_empty, ignore_index=True) if non_empty else pd.DataFrame(columns=TAG_COLUMNS)), version


class WhisperWorker:
    """One faster-whisper replica; ``run`` = ``WhisperTranscriber.decode`` on a shard of audio."""

    def __init__(self, model_path: str | None, device: str, compute_type: str, language: str | None) -> None:
        from forge.media.transcripts import WhisperTranscriber

        self.t = WhisperTranscriber(model_path, device, compute_type, language)

    def where(self) -> tuple[str, int]:
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def run(self, audio: list) -> list:
        return self.t.decode(audio)


def whisper_on_ray(placement: RayPlacement, args: tuple, audio: list) -> list:
    """``WhisperTranscriber.decode`` results per audio request, in order, from Whisper actors."""
    if not audio:
        return []
    out: list = []
    with actor_pool(placement, WhisperWorker, *args) as pool:
        for part in map_shards(pool, audio, placement.shard_frames):
            out += part
    return out
