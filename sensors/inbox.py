"""The drop folder ``<data>/inbox/``: drop a URL list (.txt), a sources file (.yaml) or a media
folder there and it is registered, partitioned and built without touching config/.

Each tick:

1. every inbox entry that is new or changed (cursor: ``{name: mtime}``) gets its sources file
   (forge/media/inbox.py) and one run of ``sources`` (run key ``inbox:<name>:<mtime>``, so a
   file is registered once per version). ``sources`` lists config/sources.yaml *and* the
   inbox, registering the new ``batches`` partitions;
2. every ``batches`` partition of an inbox source that has no ``videos`` materialization yet
   gets one run of all per-batch assets (run key ``batch:<batch>``), at most
   ``MAX_BATCH_RUNS_PER_TICK`` per tick so a huge drop does not flood the run queue.

A bad entry (malformed YAML, a line of a URL list that is not a URL; forge/media/inbox_check.py)
still gets its `sources` run (which records it as a reject), and the sensor's tick turns red
with the file, the line and the reason: on a tick that has other work, the error is logged
and the work launched; on every tick with nothing else to do, the tick fails, until the file
is fixed or removed.

Hostile entries (docs/security.md): the sensor itself only lists names and mtimes and reads
source *names* from a dropped YAML; it expands no variable, resolves no path and fetches
nothing. An entry that is a link out of the inbox or a special file is never opened; it
still triggers a `sources` run, which records it as a reject with its reason. Everything
else is checked by the ingest policy inside the runs.
"""

from __future__ import annotations

import json

import dagster as dg

from assets.common import batches
from forge.media.inbox import batch_source, entry_source_names, entry_sources_file, scan_inbox
from forge.media.inbox_check import entry_problems
from resources.storage import StorageResource

MAX_BATCH_RUNS_PER_TICK = 20


class BadInboxFile(ValueError):
    """An inbox file that cannot be what it claims (malformed YAML, a line that is not a URL):
    the tick fails with every ``<file> line <n>: <reason>``, so the sensor shows red."""


FIRST_BATCH_ASSET = dg.AssetKey("videos")  # a batch with this materialized has been picked up
SOURCES = dg.AssetKey("sources")


def _batch_assets(context: dg.SensorEvaluationContext) -> list[dg.AssetKey]:
    repo = context.repository_def
    if repo is None:
        return [FIRST_BATCH_ASSET]
    graph = repo.asset_graph
    below = dg.AssetSelection.assets(SOURCES).downstream().resolve(graph)
    return sorted((k for k in below if graph.get(k).partitions_def == batches), key=lambda k: k.to_user_string())


@dg.sensor(
    name="inbox_sensor",
    # Evaluations are partitioned per model, not per batch: outside this sensor's job.
    target=dg.AssetSelection.assets(SOURCES).downstream() - dg.AssetSelection.groups("evals"),
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers URL lists, sources files and media folders dropped into <data>/inbox/ "
    "(runs `sources` once per file version) and builds their new batches.",
)
def inbox_sensor(context: dg.SensorEvaluationContext, storage: StorageResource) -> dg.SensorResult:
    state = json.loads(context.cursor) if context.cursor else {}
    seen: dict[str, float] = state.get("files", {})
    inbox_sources: set[str] = set(state.get("sources", []))
    inbox = storage.store.data_dir / "inbox"

    entries = scan_inbox(inbox)
    requests: list[dg.RunRequest] = []
    problems: list[str] = []
    for entry in entries:
        inbox_sources.update(entry_source_names(entry))
        found = entry_problems(entry)
        problems += found
        if seen.get(entry.name) == entry.mtime:
            continue
        if entry.kind == "refused":
            context.log.warning(f"inbox: {entry.name!r} refused ({entry.reason}); recorded as a reject by `sources`")
        elif found:
            context.log.error("inbox: " + "; ".join(found))
        else:
            path = entry_sources_file(entry)
            context.log.info(f"inbox: {entry.name} ({entry.kind}) → {path.name}")
        requests.append(
            dg.RunRequest(
                run_key=f"inbox:{entry.name}:{entry.mtime}",
                asset_selection=[SOURCES],
                tags={"subtext/inbox": entry.name},
            )
        )

    # Batches registered by earlier `sources` runs that nobody has built yet.
    done = context.instance.get_materialized_partitions(FIRST_BATCH_ASSET)
    waiting = [
        b
        for b in context.instance.get_dynamic_partitions(batches.name)
        if batch_source(b) in inbox_sources and b not in done
    ]
    targets = _batch_assets(context)
    for b in sorted(waiting)[:MAX_BATCH_RUNS_PER_TICK]:
        requests.append(
            dg.RunRequest(
                run_key=f"batch:{b}", asset_selection=targets, partition_key=b, tags={"subtext/inbox_batch": b}
            )
        )

    cursor = json.dumps({"files": {e.name: e.mtime for e in entries}, "sources": sorted(inbox_sources)}, sort_keys=True)
    if not requests and problems:  # nothing else to launch: the tick turns red until the file is fixed
        raise BadInboxFile(f"{len(problems)} problem(s) in {inbox}:\n" + "\n".join(problems))
    if not requests:
        return dg.SensorResult(skip_reason=dg.SkipReason(f"inbox {inbox}: nothing new"), cursor=cursor)
    return dg.SensorResult(run_requests=requests, cursor=cursor)


defs = dg.Definitions(sensors=[inbox_sensor])
