"""The people sensor's protocol steps on a real Label Studio: a corrected stage materialized → its step is pushed
and read in one run; nothing changed → no run; a person's answer → the step is read again."""

from __future__ import annotations

import dagster as dg
import pytest

from forge.storage import TableStore
from resources.review import ReviewResource
from resources.storage import StorageResource
from sensors.people import people_sensor
from tests.protocol import helpers as h
from tests.protocol.test_protocol_browser import _vague
from tests.review import scripted as sr

pytestmark = pytest.mark.slow  # a real Label Studio server


def _tick(data, instance, cursor, review: ReviewResource | None = None):
    ctx = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"storage": StorageResource(data_dir=str(data)), "review": review or ReviewResource()},
    )
    return people_sensor(ctx)


def _run(data, result) -> None:
    for req in result.run_requests or []:
        h.materialize(data, "vague", [k.to_user_string() for k in req.asset_selection])


def test_the_sensor_pushes_and_reads_a_step_when_it_changed(review_env):
    data, ls, _srv, _configure = review_env
    _vague(data)
    instance = dg.DagsterInstance.ephemeral()
    first = _tick(data, instance, None)
    assert not first.run_requests  # vague_direct never materialized: nothing to push
    instance.report_runless_asset_event(dg.AssetMaterialization("vague_direct"))
    due = _tick(data, instance, first.cursor)
    (req,) = due.run_requests
    assert sorted(k.to_user_string() for k in req.asset_selection) == [
        "vague_direct_rating_results",
        "vague_direct_rating_tasks",
    ]
    _run(data, due)
    again = _tick(data, instance, due.cursor)  # the project now exists: read once more
    _run(data, again)
    quiet = _tick(data, instance, again.cursor or due.cursor)
    assert not quiet.run_requests and "nothing to read or push" in quiet.skip_reason.skip_message

    task = h.tasks(ls, "direct_rating · vague")["fr_kitchen"]
    sr.submit(
        ls,
        task,
        sr.reviewer(ls, "sensor-rater@example.org"),
        [h.rating("relevance", 3, "direct"), h.rating("solvability", 4, "direct")],
    )
    after = _tick(data, instance, quiet.cursor)
    assert after.run_requests
    _run(data, after)
    res = h.results(data, "vague__direct_rating")["fr_kitchen"]
    assert res["decided_by"] == "human" and not res["keep"]


def test_the_sensor_pushes_and_reads_the_judge_validation_after_an_eval(review_env):
    """A new ``maia_eval`` brings new judged answers: the judge validation's two assets run, in the
    same run as any step that changed; nothing new → no run."""
    data, _ls, _srv, _configure = review_env
    instance = dg.DagsterInstance.ephemeral()
    first = _tick(data, instance, None)
    assert not first.run_requests
    instance.report_runless_asset_event(dg.AssetMaterialization("maia_eval"))
    due = _tick(data, instance, first.cursor)
    (req,) = due.run_requests
    assert sorted(k.to_user_string() for k in req.asset_selection) == ["maia_judge_results", "maia_judge_tasks"]
    assert req.tags["subtext/protocol_steps"] == "maia/judge"
    assert req.tags["subtext/queue"] == "loop" and req.job_name == "people_loop"  # the loop's one run
    quiet = _tick(data, instance, due.cursor)
    assert not quiet.run_requests


def test_every_kind_due_goes_into_one_loop_run_and_a_step_pushed_while_the_tool_was_down_runs_again(review_env):
    """Review, a protocol step and judge validation due on the same tick: ONE loop run (job
    ``people_loop``, queue ``loop``, priority 10) with all their pairs, review read first; a step
    whose push ran while Label Studio was down (no project yet) is due again once the tool is back."""
    from sensors.people import FLOW_JOB, LOOP_JOB
    from tests.review import world

    data, _ls, _srv, configure = review_env
    configure("benchmarks:\n  vague: {policy: advisory, reviewers: 1}\n")
    world.vague(TableStore(data), n=2)
    _vague(data)
    instance = dg.DagsterInstance.ephemeral()
    for key in ("vague_direct", "maia_eval"):
        instance.report_runless_asset_event(dg.AssetMaterialization(key))
    due = _tick(data, instance, None)
    (req,) = due.run_requests
    keys = [k.to_user_string() for k in req.asset_selection]
    assert set(keys) == {
        "vague_review_results",
        "vague_review_tasks",
        "vague_direct_rating_tasks",
        "vague_direct_rating_results",
        "maia_judge_tasks",
        "maia_judge_results",
    }
    assert keys.index("vague_review_results") < keys.index("vague_review_tasks")  # read, then push
    assert req.job_name == LOOP_JOB != FLOW_JOB
    assert req.tags["subtext/queue"] == "loop" and req.tags["dagster/priority"] == "10"
    # a run-level failure (the worker died, the code location did not load) is retried once; a step's is not
    assert req.tags["dagster/max_retries"] == "1" and req.tags["dagster/retry_on_asset_or_op_failure"] == "false"
    assert req.tags["subtext/people_due"] == "maia/judge,vague/direct_rating,vague/review"
    assert _tick(data, instance, due.cursor).skip_reason  # the same state is not requested twice

    # the loop run went out while Label Studio was down: the step's push made no project
    down = _tick(data, instance, due.cursor, review=ReviewResource(url="http://127.0.0.1:9", token="t"))
    assert not down.run_requests and "make review" in down.skip_reason.skip_message
    back = _tick(data, instance, down.cursor)
    (req,) = back.run_requests
    assert {"vague_direct_rating_tasks", "maia_judge_tasks"} <= {k.to_user_string() for k in req.asset_selection}
    assert req.run_key.startswith("people:1:")  # after the outage: a new request for the same situation
