"""Workload of each human protocol step (docs/operations.md "Ready queries"; docs/review.md
"Protocol steps"), as catalog views over ``protocol_answers`` / ``protocol_results``. The steps'
agreement is the table ``protocol_agreement``, which the step's read writes
(``forge/protocol/agreement.py``, measured by ``forge/people/agreement.py``):

* ``protocol_minutes``: minutes per unit, with ``forge.review.gate.reviewer_minutes``' definition:
  every minute recorded on the step (refused and excluded answers included: the time was spent)
  over the units people decide now (``decided_by = 'human'``).
* ``protocol_changes``: the share of the LLM's drafts that people changed, over the units they
  decided, and how many units still stand on the LLM's draft (``decided_by = 'llm'``) and why.
"""

from forge.storage import register_view

MINUTES = """
with t as (
  select benchmark, step, count(distinct person) as people, count(*) as answers,
         sum(coalesce(seconds, 0)) / 60 as minutes
  from protocol_answers group by all
), d as (
  select benchmark, step, count(*) filter (where decided_by = 'human') as units_by_people from protocol_results
  group by all
)
select benchmark, step, people, answers, round(minutes, 2) as minutes, coalesce(units_by_people, 0) as units_by_people,
       round(minutes / nullif(units_by_people, 0), 3) as minutes_per_unit
from t left join d using (benchmark, step) order by benchmark, step"""

CHANGES = """
select benchmark, step, count(*) as units,
       count(*) filter (where decided_by = 'human') as units_by_people,
       count(*) filter (where decided_by = 'human' and changed) as drafts_changed,
       round(count(*) filter (where decided_by = 'human' and changed)
             / nullif(count(*) filter (where decided_by = 'human' and changed is not null), 0), 4) as share_changed,
       count(*) filter (where decided_by = 'llm') as units_on_llm_draft,
       count(*) filter (where why_llm = 'not_sampled') as not_sampled,
       count(*) filter (where why_llm = 'not_answered') as not_answered
from protocol_results group by all order by benchmark, step"""

register_view("protocol_minutes", MINUTES)
register_view("protocol_changes", CHANGES)
