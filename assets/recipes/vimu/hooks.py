"""ViMU's behaviour (forge/benchmarks/hooks.py): the shared stages call these through
``SPEC.hooks``; each method is its ``logic/`` module's function."""

from __future__ import annotations

from forge.benchmarks.hooks import PaperHooks

from .logic import error_analysis, evaluation, gold, release, report, scoring


class VimuHooks(PaperHooks):
    build_request = staticmethod(evaluation.build_request)
    parse_reply = staticmethod(evaluation.parse_reply)
    score_setting = staticmethod(scoring.score_setting)
    judge_variables = staticmethod(scoring.judge_variables)
    read_judgement = staticmethod(scoring.read_judgement)
    judge_failed_call = staticmethod(scoring.judge_failed_call)
    report_plots = staticmethod(report.plots)
    report_prediction_tables = staticmethod(report.prediction_tables)
    paper_figures = staticmethod(error_analysis.paper_figures)  # Figs. 7 and 10 from the predictions
    parse_release = staticmethod(release.parse_release)  # the published release (docs/releases.md)
    gold_key = staticmethod(gold.match_key)
