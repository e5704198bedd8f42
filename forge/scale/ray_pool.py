"""A generic Ray actor pool: per-frame stages on a cluster, each replica loading its model once.

The embedded default runs every stage in the Dagster step's process. With a Ray address
(``ray://head:10001`` for Ray Client, ``host:6379`` / ``auto`` for a cluster this machine is a
node of, ``local`` for a private cluster started on the spot), a stage splits its frames into
shards and sends them to a pool of actors. The pool knows no stage: a stage hands it a *worker
factory* (a picklable callable, e.g. ``functools.partial(OCRWorker, args)``, that builds the
stage's worker inside the actor) and its placement (replicas, ``num_cpus``, ``num_gpus``: Ray puts
each actor on a node that has them). The worker's ``run`` is the SAME in-process function on
a shard, so the rows are the ones the in-process path writes, in the same order. The stages
declare their workers next to their logic (``forge.media.text_boxes.OCRWorker``,
``forge.media.transcripts.WhisperWorker``, ``forge.vision.detect_worker``,
``forge.vision.tag_worker``), as NeMo Curator's and datatrove's stages do.

Frames are read by path on a local data dir, which every node must then see at the same path (a
shared volume). With ``SUBTEXT_DATA_URL`` a worker is handed the URL instead and fetches what it
lacks into its own node's work dir (docs/operations.md "Object storage"). A task whose worker
dies is retried by Ray; a replica that dies is restarted and its shard sent again
(``ACTOR_RESTARTS``).
"""

from __future__ import annotations

import os
import secrets
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from forge.models.offline_env import apply as apply_offline_env
from forge.models.offline_env import worker_env

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
# What ran where (tests, logs): (node id, pid) of each replica of the last pool per worker name,
# and of each task of the last map_calls per function.
LAST_PLACEMENT: dict[str, list[tuple[str, int]]] = {}
POOLS_STARTED: Counter[str] = Counter()  # actor pools started per worker name (model loads = this x actors)
ACTOR_RESTARTS = 3  # a replica killed mid-shard (its worker process or node died) is restarted this often


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
    from forge.storage.yaml_files import read_yaml

    path = PROJECT_ROOT / "config" / "vision.yaml"
    scale = dict(((read_yaml(path) if path.exists() else None) or {}).get("scale") or {})
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


def worker_name(factory: Callable[[], Any]) -> str:
    """The name a pool is counted and logged under: the factory's (a partial's function's) name."""
    return getattr(getattr(factory, "func", factory), "__name__", repr(factory))


class PoolActor:
    """One replica: builds the stage's worker once (its model loaded here) and runs it on shards."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.worker = factory()

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id) of this replica."""
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def run(self, *args: Any) -> Any:
        return self.worker.run(*args)

    def ask(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(worker)`` in this replica (e.g. what engine its model runs on)."""
        return fn(self.worker)


@contextmanager
def actor_pool(placement: RayPlacement, factory: Callable[[], Any]) -> Iterator[list[Any]]:
    """``placement.actors`` replicas, each running the worker ``factory()`` builds in it, spread
    over the nodes, each declaring the placement's ``num_cpus`` / ``num_gpus``, for one stage.

    The replicas are killed when the stage ends (when the ``step_pools`` scope ends, inside one):
    a pool kept alive would hold its CPUs/GPUs and the next stage's replicas could never be
    placed on a small cluster.
    """
    import ray

    name = worker_name(factory)
    kept = _STEP_POOLS.get()
    key = (name, placement, repr(factory))
    if kept is not None and key in kept:
        yield kept[key]
        return
    connect(placement.address)
    remote = ray.remote(num_cpus=placement.num_cpus, num_gpus=placement.num_gpus)(PoolActor)
    # A replica whose process or node dies is rebuilt (its model loaded again) and the shard it
    # was running is sent again: shards only return rows, so a retried one adds none twice.
    retry = {"max_restarts": ACTOR_RESTARTS, "max_task_retries": ACTOR_RESTARTS}
    pool = [
        remote.options(scheduling_strategy="SPREAD", **retry).remote(factory) for _ in range(max(1, placement.actors))
    ]
    POOLS_STARTED[name] += 1
    try:
        LAST_PLACEMENT[name] = ray.get([a.where.remote() for a in pool])
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


def ask_each(pool: list[Any], fn: Callable[[Any], Any]) -> list[Any]:
    """``fn(worker)`` in every replica of ``pool`` (``fn`` importable by the workers)."""
    import ray

    return ray.get([a.ask.remote(fn) for a in pool])


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


def declared_cpus() -> int:
    """The CPUs this process was given, as ``OMP_NUM_THREADS`` says (Ray sets it to the task's or
    actor's ``num_cpus``); 0 when unset or unreadable. (``forge.media.frames.decode_threads`` reads
    the same variable for the video decoder.)"""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0


def keep_to_declared_cpus() -> int | None:
    """Inside a Ray worker, keep OpenCV's thread pool to the CPUs the task or actor declared.

    Ray sets ``OMP_NUM_THREADS`` to the declared ``num_cpus`` (the video decoder follows it);
    OpenCV's own pool ignores it and would spread
    resize/Laplacian/JPEG encoding over every core of the node, so a 1-CPU task would compete
    with its neighbours. Returns the thread count set (None outside Ray or when unset)."""
    import cv2

    n = declared_cpus()
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
