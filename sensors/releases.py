"""``<paper>_release_sensor``: published releases named in ``config/releases.yaml`` or dropped under
``<data>/inbox/_releases/<paper>/<name>/`` become partitions of ``<paper>_release`` and are
imported once per version of their files.

The media inbox (``sensors/inbox.py``) skips names starting with ``_``, so a release folder
never turns into a media source. Each tick: every declared release whose partition is new is
added to ``<paper>_releases``; every release whose files changed (cursor: a fingerprint of
names, sizes and mtimes, plus the config entry) gets one run of ``<paper>_release`` (run key
``release:<paper>:<name>:<fingerprint>``).
"""

from __future__ import annotations

import json

import dagster as dg

from assets.releases.keys import PARTITIONS, RELEASE_PAPERS, release_key
from forge.provenance.versioning import content_hash
from forge.releases.config import ReleaseInfo, load_releases
from forge.releases.files import walk
from resources.storage import StorageResource


def fingerprint(info: ReleaseInfo) -> str:
    p = info.path
    # folder links followed, like the importer (forge/releases/files.py): a release on another disk changes too
    files = [p] if p.is_file() else [x for x in walk(p) if x.is_file()] if p.is_dir() else []
    stat = [(str(f.relative_to(p) if p.is_dir() else f.name), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    return content_hash("release", info.describe(), stat, length=16)


def release_sensor(paper: str) -> dg.SensorDefinition:
    """``<paper>_release_sensor`` (one per paper: a sensor targets one partitions definition)."""
    key = release_key(paper)

    @dg.sensor(
        name=f"{paper}_release_sensor",
        target=dg.AssetSelection.assets(key),
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Registers the {paper} releases of config/releases.yaml and <data>/inbox/_releases/{paper}/<name>/ "
        f"as partitions of {key} and imports each once per version of its files.",
    )
    def _sensor(context: dg.SensorEvaluationContext, storage: StorageResource) -> dg.SensorResult:
        return tick(paper, context, storage)

    return _sensor


def tick(paper: str, context: dg.SensorEvaluationContext, storage: StorageResource) -> dg.SensorResult:
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    try:
        releases = [r for r in load_releases(data_dir=storage.store.data_dir) if r.paper == paper]
    except Exception as e:  # noqa: BLE001 - a broken releases file is reported, the sensor keeps ticking
        return dg.SensorResult(
            skip_reason=dg.SkipReason(f"config/releases.yaml unreadable: {e}"), cursor=context.cursor
        )
    have = set(context.instance.get_dynamic_partitions(PARTITIONS[paper].name))
    new = sorted({r.name for r in releases} - have)
    adds = [PARTITIONS[paper].build_add_request(new)] if new else []
    runs, now = [], {}
    for r in releases:
        if not r.path.exists():
            context.log.warning(f"release {paper}/{r.name}: {r.path} does not exist")
            continue
        fp = fingerprint(r)
        now[r.name] = fp
        if seen.get(r.name) != fp:
            runs.append(
                dg.RunRequest(
                    run_key=f"release:{paper}:{r.name}:{fp}",
                    asset_selection=[dg.AssetKey(release_key(paper))],
                    partition_key=r.name,
                    tags={"subtext/release": f"{paper}/{r.name}"},
                )
            )
    cursor = json.dumps(now, sort_keys=True)
    if not adds and not runs:
        return dg.SensorResult(skip_reason=dg.SkipReason(f"no new or changed {paper} release"), cursor=cursor)
    return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=adds, cursor=cursor)


defs = dg.Definitions(sensors=[release_sensor(p) for p in RELEASE_PAPERS])
