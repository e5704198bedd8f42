"""The human baseline (docs/review.md), per benchmark:

* ``<name>_human_tasks`` (table ``review_tasks``, file ``<name>__human``): the latest export's
  test items, blind (no gold), in a project per export version on the blind baseline's own Label
  Studio instance (``make review`` starts it beside the review one; its accounts never see a
  review project);
* ``<name>_human_eval`` (tables ``eval_predictions`` / ``eval_scores``, file ``human__<name>``;
  ``human_answers`` and ``human_scores``, file ``<name>``): the answers read back (the review
  sensor materializes it), each person's scored on their own by the benchmark's own scorers (the
  judge's open-ended verdicts from the ``llm`` resource, as for the models); the ``leaderboard``
  view shows ``human (avg)`` and ``human (best)`` with n and a CI. An answer by someone who saw the
  item's gold, or by an annotator the control questions excluded, is kept, not scored.
"""

import time

import dagster as dg
import pandas as pd

from assets.common import contract_check_specs, publish, table_metadata
from assets.review.factory import GROUP, VERSION, md_values, server_down
from forge.benchmarks.registry import resolve
from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import human
from forge.people.client import ReviewServerDown
from forge.provenance.versioning import content_hash, spec_parts
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource

TABLES = ["eval_predictions", "eval_scores", "human_answers", "human_scores"]


def human_defs(benchmark: str | BenchmarkSpec) -> dg.Definitions:
    spec = resolve(benchmark)
    tasks_key, eval_key = spec.asset("human_tasks"), spec.asset("human_eval")
    version = content_hash(VERSION, "human", spec_parts(spec.review))

    @dg.asset(
        name=tasks_key,
        group_name=GROUP,
        kinds={"python"},
        deps=[spec.asset("export")],
        code_version=version,
        check_specs=contract_check_specs(tasks_key, ["review_tasks"]),
        metadata=table_metadata(["review_tasks"]),
        description=f"Pushes the exported {spec.title} test items, without gold, to a project on the blind baseline's "
        "own Label Studio instance, where people answer them (the human baseline). Start both instances with "
        "`make review`.",
    )
    def _tasks(
        context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        try:
            out = human.run_human_tasks(store, spec, review.blind_client(store.data_dir))
        except ReviewServerDown as exc:
            out = human.run_human_tasks(store, spec, None, server_down(spec, exc, context))
        return publish(
            store,
            {"review_tasks": {human.part(spec): out.tables["review_tasks"]}},
            metadata=md_values(out.metadata),
            started=t0,
        )

    @dg.asset(
        name=eval_key,
        group_name=GROUP,
        kinds={"python"},
        deps=[tasks_key],
        code_version=version,
        check_specs=contract_check_specs(eval_key, TABLES),
        metadata=table_metadata(TABLES),
        description=f"People's blind answers to the {spec.title} test items, each person's scored on their own by the "
        "benchmark's scorers (open-ended ones by its judge): models `human (avg)` and `human (best)` on the "
        "leaderboard, each person in `human_scores`, with n and a bootstrap CI. Every answer is in `human_answers`; "
        "one by someone who reviewed the item (saw its gold) or whom the control questions excluded is kept, "
        "with the reason.",
    )
    def _eval(
        context: dg.AssetExecutionContext, storage: StorageResource, review: ReviewResource, llm: LLMResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        part = f"{human.MODEL}__{spec.name}"
        judge = llm.engine() if spec.eval.judge_prompt else None
        try:
            blind, reviews = review.blind_client(store.data_dir), review.client(store.data_dir)
            out = human.score(store, spec, blind, judge, human.control_exclusions(store, spec), reviews)
            tables = {"eval_predictions": out.predictions, "eval_scores": out.scores}
            tables |= {"human_answers": out.answers, "human_scores": out.people}
            md = out.metadata
        except ReviewServerDown as exc:  # advisory: the recorded scores stay as they are
            md = {"note": server_down(spec, exc, context)}
            tables = {t: store.read(t, parts=[part]) for t in ("eval_predictions", "eval_scores")}
            tables |= {t: store.read(t, parts=[spec.name]) for t in ("human_answers", "human_scores")}
        if tables["human_answers"].empty:
            tables["human_answers"] = pd.DataFrame(columns=human.ANSWER_COLUMNS)
        return publish(
            store,
            {t: {part if t.startswith("eval_") else spec.name: f} for t, f in tables.items()},
            metadata=md_values(md),
            started=t0,
        )

    return dg.Definitions(assets=[_tasks, _eval])
