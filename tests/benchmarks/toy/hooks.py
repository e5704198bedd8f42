"""The toy benchmark's behaviour: its request and its scoring (toy/evaluation.py); everything else
is the shared behaviour of ``PaperHooks``."""

from __future__ import annotations

from forge.benchmarks.hooks import PaperHooks
from tests.benchmarks.toy import evaluation


class ToyHooks(PaperHooks):
    build_request = staticmethod(evaluation.build_request)
    score_setting = staticmethod(evaluation.score_setting)
