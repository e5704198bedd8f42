"""Agreement and workload of each human protocol step (docs/operations.md "Ready queries";
docs/review.md "Protocol steps"), as catalog views over ``protocol_answers`` / ``protocol_results``:

* ``protocol_agreement``: per step and answer field, Fleiss' kappa over the units two or more
  people answered (each person's latest counted answer; refused answers, excluded annotators and
  control units left out). With the same number of people per unit it is statsmodels'
  ``fleiss_kappa`` (tests/evals/test_human_step_queries.py checks); with more on some units, the
  per-unit agreement uses each unit's own count (Fleiss 1971). A value is compared whole: a rating,
  a choice, a list of choices; a field of boxes is left out, a text field agrees only when equal.
* ``protocol_minutes``: minutes per unit, with ``forge.review.gate.reviewer_minutes``' definition:
  every minute recorded on the step (refused and excluded answers included: the time was spent)
  over the units people decide now (``decided_by = 'human'``).
* ``protocol_changes``: the share of the LLM's drafts that people changed, over the units they
  decided, and how many units still stand on the LLM's draft (``decided_by = 'llm'``) and why.
"""

from forge.storage import register_view

AGREEMENT = """
with a as (
  select benchmark, step, unit_id, person, "values" as v
  from protocol_answers
  where refused is null and excluded is null and not control and "values" is not null
  qualify row_number() over (partition by benchmark, step, unit_id, person order by created_at desc, answer_id desc) = 1
), k as (
  select benchmark, step, unit_id, person, v, unnest(json_keys(v)) as field from a
), r as (
  select benchmark, step, unit_id, person, field, json_extract(v, '$."' || field || '"')::varchar as value
  from k
  where json_type(v, '$."' || field || '"') <> 'ARRAY' or coalesce(json_type(v, '$."' || field || '"[0]'), '') <> 'OBJECT'
), n as (
  select benchmark, step, field, unit_id, count(*) as people from r group by all having count(*) >= 2
), c as (
  select benchmark, step, field, unit_id, value, count(*) as n_ij from r join n using (benchmark, step, field, unit_id)
  group by all
), u as (
  select benchmark, step, field, unit_id, any_value(people) as people,
         (sum(n_ij * n_ij) - any_value(people)) / (any_value(people) * (any_value(people) - 1)) as p_i
  from c join n using (benchmark, step, field, unit_id) group by all
), v as (
  select benchmark, step, field, value, sum(n_ij) as n_j from c group by benchmark, step, field, value
), p as (
  select benchmark, step, field, n_j / sum(n_j) over (partition by benchmark, step, field) as p_j from v
), e as (
  select benchmark, step, field, sum(p_j * p_j) as chance from p group by all
)
select benchmark, step, field, count(*) as units, max(people) as most_people,
       round(avg(p_i), 4) as observed_agreement, round(any_value(chance), 4) as chance_agreement,
       round((avg(p_i) - any_value(chance)) / nullif(1 - any_value(chance), 0), 4) as fleiss_kappa
from u join e using (benchmark, step, field)
group by all order by benchmark, step, field"""

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

register_view("protocol_agreement", AGREEMENT)
register_view("protocol_minutes", MINUTES)
register_view("protocol_changes", CHANGES)
