"""The people loop's two jobs (docs/review.md, "The loop"), built over the declared kinds by
``people_sensor`` (sensors/people.py), which targets them:

* ``people_loop``: every pair ``<b>_<kind>_tasks`` / ``<b>_<kind>_results`` and what a loop run may
  add (the export after a review). In-process: a loop run is a few short reads and pushes, and one
  process with no start-up per step keeps it short (a person waits on it);
* ``people_flow``: the recipe stages that read a protocol step (``HumanStep.read_by``), run per
  batch when people decide a unit anew (the default executor, as any recipe run).
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from forge.people.kind import PeopleKind

LOOP_JOB, FLOW_JOB = "people_loop", "people_flow"


def people_jobs(kinds: Sequence[PeopleKind]) -> list[dg.UnresolvedAssetJobDefinition]:
    loop = sorted({a for k in kinds for a in [*k.targets(), *k.may_add]})
    readers = sorted({a for k in kinds if k.flow is not None for a in k.flow.read_by})
    return [
        dg.define_asset_job(
            LOOP_JOB,
            selection=dg.AssetSelection.assets(*loop),
            executor_def=dg.in_process_executor,
            description="The people loop's run: every kind's reads and pushes that are due (people_sensor).",
        ),
        dg.define_asset_job(
            FLOW_JOB,
            selection=dg.AssetSelection.assets(*readers),
            description="The recipe stages that read a protocol step, re-run for a batch whose units people "
            "decided anew (people_sensor).",
        ),
    ]
