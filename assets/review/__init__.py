"""Human review (group ``review``, docs/review.md): per benchmark ``<name>_review_tasks`` →
``<name>_verdicts`` (Label Studio, started by ``make review``), and the human baseline."""

import dagster as dg

from assets.review.factory import benchmark_review_defs
from assets.review.human import human_defs
from forge.benchmarks import registry
from forge.storage import register_view

# People's cost next to the LLM's (docs/review.md): reviewer minutes per accepted item, from every
# verdict ever recorded (stale ones included: the time was spent) and the items accepted now.
register_view(
    "review_spend",
    """
with t as (
  select benchmark, count(*) as verdicts, count(distinct reviewer) as reviewers,
         sum(coalesce(seconds, 0)) / 60 as reviewer_minutes
  from verdicts group by all
), a as (
  select benchmark, count(distinct item_id) as items_accepted from verdicts
  where not stale and verdict in ('accept', 'edit') group by all
)
select t.benchmark, t.reviewers, t.verdicts, round(t.reviewer_minutes, 2) as reviewer_minutes,
       coalesce(a.items_accepted, 0) as items_accepted,
       round(t.reviewer_minutes / nullif(a.items_accepted, 0), 3) as minutes_per_accepted_item
from t left join a using (benchmark) order by t.benchmark""",
)

defs = dg.Definitions.merge(
    *(benchmark_review_defs(spec) for spec in registry.specs()), *(human_defs(spec) for spec in registry.specs())
)
