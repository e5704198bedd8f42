"""People's work (docs/review.md, "The loop"): per benchmark, every declared kind (item review, each
protocol step, the blind baseline, judge validation; ``forge.evals.people_kinds.kinds_of``) as the
pair ``<b>_<kind>_tasks`` → ``<b>_<kind>_results``, made by one factory (``factory.py``) and run by
``people_sensor`` (sensors/people.py); the ``review_spend`` view."""

import dagster as dg

from assets.people.factory import people_defs
from forge.benchmarks import registry
from forge.storage import register_view

# People's cost next to the LLM's (docs/review.md): reviewer minutes per accepted item, the one
# definition (forge.review.gate.reviewer_minutes): every minute recorded (stale, refused and flagged
# verdicts included: the time was spent) over the items accepted now (review_status).
register_view(
    "review_spend",
    """
with t as (
  select benchmark, count(*) as verdicts, count(distinct reviewer) as reviewers from verdicts group by all
), s as (
  select benchmark, sum(minutes) as reviewer_minutes,
         count(*) filter (where current and status = 'accepted') as items_accepted
  from review_status group by all
)
select t.benchmark, t.reviewers, t.verdicts, round(coalesce(s.reviewer_minutes, 0), 2) as reviewer_minutes,
       coalesce(s.items_accepted, 0) as items_accepted,
       round(s.reviewer_minutes / nullif(s.items_accepted, 0), 3) as minutes_per_accepted_item
from t left join s using (benchmark) order by t.benchmark""",
)


defs = dg.Definitions.merge(*(people_defs(spec) for spec in registry.specs()))
