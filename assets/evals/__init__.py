"""Model evaluations (group ``evals``): one asset per benchmark partitioned by model, one report per benchmark,
the paper's own tables per benchmark (``<paper>_paper_report``), the evaluations a paper declares
beside the models (``EvalSpec.extra_evals``, e.g. MAIA's unimodal baseline); the judge checked
against people (``<name>_judge_tasks`` → ``<name>_judge_results``) comes from ``assets/people``; the human steps'
workload views (``assets/evals/human_steps.py``; their agreement is a table, ``forge/protocol/agreement.py``)."""

import dagster as dg

import assets.evals.human_steps  # noqa: F401 - registers the protocol_minutes / _changes views
from assets.evals.assets import build_defs
from assets.evals.baselines import baseline_defs
from assets.evals.paper_reports import paper_report_defs

defs = dg.Definitions.merge(build_defs(), baseline_defs(), paper_report_defs())
