"""MAIA's behaviour (forge/benchmarks/hooks.py): the shared stages call these through
``SPEC.hooks``; each method is its ``logic/`` module's function."""

from __future__ import annotations

from forge.benchmarks.hooks import PaperHooks

from .logic import evaluation, gold, release, review, scoring


class MaiaHooks(PaperHooks):
    build_request = staticmethod(evaluation.build_request)
    # the official repository's reading of a reply (compute_mc_scores.py: the first standalone A/B)
    parse_reply = staticmethod(evaluation.parse_reply)
    score_setting = staticmethod(scoring.score_setting)
    judge_variables = staticmethod(evaluation.judge_variables)
    parse_release = staticmethod(release.parse_release)  # the published release (docs/releases.md)
    gold_key = staticmethod(gold.match_key)
    member_check = staticmethod(review.member_check)  # an edited pair passes the foil stage's own checks
