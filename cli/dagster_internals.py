"""The private Dagster names the project uses, imported here and nowhere else.

Everything else goes through ``import dagster as dg``. Each name below does something Dagster's
public API (the ``dagster`` namespace of 1.13, and its docs) offers no way to do; the comment says
what. tests/foundation/test_layout.py fails if any other project module imports a ``dagster._``
name, so a Dagster upgrade that moves one of these breaks here, at import, in one place.
"""

# Each import says which program uses it and why no public API serves (ordered by module, as isort
# keeps them).

# cli/freshness.py (``--only-stale``): Dagster's stale status ("Synced" / "Stale" in the UI) is public
# only through the webserver's GraphQL API; a build runs without a webserver, so it asks the resolver
# the UI itself uses.
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus

# cli/origin.py (build runs as runs of the workspace's code location, issue #39):
# ``JobDefinition.execute_in_process`` creates its run with no code-location origin and takes none,
# so the UI could not re-execute it. These are the pieces it is made of, used as it uses them (wrap
# the job, plan it, run the plan in this process), with the run created under an origin.
from dagster._core.definitions.job_base import InMemoryJob  # the in-process job wrapper a plan needs
from dagster._core.execution.api import (  # plan the job; iterate the plan's execution in this process
    ExecuteRunWithPlanIterable,
    create_execution_plan,
    job_execution_iterator,
)
from dagster._core.execution.context_creation_job import (  # the orchestration context of that run
    PlanOrchestrationContextManager,
    orchestration_context_event_generator,
)

# cli/freshness.py: the stale-status resolver needs a loading context; Dagster builds one only inside
# a UI request or a daemon tick.
from dagster._core.loader import LoadingContext

# cli/origin.py: the origin the UI gives a job of a workspace location (no public type names one).
from dagster._core.remote_origin import RemoteJobOrigin, RemoteRepositoryOrigin

# cli/origin.py: workspace.yaml's code locations, read from the file without starting a code server
# (no public reader).
from dagster._core.workspace.load import location_origins_from_yaml_paths

# cli/run_health.py: inside a run Dagster holds SIGTERM / SIGINT until a step starts, and a run whose
# steps wait for a pool slot never gets there; these read and clear the held signal, so the run
# watch can stop the run.
from dagster._utils.interrupts import check_captured_interrupt, pop_captured_interrupt

__all__ = [
    "CachingStaleStatusResolver",
    "ExecuteRunWithPlanIterable",
    "InMemoryJob",
    "LoadingContext",
    "PlanOrchestrationContextManager",
    "RemoteJobOrigin",
    "RemoteRepositoryOrigin",
    "StaleStatus",
    "check_captured_interrupt",
    "create_execution_plan",
    "job_execution_iterator",
    "location_origins_from_yaml_paths",
    "orchestration_context_event_generator",
    "pop_captured_interrupt",
]
