"""Materialize the whole DAG (or a selection) in dependency order, over all partitions.

``python -m cli.build --demo`` is what ``make demo`` runs. It records every run in the
project's Dagster instance (``DAGSTER_HOME``), so the UI shows the materializations.

Dagster executes one run per partitioning scheme, so the graph is cut into *segments*:
maximal sets of ready assets that share a partitions definition. A partitioned segment
runs once over all its partitions as a single-run backfill (the assets loop over
``context.partition_keys``); the partition keys are read after the previous segment ran,
because the ``sources`` asset registers the batches.

Each segment runs as one of the project's *named* jobs (``jobs/stages.py``: the stage-group
jobs and ``batch_pipeline_job``), restricted to the segment's assets, so a build leaves its
history on those jobs in the UI's Jobs page. A segment no single named job covers is split
into pieces, one per smallest covering job, run in dependency order.

The console is INFO (``--verbose``: Dagster's DEBUG run events), one progress line per long
stage (``forge/console/build_console.py``), and ends with a summary read from the catalog
(``forge/console/build_summary.py``).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import signal
import sys
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import dagster as dg

from cli.freshness import fresh_keys
from cli.origin import execute_in_location, workspace_job_origin
from cli.outcomes import Outcomes
from cli.run_health import BuildHealth as Health
from cli.run_health import Terminated
from definitions import LOGGER_KEY, build_console_logger, quiet_dagster_warnings
from forge.console.build_console import Heartbeat, project_logs_through_dagster_only
from forge.console.build_summary import summarize, weights_caveats
from forge.models.offline_env import apply as apply_offline_env
from forge.models.offline_env import ensure_dagster_telemetry_off
from forge.provenance.environment import apply_recorded_environment, env_path
from sensors.run_health import LAUNCHED_BY_TAG, WATCH_TAG

# The run tags that make a run cover a range of partitions (a single-run backfill): the keys Dagster
# sets on such runs itself, and the documented way to ask for one (tests/foundation/test_layout.py
# checks they still equal Dagster's own).
PARTITION_RANGE_START_TAG = "dagster/asset_partition_range_start"
PARTITION_RANGE_END_TAG = "dagster/asset_partition_range_end"


@dataclass
class Segment:
    partitions_def: dg.PartitionsDefinition | None
    keys: list[dg.AssetKey]
    job: str | None = None  # the named job that runs it (None: Dagster's implicit asset job)


def plan_segments(graph, selection: Iterable[dg.AssetKey]) -> list[Segment]:
    """Cut the selected assets into runnable segments, in dependency order."""
    todo = set(selection)
    done: set[dg.AssetKey] = set()
    segments: list[Segment] = []

    def ready(key: dg.AssetKey) -> bool:
        return all(p in done or p not in todo for p in graph.get(key).parent_keys)

    while todo:
        candidates = sorted((k for k in todo if ready(k)), key=lambda k: k.to_user_string())
        if not candidates:
            raise RuntimeError(f"cycle among {sorted(k.to_user_string() for k in todo)}")
        pdef = graph.get(candidates[0]).partitions_def
        seg: list[dg.AssetKey] = []
        grew = True
        while grew:  # closure: assets of the same partitioning that become ready inside the segment
            grew = False
            for k in sorted(todo - set(seg), key=lambda k: k.to_user_string()):
                node = graph.get(k)
                if node.partitions_def == pdef and all(
                    p in done or p in seg or p not in todo for p in node.parent_keys
                ):
                    seg.append(k)
                    grew = True
        segments.append(Segment(pdef, seg))
        done |= set(seg)
        todo -= set(seg)
    return segments


def named_job_selections(defs: dg.Definitions, graph) -> dict[str, set[dg.AssetKey]]:
    """The asset keys each named asset job of ``defs`` selects."""
    out = {}
    for job in defs.jobs or []:
        selection = getattr(job, "selection", None)  # what dg.define_asset_job returns carries one
        if isinstance(selection, dg.AssetSelection):
            out[job.name] = set(selection.resolve(graph))
    return out


def assign_jobs(graph, segments: list[Segment], jobs: dict[str, set[dg.AssetKey]]) -> list[Segment]:
    """Each segment with the named job that runs it: the smallest job selecting all its assets,
    else one piece per smallest job covering each asset, pieces in dependency order. An asset
    no named job selects (or pieces that would depend on each other both ways) keeps the
    implicit asset job, so every selected asset still runs."""

    def smallest(keys: set[dg.AssetKey]) -> str | None:
        covering = [(len(sel), name) for name, sel in jobs.items() if keys <= sel]
        return min(covering)[1] if covering else None

    out: list[Segment] = []
    for seg in segments:
        whole = smallest(set(seg.keys))
        if whole is not None:
            out.append(Segment(seg.partitions_def, seg.keys, whole))
            continue
        pieces: dict[str | None, list[dg.AssetKey]] = {}
        for k in seg.keys:
            pieces.setdefault(smallest({k}), []).append(k)
        ordered = _order_pieces(graph, pieces)
        if ordered is None:  # the pieces depend on each other both ways: one implicit run
            out.append(Segment(seg.partitions_def, seg.keys, None))
        else:
            out += [Segment(seg.partitions_def, keys, job) for job, keys in ordered]
    return out


def _order_pieces(graph, pieces: dict[str | None, list[dg.AssetKey]]):
    owner = {k: job for job, keys in pieces.items() for k in keys}
    done: set[str | None] = set()
    ordered = []
    while len(done) < len(pieces):
        ready = [
            job
            for job in pieces
            if job not in done
            and all(
                owner[p] in done or owner[p] == job for k in pieces[job] for p in graph.get(k).parent_keys if p in owner
            )
        ]
        if not ready:
            return None
        job = min(ready, key=lambda j: (j is None, j or ""))
        ordered.append((job, pieces[job]))
        done.add(job)
    return ordered


def failed_checks(result: dg.ExecuteInJobResult) -> list[str]:
    """``asset:check`` of every asset check that failed in the run, with its severity."""
    out = []
    for ev in result.get_asset_check_evaluations():
        if not ev.passed:
            out.append(f"{ev.asset_key.to_user_string()}:{ev.check_name} ({ev.severity.value})")
    return out


def run_segment(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    seg: Segment,
    summary: list[str] | None = None,
    health: Health | None = None,
    verbose: bool = False,
    outcomes: Outcomes | None = None,
    partition_keys: list[str] | None = None,
    in_location: bool = False,
) -> bool:
    """Run one segment; ``summary`` collects its failed asset checks (WARN ones too) for the
    run summary, ``outcomes`` the assets that failed in it. ``partition_keys``: a contiguous
    range of the segment's partitions (default: all). ``in_location``: the run is created as a
    run of the workspace's code location (cli/origin.py: re-executable from the UI, listed on
    the Jobs page). False when the run failed or an ERROR-severity check failed."""
    tags: dict[str, str] = {LAUNCHED_BY_TAG: "cli.build"}
    health = health or Health(instance)
    label = (f"{seg.job}: " if seg.job else "") + segment_label(seg)
    if seg.partitions_def is not None:
        keys = partition_keys or seg.partitions_def.get_partition_keys(dynamic_partitions_store=instance)
        if not keys:
            print(f"  skip (no partitions yet): {label}")
            return True
        tags[PARTITION_RANGE_START_TAG] = keys[0]
        tags[PARTITION_RANGE_END_TAG] = keys[-1]
        label += f"  [{len(keys)} partitions: {keys[0]} … {keys[-1]}]"
    print(f"→ {label}", flush=True)
    t0 = time.perf_counter()
    if seg.job:  # a named job: the run is listed under it on the Jobs page
        job = defs.resolve_job_def(seg.job)
    else:
        job = defs.resolve_implicit_job_def_def_for_assets(seg.keys)  # type: ignore[attr-defined]
    job, run_config = quiet_run(job, verbose)
    with health.signals, health.watch() as watch, Heartbeat(segment_label(seg)):  # no silent log files
        origin = workspace_job_origin(job.name) if in_location else None
        try:
            with health.signals.launching():
                if origin is not None:
                    result = execute_in_location(job, instance, seg.keys, {**tags, **watch.tags()}, run_config, origin)
                else:
                    result = job.execute_in_process(
                        run_config=run_config,
                        instance=instance,
                        asset_selection=seg.keys,
                        tags={**tags, **watch.tags()},
                        raise_on_error=False,
                    )
        except Terminated as exc:  # the signal came while the run was created or closed: no run left open
            close_unfinished(instance, watch.watch_id, str(exc))
            raise
    if outcomes is not None:
        outcomes.record_run(defs.resolve_asset_graph(), seg.keys, result)
    failed = failed_checks(result)
    errors = [f for f in failed if f.endswith("(ERROR)")]
    ok = result.success and not errors
    status = "ok" if ok else "FAILED"
    print(f"  {status} in {time.perf_counter() - t0:.1f}s", flush=True)
    for f in errors:  # WARN-severity failures are listed once, grouped, at the end of the build
        print(f"  check failed: {f}", flush=True)
    if summary is not None:
        summary += failed
    return ok


def segment_label(seg: Segment, shown: int = 4) -> str:
    """One short line: the first few assets, then how many more."""
    names = [k.to_user_string() for k in seg.keys]
    more = f" (+{len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def partition_ranges(
    seg: Segment, instance: dg.DagsterInstance, batch_patterns: list[str] | None
) -> list[list[str] | None]:
    """The runs a segment takes: ``[None]`` (every partition, or unpartitioned), or, with
    ``--batch`` patterns on a per-batch segment, one contiguous range of matching batches per run
    (a run covers a range of partitions, so a gap splits it)."""
    # Batches are the project's one dynamic partitioning (assets.common.batches); models are static.
    if not batch_patterns or not isinstance(seg.partitions_def, dg.DynamicPartitionsDefinition):
        return [None]
    ranges: list[list[str]] = []
    previous = False
    for key in seg.partitions_def.get_partition_keys(dynamic_partitions_store=instance):
        hit = any(fnmatch.fnmatchcase(key, p) for p in batch_patterns)
        if hit and previous:
            ranges[-1].append(key)
        elif hit:
            ranges.append([key])
        previous = hit
    if not ranges:
        print(f"  skip (no batch matches {' '.join(batch_patterns)}): {segment_label(seg)}", flush=True)
    return list(ranges)


def describe_plan(seg: Segment, instance: dg.DagsterInstance, keys: list[str] | None) -> str:
    """One dry-run line: the job, the partitions it would cover and every asset."""
    where = ""
    if seg.partitions_def is not None:
        keys = keys or seg.partitions_def.get_partition_keys(dynamic_partitions_store=instance)
        where = (
            f" [{len(keys)} partitions: {keys[0]} … {keys[-1]}]" if keys else " [partitions registered by `sources`]"
        )
    names = ", ".join(k.to_user_string() for k in seg.keys)
    return f"  {seg.job or '(asset job)'}{where}: {names}"


def quiet_run(job: dg.JobDefinition, verbose: bool) -> tuple[dg.JobDefinition, dict[str, Any] | None]:
    """The job and run config ``cli.build`` executes: the compact console, or with ``verbose``
    Dagster's own console logger at DEBUG (every run event)."""
    if verbose:
        return job, None
    job = job.with_logger_defs({**job.loggers, LOGGER_KEY: build_console_logger})
    return job, {"loggers": {LOGGER_KEY: {"config": {"log_level": "INFO"}}}}


def build(
    selection: list[str] | None = None,
    instance: dg.DagsterInstance | None = None,
    verbose: bool = False,
    defs: dg.Definitions | None = None,
    batch_patterns: list[str] | None = None,
    dry_run: bool = False,
    only_stale: bool = False,
) -> bool:
    """Every selected asset in dependency order (``batch_patterns``: only matching batches of the
    per-batch stages; ``dry_run``: print the runs, run nothing). A failed asset stops only its
    descendants (``cli/outcomes.py``): the rest still runs, and the result is False."""
    in_location = defs is None  # the project's own definitions: runs of the workspace's code location
    if defs is None:
        from definitions import build_defs

        defs = build_defs()
    graph = defs.resolve_asset_graph()
    keys = set(graph.materializable_asset_keys)
    if selection:
        keys = set(dg.AssetSelection.from_coercible(selection).resolve(graph)) & keys
    instance = instance or dg.DagsterInstance.get()
    health = Health(instance)
    if dry_run:
        print("Dry run: the runs this build would make, in order (nothing runs):", flush=True)
    else:
        health.sweep()  # runs a killed build left STARTED: failed, slots freed, recorded
    summary: list[str] = []
    outcomes = Outcomes()
    ok, runs, t0, selected = True, 0, time.perf_counter(), len(keys)
    plan = assign_jobs(graph, plan_segments(graph, keys), named_job_selections(defs, graph))
    with health.signals:
        for i, seg in enumerate(plan):
            # What depends on a failed asset would read what it did not write: dropped, the rest runs.
            runnable = outcomes.keep_runnable(graph, seg.keys)
            for k in seg.keys:
                if k not in runnable:
                    name = k.to_user_string()
                    print(f"  skip {name}: depends on {outcomes.skipped[name]}, which failed", flush=True)
            if not runnable:
                continue
            seg = Segment(seg.partitions_def, runnable, seg.job)
            ranges = partition_ranges(seg, instance, batch_patterns)
            for j, keys in enumerate(ranges):
                for seg_run in stale_waves(instance, graph, seg, keys, outcomes) if only_stale else [seg]:
                    left = [(seg, r) for r in ranges[j:]] + [(s, None) for s in plan[i + 1 :]]
                    if health.signals.stopping():  # between runs: nothing more is launched
                        raise stopped(health, instance, None, left)
                    if dry_run:
                        print(describe_plan(seg_run, instance, keys), flush=True)
                        continue
                    try:
                        ok = (
                            run_segment(defs, instance, seg_run, summary, health, verbose, outcomes, keys, in_location)
                            and ok
                        )
                    except Terminated:
                        raise stopped(health, instance, seg_run, left[1:]) from None
                    runs += seg_run.partitions_def is None or bool(
                        keys or seg_run.partitions_def.get_partition_keys(dynamic_partitions_store=instance)
                    )  # a segment with no partitions yet made no run
                    if health.signals.stopping():  # SIGTERM / SIGINT: the run in flight was stopped; stop
                        raise stopped(health, instance, seg_run, left[1:])
    _print_summary(summary)
    for line in outcomes.lines():
        print(line, flush=True)
    if not dry_run:
        bad = f", {len(outcomes.failed)} failed, {len(outcomes.skipped)} skipped" if outcomes else ""
        print(f"\nThis build: {runs} run(s), {selected} asset(s) selected{bad}, {time.perf_counter() - t0:.0f}s")
    return ok and not outcomes


def watched_run(instance: dg.DagsterInstance, watch_id: str) -> dg.DagsterRun | None:
    """The run a ``RunWatch`` tagged (None: the run was never created)."""
    runs = instance.get_runs(filters=dg.RunsFilter(tags={WATCH_TAG: watch_id}), limit=1)
    return runs[0] if runs else None


def close_unfinished(instance: dg.DagsterInstance, watch_id: str, message: str) -> None:
    """The run of ``watch_id``, when a signal left it unfinished (created, never started), is
    recorded canceled with the signal's message."""
    run = watched_run(instance, watch_id)
    if run is not None and not run.is_finished:
        instance.report_run_canceled(run, message=message)


def stopped(health: Health, instance: dg.DagsterInstance, seg: Segment | None, left: list) -> Terminated:
    """Print what a signal stopped (the run in flight, how it ended) and every planned run not
    launched; the ``Terminated`` to raise. ``left``: (segment, partition range or None: all)."""
    sig = health.signals.stopping() or "signal"
    print(f"\nStopped by {sig}: no further run is launched.", flush=True)
    if seg is not None:
        run = watched_run(instance, health.current.watch_id) if health.current is not None else None
        how = f"run {run.run_id[:8]} ended {run.status.value}" if run is not None else "no run was recorded"
        print(f"  stopped in flight: {seg.job or '(asset job)'}: {segment_label(seg)} ({how})", flush=True)
    print(f"  not launched: {len(left)} planned run(s)" + (":" if left else ""), flush=True)
    for s, keys in left:
        where = f" [{keys[0]} … {keys[-1]}]" if keys else ""
        print(f"    - {s.job or '(asset job)'}: {segment_label(s)}{where}", flush=True)
    return Terminated(f"{sig} received", signal=sig)


def stale_waves(instance: dg.DagsterInstance, graph, seg: Segment, keys: list[str] | None, outcomes: Outcomes):
    """``--only-stale``: the runs a segment needs. Synced assets are skipped; an asset Synced now
    whose parent in the segment runs waits for that run and is checked again, so a parent that
    wrote the same rows leaves it alone (one more run at most per level, none when all is Synced)."""
    pending = list(seg.keys)
    while pending:
        fresh, waiting = fresh_keys(instance, graph, pending, keys)
        if fresh:
            print(f"  up to date, skipped: {', '.join(sorted(k.to_user_string() for k in fresh))}", flush=True)
        wave = [k for k in pending if k not in fresh and k not in waiting]
        if not wave:
            return
        yield Segment(seg.partitions_def, wave, seg.job)
        pending = outcomes.keep_runnable(graph, [k for k in pending if k in waiting])


def _print_summary(failed: list[str]) -> None:
    """Failed checks grouped by check and severity: one line per check, its assets after it."""
    if not failed:
        return
    groups: dict[str, list[str]] = {}
    for f in failed:  # "asset:check (SEVERITY)"
        target, _, severity = f.rpartition(" ")
        asset, _, check = target.partition(":")
        groups.setdefault(f"{check} {severity}", []).append(asset)
    print("\nFailed asset checks (a failed gate is also stated on its dataset card):", flush=True)
    for check, assets in groups.items():
        print(f"  - {check}: {', '.join(assets)}", flush=True)


def print_build_summary() -> None:
    """The closing table: items per benchmark and stage, rejects, exports, caveats, next commands."""
    from forge.benchmarks import registry
    from resources.detector import default_detector
    from resources.ocr import resources as ocr_resources
    from resources.storage import default_storage

    det = default_detector()
    caveats = weights_caveats(det.weights, det.is_random, ocr_resources()["ocr"].detector_engine)
    print("\n".join(summarize(default_storage().store, registry.specs(), caveats).lines()), flush=True)


HELP = """Build the whole graph (or a selection) in dependency order, over every partition,
recorded in the Dagster instance ($DAGSTER_HOME), so the UI shows every run.

It reads the environment the data dir was built with (<data dir>/environment.json, written
by `make demo`: recipe profile, sample corpus, endpoint; your own variables win). A failed
asset stops only what depends on it; the build then exits 1 and lists what was skipped.
"""

EXAMPLES = """examples:
  python -m cli.build --demo                          # what `make demo` runs
  python -m cli.build --dry-run                       # the runs it would make, nothing runs
  python -m cli.build --select 'tag:benchmark=<name>' # one paper (a registered name), recipe to report
  python -m cli.build --select '<stage>*'             # a stage (an asset name) and everything below it
  python -m cli.build --batch 'local_images-*'        # only these batches of the per-batch stages
  python -m cli.build --select 'group:evals'          # evaluations only (every model partition)
  python -m cli.build --only-stale                    # leave Synced assets alone (an unchanged re-run)

exit status: 0 all built, 1 something failed (see the closing summary), 143 stopped by SIGTERM,
130 by Ctrl-C (SIGINT): no run is launched after the signal, the run in flight is stopped.
"""


def main(argv: list[str] | None = None, defs: dg.Definitions | None = None) -> int:
    """The command line; ``defs``: other definitions than the project's (tests)."""
    parser = argparse.ArgumentParser(
        prog="python -m cli.build",
        description=HELP,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--demo", action="store_true", help="build the sample corpus, serve it on 127.0.0.1, build everything"
    )
    parser.add_argument(
        "--select", nargs="*", metavar="SEL", help="Dagster asset selection(s), e.g. 'group:evals' (default: all)"
    )
    parser.add_argument(
        "--batch",
        action="append",
        metavar="PATTERN",
        help="only batch partitions matching this glob (repeatable), e.g. 'captioned-*'",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the runs in order and run nothing")
    parser.add_argument(
        "--only-stale",
        action="store_true",
        help="skip assets Dagster reports Synced (same code version, same parent data versions)",
    )
    parser.add_argument("--verbose", action="store_true", help="every Dagster run event (DEBUG) on the console")
    args = parser.parse_args(argv)
    apply_offline_env()  # usage-reporting opt-outs before any stage starts (forge/models/offline_env.py)
    if note := ensure_dagster_telemetry_off():
        print(note, flush=True)
    quiet_dagster_warnings()
    project_logs_through_dagster_only()
    with ExitStack() as stack:
        if args.demo:
            from cli.demo import prepare_demo

            stack.enter_context(prepare_demo())
        else:
            report_recorded_environment()
        try:
            ok = build(
                args.select,
                verbose=args.verbose,
                defs=defs,
                batch_patterns=args.batch,
                dry_run=args.dry_run,
                only_stale=args.only_stale,
            )
        except dg.DagsterExecutionInterruptedError as exc:  # SIGTERM / SIGINT: what it stopped is printed above
            print(f"\nStopped: {exc}", flush=True)
            return 128 + getattr(signal, getattr(exc, "signal", None) or "SIGTERM", signal.SIGTERM)
    if args.dry_run:
        return 0
    print("\nDone." if ok else "\nFinished with failed steps (see above and the Dagster UI).", flush=True)
    print_build_summary()
    return 0 if ok else 1


def report_recorded_environment() -> None:
    """Apply the data dir's recorded environment (as definitions.py does) and say what it set."""
    applied, overridden = apply_recorded_environment()
    if applied:
        print(f"From {env_path()}: {', '.join(f'{k}={v}' for k, v in sorted(applied.items()))}", flush=True)
    for k, v in sorted(overridden.items()):
        print(f"  {k}: your environment's {os.environ[k]!r} wins over the recorded {v!r}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
