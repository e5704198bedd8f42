"""Runs of ``cli.build`` as first-class runs of the workspace's code location.

``JobDefinition.execute_in_process`` records a run with no code-location origin: the UI cannot
re-execute it ("Expected non-None value"), and the Jobs page and the Timeline, which list runs by
their repository label, do not show it. ``execute_in_location`` runs the job in this process the
same way, but creates the run with the origin of the job in the location ``workspace.yaml``
declares (read from the file, no code server started), so the run carries
``.dagster/repository`` = ``__repository__@<location>`` and re-executes from the UI (all steps,
or from failure) through that location like any run launched there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import dagster as dg

from cli.dagster_internals import (
    ExecuteRunWithPlanIterable,
    InMemoryJob,
    PlanOrchestrationContextManager,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
    create_execution_plan,
    job_execution_iterator,
    location_origins_from_yaml_paths,
    orchestration_context_event_generator,
)

WORKSPACE = Path(__file__).resolve().parents[1] / "workspace.yaml"
REPOSITORY = "__repository__"  # the name Dagster gives the repository of a Definitions object


@lru_cache(maxsize=4)
def _location(workspace: str):
    origins = location_origins_from_yaml_paths([workspace])
    return origins[0] if len(origins) == 1 else None


def workspace_job_origin(job_name: str, workspace: str | Path = WORKSPACE) -> RemoteJobOrigin | None:
    """The origin the UI gives ``job_name`` in the workspace's single code location (None when
    the workspace file is missing or declares several locations)."""
    if not Path(workspace).is_file():
        return None
    location = _location(str(workspace))
    if location is None:
        return None
    return RemoteJobOrigin(RemoteRepositoryOrigin(location, REPOSITORY), job_name)


def execute_in_location(
    job: dg.JobDefinition,
    instance: dg.DagsterInstance,
    asset_selection: Sequence[dg.AssetKey],
    tags: Mapping[str, str],
    run_config: Mapping[str, Any] | None = None,
    origin: RemoteJobOrigin | None = None,
) -> dg.ExecuteInProcessResult:
    """``job.execute_in_process(asset_selection=..., raise_on_error=False)``, with the run
    created under ``origin`` (default: the workspace's job of the same name)."""
    origin = origin or workspace_job_origin(job.name)
    selection = list(asset_selection)
    run_config = dict(run_config or {})
    ephemeral = job.as_ephemeral_job(resource_defs={}, input_values={}, asset_selection=selection)
    wrapped = InMemoryJob(job_def=ephemeral)
    ref = instance.get_ref() if instance.is_persistent else None
    plan = create_execution_plan(wrapped, run_config=run_config, instance_ref=ref)
    run = instance.create_run_for_job(
        job_def=ephemeral,
        run_config=run_config,  # its console logger is declared by every job of the location (definitions.py)
        tags={**job.run_tags, **tags},  # what execute_in_process tags a run with (no partition key)
        asset_selection=frozenset(selection),
        execution_plan=plan,
        remote_job_origin=origin,
    )
    output_capture: dict = {}
    events = list(
        ExecuteRunWithPlanIterable(
            execution_plan=plan,
            iterator=job_execution_iterator,
            execution_context_manager=PlanOrchestrationContextManager(
                context_event_generator=orchestration_context_event_generator,
                job=wrapped,
                execution_plan=plan,
                dagster_run=run,
                instance=instance,
                run_config=run_config,
                executor_defs=None,
                output_capture=output_capture,
                raise_on_error=False,
            ),
        )
    )
    return dg.ExecuteInProcessResult(
        job_def=ephemeral,
        event_list=events,
        dagster_run=instance.get_run_by_id(run.run_id),
        output_capture=output_capture,
    )
