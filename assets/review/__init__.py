"""Human review (group ``review``, docs/review.md): per benchmark ``<name>_review_tasks`` →
``<name>_verdicts`` (Label Studio, started by ``make review``), and the human baseline."""

import dagster as dg

from assets.review.factory import benchmark_review_defs
from assets.review.human import human_defs
from forge.benchmarks import registry

defs = dg.Definitions.merge(
    *(benchmark_review_defs(spec) for spec in registry.specs()), *(human_defs(spec) for spec in registry.specs())
)
