"""``automation_sensor``: evaluates the assets' automation conditions (assets/automation.py).

Declared here rather than left to Dagster's ``default_automation_condition_sensor`` so it has
a name, a description and a known state: stopped until a user turns it on (UI → Automation),
so opening the UI on a built data dir never starts runs by itself.
"""

from __future__ import annotations

import dagster as dg

automation_sensor = dg.AutomationConditionSensorDefinition(
    "automation_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.STOPPED,
    minimum_interval_seconds=60,
    run_tags={"subtext/queue": "build"},  # the build queue (.dagster_home/dagster.yaml): never the review loop's slot
    description="Materializes the fan-ins (duplicates, <paper>_splits) and reports (<paper>_release_report, "
    "<paper>_eval_report) after their parents update. Stopped by default; gates, evals and exports stay manual.",
)

defs = dg.Definitions(sensors=[automation_sensor])
