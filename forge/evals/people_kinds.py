"""The blind baseline and judge validation as kinds of people's work (``forge.people.kind``;
docs/review.md, "The loop"), and every kind of a benchmark gathered (``kinds_of``: the one list
the asset factory and the people sensor read).

* ``<b>_human_tasks`` → ``<b>_human_results``: the latest export's test items, blind (no gold), on
  the blind baseline's own instance; people's answers read back and each person's scored by the
  benchmark's own scorers (``forge/evals/human.py``). Due while the latest export has no task of
  its version, or when the blind projects changed.
* ``<b>_judge_tasks`` → ``<b>_judge_results``: a seeded sample of the models' judged open-ended
  answers, people give the judge's verdict blind to it; agreement between people and with the
  judge (``forge/evals/judge_validation.py``). Due when a new ``<b>_eval`` or the project changed.
"""

from __future__ import annotations

from functools import partial

import pandas as pd

from forge.benchmarks.hooks import review_hooks
from forge.benchmarks.review_spec import ReviewPolicy, ReviewSpec
from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import human
from forge.evals import judge_validation as jv
from forge.evals.config import benchmark_block, load_eval_config
from forge.evals.pipeline import load_export
from forge.people import read as people_read
from forge.people.client import ReviewServerDown
from forge.people.kind import PairSide, PeopleKind, Probe, Side, Watch, project_watch
from forge.protocol.kind import step_kind
from forge.provenance.versioning import content_hash, spec_parts
from forge.review.kind import VERSION, review_kind
from forge.splits.config import StageSettings
from forge.storage import TableStore
from forge.storage.result import StageResult

BASELINE_TABLES = ("eval_predictions", "eval_scores", "human_answers", "human_scores")
JUDGE_TABLES = ("judge_ratings", "judge_agreement")


# -- the blind baseline ----------------------------------------------------------------------------


def push_baseline(spec: BenchmarkSpec, rs: ReviewSpec, side: Side) -> StageResult:
    try:
        out = human.run_human_tasks(side.store, spec, rs, side.blind())
    except ReviewServerDown as exc:
        out = human.run_human_tasks(side.store, spec, rs, None, side.down(exc, "nothing pushed or read"))
    return out.only("review_tasks")


def score_baseline(spec: BenchmarkSpec, side: Side) -> StageResult:
    store, part = side.store, f"{human.MODEL}__{spec.name}"
    judge = side.llm() if side.llm is not None and spec.eval.judge_prompt else None
    try:
        blind, reviews = side.blind(), side.review()
        out = human.score(store, spec, blind, judge, human.control_exclusions(store, spec), reviews)
        tables = {"eval_predictions": out.predictions, "eval_scores": out.scores}
        tables |= {"human_answers": out.answers, "human_scores": out.people}
        md = out.metadata
    except ReviewServerDown as exc:  # advisory: the recorded scores stay as they are
        md = {"note": side.down(exc, "nothing pushed or read")}
        tables = {t: store.read(t, parts=[part]) for t in ("eval_predictions", "eval_scores")}
        tables |= {t: store.read(t, parts=[spec.name]) for t in ("human_answers", "human_scores")}
    if tables["human_answers"].empty:
        tables["human_answers"] = pd.DataFrame(columns=human.ANSWER_COLUMNS)
    return StageResult(
        tables={t: {part if t.startswith("eval_") else spec.name: f} for t, f in tables.items()},
        metadata=md,
        record_llm=False,  # the judge's calls of the baseline are not logged (as before the one factory)
    )


def baseline_unpushed(store: TableStore, spec: BenchmarkSpec, rows: pd.DataFrame | None) -> list[str]:
    """The latest export's test items have no baseline task of that version (the export was made
    while Label Studio was down, or since the last push)."""
    # the export's items and split alone (human.test_items also resolves every media path: seconds
    # per tick on a 2-core box, for a question the split column answers)
    pub = load_export(store.data_dir / "exports", spec)
    split, version = benchmark_block(load_eval_config(), spec)["split"], pub.version
    if pub.items.empty or not (pub.items["split"] == split).any():
        return []
    titles = set(rows["project_title"].astype(str)) if rows is not None else set()
    if any(t.endswith(f" {version}") for t in titles):
        return []
    return [f"human baseline of {version} not pushed yet"]


def baseline_watch(spec: BenchmarkSpec, rs: ReviewSpec, probe: Probe) -> Watch:
    if rs.policy == ReviewPolicy.OFF:
        return Watch()
    store = probe.store
    rows = None
    if store.exists("review_tasks"):
        t = store.read("review_tasks")
        rows = human.blind_rows(t[(t["benchmark"] == spec.name) & (t["kind"] == "human")])
    unpushed = baseline_unpushed(store, spec, rows)
    fp = None
    if rows is not None and len(rows):
        try:
            fp = content_hash(people_read.fingerprint(probe.blind, rows), length=16)
        except ReviewServerDown as exc:  # the review loop goes on; the baseline waits for its instance
            probe.warn(f"{spec.name}: blind baseline not read: {exc}")
    return Watch(reasons=unpushed, fingerprint=fp, push=bool(unpushed))


def baseline_kind(spec: BenchmarkSpec, rs: ReviewSpec) -> PeopleKind:
    return PeopleKind(
        owner=spec.name,
        kind="human",
        family="human",
        group="review",
        code_version=content_hash(
            VERSION, "human", {**spec_parts(spec.review), **spec_parts(review_hooks(spec.hooks))}
        ),
        tasks=PairSide(
            deps=(spec.asset("export"),),
            tables=("review_tasks",),
            run=partial(push_baseline, spec, rs),
            description=f"Pushes the exported {spec.title} test items, without gold, to a project on the blind "
            "baseline's own Label Studio instance, where people answer them (the human baseline). Start both "
            "instances with `make review`.",
        ),
        results=PairSide(
            deps=(spec.asset("human_tasks"),),
            tables=BASELINE_TABLES,
            needs=frozenset({"llm"}),
            run=partial(score_baseline, spec),
            description=f"People's blind answers to the {spec.title} test items, each person's scored on their own "
            "by the benchmark's scorers (open-ended ones by its judge): models `human (avg)` and `human (best)` on "
            "the leaderboard, each person in `human_scores`, with n and a bootstrap CI. Every answer is in "
            "`human_answers`; one by someone who reviewed the item (saw its gold) or whom the control questions "
            "excluded is kept, with the reason.",
        ),
        watch=partial(baseline_watch, spec, rs),
        policy=partial(str, rs.policy),
    )


# -- judge validation ------------------------------------------------------------------------------


def _preds(store: TableStore, spec: BenchmarkSpec) -> pd.DataFrame:
    if not store.exists("eval_predictions"):
        return pd.DataFrame()
    cols = ["model", "setting", "item_id", "variant", "task", "judge_ok", "judge_json", "judge_model", "parsed"]
    cols += ["status", "raw_reply", "detail"]
    return store.read("eval_predictions", where="benchmark = ?", params=[spec.name], columns=cols)


def push_judge(spec: BenchmarkSpec, side: Side) -> StageResult:
    store, cfg = side.store, load_eval_config()
    items = load_export(store.data_dir / "exports", spec, benchmark_block(cfg, spec)["export_version"]).items
    try:
        md = jv.run_judge_tasks(side.review(), spec, _preds(store, spec), items, cfg)
    except ReviewServerDown as exc:
        md = {"note": side.down(exc, "nothing pushed or read")}
    return StageResult(metadata=dict(md))


def read_judge(spec: BenchmarkSpec, side: Side) -> StageResult:
    store, cfg = side.store, load_eval_config()
    preds = _preds(store, spec)
    try:
        ratings = jv.read_ratings(side.review(), spec, preds, cfg)
    except ReviewServerDown as exc:  # the recorded figures stay as they are
        note = side.down(exc, "nothing pushed or read")
        return StageResult(
            tables={t: {spec.name: store.read(t, parts=[spec.name])} for t in JUDGE_TABLES}, metadata={"note": note}
        )
    s = jv.settings(spec, cfg)
    fig = jv.agreement(ratings, jv.labels(jv.judge_prompt(spec), s["field"]), s["raters"])
    judges = sorted(preds["judge_model"].dropna().astype(str).unique()) if "judge_model" in preds else []
    rows = jv.agreement_rows(spec, fig, ", ".join(judges) or None)
    md = {k: v for k, v in fig.items() if k != "labels"} | {"ratings": len(ratings)}
    return StageResult(
        tables={"judge_ratings": {spec.name: ratings}, "judge_agreement": {spec.name: rows}}, metadata=md
    )


def judge_kind(spec: BenchmarkSpec, rs: ReviewSpec) -> PeopleKind:
    return PeopleKind(
        owner=spec.name,
        kind="judge",
        family="judge",
        group="evals",
        code_version=None,
        tasks=PairSide(
            deps=(spec.asset("eval"),),
            run=partial(push_judge, spec),
            description=f"Pushes a seeded sample of the models' judged open-ended {spec.title} answers to a Label "
            "Studio project where two or more people give the judge's verdict, blind to it (judge_validation in the "
            "paper's evals.yaml). Start the tool with `make review`.",
        ),
        results=PairSide(
            deps=(spec.asset("judge_tasks"),),
            tables=JUDGE_TABLES,
            run=partial(read_judge, spec),
            description=f"People's verdicts on the sampled {spec.title} answers read back: Fleiss' kappa between the "
            "people and with the LLM judge, each person's Cohen's kappa with the judge (as MAIA §4.2 reports 0.82); "
            "on the card and in the eval report.",
        ),
        watch=lambda probe: project_watch(probe, spec.asset("eval"), [jv.title(spec)]),
        policy=partial(str, rs.policy),
    )


# -- every kind ------------------------------------------------------------------------------------


def kinds_of(spec: BenchmarkSpec, settings: StageSettings) -> list[PeopleKind]:
    """A benchmark's people's work in the sensor's order: review, its protocol steps, the blind
    baseline, judge validation (benchmarks with an LLM judge). ``settings``: ``stage_settings(spec)``,
    resolved by the caller (the people factory, the sensor's tick) and handed to every kind whole."""
    rs = settings.review_settings()
    policy = partial(str, rs.policy)
    out = [review_kind(spec, settings)]
    out += [step_kind(spec, step, policy) for step in spec.human_steps]
    out.append(baseline_kind(spec, rs))
    return out + ([judge_kind(spec, rs)] if spec.eval.judge_prompt else [])
