"""Every build run is a first-class run of the workspace's code location: a `cli.build` run
carries the origin of its job in `workspace.yaml`'s location, so the Jobs page (runs filtered by
job and repository label) lists it, and the UI's "Re-execute" (the GraphQL mutation the button
sends) launches it again through the location and succeeds."""

import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.dagster_run import DagsterRunStatus, RunsFilter
from dagster._core.storage.tags import REPOSITORY_LABEL_TAG
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
LABEL = "__repository__@subtext_forge"

pytestmark = pytest.mark.cli

REEXECUTE = """
mutation($params: ReexecutionParams) {
  launchPipelineReexecution(reexecutionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}
"""


@pytest.fixture
def world(tmp_path, monkeypatch):
    images = tmp_path / "data" / "imgs"
    images.mkdir(parents=True)
    for i, colour in enumerate(("red", "green")):
        Image.new("RGB", (64, 48), colour).save(images / f"{i}.png")
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - {{name: tiny, type: folder, path: '{images}', media: image}}\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        "telemetry: {enabled: false}\n"
        "run_coordinator: {module: dagster._core.run_coordinator, class: DefaultRunCoordinator}\n"
    )
    for k, v in {"DAGSTER_HOME": home, "SUBTEXT_DATA_DIR": tmp_path / "data", "SUBTEXT_SOURCES": sources}.items():
        monkeypatch.setenv(k, str(v))
    return tmp_path


def test_a_build_run_is_listed_under_its_job_and_re_executes_from_the_ui(world):
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget
    from dagster_graphql.test.utils import execute_dagster_graphql

    from cli.build import build

    with dg.DagsterInstance.get() as instance:
        assert build(["sources"], instance=instance)
        (run,) = instance.get_runs()
        assert run.job_name == "ingest_fanin_job"
        assert run.remote_job_origin is not None and run.remote_job_origin.location_name == "subtext_forge"
        # what the Jobs page and the Timeline ask for: runs of the job in this code location
        listed = instance.get_runs(RunsFilter(job_name="ingest_fanin_job", tags={REPOSITORY_LABEL_TAG: LABEL}))
        assert [r.run_id for r in listed] == [run.run_id]

        target = WorkspaceFileTarget(paths=[str(ROOT / "workspace.yaml")])
        with WorkspaceProcessContext(instance, target) as process:
            context = process.create_request_context()
            params = {"parentRunId": run.run_id, "strategy": "ALL_STEPS"}
            out = execute_dagster_graphql(context, REEXECUTE, {"params": params})
            reply = out.data["launchPipelineReexecution"]
            assert reply["__typename"] == "LaunchRunSuccess", reply
            child_id = reply["run"]["runId"]
            deadline = time.time() + 300
            while time.time() < deadline:
                child = instance.get_run_by_id(child_id)
                if child.status in (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED):
                    break
                time.sleep(2)
        assert child.status == DagsterRunStatus.SUCCESS, child.status
        assert child.parent_run_id == run.run_id
        listed = instance.get_runs(RunsFilter(job_name="ingest_fanin_job", tags={REPOSITORY_LABEL_TAG: LABEL}))
        assert {r.run_id for r in listed} == {run.run_id, child_id}


def test_a_re_execution_is_not_swept_for_its_parent_s_process():
    """A re-executed run inherits the parent's process tags; the dead-run sweep must not fail it
    when the `cli.build` process that made the parent is gone."""
    from sensors.run_health import PID_TAG, HealthSettings, process_tags, why_dead

    dead = {**process_tags(), PID_TAG: "999999"}
    parent = dg.DagsterRun(job_name="j", run_id="p", tags=dead, status=DagsterRunStatus.STARTED)
    child = dg.DagsterRun(
        job_name="j", run_id="c", tags=dead, parent_run_id="p", root_run_id="p", status=DagsterRunStatus.STARTED
    )
    instance = dg.DagsterInstance.ephemeral()
    assert why_dead(instance, parent, HealthSettings(), time.time(), False) is not None
    assert why_dead(instance, child, HealthSettings(), time.time(), False) is None
