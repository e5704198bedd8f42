"""Declarative automation: which assets Dagster may materialize by itself, and when.

Only cheap, LLM-free assets that summarize what is upstream get a condition: the fan-ins
(``duplicates``, ``<paper>_splits``) and the reports (``<paper>_release_report``,
``<paper>_eval_report``). Gates (blind-solver LLM calls, billed on a real endpoint), evals
and exports stay manual: spending money or publishing a version is the user's decision.

Conditions act only while ``automation_sensor`` (sensors/automation.py) runs, and it starts
stopped: ``make demo`` / ``cli.build`` never depend on it (docs/operations.md).
"""

from __future__ import annotations

import dagster as dg

# Re-run when any parent updated, once no parent partition is missing or in progress:
# a fan-in waits for every batch rather than summarizing half of them.
FAN_IN = dg.AutomationCondition.eager()
# Reports: refreshed after every new materialization of what they report on.
REPORT = dg.AutomationCondition.eager()
